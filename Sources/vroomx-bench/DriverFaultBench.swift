import ArgumentParser
import Foundation
import VroomXTestSupport

/// The driver's work under the seeded fault schedule, at length and over
/// several seeds (the test suite runs one seed of 1,000 operations): per
/// seed, how long commands took, what faults were met, how long the final
/// sync took, and whether the accounting found anything lost, duplicated,
/// stranded or different between device and server.
struct DriverFaultBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "driver-faults",
        abstract: "vroomx-driver under network, server, clock and dispatch faults: every change once, nothing stranded (N seeds).")

    @Option(help: "Driver operations per seed.") var operations = 5_000
    @Option(help: "How many seeds to run.") var seeds = 3
    @Option(help: "The first seed (default: random); the others follow it.") var seed: UInt64?

    func run() async throws {
        let first = seed ?? UInt64.random(in: 1...999_999)
        var failed: [UInt64] = []
        var medians: [Double] = []
        for index in 0..<UInt64(seeds) {
            let current = first &+ index
            print("seed \(current): \(operations) operations")
            let report = try await DriverFaultSchedule(.init(seed: current, operations: operations, log: { print("  \($0)") })).run()
            print(report)
            if !report.problems.isEmpty {
                failed.append(current)
                print(report.diagnostics)
            }
            let sorted = report.commandSeconds.sorted()
            if !sorted.isEmpty { medians.append(sorted[sorted.count / 2]) }
            print("")
        }
        let median = medians.sorted().dropFirst(medians.count / 2).first ?? 0
        print("\(seeds) seed(s) × \(operations) operations: \(failed.isEmpty ? "all accounted for" : "PROBLEMS with seeds \(failed)"); "
              + "median command \(Int(median * 1000)) ms")
        if !failed.isEmpty { throw ExitCode(1) }
    }
}
