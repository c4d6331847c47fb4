import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import VroomXModels
import VroomXServer

/// Benchmarks: programs that measure and print figures, run on demand.
/// Quote medians of several runs; the machine is shared and noisy.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vroomx-bench",
        abstract: "VroomX benchmarks (run in release: swift run -c release vroomx-bench …).",
        subcommands: [APIBench.self, ClusterBench.self, RealtimeBench.self, MutationBench.self, DriverKitBench.self, PushBench.self, UploadBench.self,
                      SoakBench.self, LocationBench.self, SearchBench.self, DocumentBench.self, SettlementBench.self, BackupBench.self, AlertBench.self, BoardBench.self,
                      StoredJSONBench.self],
        defaultSubcommand: APIBench.self
    )

    /// Runs the chosen benchmark, then removes its data, whether it passed or failed.
    static func main() async {
        var failure: (any Error)?
        do {
            var command = try parseAsRoot()
            if var benchmark = command as? any AsyncParsableCommand {
                try await benchmark.run()
            } else {
                try command.run()
            }
        } catch {
            failure = error
        }
        await BenchScratch.remove()
        if let failure { exit(withError: failure) }
    }
}

/// `GET /v1/trips` for a driver with 50 trips, against `GET /healthz` on the
/// same server, over loopback, on SQLite and (when a URL is given) PostgreSQL.
struct APIBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "api", abstract: "Requests/s and latency of GET /v1/trips vs GET /healthz.")

    @Option(help: "Seconds per measurement.") var seconds = 5
    @Option(help: "Concurrent keep-alive connections.") var connections = 32
    @Option(help: "Measurements per endpoint (the median is reported).") var runs = 3
    @Option(help: "PostgreSQL URL to also measure (default: VROOMX_BENCH_POSTGRES_URL).") var postgres: String?
    @Flag(help: "Instead: GET /healthz on a server counting requests for /metrics beside one that does not (SQLite).") var metricsCost = false

    func run() async throws {
        if metricsCost { return try await measureMetricsCost() }
        var backends: [(String, String?)] = [("sqlite", nil)]
        if let url = postgres ?? ProcessInfo.processInfo.environment["VROOMX_BENCH_POSTGRES_URL"] { backends.append(("postgres", url)) }
        print("GET /v1/trips (driver with 50 trips) vs GET /healthz — \(connections) connections, \(seconds) s × \(runs) runs, median shown")
        print("trips (memory): first pages from the read cache; trips (database): a second server on the same database with VROOMX_READ_CACHE_MB=0")
        print("backend    endpoint              req/s     p50 ms   p99 ms")
        for (name, url) in backends {
            let (services, token) = try await seed(databaseURL: url)
            var direct = services.configuration
            direct.readCacheBytes = 0
            let servers = [try await startServer(services), try await startServer(try await ServerServices.make(direct))]
            let (cached, uncached) = (LoadGenerator(host: "127.0.0.1", port: servers[0].port, connections: connections),
                                      LoadGenerator(host: "127.0.0.1", port: servers[1].port, connections: connections))
            let authorization = [("Authorization", "Bearer \(token)")]
            for generator in [cached, uncached] { _ = try await generator.run(path: "/v1/trips", headers: authorization, duration: .seconds(1)) }
            // Alternating, so all see the same moments of a shared machine; a ratio is the median of each round's.
            var results: [String: [LoadGenerator.Result]] = [:], ratios: [String: [Double]] = [:]
            let labels = ["/healthz", "trips (memory)", "trips (database)"]
            for _ in 0..<runs {
                let health = try await cached.run(path: "/healthz", headers: [], duration: .seconds(seconds))
                let memory = try await cached.run(path: "/v1/trips", headers: authorization, duration: .seconds(seconds))
                let database = try await uncached.run(path: "/v1/trips", headers: authorization, duration: .seconds(seconds))
                for (label, result) in zip(labels, [health, memory, database]) {
                    results[label, default: []].append(result)
                    ratios[label, default: []].append(result.requestsPerSecond / health.requestsPerSecond)
                }
            }
            for label in labels {
                let result = Self.median(results[label] ?? [])
                print(name.padding(toLength: 11, withPad: " ", startingAt: 0) + label.padding(toLength: 18, withPad: " ", startingAt: 0)
                      + String(format: "%9.0f %9.2f %8.2f", result.requestsPerSecond, result.percentile(0.5), result.percentile(0.99))
                      + (result.errors > 0 ? " (\(result.errors) errors)" : ""))
            }
            for label in labels.dropFirst() {
                let pairs = ratios[label] ?? []
                print(name.padding(toLength: 11, withPad: " ", startingAt: 0)
                      + String(format: "\(label)/healthz ratio: %.2f (median of %d rounds: %@)", pairs.sorted()[pairs.count / 2], runs,
                               pairs.map { String(format: "%.2f", $0) }.joined(separator: " ")))
            }
            for server in servers {
                server.task.cancel()
                _ = await server.task.result
            }
        }
    }

    /// What counting requests costs the lightest request: two servers, alternating, medians and the ratio.
    func measureMetricsCost() async throws {
        print("GET /healthz with VROOMX_METRICS_TOKEN set (requests counted and timed) vs unset — \(connections) connections, \(seconds) s × \(runs) runs")
        var servers: [(label: String, port: Int, task: Task<Void, any Error>)] = []
        for counted in [false, true] {
            var configuration = try await BenchScratch.configuration(postgres: nil)
            if counted { configuration.metricsToken = "bench-metrics-token-0123456789" }
            let (port, task) = try await startServer(try await ServerServices.make(configuration))
            servers.append((counted ? "counted" : "plain", port, task))
        }
        var results: [String: [LoadGenerator.Result]] = [:], ratios: [Double] = []
        for _ in 0..<runs {
            var pair: [Double] = []
            for server in servers {
                let result = try await LoadGenerator(host: "127.0.0.1", port: server.port, connections: connections)
                    .run(path: "/healthz", headers: [], duration: .seconds(seconds))
                results[server.label, default: []].append(result)
                pair.append(result.requestsPerSecond)
            }
            ratios.append(pair[1] / pair[0])
        }
        for server in servers {
            let result = Self.median(results[server.label] ?? [])
            print(server.label.padding(toLength: 9, withPad: " ", startingAt: 0)
                  + String(format: "%9.0f req/s  p50 %.2f ms  p99 %.2f ms", result.requestsPerSecond, result.percentile(0.5), result.percentile(0.99)))
            server.task.cancel()
            _ = await server.task.result
        }
        print(String(format: "counted/plain throughput ratio: %.3f (median of %d pairs: %@)", ratios.sorted()[ratios.count / 2], runs,
                     ratios.map { String(format: "%.3f", $0) }.joined(separator: " ")))
    }

    static func median(_ results: [LoadGenerator.Result]) -> LoadGenerator.Result {
        results.sorted { $0.requestsPerSecond < $1.requestsPerSecond }[results.count / 2]
    }

    func seed(databaseURL: String?) async throws -> (ServerServices, String) {
        let configuration = try await BenchScratch.configuration(postgres: databaseURL)
        let services = try await ServerServices.make(configuration)
        let slug = UUID().uuidString.prefix(8).lowercased()
        let (tenant, _) = try await services.store.people.createTenant(name: "Bench \(slug)", dispatcherEmail: "dispatch-\(slug)@bench.example")
        let driver = try await services.store.people.createDriver(tenant: tenant.id, .init(
            email: "driver-\(slug)@bench.example", name: "Bench Driver", payType: .percentage, payRate: 2500))
        let today = LocalDate(Date())
        for index in 0..<50 {
            _ = try await services.store.trips.create(.init(
                number: "B-\(index)", driverID: driver.id, startDate: today.adding(days: -index), endDate: today.adding(days: 2 - index),
                origin: "Houston, TX", destination: "Atlanta, GA", revenueCents: 500_000 + index, miles: 790), tenant: tenant.id)
        }
        let session = try await services.signIn(email: driver.email)
        return (services, session.accessToken)
    }

    /// `upkeep`: whether the server's background upkeep runs (it starts at once: pruning, the alert sweep, the counts).
    func startServer(_ services: ServerServices, upkeep: Bool = true) async throws -> (port: Int, task: Task<Void, any Error>) {
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(services, upkeep: upkeep) { port in continuation.yield(port) }
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        for await port in ports { return (port, task) }
        throw CancellationError()
    }
}
