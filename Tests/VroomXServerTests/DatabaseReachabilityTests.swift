import Foundation
import Logging
import Synchronization
import Testing
@testable import VroomXServer

/// When a failed probe makes the database count as down (calls answered 503
/// at once): only when no call was answered while it waited.
@Suite("Database reachability")
struct DatabaseReachabilityTests {
    /// A probe that waits, then fails, as one that timed out does; it counts its tries.
    final class SilentProbe: Sendable {
        let tries = Atomic<Int>(0)
        let started = Atomic<Bool>(false)

        func run() async -> Bool {
            tries.wrappingAdd(1, ordering: .relaxed)
            started.store(true, ordering: .relaxed)
            try? await Task.sleep(for: .milliseconds(300))
            return false
        }
    }

    static func reachability(_ probe: SilentProbe) -> DatabaseReachability {
        DatabaseReachability(interval: .milliseconds(50), logger: Logger(label: "test")) { await probe.run() } onRecovery: {}
    }

    @Test("a probe that fails while calls on pooled connections are answered leaves the database up")
    func slowNotDown() async throws {
        let probe = SilentProbe()
        let reachability = Self.reachability(probe)
        reachability.check()
        while !probe.started.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(5)) }
        reachability.answered()
        try await Task.sleep(for: .milliseconds(800))
        #expect(!reachability.isDown)
        #expect(probe.tries.load(ordering: .relaxed) == 1, "the check ended with the probe that failed")
        await reachability.close()
    }

    @Test("a probe that fails while no call is answered makes the database down, and the probe repeats")
    func silentIsDown() async throws {
        let probe = SilentProbe()
        let reachability = Self.reachability(probe)
        reachability.answered()
        reachability.check()
        try await Task.sleep(for: .milliseconds(800))
        #expect(reachability.isDown)
        #expect(probe.tries.load(ordering: .relaxed) >= 2)
        #expect(throws: DatabaseUnavailable.self) { try reachability.failIfDown() }
        await reachability.close()
    }
}
