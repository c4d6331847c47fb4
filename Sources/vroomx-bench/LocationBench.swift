import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import VroomXModels
import VroomXServer

/// Location ingest: many drivers each uploading batches of fixes, with the
/// geofence evaluated on every batch. Each driver drives up to its pickup
/// and parks there, so every driver makes one arrival; dispatch's realtime
/// socket times how long an arrival takes to reach it from the upload.
struct LocationBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "location", abstract: "Location ingest with geofenced arrivals.")

    @Option(help: "Drivers uploading.") var drivers = 1_000
    @Option(help: "Batches per driver.") var batches = 6
    @Option(help: "Fixes per batch.") var fixes = 20
    @Option(help: "Concurrent uploads.") var concurrency = 32
    @Option(help: "PostgreSQL URL (default: SQLite).") var postgres: String?

    func validate() throws {
        guard drivers > 0, batches > 0, fixes > 0, concurrency > 0 else { throw ValidationError("drivers, batches, fixes and concurrency must be above 0") }
    }

    func run() async throws {
        let spacing: TimeInterval = 5
        let start = Date().addingTimeInterval(-Double(batches * fixes) * spacing - 600)
        var yards: [ID<Driver>: GeoPoint] = [:]
        var orders: [ID<Driver>: ID<Order>] = [:]
        let server = try await BenchServer.start(postgres: postgres, drivers: drivers) { services, tenant, accounts in
            for (index, account) in accounts.enumerated() {
                let yard = GeoPoint(latitude: 30 + Double(index % 100) * 0.05, longitude: -95 + Double(index / 100) * 0.05)
                let trip = try await services.store.trips.create(.init(number: "T\(index)", driverID: account.id, origin: "a", destination: "b",
                                                                     revenueCents: 1, miles: 1), tenant: tenant)
                let order = try await services.store.orders.create(.init(number: "O\(index)", tripID: trip.id, vehicle: Vehicle(make: "Make"),
                                                                       pickup: Stop(address: "Yard \(index)", location: yard),
                                                                       delivery: Stop(address: "Elsewhere"), revenueCents: 1), tenant: tenant)
                _ = try await services.store.trips.update(trip.id, .init(status: .inProgress), tenant: tenant)
                yards[account.id] = yard
                orders[account.id] = order.id
            }
        }
        defer { server.stop() }
        print("location ingest on \(postgres == nil ? "sqlite" : "postgres"): \(drivers) drivers × \(batches) batches of \(fixes) fixes, "
              + "\(concurrency) concurrent uploads, fences evaluated on each batch")

        // Dispatch's socket: when each order's arrival reaches it.
        let seen = NIOLockedValueBox<[String: UInt64]>([:])
        let connected = NIOLockedValueBox(0)
        let orderIDs = Set(orders.values.map(\.rawValue))
        let socket = BenchServer.connect(port: server.port, token: server.dispatcherToken, since: server.cursor, connected: connected) { text in
            guard text.contains("arrived_at_pickup") else { return }
            let now = DispatchTime.now().uptimeNanoseconds
            // Look up each id the frame names rather than search the frame once per order.
            var rest = Substring(text)
            while let found = rest.range(of: #""id":""#) {
                let id = String(rest[found.upperBound...].prefix(36))
                if orderIDs.contains(id) { seen.withLockedValue { if $0[id] == nil { $0[id] = now } } }
                rest = rest[found.upperBound...]
            }
        }
        try await BenchServer.wait("dispatch socket") { connected.withLockedValue { $0 } >= 1 }

        // Round after round, every driver's next batch: 5 km south of the yard at 25 m/s, then parked 30 m from it.
        // The bodies are written before the clock starts: the figure is the server's, not this client's JSON.
        let encoder = WireJSON.encoder()
        let work = try (0..<batches).flatMap { round in try server.drivers.map { driver in
            let yard = yards[driver.id]!
            let batch = (0..<fixes).map { step -> GeoPosition in
                let second = Double(round * fixes + step) * spacing
                let south = max(5_000 - second * 25, 30)
                return GeoPosition(latitude: yard.latitude - south / 111_195, longitude: yard.longitude, accuracyMeters: 8,
                                   recordedAt: start.addingTimeInterval(second))
            }
            return (driver: driver, body: ByteBuffer(bytes: try encoder.encode(RecordLocationsRequest(fixes: batch))))
        } }
        let next = NIOLockedValueBox(0)
        let sentAt = NIOLockedValueBox<[String: UInt64]>([:])
        let (orderOf, port) = (orders, server.port)
        let began = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var times: [Double] = []
                    while true {
                        let index = next.withLockedValue { value -> Int in defer { value += 1 }; return value }
                        guard index < work.count else { return times }
                        let (driver, body) = work[index]
                        let requestStart = DispatchTime.now().uptimeNanoseconds
                        let result = try await Self.send(body, port: port, token: driver.token)
                        times.append(Double(DispatchTime.now().uptimeNanoseconds - requestStart) / 1e6)
                        if !result.arrivals.isEmpty, let order = orderOf[driver.id] {
                            sentAt.withLockedValue { $0[order.rawValue] = requestStart }
                        }
                    }
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }.sorted()
        }
        let seconds = (ContinuousClock.now - began) / .seconds(1)
        func percentile(_ values: [Double], _ p: Double) -> Double { values.isEmpty ? 0 : values[min(values.count - 1, Int(Double(values.count) * p))] }
        print(String(format: "ingest: %.0f fixes/s (%.0f batches/s); batch p50 %.1f ms, p99 %.1f ms",
                     Double(work.count * fixes) / seconds, Double(work.count) / seconds, percentile(latencies, 0.5), percentile(latencies, 0.99)))
        let arrivals = sentAt.withLockedValue { $0 }
        try await BenchServer.wait("arrivals on dispatch's socket", timeout: .seconds(60)) { seen.withLockedValue { $0.count } >= arrivals.count }
        let delivered = seen.withLockedValue { $0 }
        let delays = arrivals.compactMap { order, sent in delivered[order].map { Double($0 - sent) / 1e6 } }.sorted()
        print(String(format: "arrivals: %d of %d drivers; upload-to-dispatch-socket p50 %.1f ms, p99 %.1f ms",
                     arrivals.count, drivers, percentile(delays, 0.5), percentile(delays, 0.99)))
        socket.cancel()
        await socket.value
    }

    static func send(_ body: ByteBuffer, port: Int, token: String) async throws -> RecordLocationsResult {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/locations")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(body)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw ValidationError("POST /v1/locations answered \(response.status.code): \(String(buffer: body))") }
        return try WireJSON.decoder().decode(RecordLocationsResult.self, from: Data(body.readableBytesView))
    }
}
