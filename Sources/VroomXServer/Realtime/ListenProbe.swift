import Foundation
import NIOConcurrencyHelpers

/// Proves a LISTEN connection still hears: every `interval` the instance
/// sends itself a notification through another connection and waits
/// `patience` for it to come back. A connection that a firewall or NAT
/// dropped without closing it would otherwise be trusted until the next
/// safety poll, and pages kept in memory (`ReadCache`) would go stale.
final class ListenProbe: Sendable {
    static let prefix = "probe:"
    let interval: Duration
    let patience: Duration
    /// This instance's probes (every instance hears every probe).
    private let instance = UUID().uuidString
    private let lastHeard = NIOLockedValueBox<String?>(nil)

    init(interval: Duration = .seconds(5), patience: Duration = .seconds(3)) {
        self.interval = interval
        self.patience = patience
    }

    /// A notification of the probe's kind arrived (another instance's is not this one's proof).
    func heard(_ payload: String) {
        guard payload.hasPrefix("\(Self.prefix)\(instance):") else { return }
        lastHeard.withLockedValue { $0 = payload }
    }

    /// Sends probes until one goes unheard (then returns false) or the task
    /// is cancelled (true). A probe that cannot be sent (the database is out
    /// of reach, so nothing commits either) is not held against the connection.
    func watch(send: @Sendable (String) async throws -> Void) async -> Bool {
        var sent = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            sent += 1
            let payload = "\(Self.prefix)\(instance):\(sent)"
            do { try await send(payload) } catch { continue }
            let deadline = ContinuousClock.now + patience
            while lastHeard.withLockedValue({ $0 }) != payload {
                if Task.isCancelled { return true }
                if ContinuousClock.now >= deadline { return false }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        return true
    }
}
