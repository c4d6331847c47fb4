import ArgumentParser
import DriverKit
import Foundation
import Logging
import NIOConcurrencyHelpers
import VroomXModels
import VroomXServer

/// DriverKit on the device side: applying the feed, queueing offline work,
/// the first route, draining the outbox to a loopback server, and dispatch's
/// changes arriving over realtime.
struct DriverKitBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "driverkit", abstract: "DriverKit cache, outbox, routing and drain.")

    @Option(help: "Repetitions (the median is reported).") var runs = 5
    @Option(help: "Run one part only (apply, enqueue, route, drain, live), as when profiling it.") var only: String?

    func run() async throws {
        print("DriverKit (SQLite on disk, WAL), median of \(runs) runs")
        func wanted(_ part: String) -> Bool { only == nil || only == part }
        if wanted("apply") { try await applyChanges() }
        if wanted("enqueue") { try enqueueMutations() }
        if wanted("route") { try initialRoute() }
        if wanted("drain") { try await drain() }
        if wanted("live") { try await liveChanges() }
    }

    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// A feed page as the server would send it: trips, orders, expenses, messages.
    static func changes(count: Int, startSeq: Int64) -> [Change] {
        let now = Date()
        let driver = ID<Driver>()
        var changes: [Change] = []
        var trip = ID<Trip>()
        for index in 0..<count {
            let seq = startSeq + Int64(index)
            let row: ChangeRow
            switch index % 10 {
            case 0:
                trip = ID()
                row = .trip(Trip(id: trip, number: "T-\(index)", driverID: driver, status: .planned, startDate: LocalDate(now),
                                 endDate: nil, origin: "Houston, TX", destination: "Atlanta, GA", revenueCents: 500_000,
                                 driverPayCents: 125_000, miles: 790, version: 1, createdAt: now, updatedAt: now))
            case 1...5:
                row = .order(Order(id: ID(), number: "O-\(index)", tripID: trip, driverID: driver,
                                   vehicle: Vehicle(year: 2021, make: "Toyota", model: "Camry", vin: "4T1B11HK4MU123456", color: "Silver"),
                                   pickup: Stop(name: "Dealer", address: "1 Main St, Houston, TX", contactName: "Ann", contactPhone: "+1 555 0101"),
                                   delivery: Stop(name: "Customer", address: "9 Peach St, Atlanta, GA", contactName: "Bo", contactPhone: "+1 555 0102"),
                                   status: .assigned, actualPickupDate: nil, actualDeliveryDate: nil, pickupETA: nil, deliveryETA: nil,
                                   revenueCents: 100_000, paymentTerms: "Net 30", version: 1, createdAt: now, updatedAt: now))
            case 6, 7:
                row = .expense(Expense(id: ID(), tripID: trip, driverID: driver, category: .fuel, amountCents: 12_345,
                                       date: LocalDate(now), notes: "Pilot", createdAt: now))
            default:
                row = .notification(DriverNotification(id: ID(), driverID: driver, type: .dispatchMessage, title: "Message \(index)",
                                                       body: "Gate code 4471", data: NotificationData(tripID: trip), readAt: nil, createdAt: now))
            }
            changes.append(Change(seq: seq, entity: row.entity, id: "\(index)", op: .upsert, row: row))
        }
        return changes
    }

    func applyChanges() async throws {
        let total = 10_000
        let pages = stride(from: 0, to: total, by: 500).map { start in
            SyncPage(changes: Self.changes(count: 500, startSeq: Int64(start + 1)), cursor: Int64(start + 500),
                     hasMore: start + 500 < total, reset: start == 0, snapshotAfter: nil)
        }
        let encoded = try pages.map { try WireJSON.encoder().encode($0) }
        // As pulled: decoded, each row keeping the JSON it arrived as.
        var received: [SyncPage] = []
        for data in encoded { received.append(try await SyncPage.decode(data, decoder: WireJSON.decoder())) }
        var applyRates: [Double] = [], fullRates: [Double] = [], pipelinedRates: [Double] = []
        for _ in 0..<runs {
            let database = try AppDatabase.open(directory: BenchScratch.directory())
            let start = ContinuousClock.now
            for page in received { try database.apply(page, syncedAt: Date()) }
            applyRates.append(Double(total) / Self.seconds(ContinuousClock.now - start))

            let fresh = try AppDatabase.open(directory: BenchScratch.directory())
            let decoder = WireJSON.decoder()
            let begin = ContinuousClock.now
            for data in encoded { try fresh.apply(try await SyncPage.decode(data, decoder: decoder), syncedAt: Date()) }
            fullRates.append(Double(total) / Self.seconds(ContinuousClock.now - begin))

            // As the sync engine pulls: the next page decodes while the current one is applied.
            let piped = try AppDatabase.open(directory: BenchScratch.directory())
            let started = ContinuousClock.now
            let pageDecoder = WireJSON.decoder()
            var next: Task<SyncPage, any Error>? = Task.detached { try await SyncPage.decode(encoded[0], decoder: pageDecoder) }
            for index in encoded.indices {
                guard let current = next else { break }
                let page = try await current.value
                next = index + 1 < encoded.count
                    ? Task.detached { [data = encoded[index + 1]] in try await SyncPage.decode(data, decoder: pageDecoder) } : nil
                try piped.apply(page, syncedAt: Date())
            }
            pipelinedRates.append(Double(total) / Self.seconds(ContinuousClock.now - started))
        }
        print(String(format: "apply 10,000 pulled changes (pages of 500): %.0f changes/s; with JSON decoding of the pages: %.0f changes/s "
                     + "one page after another, %.0f changes/s decoding the next page while applying one (the sync engine also fetches it meanwhile)",
                     Self.median(applyRates), Self.median(fullRates), Self.median(pipelinedRates)))
    }

    func enqueueMutations() throws {
        var rates: [Double] = []
        for _ in 0..<runs {
            let database = try AppDatabase.open(directory: BenchScratch.directory())
            // Queued work belongs to the driver signed in on the device.
            try database.saveSignIn(user: User(id: ID(), tenantID: ID(), email: "d@bench.example", role: .driver, hasPIN: true,
                                               createdAt: Date()), driver: nil, now: Date())
            let trip = Self.changes(count: 1, startSeq: 1)[0]
            try database.apply(SyncPage(changes: [trip], cursor: 1, hasMore: false, reset: true, snapshotAfter: nil), syncedAt: Date())
            guard case .trip(let tripRow) = trip.row else { continue }
            let start = ContinuousClock.now
            for index in 0..<10_000 {
                try database.enqueue(Mutation(.createExpense(.init(id: ID(), tripID: tripRow.id, category: .tolls,
                                                                  amountCents: 100 + index, date: LocalDate(Date())))), now: Date())
            }
            rates.append(10_000 / Self.seconds(ContinuousClock.now - start))
        }
        print(String(format: "enqueue 10,000 offline mutations, one transaction each: %.0f mutations/s", Self.median(rates)))
    }

    func initialRoute() throws {
        let database = try AppDatabase.open(directory: BenchScratch.directory())
        let orders = Self.changes(count: 20_000, startSeq: 1).filter { $0.entity == .order }.prefix(10_000)
        try database.apply(SyncPage(changes: Array(orders), cursor: 10_000, hasMore: false, reset: true, snapshotAfter: nil), syncedAt: Date())
        var times: [Double] = []
        for _ in 0..<1000 {
            let start = ContinuousClock.now
            _ = AppRouter.determineInitialRoute(database)
            times.append(Self.seconds(ContinuousClock.now - start) * 1000)
        }
        print(String(format: "determineInitialRoute with %d cached orders: median %.3f ms, p99 %.3f ms", orders.count,
                     Self.median(times), times.sorted()[990]))
    }

    @MainActor
    func drain() async throws {
        let configuration = try await BenchScratch.configuration(postgres: nil)
        let services = try await ServerServices.make(configuration)
        let (tenant, _) = try await services.store.people.createTenant(name: "Bench", dispatcherEmail: "dispatch@bench.example")
        let driver = try await services.store.people.createDriver(tenant: tenant.id, .init(email: "d@bench.example", name: "D", payType: .perTrip, payRate: 1))
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(services) { continuation.yield($0) }
        let serverTask = Task { try await app.runService(gracefulShutdownSignals: []) }
        var port = 0
        for await bound in ports { port = bound; break }

        var settings = DriverApp.Configuration(serverURL: "http://127.0.0.1:\(port)", stateDirectory: BenchScratch.directory())
        settings.realtime = false
        settings.pinHashCost = 10
        settings.logger.logLevel = .critical
        let device = try DriverApp(settings)
        try await device.auth.sendCode(to: driver.email)
        try await Task.sleep(for: .milliseconds(100))
        let code = try Self.mailedCode(services, to: driver.email)
        try await device.auth.verify(code: code)
        await device.syncNow()
        await device.sync.stop()
        var times: [Double] = []
        for run in 0..<runs {
            // A trip of its own each run: a trip holds at most 2,000 expenses, and the server refused the third run's.
            let trip = try await services.store.trips.create(.init(number: "T-\(run)", driverID: driver.id, origin: "a", destination: "b",
                                                                 revenueCents: 1, miles: 1), tenant: tenant.id)
            await device.syncNow()
            for index in 0..<1000 {
                try device.database.enqueue(Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .fuel,
                                                                         amountCents: 100 + index, date: LocalDate(Date())))), now: Date())
            }
            // Push the outbox (one batch of 500, then the rest), then pull the feed the server now has.
            let start = ContinuousClock.now
            await device.syncNow()
            times.append(Self.seconds(ContinuousClock.now - start))
            // Every change applied: none waiting, none refused.
            guard try device.database.outbox().isEmpty else { throw ValidationError("not drained, or refused") }
        }
        print(String(format: "drain 1,000 queued mutations to a loopback server (SQLite), then pull: median %.2f s", Self.median(times)))
        await device.shutdown()
        serverTask.cancel()
        _ = await serverTask.result
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Counts the feed pulls a device makes (the server's work per change
    /// beyond the realtime frame itself).
    final class CountingTransport: HTTPTransport {
        let real = AsyncHTTPTransport()
        let pulls = NIOLockedValueBox(0)
        func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
            if request.url.contains(Endpoint.sync.path() + "?") { pulls.withLockedValue { $0 += 1 } }
            return try await real.send(request)
        }
    }

    /// Dispatch messages one at a time to a driver whose app holds a
    /// realtime socket: commit-to-cache latency, and how many times the app
    /// read the feed again. Frames are applied as they come, so an idle
    /// app does no pull per change (reading the frame's changes again with
    /// `GET /v1/sync` would be one pull per change here).
    @MainActor
    func liveChanges() async throws {
        var configuration = try await BenchScratch.configuration(postgres: nil)
        configuration.developmentMailbox = true
        let services = try await ServerServices.make(configuration)
        let (tenant, _) = try await services.store.people.createTenant(name: "Bench", dispatcherEmail: "dispatch@bench.example")
        let driver = try await services.store.people.createDriver(tenant: tenant.id, .init(email: "d@bench.example", name: "D", payType: .perTrip, payRate: 1))
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(services) { continuation.yield($0) }
        let serverTask = Task { try await app.runService(gracefulShutdownSignals: []) }
        var port = 0
        for await bound in ports { port = bound; break }

        let transport = CountingTransport()
        var settings = DriverApp.Configuration(serverURL: "http://127.0.0.1:\(port)", stateDirectory: BenchScratch.directory())
        settings.transport = transport
        settings.pinHashCost = 10
        settings.logger.logLevel = .critical
        let device = try DriverApp(settings)
        try await device.auth.sendCode(to: driver.email)
        try await Task.sleep(for: .milliseconds(100))
        let code = try Self.mailedCode(services, to: driver.email)
        try await device.auth.verify(code: code)
        await device.syncNow()
        device.launch()
        while !device.status.realtimeConnected { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(500))
        let pullsBefore = transport.pulls.withLockedValue { $0 }
        let count = 200
        var latencies: [Double] = []
        for index in 0..<count {
            let title = "live-\(index)"
            let start = ContinuousClock.now
            _ = try await services.store.notifications.send(.init(driverID: driver.id, type: .dispatchMessage, title: title, body: "b"),
                                                     tenant: tenant.id)
            while try !device.database.notifications().contains(where: { $0.title == title }) {
                try await Task.sleep(for: .microseconds(200))
            }
            latencies.append(Self.seconds(ContinuousClock.now - start) * 1000)
        }
        let pulls = transport.pulls.withLockedValue { $0 } - pullsBefore
        latencies.sort()
        print(String(format: "%d dispatch messages one at a time over realtime: commit to the device cache median %.2f ms, p99 %.2f ms; "
                     + "feed pulls %d (%.2f per change)", count, latencies[count / 2], latencies[count * 99 / 100], pulls,
                     Double(pulls) / Double(count)))
        await device.shutdown()
        serverTask.cancel()
        _ = await serverTask.result
    }
}

extension DriverKitBench {
    /// The sign-in code last mailed to `email` (the bench's server keeps mail in its development mailbox).
    static func mailedCode(_ services: ServerServices, to email: String) throws -> String {
        guard let body = services.developmentMailbox?.latest(to: email)?.body,
              let range = body.range(of: #"\d{6}"#, options: .regularExpression) else {
            throw ValidationError("no sign-in code was mailed to \(email)")
        }
        return String(body[range])
    }
}
