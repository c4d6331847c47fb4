import ArgumentParser
import AsyncHTTPClient
import Foundation
import VroomXModels
import VroomXServer

/// The console's load board for a carrier with many orders: each tab's
/// first page, the last page of the biggest tabs and the other sort order,
/// one browser asking after another, so each figure is the whole request
/// (queries and page) and nothing else competes.
struct BoardBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "board", abstract: "Board pages of a carrier with many orders.")

    @Option(help: "Orders of the carrier (20 % New, a quarter of them without a pickup date; 10 % Assigned; 5 % Picked up; 60 % Delivered; 5 % Cancelled).")
    var orders = 100_000
    @Option(help: "Seconds each page is asked for.") var seconds = 3
    @Option(help: "PostgreSQL admin URL (default: SQLite).") var postgres: String?
    @Option(help: "Only the pages whose label contains this, or one of these separated by commas (\"Trips\", \"Last,typed\").") var only: String?
    @Option(help: "Instead of timing each page, count the instructions of this many requests of it (under scripts/callgrind --marks).")
    var instructions: Int?

    func validate() throws {
        if let instructions, !(1...1_000).contains(instructions) { throw ValidationError("--instructions takes 1 to 1000 requests") }
        if instructions != nil, !CallgrindMarks.available { throw ValidationError("--instructions runs under scripts/callgrind --marks") }
    }

    /// The status of the `index`th order seeded: the shares in `orders`' help.
    static func status(_ index: Int) -> OrderStatus {
        switch index % 20 {
        case 0..<4: return .new
        case 4..<6: return .assigned
        case 6: return .pickedUp
        case 7: return .cancelled
        default: return .delivered
        }
    }

    func run() async throws {
        // Seeding writes 20,000 rows a statement: under the deadline of upkeep, not a request's (valgrind runs it
        // tens of times slower). The server's requests run in tasks of their own, under the request deadline.
        try await DatabaseDeadline.allowing(DatabaseDeadline.maintenance) { try await seedAndMeasure() }
    }

    private func seedAndMeasure() async throws {
        let services = try await ServerServices.make(try await BenchScratch.configuration(postgres: postgres))
        let store = services.store
        let slug = UUID().uuidString.prefix(8).lowercased()
        let (tenant, _) = try await store.people.createTenant(name: "Board Bench", dispatcherEmail: "board-\(slug)@bench.example")
        let today = LocalDate(Date())
        let seeding = ContinuousClock.now
        for first in stride(from: 0, to: orders, by: 1_000) {
            let batch = (first..<min(first + 1_000, orders)).map { index in
                // Pickups over 200 days; every fourth New order has no date yet (they sort last).
                let day: LocalDate? = Self.status(index) == .new && index % 80 < 4 ? nil : today.adding(days: index % 200 - 100)
                return CreateOrderRequest(number: "B-\(index)", vehicle: Vehicle(year: 2022, make: "Kia", model: "Soul", vin: ""),
                                          pickup: Stop(address: "Joliet, IL", windowStart: day),
                                          delivery: Stop(address: "Gary, IN", windowStart: day?.adding(days: 2)), revenueCents: 50_000)
            }
            _ = try await store.orders.createMany(batch, tenant: tenant.id)
        }
        // The statuses are set directly (with a driver and the times they need): the board reads the status column.
        let driver = try await store.people.createDriver(tenant: tenant.id, .init(email: "driver-\(slug)@bench.example", name: "Bench Driver",
                                                                              payType: .percentage, payRate: 2500))
        let now = Date()
        for status in [OrderStatus.assigned, .pickedUp, .cancelled, .delivered] {
            let remainders = (0..<20).filter { Self.status($0) == status }
            try await services.database.write { db in
                for first in stride(from: 0, to: orders, by: 20_000) {
                    let numbers = (first..<min(first + 20_000, orders)).filter { remainders.contains($0 % 20) }.map { "B-\($0)" }
                    try await db.execute("""
                        UPDATE orders SET status = \(status), driver_id = \(status == .cancelled ? nil : driver.id),
                        actual_pickup_at = \(status == .pickedUp || status == .delivered ? now : nil), actual_delivery_at = \(status == .delivered ? now : nil)
                        WHERE tenant_id = \(tenant.id) AND number IN (\(SQL.list(numbers)))
                        """)
                }
            }
        }
        // Trips of four orders each, most of them finished (the trips page lists the open ones and pages the rest).
        let tripCount = orders / 4
        var trips: [ID<Trip>] = []
        for index in 0..<tripCount {
            let start = today.adding(days: index % 200 - 100)
            trips.append(try await store.trips.create(CreateTripRequest(number: "BT-\(index)", startDate: start, endDate: start.adding(days: 3),
                                                                        origin: "Joliet, IL", destination: "Gary, IN", miles: 40), tenant: tenant.id).id)
        }
        for first in stride(from: 0, to: trips.count, by: 500) { try await services.database.write { db in
            for (index, trip) in trips.enumerated().dropFirst(first).prefix(500) {
                // One trip in 200 stays open (planned or under way), one in 50 was cancelled.
                let status: TripStatus = index % 200 == 0 ? .planned : index % 200 == 1 ? .inProgress : index % 50 == 2 ? .cancelled : .completed
                if status != .planned { try await db.execute("UPDATE trips SET status = \(status), driver_id = \(driver.id) WHERE id = \(trip)") }
                let numbers = (index * 4..<index * 4 + 4).map { "B-\($0)" }
                try await db.execute("UPDATE orders SET trip_id = \(trip) WHERE tenant_id = \(tenant.id) AND number IN (\(SQL.list(numbers)))")
            }
        } }
        // The server sums PostgreSQL's kept counts every 5 minutes (a row a change until then); the pages are timed as
        // they are after that, not in the minutes right after 100,000 orders changed status.
        try await store.gatherStatusCounts()
        // The server's alert sweep (every few minutes) tells dispatch of the late orders once; run to the end here, it
        // does not write thousands of alerts while the pages are timed, as it did before.
        let sweeping = ContinuousClock.now
        let alerted = try await store.orderAlerts.sweep()
        print("\(alerted) late orders alerted " + String(format: "in %.0f s", SettlementBench.seconds(ContinuousClock.now - sweeping)))
        let counts = Dictionary(grouping: 0..<orders, by: Self.status).mapValues(\.count)
        print("\(orders) orders on \(tripCount) trips, \(postgres == nil ? "SQLite" : "PostgreSQL"); "
              + String(format: "seeded in %.0f s", SettlementBench.seconds(ContinuousClock.now - seeding)))
        let cookie = try await services.consoleSignIn(email: "board-\(slug)@bench.example")
        // Without the server's upkeep, which begins with a sweep of its own and the counts again: the bench ran both
        // above, and a second sweep ran beside the first pages (under callgrind, inside their counts).
        let port = try await APIBench().startServer(services, upkeep: false)
        func lastPage(_ status: OrderStatus) -> Int { max(1, ((counts[status] ?? 0) + 49) / 50) }
        // Deep pages as the console's links reach them (Next after page 299's last order, Last), and by typed page numbers.
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = client.shutdown() }
        func link(_ rel: String, on path: String) async throws -> String {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port.port)\(path)")
            request.headers.add(name: "Cookie", value: cookie)
            let html = String(buffer: try await client.execute(request, timeout: .seconds(60)).body.collect(upTo: 16 << 20))
            guard let end = html.range(of: "\" rel=\"\(rel)\""),
                  let start = html.range(of: "href=\"", options: .backwards, range: html.startIndex..<end.lowerBound) else {
                throw ValidationError("no \(rel) link on \(path)")
            }
            return html[start.upperBound..<end.lowerBound].replacingOccurrences(of: "&amp;", with: "&")
        }
        let pages: [(String, String)] = [
            ("New, first page", "/board?status=new"),
            ("New, newest pickup first", "/board?status=new&sort=pickup_desc"),
            ("New, Last (no pickup date)", try await link("last", on: "/board?status=new")),
            ("New, page \(lastPage(.new)) typed", "/board?status=new&page=\(lastPage(.new))"),
            ("Assigned, first page", "/board?status=assigned"),
            ("Picked up, first page", "/board?status=picked_up"),
            ("Delivered, first page", "/board?status=delivered"),
            ("Delivered, Next to page 300", try await link("next", on: "/board?status=delivered&page=299")),
            ("Delivered, page 300 typed", "/board?status=delivered&page=300"),
            ("Delivered, Previous from Last", try await link("prev", on: try await link("last", on: "/board?status=delivered"))),
            ("Delivered, Last", try await link("last", on: "/board?status=delivered")),
            ("Delivered, page \(lastPage(.delivered)) typed", "/board?status=delivered&page=\(lastPage(.delivered))"),
            ("Delivered, newest first, Last", try await link("last", on: "/board?status=delivered&sort=pickup_desc")),
            ("Cancelled, first page", "/board?status=cancelled"),
            ("Trips, first page", "/trips"),
            ("Trips, finished page 200", "/trips?page=200"),
            ("Trips, finished last page", "/trips?page=\(max(1, (tripCount - tripCount / 100 + 49) / 50))"),
            // The carrier's other pages, with every order and trip on the record.
            ("Drivers", "/drivers"),
            ("Driver's pay", "/drivers/\(driver.id)/pay"),
            ("Pay", "/pay"),
            ("Fleet", "/fleet"),
            ("Map", "/map"),
            ("Receivables", "/receivables"),
            ("Invoices", "/invoices"),
            ("Customers", "/customers"),
            ("Messages", "/messages"),
            ("New order form", "/orders/new"),
        ]
        print("page                                    requests   p50 ms    p99 ms")
        for (label, path) in pages where only.map({ $0.split(separator: ",").contains { label.contains($0) } }) ?? true {
            let browser = LoadGenerator(host: "127.0.0.1", port: port.port, connections: 1)
            let headers = [("Cookie", cookie), ("Accept", "text/html")]
            let result: LoadGenerator.Result
            if let instructions {
                // Counted after a first request, as a page is asked for again and again: statements prepared, pages cached.
                _ = try await browser.run(path: path, headers: headers, duration: .seconds(600), requests: 1)
                result = try await CallgrindMarks.count(label, requests: instructions) {
                    try await browser.run(path: path, headers: headers, duration: .seconds(3600), requests: instructions)
                }
                guard result.latencies.count == instructions else {
                    throw BenchError("\(label): \(result.latencies.count) of \(instructions) requests answered")
                }
            } else {
                result = try await browser.run(path: path, headers: headers, duration: .seconds(seconds))
            }
            print(label.padding(toLength: 38, withPad: " ", startingAt: 0)
                  + String(format: "%10d %8.1f %9.1f", result.latencies.count, result.percentile(0.5), result.percentile(0.99))
                  + (result.errors > 0 ? "  (\(result.errors) answered 4xx/5xx)" : ""))
        }
        port.task.cancel()
        _ = await port.task.result
        await services.database.close()
    }
}
