import Foundation
import Logging
import NIOPosix
import VroomXModels
import VroomXSecurity

/// The limits that protect sign-in. Each is explicit and configurable.
public struct AuthPolicy: Sendable {
    public var codeLifetime: TimeInterval = 600
    public var codeMaxAttempts = 5
    public var codeResendInterval: TimeInterval = 60
    /// Code requests per client address per window.
    public var codeSendsPerAddress = 10
    /// Code checks per client address per window.
    public var codeChecksPerAddress = 30
    public var addressWindow: TimeInterval = 900
    /// Wrong codes one email may see per day, whoever sends them and from
    /// however many addresses; then no code is checked or sent until the
    /// day's window ends. 20 a day makes guessing one 6-digit code a
    /// 1-in-1,600 chance per month (per-code and per-address limits alone
    /// allowed ~7,200 guesses a day).
    public var codeFailuresPerEmail = 20
    public var failureWindow: TimeInterval = 86_400
    public var accessTokenLifetime: TimeInterval = 3600
    /// A session (its chain of refresh tokens) ends this long after sign-in.
    public var sessionLifetime: TimeInterval = 60 * 86_400
    /// A rotated refresh token whose successor was never used is answered
    /// again with that successor (the client lost the answer, however long
    /// ago it asked), at most `refreshReplays` times within this window. A
    /// phone on a network that loses answers, behind a proxy that repeats
    /// requests, or killed mid-refresh, presents one token many times; a
    /// copy in other hands is still caught the moment the lineage moves on.
    public var refreshReplayWindow: TimeInterval = 24 * 3600
    /// Eight: a repeated request spends two, and a copy in other hands gains nothing from a ninth.
    public var refreshReplays = 8
    /// A dispatcher's browser session ends after this long unused…
    public var consoleIdleTimeout: TimeInterval = 12 * 3600
    /// …and this long after sign-in however much it is used.
    public var consoleSessionLifetime: TimeInterval = 7 * 86_400
    /// Drivers a carrier may add (each mailed an invitation) per hour: a
    /// dispatcher's account in other hands cannot mail the world from us.
    public var invitationsPerHour = 200
    public var pinMaxAttempts = 5
    /// scrypt cost exponent for PIN hashes.
    public var pinHashCost = PINHasher.defaultCost

    public init() {}
}

/// Email one-time-code sign-in, sessions and PINs (seed 004, made safe).
struct AuthService: Sendable {
    let store: Store
    let secrets: Secrets
    let tokens: TokenService
    let authenticator: Authenticator
    let mail: AccountMail
    let policy: AuthPolicy
    let logger: Logger

    /// Sends a code to a known email. The answer, its timing and the rate
    /// limits are the same for unknown emails (which get a code that is never
    /// delivered), so the endpoint reveals nothing about who has an account.
    func sendCode(_ request: SendCodeRequest, clientAddress: String?) async throws -> SendCodeResponse {
        let email = try Validate.email(request.email)
        try await limitPerAddress("otp_send", clientAddress, limit: policy.codeSendsPerAddress)
        try await refuseAfterTooManyFailures(email)
        if let wait = try await store.cooldown(bucket: "otp_email", key: email, interval: policy.codeResendInterval) {
            throw Self.codeRecentlySent(wait)
        }
        let code = String(format: "%06d", UInt32.random(in: 0...999_999))
        try await store.saveCode(email: email, codeHash: secrets.codeHash(email: email, code: code),
                                 expiresAt: store.clock.now.addingTimeInterval(policy.codeLifetime))
        if try await !store.people.accounts(email: email).isEmpty {
            mail.sendCode(code, to: email, validMinutes: Int(policy.codeLifetime / 60))
        }
        return SendCodeResponse(message: "If this email belongs to a VroomX account, a sign-in code is on its way.",
                                resendAfter: Int(policy.codeResendInterval))
    }

    /// The seconds before another code can be sent to this email, nil when
    /// one can now (the console keeps counting down after a wrong code).
    func codeResendWait(email: String) async throws -> Int? {
        guard let email = try? Validate.email(email) else { return nil }
        return try await store.cooldownLeft(bucket: "otp_email", key: email, interval: policy.codeResendInterval)
    }

    func verifyCode(_ request: VerifyCodeRequest, clientAddress: String?) async throws -> AuthSession {
        let user = try await checkCode(request, clientAddress: clientAddress, for: nil)
        let driver = try await linkedDriver(of: user)
        let refreshToken = SecureToken.random()
        let session = try await store.createSession(user: user, refreshTokenHash: SecureToken.sha256Hex(refreshToken),
                                                    lifetime: policy.sessionLifetime)
        let access = try await tokens.issue(user: user, driver: driver?.id, session: session)
        logger.info("signed in", metadata: ["user": "\(user.id)", "tenant": "\(user.tenantID)", "role": "\(user.role.rawValue)"])
        return AuthSession(accessToken: access.token, expiresAt: access.expiresAt, refreshToken: refreshToken,
                           user: try await store.people.user(user.id, tenant: user.tenantID), driver: driver)
    }

    /// The dispatch console's sign-in: the same code check, limits and log
    /// line as the app's; a browser session instead of tokens. Drivers are
    /// refused before any session is made.
    func signInToConsole(_ request: VerifyCodeRequest, clientAddress: String?) async throws -> String {
        let user = try await checkCode(request, clientAddress: clientAddress, for: .dispatcher)
        let token = SecureToken.random()
        _ = try await store.createConsoleSession(user: user, tokenHash: SecureToken.sha256Hex(token), csrfToken: SecureToken.random(),
                                                 lifetime: policy.consoleSessionLifetime)
        logger.info("signed in", metadata: ["user": "\(user.id)", "tenant": "\(user.tenantID)", "role": "\(user.role.rawValue)",
                                            "client": "console"])
        return token
    }

    /// Checks an emailed code under every limit; the account it signs in to
    /// (of `role` only, when given). An email with accounts at several
    /// carriers names one in `carrier_id`; until it does, a right code is
    /// answered `carrier_required` with the carriers and stays good.
    private func checkCode(_ request: VerifyCodeRequest, clientAddress: String?, for role: UserRole?) async throws -> User {
        let email = try Validate.email(request.email)
        let code = request.code.trimmingCharacters(in: .whitespaces)
        guard code.utf8.count == 6, code.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw AppError.validation("code", "The code is 6 digits.")
        }
        try await limitPerAddress("otp_verify", clientAddress, limit: policy.codeChecksPerAddress)
        try await refuseAfterTooManyFailures(email)
        let accounts = try await store.people.accounts(email: email)
        let eligible = accounts.filter { role == nil || $0.user.role == role }
        let chosen = Self.account(among: eligible, carrier: request.carrierID)
        let expected = secrets.codeHash(email: email, code: code)
        let check = try await store.checkCode(email: email, matches: { stored in
            constantTimeEqual(Array(stored.utf8), Array(expected.utf8))
        }, maxAttempts: policy.codeMaxAttempts, keep: chosen == nil && !eligible.isEmpty)
        switch check {
        case .valid:
            break
        case .expired:
            throw AppError(401, .codeExpired, "This code has expired. Request a new one.")
        case .wrong(let left):
            if let wait = try await store.hit(bucket: "otp_fail_email", key: email, limit: policy.codeFailuresPerEmail - 1,
                                              window: policy.failureWindow) {
                try await store.deleteCode(email: email)
                throw Self.tooManyFailures(wait)
            }
            if left > 0 { throw AppError(401, .invalidCode, "That code is not right.", attemptsLeft: left) }
            throw AppError(401, .invalidCode, "No valid code for this email. Request a new one.", attemptsLeft: 0)
        case .none:
            throw AppError(401, .invalidCode, "No valid code for this email. Request a new one.", attemptsLeft: 0)
        }
        guard !accounts.isEmpty else {
            throw AppError(401, .invalidCode, "No valid code for this email. Request a new one.", attemptsLeft: 0)
        }
        guard !eligible.isEmpty else {
            throw AppError(403, .forbidden, "The dispatch console is for dispatchers. Drivers use the VroomX app on their phone.")
        }
        guard let chosen else { throw Self.carrierRequired(eligible.filter { !$0.deactivated }.map(\.choice)) }
        return chosen.user
    }

    /// The account a sign-in goes to: the carrier named, else the one account
    /// not deactivated; nil when the person must choose. When every account
    /// is deactivated, the first, whose refusal says so.
    static func account(among accounts: [Account], carrier: ID<Tenant>?) -> Account? {
        if let carrier { return accounts.first { $0.user.tenantID == carrier } }
        let active = accounts.filter { !$0.deactivated }
        if active.count == 1 { return active[0] }
        return active.isEmpty ? accounts.first : nil
    }

    static func carrierRequired(_ choices: [CarrierChoice]) -> AppError {
        var error = AppError(409, .carrierRequired,
                             "This email signs in at \(choices.count) carriers. Choose one and send the same code with its carrier_id.",
                             field: "carrier_id")
        error.body.carriers = choices
        return error
    }

    /// The driver record of a driver user, looked up by auth user id.
    func linkedDriver(of user: User) async throws -> Driver? {
        guard user.role == .driver else { return nil }
        guard let driver = try await store.people.driver(userID: user.id, tenant: user.tenantID) else {
            throw AppError(403, .driverNotFound, "Driver account not found. Contact your dispatcher.")
        }
        guard driver.deactivatedAt == nil else { throw AppError.accountDeactivated }
        return driver
    }

    func refresh(_ request: RefreshRequest) async throws -> AuthSession {
        let newToken = secrets.refreshSuccessor(of: request.refreshToken)
        let result = try await store.rotateRefreshToken(hash: SecureToken.sha256Hex(request.refreshToken),
                                                        successorHash: SecureToken.sha256Hex(newToken),
                                                        replayWindow: policy.refreshReplayWindow, maxReplays: policy.refreshReplays)
        switch result {
        case .rotated(let session, let userID, let tenant):
            let user = try await store.people.user(userID, tenant: tenant)
            let driver = try await linkedDriver(of: user)
            let access = try await tokens.issue(user: user, driver: driver?.id, session: session)
            return AuthSession(accessToken: access.token, expiresAt: access.expiresAt, refreshToken: newToken, user: user, driver: driver)
        case .unknown:
            throw AppError(401, .invalidRefreshToken, "The refresh token is not valid. Sign in again.")
        case .expired:
            throw AppError(401, .invalidRefreshToken, "The session has expired. Sign in again.")
        case .revoked:
            throw AppError.sessionEnded
        case .reused(let why):
            logger.warning("refresh token reuse (\(why)): session revoked")
            throw AppError(401, .refreshTokenReused, "This refresh token was already used; the session has been ended for safety. Sign in again.")
        }
    }

    /// Ends the session of a refresh token. Logging out twice is fine.
    func logout(_ request: LogoutRequest) async throws {
        if let session = try await store.revokeSession(refreshTokenHash: SecureToken.sha256Hex(request.refreshToken), reason: "logout") {
            authenticator.forget(session)
        }
    }

    /// Sets the PIN, from the PIN itself or from the scrypt hash the app
    /// made (then it must use this server's cost exactly).
    func setPIN(_ request: PINRequest, identity: Identity) async throws {
        let cost = policy.pinHashCost
        if let pinHash = request.pinHash {
            guard PINHasher.isWellFormed(pinHash, cost: cost) else {
                throw AppError.validation("pin_hash", "pin_hash must be scrypt$\(1 << cost)$8$1$<salt>$<key> as the app makes it.")
            }
        } else {
            guard PINRequest.isValid(request.pin) else { throw AppError.validation("pin", "The PIN is exactly 4 digits.") }
        }
        if try await store.pinFailedAttempts(user: identity.user) >= policy.pinMaxAttempts {
            throw AppError(423, .pinLocked, "PIN unlock is locked after too many wrong PINs. Sign in with your email to set a new PIN.",
                           attemptsLeft: 0)
        }
        let pin = request.pin
        let hash: String
        if let pinHash = request.pinHash {
            hash = pinHash
        } else {
            hash = try await NIOThreadPool.singleton.runIfActive { try PINHasher.hash(pin, cost: cost) }
        }
        try await store.setPIN(user: identity.user, hash: hash)
    }

    func verifyPIN(_ request: PINRequest, identity: Identity) async throws -> PINVerifyResponse {
        guard PINRequest.isValid(request.pin) else { throw AppError.validation("pin", "The PIN is exactly 4 digits.") }
        let limit = policy.pinMaxAttempts
        switch try await store.claimPINAttempt(user: identity.user, limit: limit) {
        case .notSet:
            throw AppError(409, .pinNotSet, "No PIN is set; set one first.")
        case .locked:
            throw AppError(423, .pinLocked, "PIN unlock is locked after too many wrong PINs. Sign in with your email.", attemptsLeft: 0)
        case .claimed(let hash, let used):
            let matches = try await NIOThreadPool.singleton.runIfActive { PINHasher.verify(request.pin, against: hash) }
            if matches {
                try await store.resetPINAttempts(user: identity.user)
                return PINVerifyResponse(ok: true, attemptsLeft: limit)
            }
            if used >= limit {
                throw AppError(423, .pinLocked, "Too many wrong PINs. Sign in with your email to unlock.", attemptsLeft: 0)
            }
            throw AppError(403, .pinIncorrect, "That PIN is not right.", attemptsLeft: limit - used)
        }
    }

    /// After the day's allowance of wrong codes for an email, nothing is
    /// checked and no new code is sent until the window ends.
    private func refuseAfterTooManyFailures(_ email: String) async throws {
        if let wait = try await store.overLimit(bucket: "otp_fail_email", key: email, limit: policy.codeFailuresPerEmail,
                                                window: policy.failureWindow) {
            throw Self.tooManyFailures(wait)
        }
    }

    /// One code per email a minute: this email's last code is under a minute old
    /// (the field says it is the email that waits, not the client).
    static func codeRecentlySent(_ wait: Int) -> AppError {
        AppError(429, .rateLimited, "A code was sent to this email less than a minute ago. Ask again in \(wait) s.", field: "email",
                 retryAfter: wait)
    }

    static func tooManyFailures(_ wait: Int) -> AppError {
        AppError(429, .rateLimited, "Too many wrong codes for this email today. Try again in \(max(1, wait / 3600)) h.", retryAfter: wait)
    }

    private func limitPerAddress(_ bucket: String, _ address: String?, limit: Int) async throws {
        guard let address else { return }
        if let wait = try await store.hit(bucket: bucket, key: ClientAddress.limitKey(address), limit: limit, window: policy.addressWindow) {
            throw AppError.rateLimited(retryAfter: wait)
        }
    }
}
