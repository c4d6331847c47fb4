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
        @Bindable var model = model
        NavigationStack {
            List {
                let state = model.state
                Section {
                    if let driver = state.driver { LabeledContent("Name", value: driver.name) }
                    if let email = state.email { LabeledContent("Email", value: email) }
                    if let pay = state.payTerms { LabeledContent("Pay", value: pay) }
                }
                Section {
                    NavigationLink("My truck and trailer") { UnitsView(model: UnitsViewModel(app: app)) }
                    NavigationLink("Files waiting to upload") { UploadsView(model: UploadsViewModel(app: app)) }
                }
                Section {
                    Toggle("Share my location on trips", isOn: $model.locationSharing)
                } footer: {
                    Text(ProfileViewModel.locationSharingNote)
                }
                Section {
                    Button("Sign out", role: .destructive) {
                        if state.signOutWarning != nil { confirmingSignOut = true } else { signOut(force: false) }
                    }
                }
                if let signOutError { Text(signOutError).foregroundStyle(.red) }
            }
            .navigationTitle("Profile")
            .confirmationDialog(model.state.signOutWarning ?? "", isPresented: $confirmingSignOut, titleVisibility: .visible) {
                Button("Sign out and lose them", role: .destructive) { signOut(force: true) }
                Button("Stay signed in", role: .cancel) {}
            }
        }
    }

    private func signOut(force: Bool) {
        Task {
            do { try await model.signOut(force: force) } catch { signOutError = "\(error)" }
        }
    }
}

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
                        .accessibilityLabel("\(Int(item.progress * 100)) percent sent")
                    if item.status == .failed {
                        Text(item.lastError ?? "Refused by the server").foregroundStyle(.red)
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
