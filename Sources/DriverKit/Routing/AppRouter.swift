import Foundation
import Observation
import GRDB
import VroomXModels

/// The app's first screens (seed 001).
public enum AppRoute: Sendable, Hashable {
    case onboarding
    case login
    case locked
    case main
}

/// Decides the first screen synchronously from what the device already
/// knows — no network, no loading flash — and follows the sign-in state
/// afterwards. Session verification runs in the background and sends the
/// driver to login only if the server definitively rejects the session.
@MainActor @Observable
public final class AppRouter {
    let auth: AuthFlow
    let database: AppDatabase
    private var onboarded: Bool

    init(auth: AuthFlow, database: AppDatabase) {
        self.auth = auth
        self.database = database
        onboarded = (try? database.deviceState())?.onboarded ?? false
    }

    /// Fresh install → onboarding; signed out on a device used before →
    /// login; signed in with a PIN → locked; otherwise → main.
    public nonisolated static func determineInitialRoute(_ database: AppDatabase) -> AppRoute {
        guard let (device, account) = try? database.reader.read({ db in
            (try AppDatabase.deviceState(db), try AppDatabase.account(db))
        }) else { return .onboarding }
        if let account { return account.pinSet ? .locked : .main }
        return device.usedBefore || device.onboarded ? .login : .onboarding
    }

    /// The screen to show now.
    public var route: AppRoute {
        switch auth.state {
        case .signedOut, .codeSent: return onboarded || auth.deviceUsedBefore ? .login : .onboarding
        case .locked: return .locked
        case .needsPINSetup, .unlocked: return .main
        }
    }

    /// The driver finished the introduction screens.
    public func completeOnboarding() {
        try? database.markOnboarded()
        onboarded = true
    }
}

