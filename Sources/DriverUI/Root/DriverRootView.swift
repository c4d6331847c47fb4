#if canImport(SwiftUI)
import DriverKit
import SwiftUI

/// The app's top view: one screen per route, decided synchronously at
/// launch by `AppRouter.determineInitialRoute` (no loading flash) and
/// following the sign-in state after (seed 001).
public struct DriverRootView: View {
    let app: DriverApp
    @Environment(\.scenePhase) private var scenePhase

    public init(app: DriverApp) { self.app = app }

    public var body: some View {
        Group {
            switch app.router.route {
            case .updateRequired:
                UpdateRequiredView(message: app.status.updateMessage)
            case .loading:
                LoadingView(message: app.router.loadingMessage)
            case .onboarding(let step):
                OnboardingView(app: app, step: step)
            case .login:
                LoginView(app: app)
            case .main, .locked:
                // The lock covers the app instead of replacing it: what the driver had open
                // (a trip, an inspection half done) is there again after the PIN.
                MainTabView(app: app)
                    .overlay {
                        if app.router.route == .locked {
                            LockView(app: app).background(.background)
                        }
                    }
            }
        }
        .animation(.easeInOut(duration: 0.25), value: app.router.route)
        // The app switcher shows a snapshot taken as the app leaves the front: a cover, not a customer's address.
        .overlay {
            if scenePhase != .active { PrivacyCover() }
        }
        .environment(\.driverApp, app)
    }
}

/// What the app switcher shows of VroomX: its name on a plain background.
struct PrivacyCover: View {
    var body: some View {
        ZStack {
            Rectangle().fill(.background)
            Label("VroomX Driver", systemImage: "truck.box").font(.title2.bold())
        }
        .ignoresSafeArea()
        .accessibilityHidden(true)
    }
}

private struct DriverAppKey: EnvironmentKey {
    static let defaultValue: DriverApp? = nil
}

extension EnvironmentValues {
    /// The app core, for views deep in a tab that build their own view models.
    public var driverApp: DriverApp? {
        get { self[DriverAppKey.self] }
        set { self[DriverAppKey.self] = newValue }
    }
}

/// An error next to what it is about: an icon and the word for VoiceOver, not colour alone.
struct ErrorText: View {
    let text: String
    init(_ text: String) { self.text = text }

    var body: some View {
        Label(text, systemImage: "exclamationmark.circle")
            .foregroundStyle(.red)
            .accessibilityLabel("Error: \(text)")
    }
}

/// The server no longer serves this version: the App Store (or TestFlight) has the update.
struct UpdateRequiredView: View {
    let message: String

    var body: some View {
        VStack(spacing: 16) {
            Image(systemName: "arrow.down.app")
                .font(.system(size: 48))
                .accessibilityHidden(true)
            Text("Update the app")
                .font(.title2.bold())
            Text(message)
                .multilineTextAlignment(.center)
        }
        .padding(32)
        .frame(maxWidth: .infinity, maxHeight: .infinity)
        .accessibilityElement(children: .combine)
    }
}

/// The first download (only when nothing is cached yet).
struct LoadingView: View {
    let message: String

    var body: some View {
        VStack(spacing: 16) {
            ProgressView()
                .accessibilityHidden(true)
            Text(message)
                .font(.headline)
        }
        .frame(maxWidth: .infinity, maxHeight: .infinity)
        .accessibilityElement(children: .combine)
    }
}
#endif
