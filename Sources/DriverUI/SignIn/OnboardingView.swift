#if canImport(SwiftUI)
import DriverKit
import SwiftUI

/// First run (seed 001, seed 004 path A): what the app does, the email
/// dispatch invited, the emailed code, a PIN, and the Face ID offer. Each
/// step is the router's; closing the app resumes at the same step.
struct OnboardingView: View {
    let app: DriverApp
    let step: OnboardingStep

    var body: some View {
        switch step {
        case .welcome: WelcomeView(router: app.router)
        case .email: EmailStepView(app: app, returning: false)
        case .code: CodeStepView(app: app)
        case .pin: PINSetupView(router: app.router)
        case .biometrics: BiometricsOfferView(router: app.router)
        }
    }
}

struct WelcomeView: View {
    let router: AppRouter

    var body: some View {
        ScrollView {
        VStack(spacing: 24) {
            Image(systemName: "car.ferry.fill")
                .font(.system(size: 64))
                .accessibilityHidden(true)
            Text("VroomX Driver").font(.largeTitle.bold())
            VStack(alignment: .leading, spacing: 12) {
                Label("Your trips and orders, even with no signal", systemImage: "shippingbox")
                Label("Inspections with photos that upload when they can", systemImage: "camera")
                Label("Messages and pay from your dispatcher", systemImage: "message")
            }
            .font(.body)
            Button("Get started") { router.continueFromWelcome() }
                .buttonStyle(.borderedProminent)
                .controlSize(.large)
        }
        .padding()
        }
    }
}

/// Email, then code: the login screen of a device used before, and steps
/// two and three of onboarding.
struct LoginView: View {
    let app: DriverApp

    var body: some View {
        switch app.auth.state {
        case .codeSent: CodeStepView(app: app)
        default: EmailStepView(app: app, returning: true)
        }
    }
}

struct EmailStepView: View {
    let app: DriverApp
    let returning: Bool
    @State private var email = ""
    @State private var error: String?
    @State private var sending = false

    var body: some View {
        Form {
            Section {
                TextField("Email", text: $email)
                    #if os(iOS)
                    .textContentType(.emailAddress)
                    .keyboardType(.emailAddress)
                    .textInputAutocapitalization(.never)
                    #endif
                    .autocorrectionDisabled()
                    .accessibilityLabel("Email address")
            } header: {
                Text(returning ? "Welcome back" : "Sign in")
            } footer: {
                Text("Use the email your dispatcher invited. We'll send you a 6-digit code.")
            }
            if let error { ErrorText(error) }
            Button(sending ? "Sending…" : "Send code") {
                Task {
                    sending = true
                    defer { sending = false }
                    do { try await app.router.requestCode(for: email) } catch { self.error = app.auth.message ?? "\(error)" }
                }
            }
            .disabled(sending || email.isEmpty)
        }
    }
}

struct CodeStepView: View {
    let app: DriverApp
    @State private var code = ""
    @State private var error: String?
    @State private var verifying = false

    private var email: String {
        if case .codeSent(let email) = app.auth.state { return email }
        return ""
    }

    var body: some View {
        Form {
            Section {
                TextField("6-digit code", text: $code)
                    #if os(iOS)
                    .textContentType(.oneTimeCode)
                    .keyboardType(.numberPad)
                    #endif
                    .font(.title2.monospacedDigit())
                    .accessibilityLabel("Sign-in code")
            } header: {
                Text("Enter the code")
            } footer: {
                Text("We sent it to \(email). It works for 10 minutes.")
            }
            if !app.auth.carrierChoices.isEmpty {
                // The code was right and the driver drives for several carriers.
                Section {
                    ForEach(app.auth.carrierChoices) { carrier in
                        Button(carrier.name) {
                            Task {
                                verifying = true
                                defer { verifying = false }
                                do { try await app.router.chooseCarrier(carrier.id) } catch { self.error = app.auth.message ?? "\(error)" }
                            }
                        }
                        .disabled(verifying)
                    }
                } header: {
                    Text("Which carrier are you driving for now?")
                } footer: {
                    Text("To work for another, sign out and sign in again.")
                }
            } else if let error { ErrorText(error) }
            Button(verifying ? "Checking…" : "Verify") {
                Task {
                    verifying = true
                    defer { verifying = false }
                    do { try await app.router.signIn(code: code) } catch { self.error = app.auth.message ?? "\(error)" }
                }
            }
            .disabled(verifying || code.count != 6)
            Button("Use another email") { app.router.backToEmail() }
            Button("Send the code again") {
                Task { try? await app.router.requestCode(for: email) }
            }
        }
    }
}

/// A 4-digit PIN for quick unlocks, entered twice.
struct PINSetupView: View {
    let router: AppRouter
    @State private var first: String?
    @State private var entered = ""
    @State private var error: String?

    var body: some View {
        VStack(spacing: 24) {
            Text(first == nil ? "Set a 4-digit PIN for quick access" : "Enter the PIN again")
                .font(.title3.bold())
                .multilineTextAlignment(.center)
            PINDots(count: entered.count, length: LockScreenViewModel.pinLength)
            if let error { ErrorText(error) }
            PINPad(onDigit: { add($0) }, onDelete: { if !entered.isEmpty { entered.removeLast() } })
        }
        .padding()
    }

    private func add(_ digit: Int) {
        guard entered.count < LockScreenViewModel.pinLength else { return }
        entered += String(digit)
        guard entered.count == LockScreenViewModel.pinLength else { return }
        if let first {
            if first == entered {
                let pin = entered
                Task {
                    do { try await router.setUpPIN(pin) } catch { self.error = "\(error)" }
                }
            } else {
                error = "The PINs didn't match. Start again."
                self.first = nil
            }
        } else {
            first = entered
            error = nil
        }
        entered = ""
    }
}

struct BiometricsOfferView: View {
    let router: AppRouter

    var body: some View {
        ScrollView {
        VStack(spacing: 24) {
            Image(systemName: "faceid").font(.system(size: 64)).accessibilityHidden(true)
            Text("Unlock with Face ID?").font(.title2.bold())
            Text("You can still use your PIN, and change this in Profile.")
                .multilineTextAlignment(.center)
            Button("Use Face ID") { Task { await router.answerBiometricsOffer(enable: true) } }
                .buttonStyle(.borderedProminent)
            Button("Not now") { Task { await router.answerBiometricsOffer(enable: false) } }
        }
        .padding()
        }
    }
}
#endif
