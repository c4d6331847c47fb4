import Foundation
import Observation
import GRDB
import VroomXModels

/// The first-run screens, in order (seed 001, seed 004's sign-in path A).
/// Where a driver left off is kept, so closing the app never starts them over.
public enum OnboardingStep: String, Sendable, Hashable, CaseIterable {
    /// What the app does, before anything is asked.
    case welcome
    /// The email dispatch invited.
    case email
    /// The 6-digit code sent to it.
    case code
    /// A 4-digit PIN for quick unlocks.
    case pin
    /// The offer to unlock with Face ID (only where the device has it).
    case biometrics
}

/// The app's top-level screens (seed 001).
public enum AppRoute: Sendable, Hashable {
    /// Signed in and unlocked, nothing on the device yet: the first
    /// download is under way (never shown when anything is cached).
    case loading
    case onboarding(OnboardingStep)
    /// Signed out on a device used before: email and code, no introduction.
    case login
    case locked
    case main
    /// The server no longer serves this version of the app: update it
    /// (queued work waits on the phone).
    case updateRequired
}

/// Decides the first screen synchronously from what the device already
/// knows — no network, no loading flash — and follows the sign-in state
/// afterwards. Session verification runs in the background and sends the
/// driver to login only if the server definitively rejects the session.
/// The transitions (sign in, set the PIN, answer the Face ID offer, sign
/// out) are methods here, so a screen only calls one and shows the route.
@MainActor @Observable
public final class AppRouter {
    let auth: AuthFlow
    let database: AppDatabase
    let status: SyncStatus
    private var device: DeviceState
    /// Whether the cache holds anything yet (a first download decides `.loading`).
    private var hasCachedWork: Bool

    /// A code asked for this long ago is still worth resuming at (the server's codes last 10 minutes).
    public nonisolated static let codeResumeWindow: TimeInterval = 10 * 60

    init(auth: AuthFlow, database: AppDatabase, status: SyncStatus) {
        self.auth = auth
        self.database = database
        self.status = status
        device = (try? database.deviceState()) ?? DeviceState(onboarded: false, usedBefore: false)
        hasCachedWork = Self.hasCachedWork(database)
    }

    /// Fresh install → onboarding (resumed at the step reached); signed out
    /// on a device used before → login; signed in with a PIN → locked;
    /// signed in without one → PIN setup.
    public nonisolated static func determineInitialRoute(_ database: AppDatabase, now: Date = Date()) -> AppRoute {
        guard let (device, account) = try? database.reader.read({ db in
            (try AppDatabase.deviceState(db), try AppDatabase.account(db))
        }) else { return .onboarding(.welcome) }
        if let account { return account.pinSet ? .locked : .onboarding(.pin) }
        let returning = device.usedBefore || device.onboarded && device.onboardingStep == nil
        if let code = device.pendingCode, now.timeIntervalSince(code.sentAt) < codeResumeWindow {
            return returning ? .login : .onboarding(.code)
        }
        if returning { return .login }
        return .onboarding(device.onboardingStep == .email || device.onboardingStep == .code ? .email : .welcome)
    }

    /// The screen to show now.
    public var route: AppRoute {
        if status.updateRequired { return .updateRequired }
        let returning = auth.deviceUsedBefore || device.onboarded && device.onboardingStep == nil
        switch auth.state {
        case .signedOut:
            if returning { return .login }
            return .onboarding(device.onboardingStep == nil || device.onboardingStep == .welcome ? .welcome : .email)
        case .codeSent:
            return returning ? .login : .onboarding(.code)
        case .needsPINSetup:
            return .onboarding(.pin)
        case .locked:
            return .locked
        case .unlocked:
            if !device.biometricsOffered && auth.biometricsAvailable && !auth.biometricsEnabled { return .onboarding(.biometrics) }
            if !hasCachedWork && status.lastSyncedAt == nil && status.isOnline && status.lastError == nil { return .loading }
            return .main
        }
    }

    /// What the loading screen says.
    public var loadingMessage: String { "Loading your trips…" }

    // MARK: Transitions

    /// From the introduction to the email screen.
    public func continueFromWelcome() {
        move(to: .email)
    }

    /// Asks for a sign-in code (the code screen follows).
    public func requestCode(for email: String) async throws {
        try await auth.sendCode(to: email)
        move(to: .code)
    }

    /// Signs in with the code (PIN setup, or the app, follows).
    public func signIn(code: String) async throws {
        try await auth.verify(code: code)
        device.usedBefore = true
        refreshCache()
    }

    /// Signs in to one of the carriers the code screen offers
    /// (`auth.carrierChoices`, when the driver drives for several).
    public func chooseCarrier(_ carrier: ID<Tenant>) async throws {
        try await auth.chooseCarrier(carrier)
        device.usedBefore = true
        refreshCache()
    }

    /// From the code screen back to the email (a typo in the address).
    public func backToEmail() {
        auth.cancelCode()
        if case .onboarding = route { move(to: .email) }
    }

    public func setUpPIN(_ pin: String) async throws {
        try await auth.setUpPIN(pin)
    }

    /// The driver's answer to the Face ID offer; asked once.
    @discardableResult
    public func answerBiometricsOffer(enable: Bool) async -> Bool {
        let enabled = enable ? await auth.setBiometrics(enabled: true) : false
        try? database.markBiometricsOffered()
        device.biometricsOffered = true
        return enabled
    }

    /// Signs out (refused while work is unsynced, unless `force`); the
    /// login screen follows.
    public func logOut(force: Bool = false) async throws {
        try await auth.logout(force: force)
        hasCachedWork = Self.hasCachedWork(database)
    }

    /// The first download finished (or the cache filled some other way).
    func refreshCache() {
        hasCachedWork = Self.hasCachedWork(database)
    }

    /// The driver finished the introduction (kept for callers of the first version).
    public func completeOnboarding() { continueFromWelcome() }

    private func move(to step: OnboardingStep) {
        try? database.setOnboardingStep(step)
        if step != .welcome { try? database.markOnboarded() }
        device.onboardingStep = step
        device.onboarded = device.onboarded || step != .welcome
    }

    private nonisolated static func hasCachedWork(_ database: AppDatabase) -> Bool {
        (try? database.reader.read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM trips)") ?? false }) ?? false
    }
}
