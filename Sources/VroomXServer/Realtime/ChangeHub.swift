import Foundation
import Logging
import NIOConcurrencyHelpers
import VroomXModels

/// Fans committed changes out to the realtime subscribers of this server
/// instance. A commit (here, or on another instance through PostgreSQL
/// NOTIFY) names a carrier and its newest sequence number; the hub reads the
/// new entries once and hands them to the subscribers of that carrier who
/// may see at least one of them: dispatch for what dispatch sees, a driver
/// for their own rows (with 10,000 drivers connected, a message to one wakes
/// one socket). Each subscriber filters what it may see and keeps its own
/// cursor. Batches follow each other without gaps, so a subscriber passed
/// over knows the entries it did not get were not for it; one that sees a
/// hole before it was listening reads it from the database itself.
/// The read cache follows the carriers it holds pages of the same way.
public final class ChangeHub: Sendable {
    let store: Store
    let logger: Logger
    /// Drivers' first pages, kept while the log says nothing changed them.
    public let reads: ReadCache
    /// Pending entries a subscriber may hold before it is dropped as too slow.
    let inboxLimit: Int

    private struct Carrier {
        /// Dispatch's subscribers, who see every dispatch-visible change.
        var dispatch: [ObjectIdentifier: Subscriber] = [:]
        /// Drivers' subscribers, who see their own rows only.
        var drivers: [ID<Driver>: [ObjectIdentifier: Subscriber]] = [:]
        /// The read cache holds pages of this carrier (followed while it does).
        var followedForReads = false
        var isEmpty: Bool { dispatch.isEmpty && drivers.isEmpty && !followedForReads }
        var count: Int { dispatch.count + drivers.values.reduce(0) { $0 + $1.count } }
        var all: [Subscriber] { Array(dispatch.values) + drivers.values.flatMap(\.values) }

        /// Who may see at least one of these entries.
        func audience(of entries: [Store.FeedEntry]) -> [Subscriber] {
            var audience = entries.contains(where: \.dispatchVisible) ? Array(dispatch.values) : []
            for driver in Set(entries.compactMap(\.driverID)) { if let sockets = drivers[driver] { audience += sockets.values } }
            return audience
        }

        mutating func add(_ subscriber: Subscriber) {
            if let driver = subscriber.scope.driverID {
                drivers[driver, default: [:]][ObjectIdentifier(subscriber)] = subscriber
            } else {
                dispatch[ObjectIdentifier(subscriber)] = subscriber
            }
        }

        mutating func remove(_ subscriber: Subscriber) {
            if let driver = subscriber.scope.driverID {
                drivers[driver]?.removeValue(forKey: ObjectIdentifier(subscriber))
                if drivers[driver]?.isEmpty == true { drivers.removeValue(forKey: driver) }
            } else {
                dispatch.removeValue(forKey: ObjectIdentifier(subscriber))
            }
        }

        /// The newest sequence handed to subscribers.
        var delivered: Int64
        /// The newest sequence known to exist.
        var target: Int64
        var fetching = false
    }

    private let carriers = NIOLockedValueBox<[ID<Tenant>: Carrier]>([:])

    /// Realtime hearts beat in this many slots, one after the other, so that
    /// 10,000 sockets do not all write their heartbeat at once.
    static let heartbeatSlots = 16
    /// The slot beaten last.
    private let heartbeatSlot = NIOLockedValueBox(0)

    init(store: Store, logger: Logger, inboxLimit: Int = 5000, reads: ReadCache) {
        self.store = store
        self.logger = logger
        self.inboxLimit = inboxLimit
        self.reads = reads
        reads.connect { [weak self] tenant in await self?.follow(forReads: tenant) ?? false }
    }

    /// A carrier's change log reached `sequence`.
    public func committed(tenant: ID<Tenant>, sequence: Int64) {
        let start = carriers.withLockedValue { carriers -> Bool in
            guard var carrier = carriers[tenant] else { return false }
            carrier.target = max(carrier.target, sequence)
            if carrier.followedForReads { reads.known(tenant, carrier.target) }
            let start = !carrier.fetching && carrier.target > carrier.delivered
            if start { carrier.fetching = true }
            carriers[tenant] = carrier
            return start
        }
        if start { Task { await fetch(tenant) } }
    }

    /// Entries read and handed out at a time.
    static let batchSize = 1000

    /// Reads and hands out what is new, until caught up with the target.
    /// One loop per carrier at a time (`fetching`), and it ends only after
    /// its last batch was handed out: batches reach every inbox in order,
    /// which is what lets a socket passed over trust that it missed nothing.
    private func fetch(_ tenant: ID<Tenant>) async {
        while true {
            guard let from = carriers.withLockedValue({ $0[tenant]?.delivered }) else { return }
            var entries: [Store.FeedEntry]
            do {
                entries = try await store.tenantChanges(tenant, after: from, limit: Self.batchSize + 1)
                // Like a feed page, a batch ends between two mutations' entries.
                if entries.count > Self.batchSize {
                    let next = entries.removeLast()
                    Store.endPage(&entries, before: next)
                }
            } catch {
                logger.warning("realtime: reading changes failed", metadata: ["tenant": "\(tenant)", "error": "\(error)"])
                _ = finish(tenant, caughtUp: true)
                return
            }
            let audience = carriers.withLockedValue { carriers -> [Subscriber] in
                guard var carrier = carriers[tenant], let last = entries.last else { return [] }
                carrier.delivered = last.seq
                carrier.target = max(carrier.target, last.seq)
                carriers[tenant] = carrier
                if carrier.followedForReads { reads.apply(tenant, previous: from, entries) }
                return carrier.audience(of: entries)
            }
            if !entries.isEmpty {
                let batch = HubBatch(previous: from, entries: entries)
                for subscriber in audience { subscriber.deliver(batch) }
            }
            if finish(tenant, caughtUp: entries.isEmpty) { return }
        }
    }

    /// Ends the fetch loop when it caught up (or must stop): true when it did.
    private func finish(_ tenant: ID<Tenant>, caughtUp: Bool) -> Bool {
        carriers.withLockedValue { carriers -> Bool in
            guard var carrier = carriers[tenant] else { return true }
            guard caughtUp || carrier.delivered >= carrier.target else { return false }
            carrier.fetching = false
            if carrier.isEmpty { carriers.removeValue(forKey: tenant) } else { carriers[tenant] = carrier }
            return true
        }
    }

    /// Registers a subscriber. It starts receiving batches at once: every
    /// batch after the position returned that holds something it may see.
    /// It reads what came before that position from the database itself.
    @discardableResult
    func subscribe(_ subscriber: Subscriber) async throws -> Int64 {
        let tenant = subscriber.scope.tenant
        // A carrier watched here already is kept current by commits, notifications and the
        // poll: joining it reads nothing (a reconnect storm costs no query per socket here).
        let joined = carriers.withLockedValue { carriers -> Int64? in
            guard var carrier = carriers[tenant] else { return nil }
            carrier.add(subscriber)
            carriers[tenant] = carrier
            return carrier.delivered
        }
        if let joined { return joined }
        let (counter, _) = try await store.changeCounter(tenant)
        let listeningFrom = carriers.withLockedValue { carriers -> Int64 in
            var carrier = carriers[tenant] ?? Carrier(delivered: counter, target: counter)
            carrier.add(subscriber)
            carriers[tenant] = carrier
            return carrier.delivered
        }
        committed(tenant: tenant, sequence: counter)
        return listeningFrom
    }

    /// Follows a carrier's log for the read cache, from its counter now (or
    /// from where the hub is, when it follows the carrier already). False
    /// when the counter could not be read.
    func follow(forReads tenant: ID<Tenant>) async -> Bool {
        if start(forReads: tenant, counter: nil) { return true }
        guard let (counter, _) = try? await store.changeCounter(tenant) else { return false }
        _ = start(forReads: tenant, counter: counter)
        committed(tenant: tenant, sequence: counter)
        return true
    }

    /// Marks the carrier followed for reads and tells the cache where the
    /// log is, under the hub's lock (so in step with what it applies next).
    private func start(forReads tenant: ID<Tenant>, counter: Int64?) -> Bool {
        carriers.withLockedValue { carriers -> Bool in
            guard var carrier = carriers[tenant] ?? counter.map({ Carrier(delivered: $0, target: $0) }) else { return false }
            carrier.followedForReads = true
            carriers[tenant] = carrier
            reads.begin(tenant, heard: carrier.delivered, known: carrier.target)
            return true
        }
    }

    func unsubscribe(_ subscriber: Subscriber) {
        carriers.withLockedValue { carriers in
            let tenant = subscriber.scope.tenant
            carriers[tenant]?.remove(subscriber)
            if carriers[tenant]?.isEmpty == true, carriers[tenant]?.fetching == false {
                carriers.removeValue(forKey: tenant)
            }
        }
    }

    /// A subscriber for a realtime socket. It joins the heartbeat slot beaten
    /// last, so its first heartbeat comes about one interval after it joined.
    func makeSubscriber(scope: Scope, session: ID<Session>) -> Subscriber {
        Subscriber(scope: scope, limit: inboxLimit, heartbeatSlot: heartbeatSlot.withLockedValue { $0 }, session: session)
    }

    /// Beats the heart of every realtime subscriber once per `interval`, a
    /// slot at a time. One loop for the server instead of a timer per socket:
    /// an idle socket holds no task of its own. Before a slot beats, its
    /// sockets' sessions are checked in a few queries (`checkSessions`), so a
    /// socket's own check at its heartbeat finds the answer fresh.
    func beatHearts(every interval: Duration, checkSessions: @Sendable (Set<ID<Session>>) async -> Void = { _ in }) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval / Self.heartbeatSlots)
            let slot = heartbeatSlot.withLockedValue { slot in
                slot = (slot + 1) % Self.heartbeatSlots
                return slot
            }
            let due = carriers.withLockedValue { carriers in carriers.values.flatMap(\.all).filter { $0.heartbeatSlot == slot } }
            await checkSessions(Set(due.compactMap(\.session)))
            for subscriber in due { subscriber.beat() }
        }
    }

    /// Carriers with subscribers here (for the safety poll and reconnects).
    var watchedTenants: [ID<Tenant>] { carriers.withLockedValue { Array($0.keys) } }

    public var subscriberCount: Int { carriers.withLockedValue { $0.values.reduce(0) { $0 + $1.count } } }

    /// Checks every watched carrier's counter: catches anything a lost
    /// notification would have missed.
    func poll() async {
        for tenant in watchedTenants {
            if let (counter, _) = try? await store.changeCounter(tenant) { committed(tenant: tenant, sequence: counter) }
        }
    }
}

/// Consecutive entries of one carrier's log, shared by all its subscribers:
/// those after `previous`, the last entry of the hub's batch before.
struct HubBatch: Sendable {
    let previous: Int64
    let entries: [Store.FeedEntry]
    var last: Int64 { entries.last!.seq }
}

/// One realtime connection's view of the hub: batches wait in a bounded
/// inbox until the connection's sender takes them, with the flags that wake
/// it otherwise (its heartbeat is due; the connection ended).
final class Subscriber: Sendable {
    let scope: Scope
    /// The hub's heartbeat slot this subscriber beats with; nil for none.
    let heartbeatSlot: Int?
    /// The signed-in session the heartbeat checks; nil for none.
    let session: ID<Session>?
    private let limit: Int

    private struct Inbox {
        var batches: [HubBatch] = []
        var pending = 0
        var overflowed = false
        var heartbeatDue = false
        var ended = false
        var waiter: CheckedContinuation<Void, Never>?

        var hasNews: Bool { ended || overflowed || heartbeatDue || !batches.isEmpty }
    }

    private let inbox = NIOLockedValueBox(Inbox())

    init(scope: Scope, limit: Int, heartbeatSlot: Int? = nil, session: ID<Session>? = nil) {
        self.scope = scope
        self.limit = limit
        self.heartbeatSlot = heartbeatSlot
        self.session = session
    }

    /// Never blocks the hub: a subscriber that falls too far behind is marked
    /// overflowed and dropped by its connection (it resumes from its cursor).
    func deliver(_ batch: HubBatch) {
        update { inbox in
            guard !inbox.overflowed else { return }
            if inbox.pending + batch.entries.count > limit {
                inbox.overflowed = true
                inbox.batches.removeAll()
                inbox.pending = 0
            } else {
                inbox.batches.append(batch)
                inbox.pending += batch.entries.count
            }
        }
    }

    /// The heartbeat is due (the hub's slot came round).
    func beat() { update { $0.heartbeatDue = true } }

    /// The connection is over (closed, or evicted): `next()` says `.ended`
    /// from now on, even if no one was waiting when it happened.
    func end() { update { $0.ended = true } }

    /// Wakes a waiting `next()` without news (the console's heartbeat).
    func wake() { update { _ in } }

    /// Changes the inbox and resumes the waiting `next()`, outside the lock.
    private func update(_ change: (inout Inbox) -> Void) {
        let waiter = inbox.withLockedValue { inbox -> CheckedContinuation<Void, Never>? in
            change(&inbox)
            defer { inbox.waiter = nil }
            return inbox.waiter
        }
        waiter?.resume()
    }

    enum Next {
        /// What came (maybe nothing, after `wake()`), and whether the heartbeat is due.
        case batches([HubBatch], heartbeatDue: Bool)
        case overflowed
        case ended
    }

    /// Waits until there is news or `wake` is called. Cancellation wakes it too.
    func next() async -> Next {
        if let ready = take() { return ready }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = inbox.withLockedValue { inbox -> Bool in
                    if inbox.hasNews || Task.isCancelled { return true }
                    inbox.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            wake()
        }
        return take() ?? .batches([], heartbeatDue: false)
    }

    private func take() -> Next? {
        inbox.withLockedValue { inbox -> Next? in
            if inbox.ended { return .ended }
            if inbox.overflowed { return .overflowed }
            guard inbox.hasNews else { return nil }
            defer {
                inbox.batches.removeAll(keepingCapacity: true)
                inbox.pending = 0
                inbox.heartbeatDue = false
            }
            return .batches(inbox.batches, heartbeatDue: inbox.heartbeatDue)
        }
    }

    /// Whether batches wait to be taken.
    var hasPending: Bool { inbox.withLockedValue { !$0.batches.isEmpty } }
}
