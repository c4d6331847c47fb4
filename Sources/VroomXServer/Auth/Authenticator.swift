import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import VroomXModels

/// Turns the `Authorization: Bearer …` header into an identity: the token
/// must verify, and its session must still be active. An active session is
/// cached for a few seconds per instance; one that ends (sign-out,
/// deactivation, a reused refresh token) is refused at once on every
/// instance (`EndedSessions`), and within `sessionCacheTTL` at worst, should
/// an instance miss the news.
struct Authenticator: Sendable {
    let tokens: TokenService
    let store: Store
    let sessionCacheTTL: TimeInterval
    private let cache = NIOLockedValueBox<[ID<Session>: (active: Bool, checkedAt: Date)]>([:])
    /// When this instance last recorded each driver as seen.
    private let seen = NIOLockedValueBox<[ID<Driver>: Date]>([:])

    init(tokens: TokenService, store: Store, sessionCacheTTL: TimeInterval = 10) {
        self.tokens = tokens
        self.store = store
        self.sessionCacheTTL = sessionCacheTTL
    }

    /// - Parameter queryTokenAllowed: also take the token from `?access_token=`
    ///   (the realtime socket, for WebSocket clients that cannot set headers).
    func authenticate(_ request: Request, queryTokenAllowed: Bool = false) async throws -> Identity {
        if queryTokenAllowed, request.headers[.authorization] == nil, let token = request.uri.queryParameters.get("access_token") {
            return try await authenticate(token: token)
        }
        guard let header = request.headers[.authorization] else {
            throw AppError(401, .missingToken, "Send an access token: Authorization: Bearer <token>.")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw AppError(401, .invalidToken, "The Authorization header must be: Bearer <token>.")
        }
        return try await authenticate(token: parts[1].trimmingHorizontalSpace())
    }

    func authenticate(token: String) async throws -> Identity {
        let identity = try await tokens.verify(token)
        guard try await sessionIsActive(identity.session) else { throw AppError.sessionEnded }
        if let driver = identity.driver { await noteSeen(driver, tenant: identity.tenant) }
        return identity
    }

    /// Records a driver's "last seen" for dispatch, at most once a minute
    /// per driver and instance. A failure here never fails the request.
    private func noteSeen(_ driver: ID<Driver>, tenant: ID<Tenant>) async {
        let now = store.clock.now
        let due = seen.withLockedValue { seen in
            if let last = seen[driver], now.timeIntervalSince(last) < 60 { return false }
            if seen.count > 50_000 { seen.removeAll() }
            seen[driver] = now
            return true
        }
        if due { try? await store.people.noteSeen(driver, tenant: tenant, at: now) }
    }

    /// - Parameter maxAge: how old a cached answer may be (0: ask the database).
    func sessionIsActive(_ session: ID<Session>, maxAge: TimeInterval? = nil) async throws -> Bool {
        // Signed out, deactivated, a token reused: refused at once, whatever the cache says.
        if store.endedSessions.contains(session) { return false }
        let now = store.clock.now
        if let cached = cache.withLockedValue({ $0[session] }), now.timeIntervalSince(cached.checkedAt) < (maxAge ?? sessionCacheTTL) {
            return cached.active
        }
        let active: Bool
        do {
            active = try await store.sessionIsActive(session)
        } catch {
            // Not the caller's fault: ask them to come back rather than fail them.
            throw AppError(503, .unavailable, "The server cannot check your session right now; try again shortly.", retryAfter: 5)
        }
        cache.withLockedValue { cache in
            if cache.count > 50_000 { cache.removeAll() }
            cache[session] = (active, now)
        }
        return active
    }

    /// Asks the database about many sessions at once and caches the answers,
    /// so that the realtime sockets beating next find theirs fresh instead of
    /// each running its own query. Answers younger than half the cache's life
    /// are kept. A failure changes nothing: each socket then asks for itself.
    func refresh(_ sessions: Set<ID<Session>>) async {
        let now = store.clock.now
        let stale = Array(cache.withLockedValue { cache in
            sessions.filter { session in cache[session].map { now.timeIntervalSince($0.checkedAt) >= sessionCacheTTL / 2 } ?? true }
        })
        for start in stride(from: 0, to: stale.count, by: Self.sessionsPerQuery) {
            let chunk = Array(stale[start..<min(start + Self.sessionsPerQuery, stale.count)])
            guard let active = try? await store.activeSessions(among: chunk) else { return }
            cache.withLockedValue { cache in
                if cache.count > 50_000 { cache.removeAll() }
                for session in chunk { cache[session] = (active.contains(session), now) }
            }
        }
    }

    /// Sessions asked about in one query by `refresh`.
    static let sessionsPerQuery = 500

    /// Forgets a session's cached state on this instance (after a logout here).
    func forget(_ session: ID<Session>) {
        _ = cache.withLockedValue { $0.removeValue(forKey: session) }
    }
}
