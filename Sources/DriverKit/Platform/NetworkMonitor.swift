import Foundation
import NIOConcurrencyHelpers
#if canImport(Network)
import Network
#endif

/// Whether the server can be reached, and a stream of changes to that.
public protocol NetworkMonitor: Sendable {
    var isOnline: Bool { get }
    /// Yields the new state on every change.
    func changes() -> AsyncStream<Bool>
    /// Requests report what they saw, so the state follows reality even
    /// where the platform cannot tell (Linux).
    func reportSuccess()
    func reportFailure()
}

/// Shared bookkeeping: the state and its listeners.
public final class NetworkState: Sendable {
    private struct State {
        var online: Bool
        var listeners: [UUID: AsyncStream<Bool>.Continuation] = [:]
    }

    private let state: NIOLockedValueBox<State>

    public init(online: Bool) { state = NIOLockedValueBox(State(online: online)) }

    public var isOnline: Bool { state.withLockedValue { $0.online } }

    public func set(_ online: Bool) {
        let listeners = state.withLockedValue { state -> [AsyncStream<Bool>.Continuation] in
            guard state.online != online else { return [] }
            state.online = online
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.yield(online) }
    }

    public func changes() -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        state.withLockedValue { $0.listeners[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }
}

/// Linux: no system signal for reachability, so the state is inferred from
/// the outcome of requests, and while offline a light probe
/// (`GET /healthz`) runs periodically to notice the way back.
public final class ProbingNetworkMonitor: NetworkMonitor, @unchecked Sendable {
    private let state = NetworkState(online: true)
    private let probe: @Sendable () async -> Bool
    private let interval: Duration
    private let prober = NIOLockedValueBox<Task<Void, Never>?>(nil)

    /// - Parameter probe: returns whether the server answered.
    public init(interval: Duration = .seconds(15), probe: @escaping @Sendable () async -> Bool) {
        self.probe = probe
        self.interval = interval
    }

    deinit { prober.withLockedValue { $0?.cancel() } }

    public var isOnline: Bool { state.isOnline }
    public func changes() -> AsyncStream<Bool> { state.changes() }
    public func reportSuccess() { state.set(true) }

    public func reportFailure() {
        state.set(false)
        startProbing()
    }

    /// Probes once now (when the platform says the network is back).
    public func probeNow() {
        Task { [weak self, probe] in
            if await probe() { self?.reportSuccess() } else { self?.reportFailure() }
        }
    }

    private func startProbing() {
        prober.withLockedValue { task in
            guard task == nil else { return }
            task = Task { [weak self, interval, probe] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    if await probe() {
                        self?.reportSuccess()
                        break
                    }
                }
                self?.prober.withLockedValue { $0 = nil }
            }
        }
    }
}

#if canImport(Network)
/// Apple platforms: the system's path monitor says at once when the device
/// loses its connection; whether the server answers is still learnt from
/// requests and probes.
public final class PathNetworkMonitor: NetworkMonitor, @unchecked Sendable {
    private let inner: ProbingNetworkMonitor
    private let monitor = NWPathMonitor()

    public init(probe: @escaping @Sendable () async -> Bool) {
        inner = ProbingNetworkMonitor(probe: probe)
        monitor.pathUpdateHandler = { [inner] path in
            if path.status == .satisfied { inner.probeNow() } else { inner.reportFailure() }
        }
        monitor.start(queue: DispatchQueue(label: "app.vroomx.network"))
    }

    deinit { monitor.cancel() }

    public var isOnline: Bool { inner.isOnline }
    public func changes() -> AsyncStream<Bool> { inner.changes() }
    public func reportSuccess() { inner.reportSuccess() }
    public func reportFailure() { inner.reportFailure() }
}
#endif
