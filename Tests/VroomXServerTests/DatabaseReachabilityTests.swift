import Foundation
import Logging
import Synchronization
import Testing
@testable import VroomXServer

/// When a failed probe makes the database count as down (calls answered 503
/// at once): only when no call was answered while it waited.
@Suite("Database reachability")
struct DatabaseReachabilityTests {
    /// A probe that waits until released, then fails, as one that timed out does; it counts its tries and its failures.
    final class SilentProbe: Sendable {
        let tries = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        let released: Atomic<Bool>

        init(released: Bool) { self.released = Atomic(released) }

        func run() async -> Bool {
            tries.wrappingAdd(1, ordering: .relaxed)
            try? await DatabaseReachabilityTests.until { released.load(ordering: .relaxed) }
            failed.wrappingAdd(1, ordering: .relaxed)
            return false
        }
    }

    static func reachability(_ probe: SilentProbe) -> DatabaseReachability {
        DatabaseReachability(interval: .milliseconds(50), logger: Logger(label: "test")) { await probe.run() } onRecovery: {}
    }

    /// Waits (on a loaded machine, up to 20 s) until `condition` holds; the expectations after it say if it never did.
    static func until(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test("a probe that fails while calls on pooled connections are answered leaves the database up")
    func slowNotDown() async throws {
        let probe = SilentProbe(released: false)
        let reachability = Self.reachability(probe)
        reachability.check()
        try await Self.until { probe.tries.load(ordering: .relaxed) == 1 }
        // A call answered while the probe waits; then the probe fails.
        reachability.answered()
        probe.released.store(true, ordering: .relaxed)
        try await Self.until { probe.failed.load(ordering: .relaxed) == 1 }
        // Had the failure counted, the database would be down and probed again within 50 ms.
        try await Task.sleep(for: .milliseconds(500))
        #expect(!reachability.isDown)
        #expect(probe.tries.load(ordering: .relaxed) == 1, "the check ended with the probe that failed")
        await reachability.close()
    }

    @Test("a probe that fails while no call is answered makes the database down, and the probe repeats")
    func silentIsDown() async throws {
        let probe = SilentProbe(released: true)
        let reachability = Self.reachability(probe)
        reachability.answered()
        reachability.check()
        try await Self.until { reachability.isDown }
        #expect(reachability.isDown)
        #expect(throws: DatabaseUnavailable.self) { try reachability.failIfDown() }
        try await Self.until { probe.tries.load(ordering: .relaxed) >= 2 }
        #expect(probe.tries.load(ordering: .relaxed) >= 2)
        await reachability.close()
    }
}
