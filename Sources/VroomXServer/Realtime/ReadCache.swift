import NIOConcurrencyHelpers
import NIOCore
import VroomXModels

/// The first pages of a driver's lists (trips, orders, a trip's orders),
/// answered from this instance's memory while nothing on them changed.
///
/// It stays correct by following the carrier's change log, as the realtime
/// hub does: the hub tells it of every commit it hears of (this instance's,
/// or another's through PostgreSQL's notifications) and hands it the new
/// entries in order once read. A driver's pages are dropped when an entry
/// for that driver arrives (the feed gives a driver an entry for everything
/// that changes what they see, or their phone would miss it).
///
/// A page is answered from memory only when
/// - every change heard of has been applied (`heard == known`): a write
///   this instance just committed is applied before anyone reads it here;
/// - the client's `X-VroomX-Change` (the newest number it holds: a write's
///   answer, its feed cursor) was heard: a write through another instance
///   is read back here even before its notification arrives;
/// - notifications arrive at all: on PostgreSQL, only while the LISTEN
///   connection is up and was caught up with after (re)connecting.
/// Otherwise the database answers, and what it answered is kept only if no
/// change for the driver was applied meanwhile.
///
/// Memory is bounded by `limitBytes`; the oldest pages go first.
public final class ReadCache: Sendable {
    struct Key: Hashable, Sendable {
        let tenant: ID<Tenant>
        let driver: ID<Driver>
        /// The list and its filters, e.g. `trips limit=50`.
        let page: String
    }

    private struct Entry {
        let reply: Reply
        let bytes: Int
        /// Its place in the eviction order.
        let stamp: UInt64
    }

    private struct Carrier {
        /// Every change up to this number has been applied to the pages.
        var heard: Int64
        /// The newest change known to exist.
        var known: Int64
        var pages: [ID<Driver>: [String: Entry]] = [:]
        /// Raised whenever a driver's pages are dropped: a page read from the
        /// database meanwhile may be older than the change, and is not kept.
        var generations: [ID<Driver>: UInt64] = [:]
        /// Drawn anew from the cache (never reused) when the carrier is begun
        /// and when `generations` is cleared: a read begun before either, even
        /// before the cache forgot everything, is never kept.
        var epoch: UInt64

        func generation(of driver: ID<Driver>) -> Generation { Generation(epoch: epoch, driver: generations[driver] ?? 0) }

        mutating func dropPages(of driver: ID<Driver>) -> [String: Entry]? {
            generations[driver, default: 0] += 1
            return pages.removeValue(forKey: driver)
        }

        /// Keeps the record of changed drivers to about the drivers with pages.
        mutating func forgetGenerations(newEpoch: () -> UInt64) {
            guard generations.count > 2 * pages.count + 256 else { return }
            generations.removeAll()
            epoch = newEpoch()
        }
    }

    struct Generation: Equatable {
        let epoch: UInt64
        let driver: UInt64
    }

    private struct State {
        var carriers: [ID<Tenant>: Carrier] = [:]
        /// Pages kept, oldest first, as (key, stamp); a stamp no longer in
        /// `carriers` was dropped already.
        var order = CircularBuffer<(key: Key, stamp: UInt64)>()
        var nextStamp: UInt64 = 0
        var bytes = 0
        var pageCount = 0
        var trusted: Bool
        /// Carriers asked of the hub and not yet begun.
        var watching: Set<ID<Tenant>> = []

        /// Epochs handed out so far.
        var epochs: UInt64 = 0

        mutating func newEpoch() -> UInt64 {
            epochs += 1
            return epochs
        }

        mutating func forgetPages() {
            carriers.removeAll()
            order.removeAll()
            bytes = 0
            pageCount = 0
        }
    }

    private let state: NIOLockedValueBox<State>
    /// Most bytes of pages kept; 0 turns the cache off.
    let limitBytes: Int
    /// Most pages kept per driver: one driver asking for many lists (every
    /// page size, made-up trips) cannot push everyone else's out.
    static let pagesPerDriver = 16
    /// Asks the hub to follow a carrier's log for this cache.
    private let watcher = NIOLockedValueBox<(@Sendable (ID<Tenant>) async -> Bool)?>(nil)

    /// - Parameter trusted: whether every commit reaches this instance from
    ///   the start (one SQLite server); on PostgreSQL the LISTEN connection
    ///   says so once it is listening (`notificationsArrive`).
    init(limitBytes: Int, trusted: Bool) {
        self.limitBytes = max(0, limitBytes)
        state = NIOLockedValueBox(State(trusted: trusted))
    }

    /// `watcher` answers whether the hub now follows the carrier.
    func connect(watcher: @escaping @Sendable (ID<Tenant>) async -> Bool) {
        self.watcher.withLockedValue { $0 = watcher }
    }

    private enum Lookup {
        case hit(Reply)
        /// Read it; keep the answer if the driver's generation is still this.
        case miss(Generation)
        /// Read it and keep nothing (behind, or the carrier not followed yet).
        case pass(watch: Bool)
    }

    /// The page for `key`, from memory or from `read`.
    /// - Parameter seen: the client's newest change number, if it sent one.
    func page(_ key: Key, seen: Int64?, read: () async throws -> Reply) async throws -> Reply {
        guard limitBytes > 0 else { return try await read() }
        let lookup = state.withLockedValue { state -> Lookup in
            guard state.trusted else { return .pass(watch: false) }
            guard let carrier = state.carriers[key.tenant] else {
                return .pass(watch: state.watching.insert(key.tenant).inserted)
            }
            guard carrier.heard >= carrier.known, carrier.heard >= seen ?? 0 else { return .pass(watch: false) }
            if let entry = carrier.pages[key.driver]?[key.page] { return .hit(entry.reply) }
            return .miss(carrier.generation(of: key.driver))
        }
        switch lookup {
        case .hit(let reply):
            return reply
        case .pass(let watch):
            if watch, let watcher = watcher.withLockedValue({ $0 }) {
                let tenant = key.tenant
                Task {
                    // Not followed (the database did not answer): the next read asks again.
                    if await !watcher(tenant) { state.withLockedValue { _ = $0.watching.remove(tenant) } }
                }
            }
            return try await read()
        case .miss(let generation):
            let reply = try await read()
            keep(reply, as: key, generation: generation)
            return reply
        }
    }

    private func keep(_ reply: Reply, as key: Key, generation: Generation) {
        guard reply.status == .ok, let bytes = reply.body?.readableBytes, bytes <= limitBytes / 8 else { return }
        state.withLockedValue { state in
            guard state.trusted, var carrier = state.carriers[key.tenant], carrier.heard >= carrier.known,
                  carrier.generation(of: key.driver) == generation else { return }
            let stamp = state.nextStamp
            state.nextStamp += 1
            var pages = carrier.pages[key.driver] ?? [:]
            guard pages.count < Self.pagesPerDriver || pages[key.page] != nil else { return }
            if let replaced = pages.updateValue(Entry(reply: reply, bytes: bytes, stamp: stamp), forKey: key.page) {
                state.bytes -= replaced.bytes
                state.pageCount -= 1
            }
            carrier.pages[key.driver] = pages
            state.carriers[key.tenant] = carrier
            state.bytes += bytes
            state.pageCount += 1
            state.order.append((key, stamp))
            Self.evict(&state, limit: limitBytes)
        }
    }

    /// Drops the oldest pages until the rest fit, and forgets places in the
    /// order whose pages were dropped already (so the order stays small).
    private static func evict(_ state: inout State, limit: Int) {
        while state.bytes > limit || state.order.count > 2 * state.pageCount + 64, let (key, stamp) = state.order.popFirst() {
            guard state.carriers[key.tenant]?.pages[key.driver]?[key.page]?.stamp == stamp,
                  let entry = state.carriers[key.tenant]?.pages[key.driver]?.removeValue(forKey: key.page) else { continue }
            state.bytes -= entry.bytes
            state.pageCount -= 1
            if state.carriers[key.tenant]?.pages[key.driver]?.isEmpty == true {
                state.carriers[key.tenant]?.pages.removeValue(forKey: key.driver)
            }
        }
    }

    // MARK: What the hub tells (always under the hub's lock, so in its order)

    /// The hub follows the carrier's log from here on for this cache.
    func begin(_ tenant: ID<Tenant>, heard: Int64, known: Int64) {
        state.withLockedValue { state in
            state.watching.remove(tenant)
            if state.carriers[tenant] == nil { state.carriers[tenant] = Carrier(heard: heard, known: known, epoch: state.newEpoch()) }
        }
    }

    /// A commit reached `sequence`.
    func known(_ tenant: ID<Tenant>, _ sequence: Int64) {
        state.withLockedValue { state in
            if let known = state.carriers[tenant]?.known, sequence > known { state.carriers[tenant]?.known = sequence }
        }
    }

    /// The entries after `previous` up to their last, in order: the pages of
    /// the drivers they are for are dropped. A batch that does not follow on
    /// from what was applied drops the whole carrier's pages.
    func apply(_ tenant: ID<Tenant>, previous: Int64, _ entries: [Store.FeedEntry]) {
        guard let last = entries.last?.seq else { return }
        state.withLockedValue { state in
            guard var carrier = state.carriers[tenant], last > carrier.heard else { return }
            let drivers = previous > carrier.heard ? Array(carrier.pages.keys) : Array(Set(entries.compactMap(\.driverID)))
            for driver in drivers {
                if let dropped = carrier.dropPages(of: driver) {
                    state.bytes -= dropped.values.reduce(0) { $0 + $1.bytes }
                    state.pageCount -= dropped.count
                }
            }
            carrier.forgetGenerations { state.newEpoch() }
            carrier.heard = last
            carrier.known = max(carrier.known, last)
            state.carriers[tenant] = carrier
        }
    }

    /// Notifications from other instances stopped (the LISTEN connection
    /// was lost): nothing is answered from memory, as a change elsewhere could
    /// go unheard, and nothing kept is trusted again.
    func notificationsLost() {
        state.withLockedValue { state in
            state.trusted = false
            state.forgetPages()
        }
    }

    /// Notifications arrive (the LISTEN connection is listening): pages are
    /// read and kept afresh from now on.
    func notificationsArrive() {
        state.withLockedValue { state in
            state.trusted = true
            state.forgetPages()
        }
    }

    /// Pages kept and their bytes (for tests and the benchmark).
    var usage: (pages: Int, bytes: Int) { state.withLockedValue { ($0.pageCount, $0.bytes) } }
}
