import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import VroomXModels
import VroomXServer

/// `POST /v1/mutations` throughput: batches of 100 offline mutations (new
/// expenses), first applied, then replayed (the answer was lost).
struct MutationBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mutations", abstract: "POST /v1/mutations throughput, batches of 100.")

    @Option(help: "Batches to send.") var batches = 200
    @Option(help: "Mutations per batch.") var size = 100
    @Option(help: "Concurrent clients (drivers).") var clients = 4
    @Option(help: "PostgreSQL URL to also measure (default: VROOMX_BENCH_POSTGRES_URL).") var postgres: String?

    func run() async throws {
        var backends: [(String, String?)] = [("sqlite", nil)]
        if let url = postgres ?? ProcessInfo.processInfo.environment["VROOMX_BENCH_POSTGRES_URL"] { backends.append(("postgres", url)) }
        print("POST /v1/mutations: \(batches) batches × \(size) create_expense mutations, \(clients) concurrent drivers")
        for (name, url) in backends {
            let configuration = try await BenchScratch.configuration(postgres: url)
            let services = try await ServerServices.make(configuration)
            let (tenant, _) = try await services.store.people.createTenant(name: "Bench", dispatcherEmail: "dispatch@bench.example")
            // Enough trips that none reaches the most expenses one trip holds (`ExpenseService.maxExpensesPerTrip`).
            let tripsPerDriver = max(1, (batches * size / clients) / 1_500 + 1)
            var drivers: [(token: String, trips: [ID<Trip>])] = []
            for index in 0..<clients {
                let driver = try await services.store.people.createDriver(tenant: tenant.id, .init(
                    email: "driver\(index)@bench.example", name: "D\(index)", payType: .perTrip, payRate: 1))
                var trips: [ID<Trip>] = []
                for number in 0..<tripsPerDriver {
                    trips.append(try await services.store.trips.create(.init(number: "T\(index)-\(number)", driverID: driver.id, origin: "a",
                                                                           destination: "b", revenueCents: 1, miles: 1), tenant: tenant.id).id)
                }
                drivers.append((try await services.signIn(email: driver.email).accessToken, trips))
            }
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let app = buildApplication(services) { continuation.yield($0) }
            let serverTask = Task { try await app.runService(gracefulShutdownSignals: []) }
            var port = 0
            for await bound in ports { port = bound; break }

            // The same batches, applied then replayed; encoded before the clock starts, as a load generator's requests
            // are (the client shares the server's two cores: its JSON work would be counted against the server).
            let plans = try (0..<batches).map { index -> (Int, ByteBuffer) in
                let driver = index % clients
                let trips = drivers[driver].trips
                let batch = MutationBatch((0..<size).map { _ in
                    Mutation(.createExpense(.init(id: ID(), tripID: trips[(index / clients) % trips.count], category: .fuel, amountCents: 1_000,
                                                  date: LocalDate(Date()))))
                })
                return (driver, ByteBuffer(bytes: try WireJSON.encoder().encode(batch)))
            }
            let accounts = drivers
            let serverPort = port
            for (label, replay) in [("applied", false), ("replayed", true)] {
                let started = ContinuousClock.now
                let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
                    for client in 0..<clients {
                        group.addTask {
                            var times: [Double] = []
                            for (driver, batch) in plans where driver == client {
                                let start = ContinuousClock.now
                                let outcomes = try await Self.send(batch, port: serverPort, token: accounts[driver].token)
                                guard outcomes.results.count == size, outcomes.results.allSatisfy({ $0.outcome == .applied && $0.replayed == replay }) else {
                                    throw ValidationError("unexpected results")
                                }
                                let elapsed = ContinuousClock.now - start
                                times.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                            }
                            return times
                        }
                    }
                    return try await group.reduce(into: [Double]()) { $0 += $1 }.sorted()
                }
                let elapsed = ContinuousClock.now - started
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                print(String(format: "%@ %@: %.0f mutations/s (%.1f batches/s), batch p50 %.1f ms, p99 %.1f ms",
                             name.padding(toLength: 9, withPad: " ", startingAt: 0), label.padding(toLength: 9, withPad: " ", startingAt: 0),
                             Double(batches * size) / seconds, Double(batches) / seconds,
                             latencies[latencies.count / 2], latencies[min(latencies.count - 1, latencies.count * 99 / 100)]))
            }
            serverTask.cancel()
            _ = await serverTask.result
        }
    }

    /// What the bench checks of an answer: each mutation's outcome. The rows
    /// beside them are a driver's phone's to decode, not the server's CPU's.
    struct Outcomes: Decodable {
        struct Result: Decodable {
            var outcome: MutationOutcome
            var replayed: Bool
        }
        var results: [Result]
    }

    static func send(_ body: ByteBuffer, port: Int, token: String) async throws -> Outcomes {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/mutations")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let answer = try await response.body.collect(upTo: 16 << 20)
        guard response.status == .ok else { throw ValidationError("POST /v1/mutations answered \(response.status.code)") }
        return try WireJSON.decoder().decode(Outcomes.self, from: Data(answer.readableBytesView))
    }
}
