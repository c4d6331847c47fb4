import Foundation
import Testing
import VroomXTestSupport

/// The driver's work under a seeded schedule of every fault (see
/// `DriverFaultSchedule`). `VROOMX_FAULT_SEED` replays a schedule;
/// `VROOMX_FAULT_OPERATIONS` changes its length (the long run is
/// `vroomx-bench driver-faults`).
@Suite("driver work under faults", .serialized)
struct DriverFaultTests {
    @Test("driver commands against a failing network, server, phone clock and dispatch, a second driver on the phone: every change once or refused with a reason shown and visible to dispatch, nothing left waiting, cache equals the server",
          arguments: TestBackend.available)
    func randomizedFaults(_ backend: TestBackend) async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["VROOMX_FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...999_999)
        // The long run is on the embedded database; PostgreSQL gets a shorter one beside it.
        let operations = environment["VROOMX_FAULT_OPERATIONS"].flatMap { Int($0) } ?? (backend == .sqlite ? 1_000 : 400)
        print("driver fault schedule on \(backend): seed \(seed), \(operations) operations (replay with VROOMX_FAULT_SEED=\(seed))")
        let schedule = try DriverFaultSchedule(.init(seed: seed, operations: operations, backend: backend, log: { print("  \($0)") }))
        let report = try await schedule.run()
        print(report)
        if !report.diagnostics.isEmpty { print(report.diagnostics) }
        // The first problems say what happened; a long tail would hide the seed in a CI log.
        let shown = report.problems.prefix(15).joined(separator: "\n")
        let more = report.problems.count > 15 ? "\n… and \(report.problems.count - 15) more" : ""
        #expect(report.problems.isEmpty, "seed \(seed) on \(backend) (replay with VROOMX_FAULT_SEED=\(seed)):\n\(shown)\(more)")
    }
}
