import Foundation
import VroomXModels

/// The tokens of a signed-in session, kept in the secure store.
public struct Credentials: Codable, Sendable, Hashable {
    public var accessToken: String
    public var refreshToken: String
    public var expiresAt: Date
    /// Whose session it is (nil in sessions kept before it was recorded):
    /// what is reported in a driver's name must go with that driver's tokens.
    public var userID: String?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case refreshToken = "refresh_token"
        case expiresAt = "expires_at"
        case userID = "user_id"
    }
}

/// Holds the session's tokens and refreshes them: one refresh at a time,
/// shared by every caller that needs it — and across processes on the same
/// state directory (a terminal command beside `watch`), through a lock file
/// and a fresh look at the secure store before exchanging, so two copies
/// never spend the same refresh token. A network error leaves the session
/// as it is; only the server refusing the refresh token ends it. Every
/// sign-in and logout starts a new generation, so a refresh that finishes
/// after a logout is thrown away instead of bringing the old session back.
public actor CredentialStore {
    /// Where the signed-in driver's session is kept.
    static let signedInKey = "session"
    /// Where this session is kept: the signed-in driver's, or a driver's
    /// parked while the phone hands over their work (see `HandOver`).
    let key: String
    let secureStore: any SecureStore
    let transport: any HTTPTransport
    let baseURL: String
    let clock: @Sendable () -> Date
    /// Held while a refresh is exchanged (nil: this process is the only one).
    let lockFile: URL?
    private var credentials: Credentials?
    /// Fresh tokens the secure store could not take (a full disk): kept in
    /// memory and written again at the next chance.
    private var unsaved = false
    private var generation = 0
    private var refreshing: Task<Credentials, any Error>?
    /// Told when the server ended the session (the refresh was refused).
    /// Told when the server ends the session (set while the app is built: `Hook`).
    nonisolated let sessionEnded = Hook<APIError>()

    init(secureStore: any SecureStore, transport: any HTTPTransport, baseURL: String, clock: @escaping @Sendable () -> Date,
         lockFile: URL? = nil, key: String = CredentialStore.signedInKey) {
        self.secureStore = secureStore
        self.transport = transport
        self.baseURL = baseURL
        self.clock = clock
        self.lockFile = lockFile
        self.key = key
        credentials = Self.stored(in: secureStore, key: key)
    }

    private static func stored(in secureStore: any SecureStore, key: String) -> Credentials? {
        (try? secureStore.data(for: key)).flatMap { try? CacheJSON.decoder.decode(Credentials.self, from: $0) }
    }

    /// Keeps a copy of this session under `key`: the driver signs out of
    /// the app while the phone still holds their unsent work, which it then
    /// sends in their name (`HandOver`) before ending the session.
    func park(as key: String) throws {
        guard let credentials else { return }
        try secureStore.set(try CacheJSON.encoder.encode(credentials), for: key)
    }

    public var hasSession: Bool { credentials != nil }
    public var current: Credentials? { credentials }

    nonisolated func whenSessionEnds(_ handler: @escaping @Sendable (APIError) async -> Void) {
        sessionEnded.set(handler)
    }

    /// A new session from sign-in.
    func start(_ session: AuthSession) throws {
        generation += 1
        refreshing?.cancel()
        refreshing = nil
        try save(Credentials(accessToken: session.accessToken, refreshToken: session.refreshToken, expiresAt: session.expiresAt,
                             userID: session.user.id.rawValue))
    }

    /// Forgets the session (logout, or the server ended it).
    func clear() {
        generation += 1
        refreshing?.cancel()
        refreshing = nil
        credentials = nil
        try? secureStore.remove(key)
    }

    /// An access token good for at least a minute, refreshing if needed.
    /// Offline, an older token is still returned while it is valid.
    /// `lasting`: how long it must stay good (a request the system may send later needs longer).
    func accessToken(lasting seconds: TimeInterval = 60) async throws -> String {
        if unsaved, let credentials { try? save(credentials) }
        guard let credentials else { throw APIError.notSignedIn }
        if credentials.expiresAt.timeIntervalSince(clock()) > seconds { return credentials.accessToken }
        do {
            return try await refresh().accessToken
        } catch let error as APIError where error.isTransient && credentials.expiresAt > clock() {
            return credentials.accessToken
        }
    }

    /// The server refused the session outright on a call made with
    /// `accessToken` (revoked, or a token it no longer accepts). Ignored if
    /// the session changed since that token was handed out.
    func rejected(accessToken: String, because error: APIError) async {
        guard error.endsSession, credentials?.accessToken == accessToken else { return }
        clear()
        await sessionEnded(error)
    }

    /// Refreshes now (the server said the token expired), or joins the
    /// refresh already in flight.
    @discardableResult
    func refresh() async throws -> Credentials {
        if let refreshing { return try await refreshing.value }
        guard credentials != nil else { throw APIError.notSignedIn }
        let startedGeneration = generation
        let task = Task { [transport, baseURL, lockFile, clock] in
            let lock = await ProcessLock.acquire(lockFile)
            defer { lock?.release() }
            // Another process may have refreshed while this one waited: its tokens are in the store.
            if let fresher = await self.adoptRefreshedElsewhere(), fresher.expiresAt.timeIntervalSince(clock()) > 60 {
                return try await self.finishRefresh(.success(fresher), generation: startedGeneration)
            }
            guard let refreshToken = await self.credentials?.refreshToken else { throw APIError.notSignedIn }
            let outcome: Result<Credentials, any Error>
            do {
                let session = try await Self.exchange(refreshToken, transport: transport, baseURL: baseURL)
                outcome = .success(Credentials(accessToken: session.accessToken, refreshToken: session.refreshToken,
                                               expiresAt: session.expiresAt, userID: session.user.id.rawValue))
            } catch {
                outcome = .failure(error)
            }
            return try await self.finishRefresh(outcome, generation: startedGeneration)
        }
        refreshing = task
        return try await task.value
    }

    /// The secure store's tokens when another process changed them since
    /// this one loaded them.
    private func adoptRefreshedElsewhere() -> Credentials? {
        guard let stored = Self.stored(in: secureStore, key: key), stored.refreshToken != credentials?.refreshToken, credentials != nil else { return nil }
        credentials = stored
        return stored
    }

    /// Takes a refresh's answer, unless its session is gone meanwhile. The
    /// fresh tokens are kept even when the store cannot take them now.
    private func finishRefresh(_ outcome: Result<Credentials, any Error>, generation startedGeneration: Int) async throws -> Credentials {
        // Logged out (or signed in again) meanwhile: this answer belongs to a session that is gone.
        guard generation == startedGeneration else { throw APIError.notSignedIn }
        refreshing = nil
        switch outcome {
        case .success(let fresh):
            credentials = fresh
            do {
                try save(fresh)
            } catch {
                unsaved = true
            }
            return fresh
        case .failure(let error as APIError) where error.endsSession:
            clear()
            await sessionEnded(error)
            throw error
        case .failure(let error):
            throw error
        }
    }

    private func save(_ credentials: Credentials) throws {
        self.credentials = credentials
        try secureStore.set(try CacheJSON.encoder.encode(credentials), for: key)
        unsaved = false
    }

    static func exchange(_ refreshToken: String, transport: any HTTPTransport, baseURL: String) async throws -> AuthSession {
        let response: HTTPResponseData
        do {
            response = try await transport.send(HTTPRequestData(
                method: "POST", url: baseURL + Endpoint.refresh.path(), headers: [("Content-Type", "application/json")],
                body: try CacheJSON.encoder.encode(RefreshRequest(refreshToken: refreshToken))))
        } catch {
            throw APIError.unreachable("\(error)")
        }
        return try APIClient.decode(AuthSession.self, response)
    }
}

/// An exclusive lock on a file, between processes (`flock`), taken without
/// blocking a thread: it polls, and after 30 s goes ahead without it rather
/// than hold a refresh forever behind a process that died holding it (the
/// kernel releases a dead process's locks anyway).
struct ProcessLock: Sendable {
    let descriptor: Int32

    static func acquire(_ file: URL?) async -> ProcessLock? {
        guard let file else { return nil }
        let descriptor = open(file.path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        for _ in 0..<1500 {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return ProcessLock(descriptor: descriptor) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        close(descriptor)
        return nil
    }

    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
