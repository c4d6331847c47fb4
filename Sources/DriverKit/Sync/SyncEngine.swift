import Foundation
import Logging
import VroomXModels

/// Pushes the outbox, then pulls the change feed (seed 000's offline queue
/// and realtime updates, made exactly-once and gap-free).
///
/// - A push sends the due changes in batches (by count and by bytes, halved
///   when the server says one is too large); each change carries its own
///   id, so a batch whose answer was lost is simply sent again.
/// - Not reaching the server is no attempt: the changes wait for the
///   network without limit. A server failure (5xx, 429) counts an attempt
///   and retries after a backoff (or the server's Retry-After); after five
///   the driver is shown the failure and the retries go on, on a long
///   interval and whenever the server is seen healthy — only the driver
///   drops a change. A rejection puts the server's truth back in the cache
///   and keeps the reason.
/// - A pull applies each page of the feed in one transaction, and runs
///   whether or not the push succeeded (an urgent message must arrive even
///   while one change is stuck).
/// - Syncs run one at a time; requests during a run coalesce into one more.
public actor SyncEngine {
    let database: AppDatabase
    let api: APIClient
    let network: any NetworkMonitor
    let status: SyncStatus
    let realtime: RealtimeConnection?
    let secureStore: (any SecureStore)?
    let clock: @Sendable () -> Date
    let logger: Logger
    public static let maxAttempts = 5
    /// A batch stays well under the server's 256 KiB body limit.
    static let maxBatchBytes = 192 * 1024
    static let maxBatchCount = 500

    private var current: Task<Void, Never>?
    private var again = false
    private var background: [Task<Void, Never>] = []
    private var retryTimer: Task<Void, Never>?
    private var started = false

    init(database: AppDatabase, api: APIClient, network: any NetworkMonitor, status: SyncStatus,
         realtime: RealtimeConnection?, secureStore: (any SecureStore)?, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.secureStore = secureStore
        self.database = database
        self.api = api
        self.network = network
        self.status = status
        self.realtime = realtime
        self.clock = clock
        self.logger = logger
    }

    /// Begins syncing for a signed-in driver: now, when the network comes
    /// back, when realtime says there is news, and every minute.
    public func start() {
        guard !started else { return }
        started = true
        // A send cut short by the app being killed left its changes marked as on their way.
        try? database.clearStaleSending(now: clock())
        try? database.releaseBackoff()
        requestSync()
        let changes = network.changes()
        background.append(Task { [weak self] in
            for await online in changes {
                await self?.networkChanged(online)
            }
        })
        background.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(60))
                await self?.requestSync()
            }
        })
        if realtime != nil {
            background.append(Task { [weak self] in await self?.runRealtime() })
        }
    }

    /// Called after changes reached the server (files of a new inspection can go now).
    nonisolated let afterPush = Hook<Void>()
    /// Called after each run (another driver's work on the phone is handed over then).
    nonisolated let afterRun = Hook<Void>()

    public func stop() async {
        started = false
        background.forEach { $0.cancel() }
        background.removeAll()
        retryTimer?.cancel()
        retryTimer = nil
        await current?.value
        await MainActor.run { status.realtimeConnected = false }
    }

    private func networkChanged(_ online: Bool) async {
        await MainActor.run { status.isOnline = online }
        if online {
            try? database.releaseBackoff()
            requestSync()
        }
    }

    /// Asks for a sync soon; never waits.
    public func requestSync() {
        if current != nil {
            again = true
            return
        }
        current = Task { await self.runLoop() }
    }

    /// Syncs now — the driver asked, so pending changes go now whatever
    /// their backoff — and waits for it (and for any run already going).
    public func syncNow() async {
        try? database.releaseBackoff()
        if let current {
            // The run in progress goes round once more, covering this request.
            again = true
            await current.value
            return
        }
        let task = Task { await self.runLoop() }
        current = task
        await task.value
    }

    private func runLoop() async {
        repeat {
            again = false
            await runOnce()
        } while again
        current = nil
    }

    private func runOnce() async {
        guard await api.credentials.hasSession else { return }
        await MainActor.run { status.isSyncing = true }
        var failure: String?
        func note(_ error: any Error) {
            logger.debug("sync step failed", metadata: ["error": "\(error)"])
            if failure == nil { failure = (error as? APIError)?.description ?? "\(error)" }
        }
        if (try? database.syncPosition())?.snapshotAfter == nil, (try? database.hasUnansweredSends()) == true {
            // Sent before without an answer, so maybe applied: the feed says which were (they leave the
            // outbox) before they go again — the server keeps answers to replay for 8 days, the feed 30.
            // A failure here is not reported: the pull after the push tries again and says.
            do { try await pull() } catch { logger.debug("pull before push failed", metadata: ["error": "\(error)"]) }
        }
        do { try await push() } catch { note(error) }
        await afterPush()
        do { try await pull() } catch { note(error) }
        do {
            try await pushPendingPIN()
            try await registerPushToken()
        } catch {
            note(error)
        }
        // Dispatch hears what still waits on this phone, and that it arrived (not a sync failure when it cannot).
        // Only with the owner's own tokens: a driver who signed in on the phone during this run would
        // otherwise be reported as the one whose work waits (the server names the token's driver).
        if let owner = try? database.account()?.userID.rawValue, await api.credentials.current?.userID ?? owner == owner {
            do { try await api.reportBacklog(of: owner, database) } catch { logger.debug("backlog report failed", metadata: ["error": "\(error)"]) }
        }
        await afterRun()
        let online = network.isOnline
        await MainActor.run {
            status.isSyncing = false
            status.isOnline = online
            status.lastError = failure
        }
    }

    // MARK: Push

    func push() async throws {
        try await push(owner: nil, via: api)
    }

    /// Pushes the due changes of `owner` (nil: the signed-in driver) with
    /// `api`'s session. Another driver's changes (a phone handing over the
    /// work of a driver who signed out on it) are settled without touching
    /// the signed-in driver's cache.
    func push(owner: String?, via api: APIClient) async throws {
        // Changes stamped while the phone's clock was not known are corrected before they first go:
        // one answer from the server is enough to know it.
        if try database.hasUnverifiedStamps(owner: owner) {
            if !api.serverClock.isKnown { _ = try? await api.send(.health, as: HealthResponse.self) }
            if api.serverClock.isKnown {
                try database.correctStamps(owner: owner, serverNow: api.serverClock.now, secondsSinceBoot: api.serverClock.secondsSinceBoot,
                                           bootID: api.serverClock.bootID)
            }
        }
        while true {
            let due = try database.dueEntries(now: clock(), limit: Self.maxBatchCount, owner: owner)
            guard !due.isEmpty else { return }
            let batch = Self.firstBatch(of: due)
            try await send(batch, via: api, intoCache: owner == nil)
            if batch.count == due.count && due.count < Self.maxBatchCount { return }
        }
    }

    /// As many of the due changes, in order, as fit the byte budget (at least one).
    static func firstBatch(of due: [OutboxEntry]) -> [OutboxEntry] {
        var bytes = 0
        var batch: [OutboxEntry] = []
        for entry in due {
            let size = (try? CacheJSON.encoder.encode(entry.mutation).count) ?? 0
            if !batch.isEmpty && bytes + size > maxBatchBytes { break }
            batch.append(entry)
            bytes += size
        }
        return batch
    }

    /// Sends one batch and settles its answer. Too large for the server:
    /// sent in halves; one change alone too large can never land, and the
    /// driver is told so.
    private func send(_ batch: [OutboxEntry], via api: APIClient, intoCache: Bool) async throws {
        let ids = batch.map(\.id)
        try database.markSending(ids, at: clock())
        let results: MutationBatchResult
        do {
            results = try await api.send(.mutations, body: MutationBatch(Self.withDependencies(batch)))
        } catch let error as APIError where error.status == 413 {
            try database.clearSending(ids, unanswered: false)
            guard batch.count > 1 else {
                try database.settle([MutationResult(id: batch[0].id, outcome: .rejected, code: .payloadTooLarge,
                                                    message: "This change is larger than the server accepts.")],
                                    now: clock(), retryDelay: { Backoff.outbox.delay(afterFailures: $0) }, maxAttempts: Self.maxAttempts,
                                    intoCache: intoCache)
                return
            }
            try await send(Array(batch[..<(batch.count / 2)]), via: api, intoCache: intoCache)
            try await send(Array(batch[(batch.count / 2)...]), via: api, intoCache: intoCache)
            return
        } catch let error as APIError where error.isUnreachable {
            // No answer is no attempt: the changes wait for the network, however long it takes.
            // (The request may still have reached the server and been applied — unless no connection was made.)
            try database.clearSending(ids, unanswered: !error.neverSent)
            throw error
        } catch let error as APIError where error.isTransient {
            let attempts = (batch.map(\.attempts).max() ?? 0) + 1
            let delay = max(Backoff.outbox.delay(afterFailures: attempts), TimeInterval(error.retryAfter ?? 0))
            let retryAt = clock().addingTimeInterval(delay)
            try database.recordFailedAttempt(ids, error: error.description, retryAt: retryAt, maxAttempts: Self.maxAttempts)
            scheduleRetry(at: retryAt)
            throw error
        } catch {
            try database.clearSending(ids, unanswered: true)
            throw error
        }
        try database.settle(results.results, now: clock(), retryDelay: { Backoff.outbox.delay(afterFailures: $0) },
                            maxAttempts: Self.maxAttempts, intoCache: intoCache)
        if let next = try database.nextAttempt() { scheduleRetry(at: next) }
    }

    /// Each change depends on the earlier changes of the same row in the
    /// batch: if the server refuses one, the later ones are not applied out
    /// of order (e.g. "delivered" after a refused "picked up").
    static func withDependencies(_ entries: [OutboxEntry]) -> [Mutation] {
        var lastForEntity: [String: ID<Mutation>] = [:]
        return entries.map { entry in
            var mutation = entry.mutation
            if let previous = lastForEntity[mutation.entityID] { mutation.dependsOn = [previous] }
            lastForEntity[mutation.entityID] = mutation.id
            return mutation
        }
    }

    private func scheduleRetry(at date: Date) {
        retryTimer?.cancel()
        let delay = max(0, date.timeIntervalSince(clock()))
        retryTimer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            if !Task.isCancelled { await self?.requestSync() }
        }
    }

    /// A PIN set while offline reaches the server on the next sync; until
    /// then its scrypt hash waits in the secure store, never in the database.
    func pushPendingPIN() async throws {
        guard let secureStore, let stored = try secureStore.data(for: AuthFlow.pendingPINKey) else { return }
        let value = String(decoding: stored, as: UTF8.self)
        // A device updated from a version that kept the PIN itself sends it once more, then never again.
        try await api.send(.setPIN, body: PINRequest.isValid(value) ? PINRequest(pin: value) : PINRequest(pinHash: value))
        try secureStore.remove(AuthFlow.pendingPINKey)
        try database.setPINState(set: true, serverPending: false)
    }

    /// Tells the server where to push for this driver: after sign-in, and
    /// whenever the system hands the app a new token.
    func registerPushToken() async throws {
        guard let (token, replacing) = try database.pushTokenToRegister() else { return }
        let _: DeviceToken = try await api.send(.registerDeviceToken, body: RegisterDeviceTokenRequest(token: token, platform: .ios))
        if let replacing { try? await api.send(.removeDeviceToken, replacing) }
        try database.setRegisteredPushToken(token)
    }

    // MARK: Pull

    /// Reads the feed to its end. The next page is fetched and decoded
    /// while the current one is written to the cache, so a long catch-up
    /// costs the slower of the two rather than their sum.
    func pull() async throws {
        var prefetched: (task: Task<SyncPage, any Error>, from: (cursor: Int64, snapshotAfter: String?))?
        defer { prefetched?.task.cancel() }
        while true {
            let position = try database.syncPosition()
            let page: SyncPage
            do {
                if let ahead = prefetched, ahead.from == position {
                    prefetched = nil
                    let early = try await ahead.task.value
                    // A realtime frame may have moved the cache while this actor waited:
                    // then the page no longer follows on, and the next turn asks afresh.
                    guard try database.syncPosition() == ahead.from else { continue }
                    page = early
                } else {
                    prefetched?.task.cancel()
                    prefetched = nil
                    page = try await api.syncPage(query: Self.query(position.cursor, position.snapshotAfter))
                }
            } catch let error as APIError where error.code == .cursorExpired {
                // Older than the server's history: start again with a snapshot.
                try database.resetSyncPosition()
                continue
            }
            if page.hasMore {
                let api = self.api, query = Self.query(page.cursor, page.snapshotAfter)
                // Detached: this actor is busy applying the page meanwhile.
                prefetched = (Task.detached { try await api.syncPage(query: query) }, (page.cursor, page.snapshotAfter))
            }
            try database.apply(page, syncedAt: api.serverClock.now)
            if !page.hasMore { return }
        }
    }

    static func query(_ cursor: Int64, _ snapshotAfter: String?) -> String {
        "since=\(cursor)" + (snapshotAfter.map { "&snapshot_after=\($0)" } ?? "")
    }

    // MARK: Realtime

    private var reconnectFailures = 0
    /// The current socket sent `ready` (it was admitted and served).
    private var reachedReady = false
    private var lastCloseCode: UInt16?

    private func runRealtime() async {
        guard let realtime else { return }
        while !Task.isCancelled && started {
            guard network.isOnline, await api.credentials.hasSession else {
                try? await Task.sleep(for: .seconds(2))
                continue
            }
            let cursor = (try? database.syncPosition().cursor) ?? 0
            lastCloseCode = nil
            reachedReady = false
            do {
                try await realtime.connect(since: cursor) { [weak self] event in await self?.realtimeEvent(event) }
            } catch {
                logger.debug("realtime connect failed", metadata: ["error": "\(error)"])
            }
            await MainActor.run { status.realtimeConnected = false }
            let closeCode = lastCloseCode.flatMap(RealtimeCloseCode.init(rawValue:))
            // A socket that served its catch-up starts the backoff over, unless the server
            // closed it to shed load (too many sockets, database trouble): then keep backing off.
            if reachedReady, closeCode != .tooManyConnections, closeCode != .tryAgainLater { reconnectFailures = 0 }
            switch closeCode {
            case .tokenExpired:
                _ = try? await api.credentials.refresh()
                continue
            case .sessionRevoked:
                // The refresh endpoint confirms it, and the credential store ends the session.
                _ = try? await api.credentials.refresh()
            case .cursorExpired:
                try? database.resetSyncPosition()
                requestSync()
            default:
                break
            }
            reconnectFailures += 1
            try? await Task.sleep(for: .milliseconds(Int(Backoff.reconnect.delay(afterFailures: reconnectFailures) * 1000)))
        }
    }

    private func realtimeEvent(_ event: RealtimeConnection.Event) async {
        switch event {
        case .connected:
            reachedReady = true
            await MainActor.run { status.realtimeConnected = true }
        case .changes(let changes, let from, let cursor):
            // Applied from the frame; when it does not follow on from the cache, a pull fills the gap.
            let applied = (try? database.applyLive(changes, from: from, to: cursor, syncedAt: api.serverClock.now)) ?? false
            if !applied, let local = try? database.syncPosition().cursor, cursor > local { requestSync() }
        case .closed(let code):
            lastCloseCode = code
        }
    }
}
