import Logging
import NIOConcurrencyHelpers
import Synchronization

/// What this instance knows of the database's reachability, so that calls
/// fail fast while it is down.
///
/// A call that cannot reach the database, or waits too long for a
/// connection, asks for a check. A probe then tries on its own; while it
/// fails, the database is down: calls fail at once (503) instead of each
/// waiting for its deadline, callers waiting for a connection give up, and
/// the probe repeats every `interval`. When it succeeds again, `onRecovery`
/// runs before calls go through. A probe that fails while calls on pooled
/// connections are answered found a slow database, not a gone one: the
/// database stays up.
final class DatabaseReachability: Sendable {
    private struct State {
        var isDown = false
        var checking: Task<Void, Never>?
        /// When a check last ended with the database there (the probe answered, or calls were answered while it waited).
        var lastAnswered: ContinuousClock.Instant?
        var closed = false
        var watchers: [Int: @Sendable () -> Void] = [:]
        var nextWatcher = 0
    }

    private let state = NIOLockedValueBox(State())
    /// Calls the database answered, counted so a probe can tell whether any
    /// answered while it waited.
    private let answers = Atomic<Int>(0)
    let interval: Duration
    private let probe: @Sendable () async -> Bool
    private let onRecovery: @Sendable () async -> Void
    private let logger: Logger

    init(interval: Duration, logger: Logger, probe: @escaping @Sendable () async -> Bool,
         onRecovery: @escaping @Sendable () async -> Void) {
        self.interval = interval
        self.logger = logger
        self.probe = probe
        self.onRecovery = onRecovery
    }

    var isDown: Bool { state.withLockedValue { $0.isDown } }

    func failIfDown() throws {
        if isDown { throw DatabaseUnavailable(.unreachable, "the database did not answer the last check; checking every \(interval)") }
    }

    /// A call went through: the database answered it.
    func answered() {
        answers.wrappingAdd(1, ordering: .relaxed)
    }

    /// Starts a check, unless one is running or one ended with the database
    /// there less than an interval ago (many slow calls at once cost one probe).
    func check() {
        state.withLockedValue { state in
            guard state.checking == nil, !state.closed else { return }
            if let last = state.lastAnswered, ContinuousClock.now - last < interval { return }
            // Detached: a check started by a request must not carry its task-locals (deadline, transaction,
            // the server's graceful shutdown) into the probe and the pool it may renew.
            state.checking = Task.detached { await self.probeUntilReachable() }
        }
    }

    /// Calls `handler` (once) when the database is found down, at once if it
    /// is down now, until `unwatch`.
    func watch(_ handler: @escaping @Sendable () -> Void) -> Int? {
        let id = state.withLockedValue { state -> Int? in
            guard !state.isDown else { return nil }
            state.nextWatcher += 1
            state.watchers[state.nextWatcher] = handler
            return state.nextWatcher
        }
        if id == nil { handler() }
        return id
    }

    func unwatch(_ id: Int) {
        _ = state.withLockedValue { $0.watchers.removeValue(forKey: id) }
    }

    func close() async {
        let checking = state.withLockedValue { state in
            state.closed = true
            return state.checking
        }
        checking?.cancel()
        await checking?.value
    }

    private func probeUntilReachable() async {
        var wasDown = false
        let answeredBefore = answers.load(ordering: .relaxed)
        while await !probe() {
            if Task.isCancelled { return }
            // Under load a new connection can take longer than the probe waits while the pool's are answered
            // (a 2-core machine running the test suites turned calls away for it): slow, not down.
            if !wasDown && answers.load(ordering: .relaxed) != answeredBefore { break }
            if !wasDown {
                wasDown = true
                markDown()
            }
            try? await Task.sleep(for: interval)
        }
        if wasDown {
            await onRecovery()
            logger.notice("database: reachable again")
        }
        state.withLockedValue { state in
            state.isDown = false
            state.checking = nil
            state.lastAnswered = .now
        }
    }

    private func markDown() {
        let watchers = state.withLockedValue { state in
            state.isDown = true
            defer { state.watchers = [:] }
            return Array(state.watchers.values)
        }
        logger.warning("database: unreachable; requests answer 503 at once until it answers again", metadata: [
            "check_interval": "\(interval)",
        ])
        for watcher in watchers { watcher() }
    }
}
