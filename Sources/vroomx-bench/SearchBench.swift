import ArgumentParser
import Foundation
import VroomXModels
import VroomXServer

/// One carrier searching its board as hard as it can, next to everyone
/// else: a carrier with many orders of long text, several worst-case
/// searches at once (long words that almost match everything), and beside
/// them `/healthz` and another carrier's driver reading their trips. The
/// figures that matter are the others': `/healthz` and the other carrier's
/// p99, which no amount of searching may push up.
struct SearchBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "search",
                                                    abstract: "Worst-case board searches beside /healthz and another carrier's reads.")

    @Option(help: "Orders of the searching carrier.") var orders = 50_000
    @Option(help: "Concurrent searches (connections).") var searchers = 10
    @Option(help: "Carriers the searches come from, in equal shares (the first holds the orders, the others 1,000 ordinary ones each).")
    var carriers = 2
    @Option(help: "Seconds of load.") var seconds = 60
    @Option(help: "PostgreSQL URL to also measure (default: VROOMX_BENCH_POSTGRES_URL).") var postgres: String?

    func run() async throws {
        var backends: [(String, String?)] = [("sqlite", nil)]
        if let url = postgres ?? ProcessInfo.processInfo.environment["VROOMX_BENCH_POSTGRES_URL"] { backends.append(("postgres", url)) }
        // Two words of 40 characters (the most a word is looked for): one in every order's text many times over, one
        // that every order's text all but contains. The most an index lookup can be made to read, and a scan to compare.
        let (every, almost) = (String(repeating: "a", count: 40), String(repeating: "a", count: 39) + "b")
        let search = "/board?status=new&q=" + every + "+" + almost
        let carriers = max(1, min(self.carriers, searchers))
        print("\(searchers) searches of “a×40 a×39b” at once from \(carriers) carrier\(carriers == 1 ? "" : "s") for \(seconds) s"
              + " over \(orders) orders of long text;")
        print("beside them, /healthz (1 connection) and another carrier's driver reading GET /v1/trips (2 connections)")
        print("backend   load                         requests   p50 ms    p99 ms")
        for (name, url) in backends {
            let configuration = try await BenchScratch.configuration(postgres: url)
            let services = try await ServerServices.make(configuration)
            let slug = UUID().uuidString.prefix(8).lowercased()
            let (searcher, _) = try await services.store.people.createTenant(name: "Searching \(slug)", dispatcherEmail: "search-\(slug)@bench.example")
            let long = String(repeating: "a", count: 200)
            var seeded = 0
            while seeded < orders {
                let batch = (seeded..<min(seeded + 1_000, orders)).map { index in
                    CreateOrderRequest(number: "S-\(index)", vehicle: Vehicle(make: long.prefix(100) + "", model: long.prefix(100) + ""),
                                       pickup: Stop(name: long, address: long + " \(index)", contactName: long),
                                       delivery: Stop(name: long, address: long + " \(index + 1)", contactName: long), revenueCents: 100_000)
                }
                seeded += try await services.store.orders.createMany(batch, tenant: searcher.id)
            }
            var cookies = [try await services.consoleSignIn(email: "search-\(slug)@bench.example")]
            for index in 1..<carriers {
                // A carrier of ordinary size: its search still reads the shared index, where the first carrier's text is.
                let (tenant, _) = try await services.store.people.createTenant(name: "Searching too \(index) \(slug)",
                                                                        dispatcherEmail: "search-\(index)-\(slug)@bench.example")
                _ = try await services.store.orders.createMany((0..<1_000).map { order in
                    CreateOrderRequest(number: "C\(index)-\(order)", vehicle: Vehicle(make: "Toyota", model: "Camry"),
                                       pickup: Stop(address: "\(order) Harbor Rd, Savannah, GA"), delivery: Stop(address: "9 Peachtree St, Atlanta, GA"),
                                       revenueCents: 100_000)
                }, tenant: tenant.id)
                cookies.append(try await services.consoleSignIn(email: "search-\(index)-\(slug)@bench.example"))
            }
            let (other, _) = try await services.store.people.createTenant(name: "Other \(slug)", dispatcherEmail: "other-\(slug)@bench.example")
            let driver = try await services.store.people.createDriver(tenant: other.id, .init(email: "driver-\(slug)@bench.example", name: "Other Driver",
                                                                                       payType: .percentage, payRate: 2500))
            for index in 0..<50 {
                _ = try await services.store.trips.create(.init(number: "O-\(index)", driverID: driver.id, origin: "Houston, TX",
                                                              destination: "Atlanta, GA", revenueCents: 500_000, miles: 790), tenant: other.id)
            }
            let token = try await services.signIn(email: driver.email).accessToken
            let port = try await APIBench().startServer(services)
            let duration = Duration.seconds(seconds)
            let searchers = self.searchers
            async let searched = withThrowingTaskGroup(of: LoadGenerator.Result.self) { group in
                for (index, cookie) in cookies.enumerated() {
                    let connections = searchers / carriers + (index < searchers % carriers ? 1 : 0)
                    group.addTask {
                        try await LoadGenerator(host: "127.0.0.1", port: port.port, connections: connections)
                            .run(path: search, headers: [("Cookie", cookie), ("Accept", "text/html")], duration: duration)
                    }
                }
                return try await group.reduce(into: LoadGenerator.Result(latencies: [], errors: 0, seconds: 0)) { all, one in
                    all.latencies += one.latencies
                    all.errors += one.errors
                    all.seconds = max(all.seconds, one.seconds)
                }
            }
            async let health = LoadGenerator(host: "127.0.0.1", port: port.port, connections: 1).run(path: "/healthz", headers: [], duration: duration)
            async let reads = LoadGenerator(host: "127.0.0.1", port: port.port, connections: 2)
                .run(path: "/v1/trips", headers: [("Authorization", "Bearer \(token)")], duration: duration)
            for (label, result) in [("searches", try await searched), ("/healthz", try await health), ("other carrier's GET /v1/trips", try await reads)] {
                print(name.padding(toLength: 10, withPad: " ", startingAt: 0) + label.padding(toLength: 29, withPad: " ", startingAt: 0)
                      + String(format: "%8d %8.1f %9.1f", result.latencies.count, result.percentile(0.5), result.percentile(0.99))
                      + (result.errors > 0 ? "  (\(result.errors) answered 4xx/5xx)" : ""))
            }
            port.task.cancel()
            _ = await port.task.result
            await services.database.close()
        }
    }
}
