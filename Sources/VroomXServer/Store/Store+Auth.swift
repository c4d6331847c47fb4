import Foundation
import VroomXModels

/// Sign-in codes, sessions with rotating refresh tokens, and PINs.
extension Store {
    // MARK: One-time codes

    /// Stores the (hashed) code for an email, replacing any earlier one.
    func saveCode(email: String, codeHash: String, expiresAt: Date) async throws {
        let now = self.now
        try await writeRows { db in
            try await db.execute("""
                INSERT INTO otp_codes (email, code_hash, attempts, created_at, expires_at)
                VALUES (\(email), \(codeHash), 0, \(now), \(expiresAt))
                ON CONFLICT (email) DO UPDATE SET code_hash = excluded.code_hash, attempts = 0,
                    created_at = excluded.created_at, expires_at = excluded.expires_at
                """)
        }
    }

    enum CodeCheck: Equatable {
        case valid
        case wrong(attemptsLeft: Int)
        case expired
        /// No code, or its attempts are used up.
        case none
    }

    /// Checks a code and consumes it when it matches. Every guess uses one
    /// of the code's attempts (claimed atomically, so parallel guesses cannot
    /// exceed the cap); the last wrong guess deletes it. With `keep` (the
    /// person has yet to choose a carrier) a right code stays, and the right
    /// guess gives its attempt back.
    func checkCode(email: String, matches: @Sendable (String) -> Bool, maxAttempts: Int, keep: Bool = false) async throws -> CodeCheck {
        let now = self.now
        return try await writeRows { db in
            guard let row = try await db.first("""
                UPDATE otp_codes SET attempts = attempts + 1
                WHERE email = \(email) AND attempts < \(maxAttempts)
                RETURNING code_hash, attempts, expires_at
                """) else {
                try await db.execute("DELETE FROM otp_codes WHERE email = \(email)")
                return .none
            }
            if try row.date("expires_at") <= now {
                try await db.execute("DELETE FROM otp_codes WHERE email = \(email)")
                return .expired
            }
            if matches(try row.string("code_hash")) {
                if keep {
                    try await db.execute("UPDATE otp_codes SET attempts = attempts - 1 WHERE email = \(email)")
                } else {
                    try await db.execute("DELETE FROM otp_codes WHERE email = \(email)")
                }
                return .valid
            }
            let attempts = try row.int("attempts")
            if attempts >= maxAttempts {
                try await db.execute("DELETE FROM otp_codes WHERE email = \(email)")
            }
            return .wrong(attemptsLeft: maxAttempts - attempts)
        }
    }

    func deleteCode(email: String) async throws {
        try await writeRows { db in try await db.execute("DELETE FROM otp_codes WHERE email = \(email)") }
    }

    // MARK: Sessions and refresh tokens

    /// Starts a session with its first refresh token. Signing in with a code
    /// also clears a PIN lockout. A driver's row is checked (and held) here,
    /// so a sign-in that races their deactivation either ends first — and
    /// the deactivation revokes it — or is refused.
    func createSession(user: User, refreshTokenHash: String, lifetime: TimeInterval) async throws -> ID<Session> {
        let session = ID<Session>()
        let now = self.now
        try await writeRows { db in
            if user.role == .driver {
                let driver = try await db.first("""
                    SELECT d.deactivated_at FROM drivers d WHERE d.tenant_id = \(user.tenantID) AND d.user_id = \(user.id)\(Self.lockingRows(db, of: "d"))
                    """)
                if try driver?.optionalDate("deactivated_at") != nil { throw AppError.accountDeactivated }
            }
            try await db.execute("""
                INSERT INTO sessions (id, tenant_id, user_id, created_at, expires_at)
                VALUES (\(session), \(user.tenantID), \(user.id), \(now), \(now.addingTimeInterval(lifetime)))
                """)
            try await db.execute("INSERT INTO refresh_tokens (token_hash, session_id, issued_at) VALUES (\(refreshTokenHash), \(session), \(now))")
            try await db.execute("UPDATE users SET pin_failed_attempts = 0 WHERE id = \(user.id)")
        }
        return session
    }

    enum RotationResult: Equatable {
        case rotated(session: ID<Session>, user: ID<User>, tenant: ID<Tenant>)
        case unknown
        case expired
        case revoked
        /// An already-rotated token came back when it may not be: the session
        /// is revoked (someone may hold a stolen copy). Says why, for the log.
        case reused(String)
    }

    /// Exchanges a refresh token for its successor (the caller derives it
    /// from the token, so the same token always has the same successor).
    /// A token already rotated is answered with that same successor again
    /// — a client that lost the answer, or a second process that refreshed
    /// at the same moment — only while the successor itself has not been
    /// used, at most `maxReplays` times within `replayWindow`: one lineage
    /// stays valid and nothing new is issued. Anything else presenting a
    /// rotated token means a copy is in other hands, and the session ends;
    /// a thief who replays first shares the lineage with its owner, and
    /// whichever of them uses it second ends the session.
    func rotateRefreshToken(hash: String, successorHash: String, replayWindow: TimeInterval, maxReplays: Int) async throws -> RotationResult {
        let now = self.now
        return try await writeEndingSessions { db in
            guard let row = try await db.first("""
                SELECT r.session_id, r.rotated_at, r.grace_uses, s.user_id, s.tenant_id, s.expires_at, s.revoked_at
                FROM refresh_tokens r JOIN sessions s ON s.id = r.session_id
                WHERE r.token_hash = \(hash)
                """) else { return (.unknown, []) }
            let session: ID<Session> = try row.id("session_id")
            if try row.optionalDate("revoked_at") != nil { return (.revoked, []) }
            if try row.date("expires_at") <= now { return (.expired, []) }
            let rotated: RotationResult = .rotated(session: session, user: try row.id("user_id"), tenant: try row.id("tenant_id"))
            // Claim the token atomically: of two concurrent refreshes with it, one wins here.
            let claimed = try await db.first("""
                UPDATE refresh_tokens SET rotated_at = \(now) WHERE token_hash = \(hash) AND rotated_at IS NULL
                RETURNING token_hash
                """) != nil
            if claimed {
                try await db.execute("""
                    INSERT INTO refresh_tokens (token_hash, session_id, issued_at) VALUES (\(successorHash), \(session), \(now))
                    """)
                return (rotated, [])
            }
            let rotatedAt = try await db.first("SELECT rotated_at FROM refresh_tokens WHERE token_hash = \(hash)")?
                .optionalDate("rotated_at") ?? .distantPast
            let successor = try await db.first("""
                SELECT rotated_at FROM refresh_tokens WHERE token_hash = \(successorHash) AND session_id = \(session)
                """)
            let successorRotated = try successor?.optionalDate("rotated_at") != nil
            // A replay is claimed like the rotation: of concurrent replays, at most `maxReplays` in all get one
            // (the count read above may be stale by the time this transaction holds the row).
            var replayable = now.timeIntervalSince(rotatedAt) <= replayWindow && successor != nil && !successorRotated
            if replayable {
                replayable = try await db.first("""
                    UPDATE refresh_tokens SET grace_uses = grace_uses + 1 WHERE token_hash = \(hash) AND grace_uses < \(maxReplays)
                    RETURNING grace_uses
                    """) != nil
            }
            guard replayable else {
                let replays = try await db.first("SELECT grace_uses FROM refresh_tokens WHERE token_hash = \(hash)")?.int("grace_uses") ?? 0
                try await db.execute("""
                    UPDATE sessions SET revoked_at = \(now), revoked_reason = 'refresh_token_reused' WHERE id = \(session)
                    """)
                try await db.execute("DELETE FROM device_tokens WHERE session_id = \(session)")
                let age = Int(now.timeIntervalSince(rotatedAt))
                return (.reused(successorRotated ? "rotated \(age) s ago; its successor was used since"
                                : "rotated \(age) s ago; \(replays) replays so far"), [session])
            }
            return (rotated, [])
        }
    }

    /// Revokes the session a refresh token belongs to. Returns the session,
    /// or nil when the token is unknown.
    func revokeSession(refreshTokenHash: String, reason: String) async throws -> ID<Session>? {
        let now = self.now
        return try await writeEndingSessions { db in
            guard let row = try await db.first("SELECT session_id FROM refresh_tokens WHERE token_hash = \(refreshTokenHash)") else {
                return (nil, [])
            }
            let session: ID<Session> = try row.id("session_id")
            try await db.execute("""
                UPDATE sessions SET revoked_at = \(now), revoked_reason = \(reason) WHERE id = \(session) AND revoked_at IS NULL
                """)
            try await db.execute("DELETE FROM device_tokens WHERE session_id = \(session)")
            return (session, [session])
        }
    }

    /// Whether a session may still be used (not revoked, not expired).
    func sessionIsActive(_ session: ID<Session>) async throws -> Bool {
        let now = self.now
        return try await read { db in
            try await db.first("""
                SELECT 1 AS active FROM sessions WHERE id = \(session) AND revoked_at IS NULL AND expires_at > \(now)
                """) != nil
        }
    }

    /// Which of these sessions are still active: one query for many (the
    /// realtime heartbeat checks every socket's session in a few).
    func activeSessions(among sessions: [ID<Session>]) async throws -> Set<ID<Session>> {
        guard !sessions.isEmpty else { return [] }
        let now = self.now
        return try await read { db in
            Set(try await db.query("""
                SELECT id FROM sessions WHERE id IN (\(SQL.list(sessions))) AND revoked_at IS NULL AND expires_at > \(now)
                """).map { try $0.id("id") })
        }
    }

    // MARK: PIN

    func setPIN(user: ID<User>, hash: String) async throws {
        try await writeRows { db in
            try await db.execute("UPDATE users SET pin_hash = \(hash), pin_failed_attempts = 0 WHERE id = \(user)")
        }
    }

    enum PINAttempt {
        case notSet
        case locked
        /// An attempt was counted; check the PIN against `hash`.
        case claimed(hash: String, attemptsUsed: Int)
    }

    /// Counts a PIN attempt before the PIN is checked, atomically, so that
    /// parallel guesses can never exceed the limit. A correct PIN then
    /// resets the count with `resetPINAttempts`.
    func claimPINAttempt(user: ID<User>, limit: Int) async throws -> PINAttempt {
        try await writeRows { db in
            guard let state = try await db.first("SELECT pin_hash, pin_failed_attempts FROM users WHERE id = \(user)") else {
                throw AppError.notFound("User")
            }
            guard try state.optionalString("pin_hash") != nil else { return .notSet }
            guard let row = try await db.first("""
                UPDATE users SET pin_failed_attempts = pin_failed_attempts + 1
                WHERE id = \(user) AND pin_failed_attempts < \(limit)
                RETURNING pin_hash, pin_failed_attempts
                """) else { return .locked }
            return .claimed(hash: try row.string("pin_hash"), attemptsUsed: try row.int("pin_failed_attempts"))
        }
    }

    func resetPINAttempts(user: ID<User>) async throws {
        try await writeRows { db in try await db.execute("UPDATE users SET pin_failed_attempts = 0 WHERE id = \(user)") }
    }

    func pinFailedAttempts(user: ID<User>) async throws -> Int {
        try await read { db in try await db.first("SELECT pin_failed_attempts FROM users WHERE id = \(user)")?.int("pin_failed_attempts") ?? 0 }
    }

    // MARK: Rate limits

    /// Takes back a hit `hit` counted for what then did not happen (a refused
    /// invitation is no invitation).
    func unhit(bucket: String, key: String) async throws {
        try await writeRows { db in
            try await db.execute("UPDATE rate_limits SET hits = hits - 1 WHERE bucket = \(bucket) AND key = \(key) AND hits > 0")
        }
    }

    /// Counts a hit against a fixed window. Returns nil when allowed, or the
    /// seconds until the window resets when over the limit.
    func hit(bucket: String, key: String, limit: Int, window: TimeInterval) async throws -> Int? {
        let now = self.now
        let windowMillis = Int64(window * 1000)
        let windowStart = WireTime.milliseconds(now) / windowMillis * windowMillis
        let row = try await writeRows { db in
            try await db.first("""
                INSERT INTO rate_limits (bucket, key, window_start, hits) VALUES (\(bucket), \(key), \(windowStart), 1)
                ON CONFLICT (bucket, key) DO UPDATE SET
                    hits = CASE WHEN rate_limits.window_start = excluded.window_start THEN rate_limits.hits + 1 ELSE 1 END,
                    window_start = excluded.window_start
                RETURNING hits
                """)
        }
        guard let hits = try row?.int("hits"), hits > limit else { return nil }
        return max(1, Int((windowStart + windowMillis - WireTime.milliseconds(now) + 999) / 1000))
    }

    /// Whether a key has had `limit` hits in the current window, without
    /// counting one: nil when not, or the seconds until the window resets.
    func overLimit(bucket: String, key: String, limit: Int, window: TimeInterval) async throws -> Int? {
        let now = WireTime.milliseconds(self.now)
        let windowMillis = Int64(window * 1000)
        let windowStart = now / windowMillis * windowMillis
        let hits = try await read { db in
            try await db.first("""
                SELECT hits FROM rate_limits WHERE bucket = \(bucket) AND key = \(key) AND window_start = \(windowStart)
                """)?.int("hits")
        } ?? 0
        guard hits >= limit else { return nil }
        return max(1, Int((windowStart + windowMillis - now + 999) / 1000))
    }

    /// Allows one hit per `interval` for a key. Returns nil when allowed, or
    /// the seconds to wait.
    func cooldown(bucket: String, key: String, interval: TimeInterval) async throws -> Int? {
        let now = WireTime.milliseconds(self.now)
        let intervalMillis = Int64(interval * 1000)
        return try await writeRows { db in
            let claimed = try await db.first("""
                INSERT INTO rate_limits (bucket, key, window_start, hits) VALUES (\(bucket), \(key), \(now), 1)
                ON CONFLICT (bucket, key) DO UPDATE SET window_start = excluded.window_start, hits = 1
                WHERE rate_limits.window_start <= \(now - intervalMillis)
                RETURNING window_start
                """)
            if claimed != nil { return nil }
            let last = try await db.first("SELECT window_start FROM rate_limits WHERE bucket = \(bucket) AND key = \(key)")
            return Self.secondsLeft(since: try last?.int64("window_start") ?? now, now: now, intervalMillis: intervalMillis) ?? 1
        }
    }

    /// The seconds until `cooldown` lets `key` through again, nil when it
    /// would now; changes nothing (a page showing how long to wait).
    func cooldownLeft(bucket: String, key: String, interval: TimeInterval) async throws -> Int? {
        let now = WireTime.milliseconds(self.now)
        let last = try await read { db in
            try await db.first("SELECT window_start FROM rate_limits WHERE bucket = \(bucket) AND key = \(key)")
        }
        guard let start = try last?.int64("window_start") else { return nil }
        return Self.secondsLeft(since: start, now: now, intervalMillis: Int64(interval * 1000))
    }

    private static func secondsLeft(since start: Int64, now: Int64, intervalMillis: Int64) -> Int? {
        let left = intervalMillis - (now - start)
        return left > 0 ? Int((left + 999) / 1000) : nil
    }

    /// Deletes what has outlived its use: expired codes, old rate-limit
    /// windows, sessions expired a week ago.
    public func pruneExpiredAuthData() async throws {
        let now = WireTime.milliseconds(self.now)
        try await writeRows { db in
            try await db.execute("DELETE FROM otp_codes WHERE expires_at < \(now)")
            try await db.execute("DELETE FROM rate_limits WHERE window_start < \(now - 86_400_000)")
            // A session's device tokens go when it ends; the session row a week later.
            try await db.execute("""
                DELETE FROM device_tokens WHERE session_id IN (SELECT id FROM sessions WHERE expires_at < \(now) OR revoked_at IS NOT NULL)
                """)
            try await db.execute("DELETE FROM sessions WHERE expires_at < \(now - 7 * 86_400_000)")
        }
    }
}

/// Tag for session ids.
public enum Session {}
