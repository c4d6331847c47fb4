import Foundation
import Observation
import VroomXModels
import VroomXSecurity

/// Sign-in with an emailed code, a 4-digit PIN for quick access (kept only
/// as a slow salted hash), biometric unlock, and logout (seed 004, made safe).
@MainActor @Observable
public final class AuthFlow {
    public private(set) var state: AuthState
    /// What went wrong last, for the screen to show.
    public private(set) var message: String?
    public private(set) var isBusy = false
    public private(set) var biometricsEnabled: Bool
    /// Someone has signed in on this device before (login, not onboarding).
    public private(set) var deviceUsedBefore: Bool
    /// Other drivers' unsynced work on this device, kept for them (never
    /// shown to or sent by whoever is signed in now).
    public private(set) var setAsideWork: [SetAsideWork] = []
    /// Where "Forgot PIN" started, to return to if the driver cancels it.
    private var beforeCode: AuthState?
    /// When the unlocked app went to the background, by the device's clock
    /// and by the seconds since boot.
    private var leftAt: (wall: Date, boot: TimeInterval)?
    /// How long the app may stay in the background before the PIN is asked
    /// again: a driver who switches to Maps or takes a call comes straight back.
    public var lockGracePeriod: TimeInterval = AuthFlow.defaultLockGracePeriod
    public nonisolated static let defaultLockGracePeriod: TimeInterval = 120
    /// The carriers the email drives for, when the code was right and it
    /// drives for several: the code screen offers them (`chooseCarrier`).
    public private(set) var carrierChoices: [CarrierChoice] = []
    /// The right code, kept (in memory only) until a carrier is chosen.
    private var codeAwaitingCarrier: (email: String, code: String)?

    nonisolated static let pinKey = "pin"
    nonisolated static let pinFailuresKey = "pin_failures"
    nonisolated static let biometricsKey = "biometrics"
    /// A PIN set offline, until it reaches the server.
    nonisolated static let pendingPINKey = "pin_pending_upload"
    /// Refresh tokens of sessions whose logout could not reach the server:
    /// sent later, so the session (and the device token it registered) ends there too.
    nonisolated static let pendingLogoutsKey = "logouts_pending"
    public nonisolated static let maxPINAttempts = 5

    let database: AppDatabase
    let api: APIClient
    let credentials: CredentialStore
    let secureStore: any SecureStore
    let biometrics: any Biometrics
    let pinHashCost: Int
    let clock: @Sendable () -> Date
    let uptime: @Sendable () -> TimeInterval
    /// Told when a session starts and ends, to start and stop syncing.
    var onSignedIn: @MainActor () -> Void = {}
    /// Stops syncing and uploading; returns once nothing is in flight.
    var onSignedOut: @MainActor () async -> Void = {}

    init(database: AppDatabase, api: APIClient, credentials: CredentialStore, secureStore: any SecureStore,
         biometrics: any Biometrics, pinHashCost: Int, clock: @escaping @Sendable () -> Date,
         uptime: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }) {
        self.database = database
        self.api = api
        self.credentials = credentials
        self.secureStore = secureStore
        self.biometrics = biometrics
        self.pinHashCost = pinHashCost
        self.clock = clock
        self.uptime = uptime
        biometricsEnabled = (try? secureStore.data(for: Self.biometricsKey)) != nil
        deviceUsedBefore = (try? database.deviceState())?.usedBefore ?? false
        let account = try? database.account()
        state = account.map { $0.pinSet ? .locked : .needsPINSetup } ?? .signedOut
        // A code asked for before the app was closed: back to the code screen while it is still good.
        if account == nil, let code = (try? database.deviceState())?.pendingCode,
           clock().timeIntervalSince(code.sentAt) < AppRouter.codeResumeWindow {
            state = .codeSent(email: code.email)
        }
        setAsideWork = Self.setAside(database, secureStore)
    }

    private static func setAside(_ database: AppDatabase, _ secureStore: any SecureStore) -> [SetAsideWork] {
        ((try? database.setAsideWork()) ?? []).map { work in
            SetAsideWork(email: work.email, changes: work.changes, files: work.files,
                         sentInTheirName: ((try? secureStore.data(for: HandOver.key(for: work.owner))) ?? nil) != nil)
        }
    }

    /// Reads again what other drivers left on this phone (the hand-over sends it).
    public func refreshSetAsideWork() { setAsideWork = Self.setAside(database, secureStore) }

    public var canUseBiometrics: Bool { biometricsEnabled && biometrics.isAvailable }
    /// The device has Face ID or Touch ID set up (whether or not the driver turned it on here).
    public var biometricsAvailable: Bool { biometrics.isAvailable }

    // MARK: Email code

    /// Sends a sign-in code (also "Forgot PIN" from the lock screen, which
    /// `cancelCode` returns to).
    public func sendCode(to email: String) async throws {
        try await run {
            let _: SendCodeResponse = try await api.send(.sendCode, body: SendCodeRequest(email: email))
            if case .codeSent = state {} else { beforeCode = state }
            let address = email.trimmingCharacters(in: .whitespaces).lowercased()
            state = .codeSent(email: address)
            if try database.account() == nil { try? database.setPendingCode(address, at: clock()) }
        }
    }

    /// Verifies the code and signs in: the driver record comes with the
    /// session (looked up by auth user id on the server).
    public func verify(code: String) async throws {
        guard case .codeSent(let email) = state else { return }
        try await verify(email: email, code: code)
    }

    /// Verifies a code for an email directly (a client that asked for the
    /// code in an earlier run, like the terminal client).
    public func verify(email: String, code: String, carrier: ID<Tenant>? = nil) async throws {
        try await run {
            let session = try await signIn(email: email, code: code, carrier: carrier)
            guard let driver = session.driver else {
                // Not a driver (a dispatcher's account): this app is for drivers.
                try? await api.send(.logout, body: LogoutRequest(refreshToken: session.refreshToken))
                throw AuthError.driverNotFound
            }
            // A PIN on the device belongs to the driver who is still signed in; anyone else sets their own.
            if try database.account()?.userID != session.user.id { try? secureStore.remove(Self.pinKey) }
            try await handOverPreviousSession(to: session.user.id)
            try await credentials.start(session)
            // Another driver's unsynced work stays on the device, set aside: this driver never sees or sends it.
            try database.saveSignIn(user: session.user, driver: driver, now: clock())
            setAsideWork = Self.setAside(database, secureStore)
            beforeCode = nil
            deviceUsedBefore = true
            try? database.setPendingCode(nil, at: clock())
            try secureStore.remove(Self.pinFailuresKey)
            // Signing in with email proves who this is: a PIN already on the device opens the app directly.
            let pinSet = (try? secureStore.data(for: Self.pinKey)) != nil
            try database.setPINState(set: pinSet, serverPending: false)
            state = pinSet ? .unlocked : .needsPINSetup
            onSignedIn()
        }
    }

    /// Signs in to the carrier chosen among `carrierChoices`, with the code
    /// already checked.
    public func chooseCarrier(_ carrier: ID<Tenant>) async throws {
        guard let (email, code) = codeAwaitingCarrier else { return }
        try await verify(email: email, code: code, carrier: carrier)
    }

    /// The session of a right code. A person who drives for several carriers
    /// chooses one; driving for one only (dispatching for others), they go
    /// straight to it.
    private func signIn(email: String, code: String, carrier: ID<Tenant>?) async throws -> AuthSession {
        do {
            let session: AuthSession = try await api.send(.verifyCode, body: VerifyCodeRequest(email: email, code: code, carrierID: carrier))
            carrierChoices = []
            codeAwaitingCarrier = nil
            return session
        } catch let error as APIError where error.code == .driverNotFound {
            throw AuthError.driverNotFound
        } catch let error as APIError where error.code == .carrierRequired && carrier == nil {
            guard case .server(_, let body) = error else { throw error }
            let driving = (body.carriers ?? []).filter { $0.role == .driver }
            if driving.count == 1 { return try await signIn(email: email, code: code, carrier: driving[0].id) }
            guard !driving.isEmpty else { throw AuthError.driverNotFound }
            carrierChoices = driving
            codeAwaitingCarrier = (email, code)
            throw AuthError.carrierRequired
        }
    }

    /// Back from the code screen: to the lock screen when the driver came
    /// from "Forgot PIN" (the session is still good), else to sign-in.
    public func cancelCode() {
        guard case .codeSent = state else { return }
        if let previous = beforeCode, (try? database.account()) != nil {
            state = previous
        } else {
            state = .signedOut
        }
        beforeCode = nil
        carrierChoices = []
        codeAwaitingCarrier = nil
        try? database.setPendingCode(nil, at: clock())
    }

    // MARK: PIN

    /// Sets the 4-digit PIN: hashed here with scrypt and kept in the secure
    /// store; also sent to the server (later, if offline).
    public func setUpPIN(_ pin: String) async throws {
        guard PINRequest.isValid(pin) else {
            message = AuthError.pinFormat.description
            throw AuthError.pinFormat
        }
        try await run {
            let cost = pinHashCost
            let hash = try await Task.detached { try PINHasher.hash(pin, cost: cost) }.value
            try secureStore.set(Data(hash.utf8), for: Self.pinKey)
            try secureStore.remove(Self.pinFailuresKey)
            try database.setPINState(set: true, serverPending: true)
            await pushPINToServer(hash: hash)
            state = .unlocked
        }
    }

    /// The server takes the PIN as the scrypt hash made here; offline, that
    /// hash (never the PIN) waits in the secure store for the next sync.
    func pushPINToServer(hash: String) async {
        do {
            try await api.send(.setPIN, body: PINRequest(pinHash: hash))
            try secureStore.remove(Self.pendingPINKey)
            try database.setPINState(set: true, serverPending: false)
        } catch {
            try? secureStore.set(Data(hash.utf8), for: Self.pendingPINKey)
        }
    }

    /// Reopens the app without the PIN, for a client that keeps its own
    /// short unlock window after a PIN check (the terminal client, where
    /// every command is a new process).
    public func resumeUnlocked() {
        if state == .locked { state = .unlocked }
    }

    /// The app went to the background: the grace period starts.
    public func movedToBackground() {
        leftAt = state == .unlocked ? (clock(), uptime()) : nil
    }

    /// The app is in front again: locked if it was away for the grace period
    /// or longer by either clock. The device's clock counts time asleep; the
    /// seconds since boot cannot be set, so turning the clock back never
    /// skips the PIN (and a clock that went back locks at once).
    public func cameToForeground() {
        guard let left = leftAt else { return }
        leftAt = nil
        let (wall, boot) = (clock().timeIntervalSince(left.wall), uptime() - left.boot)
        if wall < 0 || boot < 0 || max(wall, boot) >= lockGracePeriod { lock() }
    }

    /// Locks the app now.
    public func lock() {
        if state == .unlocked, (try? database.account())?.pinSet == true { state = .locked }
    }

    /// Checks the PIN on the device (works offline). After five wrong PINs
    /// the driver must sign in with email again; unsynced work is kept.
    public func unlock(pin: String) async throws {
        guard state == .locked else { return }
        guard PINRequest.isValid(pin) else { throw AuthError.pinFormat }
        try await run {
            guard let stored = try secureStore.data(for: Self.pinKey).map({ String(decoding: $0, as: UTF8.self) }) else {
                throw AuthError.pinLockedOut
            }
            let matches = await Task.detached { PINHasher.verify(pin, against: stored) }.value
            if matches {
                try secureStore.remove(Self.pinFailuresKey)
                state = .unlocked
                return
            }
            let failures = (try secureStore.data(for: Self.pinFailuresKey).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0) + 1
            try secureStore.set(Data(String(failures).utf8), for: Self.pinFailuresKey)
            guard failures < Self.maxPINAttempts else {
                await endSession(message: AuthError.pinLockedOut.description)
                throw AuthError.pinLockedOut
            }
            throw AuthError.invalidPIN(attemptsLeft: Self.maxPINAttempts - failures)
        }
    }

    /// Face ID / Touch ID, once a PIN is set and the driver turned it on.
    @discardableResult
    public func unlockWithBiometrics() async -> Bool {
        guard state == .locked, canUseBiometrics else { return false }
        if await biometrics.authenticate(reason: "Unlock VroomX") {
            state = .unlocked
            return true
        }
        return false
    }

    public func setBiometrics(enabled: Bool) async -> Bool {
        if enabled {
            guard biometrics.isAvailable, (try? database.account())?.pinSet == true,
                  await biometrics.authenticate(reason: "Use biometrics to unlock VroomX") else { return false }
            try? secureStore.set(Data([1]), for: Self.biometricsKey)
        } else {
            try? secureStore.remove(Self.biometricsKey)
        }
        biometricsEnabled = enabled
        return true
    }

    // MARK: Ending the session

    /// Logout clears the session, cached data, tokens and PIN (seed 004).
    /// It refuses while changes have not reached the server, unless forced.
    public func logout(force: Bool = false) async throws {
        // Refusals not dropped and kept evidence are not waiting to go, but signing out would delete them: they count here.
        let unsynced = try database.atStakeCount()
        if unsynced > 0, !force {
            let error = AuthError.unsyncedChanges(count: unsynced, atStake: (try? database.atStake()) ?? "")
            message = error.description
            throw error
        }
        // Nothing in flight may refill the cache after it is cleared.
        await onSignedOut()
        // No more pushes for this driver on this device (the token itself stays: it is the app's).
        if let token = try? database.account()?.registeredPushToken {
            try? await api.send(.removeDeviceToken, token)
        }
        if let refresh = await credentials.current?.refreshToken {
            do {
                try await api.send(.logout, body: LogoutRequest(refreshToken: refresh))
            } catch let error as APIError where error.isTransient {
                // Offline: the session (and the device token it registered) ends on the server later.
                rememberPendingLogout(refresh)
            } catch {}
        }
        await credentials.clear()
        for key in [Self.pinKey, Self.pinFailuresKey, Self.biometricsKey, Self.pendingPINKey] { try? secureStore.remove(key) }
        biometricsEnabled = false
        try database.clearForLogout()
        message = nil
        state = .signedOut
    }

    /// Someone signs in on a phone where another driver is still signed in:
    /// that driver's session is parked while their work has not all reached
    /// dispatch (`HandOver` sends it in their name, then ends the session),
    /// or ended on the server now when nothing of theirs waits. A driver who
    /// signs in again takes their parked session's work back as their own.
    private func handOverPreviousSession(to user: ID<User>) async throws {
        let parkedKey = HandOver.key(for: user.rawValue)
        if let parked = try? secureStore.data(for: parkedKey),
           let session = try? CacheJSON.decoder.decode(Credentials.self, from: parked) {
            rememberPendingLogout(session.refreshToken)
            try? secureStore.remove(parkedKey)
        }
        guard let previous = try database.account(), previous.userID != user,
              let refresh = await credentials.current?.refreshToken else { return }
        if try database.unsyncedCount(owner: previous.userID.rawValue) > 0 {
            try await credentials.park(as: HandOver.key(for: previous.userID.rawValue))
        } else {
            rememberPendingLogout(refresh)
        }
    }

    private func rememberPendingLogout(_ refreshToken: String) {
        var pending = (try? secureStore.data(for: Self.pendingLogoutsKey)).flatMap { try? JSONDecoder().decode([String].self, from: $0) } ?? []
        pending.append(refreshToken)
        if let data = try? JSONEncoder().encode(pending) { try? secureStore.set(data, for: Self.pendingLogoutsKey) }
    }

    /// Ends on the server the sessions whose logout could not get there
    /// (whoever is signed in now). Those the server answered go from the list.
    func sendPendingLogouts() async {
        guard let data = try? secureStore.data(for: Self.pendingLogoutsKey),
              let pending = try? JSONDecoder().decode([String].self, from: data), !pending.isEmpty else { return }
        var left: [String] = []
        for token in pending {
            do {
                try await api.send(.logout, body: LogoutRequest(refreshToken: token))
            } catch let error as APIError where error.isTransient {
                left.append(token)
            } catch {}
        }
        if left.isEmpty {
            try? secureStore.remove(Self.pendingLogoutsKey)
        } else if let data = try? JSONEncoder().encode(left) {
            try? secureStore.set(data, for: Self.pendingLogoutsKey)
        }
    }

    /// The server refused the session, or too many wrong PINs: back to email
    /// sign-in. Cached rows and unsynced work stay on the device.
    func endSession(message: String) async {
        // Often called from inside a sync (the server refused the session it used): stopping syncing
        // must not wait for that very sync, so it is not awaited here.
        let stop = onSignedOut
        Task { await stop() }
        await credentials.clear()
        try? secureStore.remove(Self.pinKey)
        try? secureStore.remove(Self.pinFailuresKey)
        try? database.endSession()
        self.message = message
        state = .signedOut
    }

    private func run(_ work: () async throws -> Void) async throws {
        isBusy = true
        defer { isBusy = false }
        do {
            try await work()
            message = nil
        } catch let error as AuthError {
            message = error.description
            throw error
        } catch let error as APIError {
            message = error.description
            throw error
        }
    }
}
