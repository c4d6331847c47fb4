#if canImport(SwiftUI)
import DriverKit
import SwiftUI

/// Profile: who is signed in, pay terms, the truck and trailer, location
/// sharing, files still on the phone, and signing out with a warning while
/// work has not reached dispatch.
struct ProfileView: View {
    let app: DriverApp
    @State var model: ProfileViewModel
    @State private var confirmingSignOut = false
    @State private var signOutError: String?

    var body: some View {
        @Bindable var bindable = model
        NavigationStack {
            List {
                let state = model.state
                Section {
                    if let driver = state.driver { LabeledContent("Name", value: driver.name) }
                    if let email = state.email { LabeledContent("Email", value: email) }
                    if let pay = state.payTerms { LabeledContent("Pay", value: pay) }
                }
                Section {
                    NavigationLink("My truck and trailer", value: ProfileDestination.units)
                    NavigationLink(value: ProfileDestination.notSent) {
                        let notSent = model.notSent
                        LabeledContent("Not sent yet") {
                            Text(notSent.count == 0 ? "None" : "\(notSent.count)")
                                .foregroundStyle(notSent.failed ? .red : .secondary)
                        }
                    }
                    NavigationLink("Files waiting to upload", value: ProfileDestination.uploads)
                }
                Section {
                    Toggle("Share my location on trips", isOn: $bindable.locationSharing)
                } footer: {
                    Text(ProfileViewModel.locationSharingNote)
                }
                if model.offersBiometrics {
                    Section {
                        Toggle("Unlock with Face ID", isOn: Binding(get: { model.biometricsEnabled },
                                                                   set: { on in Task { await model.setBiometrics(on) } }))
                        if let message = model.biometricsMessage { ErrorText(message) }
                    } footer: {
                        Text("Your PIN still unlocks the app.")
                    }
                }
                Section {
                    Button("Sign out", role: .destructive) {
                        // Read now, not from the last render: work may have been queued since.
                        if model.state.signOutWarning != nil { confirmingSignOut = true } else { signOut(force: false) }
                    }
                }
                if let signOutError { ErrorText(signOutError) }
            }
            .navigationTitle("Profile")
            // Built when opened, not on every render of the profile.
            .navigationDestination(for: ProfileDestination.self) { destination in
                switch destination {
                case .units: UnitsView(model: UnitsViewModel(app: app))
                case .uploads: UploadsView(model: UploadsViewModel(app: app))
                case .notSent: NotSentView(model: NotSentViewModel(app: app))
                }
            }
            .confirmationDialog(model.state.signOutWarning ?? "", isPresented: $confirmingSignOut, titleVisibility: .visible) {
                Button("Sign out and lose them", role: .destructive) { signOut(force: true) }
                Button("Stay signed in", role: .cancel) {}
            }
        }
    }

    private func signOut(force: Bool) {
        Task {
            do {
                try await model.signOut(force: force)
            } catch AuthError.unsyncedChanges {
                confirmingSignOut = true  // work was queued meanwhile: ask first
            } catch {
                signOutError = "\(error)"
            }
        }
    }
}

enum ProfileDestination: Hashable { case units, uploads, notSent }

/// Files still on the phone (seed 000): progress, and Retry or Discard for refused ones.
struct UploadsView: View {
    let model: UploadsViewModel

    var body: some View {
        List {
            if model.items.isEmpty { Text("Everything has reached the server.") }
            ForEach(model.items) { item in
                VStack(alignment: .leading, spacing: 4) {
                    Text(item.about.replacingOccurrences(of: "_", with: " ").capitalized).font(.headline)
                    ProgressView(value: item.progress)
                        .accessibilityLabel("Sent")
                        .accessibilityValue("\(Int(item.progress * 100)) percent")
                    if item.status == .failed {
                        ErrorText(item.lastError ?? "Refused by the server")
                        HStack {
                            Button("Retry") { model.retry(item.id) }
                            Button("Discard", role: .destructive) { Task { await model.discard(item.id) } }
                        }
                    }
                }
            }
        }
        .navigationTitle(model.summary ?? "Uploads")
    }
}
#endif
