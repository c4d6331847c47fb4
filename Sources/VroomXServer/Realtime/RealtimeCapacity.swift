import NIOConcurrencyHelpers
import NIOCore
import VroomXModels

/// Caps realtime sockets per user, per carrier and on this instance. A place
/// is taken when an upgrade is accepted and given back when its connection
/// closes, so no path can leak one. A user at the cap still gets the new
/// socket and the oldest gives way (closed with 4029): a phone that changed
/// networks leaves dead sockets behind for a while, and they must not lock
/// it out. A full carrier or instance refuses the new socket instead (429).
public final class RealtimeCapacity: Sendable {
    /// The caps in force (`sockets` lowered to what descriptors allow).
    public let limits: RealtimeLimits

    private struct Counts {
        var total = 0
        var perCarrier: [ID<Tenant>: Int] = [:]
        /// Each user's open sockets, oldest first.
        var perUser: [ID<User>: [RealtimeTicket]] = [:]
        var streams = 0
        var streamsPerCarrier: [ID<Tenant>: Int] = [:]
        var streamsPerUser: [ID<User>: Int] = [:]
    }

    private let counts = NIOLockedValueBox(Counts())

    init(limits: RealtimeLimits) { self.limits = limits }

    /// Takes a place for `ticket` until `channel` closes; false when the
    /// carrier or the instance is full.
    func admit(_ ticket: RealtimeTicket, for identity: Identity, closingWith channel: any Channel) -> Bool {
        let admission = counts.withLockedValue { counts -> Admission in
            guard counts.total < limits.sockets, counts.perCarrier[identity.tenant, default: 0] < limits.socketsPerCarrier else {
                return .refused
            }
            counts.total += 1
            counts.perCarrier[identity.tenant, default: 0] += 1
            let live = counts.perUser[identity.user, default: []].filter { !$0.isEvicted }
            counts.perUser[identity.user, default: []].append(ticket)
            return .admitted(replacing: live.count >= limits.socketsPerUser ? live.first : nil)
        }
        guard case .admitted(let oldest) = admission else { return false }
        oldest?.evict()
        ServerMetrics.realtimeSockets.increment()
        channel.closeFuture.whenComplete { [counts] _ in
            ServerMetrics.realtimeSockets.decrement()
            counts.withLockedValue { counts in
                counts.total -= 1
                counts.perCarrier[identity.tenant, default: 1] -= 1
                if counts.perCarrier[identity.tenant] == 0 { counts.perCarrier[identity.tenant] = nil }
                let remaining = counts.perUser[identity.user, default: []].filter { $0 !== ticket }
                counts.perUser[identity.user] = remaining.isEmpty ? nil : remaining
            }
        }
        return true
    }

    // MARK: Console live streams

    /// Console pages' live streams (`/live`) hold a connection and its
    /// descriptor like a socket, so they count in the same budget: a
    /// carrier's streams and sockets together under `socketsPerCarrier`,
    /// and all of them under `sockets`. Of that, streams take at most a
    /// quarter of the instance, a carrier at most a quarter of that, and a
    /// dispatcher `streamsPerUser` (a browser tab each): no one session or
    /// carrier can leave another's pages without live updates.
    static let streamsPerUser = 12

    var streamCap: Int { max(1, limits.sockets / 4) }
    var streamsPerCarrierCap: Int { max(Self.streamsPerUser, streamCap / 4) }

    /// Takes a place for a live stream; false when the dispatcher, the
    /// carrier or the instance has no room (refused with Retry-After).
    func admitStream(for identity: Identity) -> Bool {
        counts.withLockedValue { counts in
            guard counts.total < limits.sockets, counts.streams < streamCap,
                  counts.perCarrier[identity.tenant, default: 0] < limits.socketsPerCarrier,
                  counts.streamsPerCarrier[identity.tenant, default: 0] < streamsPerCarrierCap,
                  counts.streamsPerUser[identity.user, default: 0] < Self.streamsPerUser else { return false }
            counts.total += 1
            counts.streams += 1
            counts.perCarrier[identity.tenant, default: 0] += 1
            counts.streamsPerCarrier[identity.tenant, default: 0] += 1
            counts.streamsPerUser[identity.user, default: 0] += 1
            ServerMetrics.consoleStreams.increment()
            return true
        }
    }

    func releaseStream(for identity: Identity) {
        ServerMetrics.consoleStreams.decrement()
        counts.withLockedValue { counts in
            counts.total -= 1
            counts.streams -= 1
            func drop<Key>(_ key: Key, from table: inout [Key: Int]) {
                table[key, default: 1] -= 1
                if table[key] == 0 { table[key] = nil }
            }
            drop(identity.tenant, from: &counts.perCarrier)
            drop(identity.tenant, from: &counts.streamsPerCarrier)
            drop(identity.user, from: &counts.streamsPerUser)
        }
    }

    public var openStreams: Int { counts.withLockedValue { $0.streams } }

    private enum Admission {
        case refused
        case admitted(replacing: RealtimeTicket?)
    }

    public var openSockets: Int { counts.withLockedValue { $0.total } }
}

/// One realtime socket's place in `RealtimeCapacity`. Evicting it (for a
/// newer socket of the same user) tells its session to close with 4029.
final class RealtimeTicket: Sendable {
    private let state = NIOLockedValueBox<(evicted: Bool, onEvict: (@Sendable () -> Void)?)>((false, nil))

    var isEvicted: Bool { state.withLockedValue { $0.evicted } }

    func evict() {
        let action = state.withLockedValue { state -> (@Sendable () -> Void)? in
            state.evicted = true
            defer { state.onEvict = nil }
            return state.onEvict
        }
        action?()
    }

    /// Runs `action` on eviction (at once if already evicted).
    func onEvict(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLockedValue { state -> Bool in
            if state.evicted { return true }
            state.onEvict = action
            return false
        }
        if now { action() }
    }
}
