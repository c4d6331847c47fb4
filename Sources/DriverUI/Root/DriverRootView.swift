#if canImport(SwiftUI)
import DriverKit
import SwiftUI

/// The app's top view: one screen per route, decided synchronously at
/// launch by `AppRouter.determineInitialRoute` (no loading flash) and
/// following the sign-in state after (seed 001).
public struct DriverRootView: View {
    let app: DriverApp

    public init(app: DriverApp) { self.app = app }

    public var body: some View {
        Group {
            switch app.router.route {
            case .loading:
                LoadingView(message: app.router.loadingMessage)
            case .onboarding(let step):
                OnboardingView(app: app, step: step)
            case .login:
                LoginView(app: app)
            case .locked:
                LockView(model: LockScreenViewModel(app: app))
            case .main:
                MainTabView(app: app)
            }
        }
        .animation(.easeInOut(duration: 0.25), value: app.router.route)
        .environment(\.driverApp, app)
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
