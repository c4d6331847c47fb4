import DriverKit
import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// What a driver did on the phone reaches dispatch as it happened, whatever
/// changed meanwhile: the phone's clock, dispatch's plans, the server's pace.
@Suite("Driver work reconciled on the phone", .serialized)
@MainActor
struct ReconcileTests {
    @Test("a phone 10 minutes fast: its positions are stamped by the server's clock, every one reaches dispatch, and the drive says so")
    func fastClockPositions() async throws {
        let fast: @Sendable () -> Date = { Date().addingTimeInterval(600) }
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, clock: fast) }
        let app = scene.app
        #expect(abs(app.serverClock.skew + 600) < 5, "the phone learnt its clock runs ahead: \(app.serverClock.skew)")
        let trip = scene.carrier.trips[0][0]
        _ = try await scene.server.store.updateTrip(trip.id, UpdateTripRequest(status: .inProgress), tenant: scene.carrier.tenant.id)
        await app.syncNow()
        // Fixes stamped by the phone's own (fast) clock, a minute apart, ending now.
        for minute in 0..<5 {
            let fix = GeoPosition(latitude: 41.5 + Double(minute) * 0.01, longitude: -88.1, accuracyMeters: 8,
                                  recordedAt: fast().addingTimeInterval(Double(minute - 4) * 60))
            #expect(try app.location.record(fix) == .kept)
        }
        try app.location.flush()
        await app.syncNow()
        let stored = try await scene.server.store.track(of: trip.id, tenant: scene.carrier.tenant.id, since: .distantPast)
        #expect(stored.count == 5)
        // Stamped as the server's clock would have: none in the future, the last about now.
        #expect(stored.allSatisfy { $0.recordedAt <= Date().addingTimeInterval(5) })
        #expect(abs((stored.last?.recordedAt ?? .distantPast).timeIntervalSinceNow) < 10)
        let report = try app.database.positionReport(for: app.location.counts.batchIDs)
        #expect(report.batches == app.location.counts.batches && report.reached == 5 && report.leftOut == 0, "\(report)")
    }

    @Test("a message read in a dead zone is stored read at the phone's (corrected) time, with when the receipt arrived")
    func readReceiptTime() async throws {
        let clock = TestClock()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, clock: clock.read) }
        let app = scene.app
        let message = try await scene.server.store.sendMessage(
            SendMessageRequest(driverID: scene.carrier.driverID(0), type: .dispatchMessage, title: "Gate code", body: "4411"),
            tenant: scene.carrier.tenant.id)
        await app.syncNow()
        let readAt = app.serverClock.now
        try app.markNotificationRead(message.id)
        // The receipt travels later (the queue holds it): the stored time is when it was read.
        try await Task.sleep(for: .seconds(1.2))
        await app.syncNow()
        let stored = try await scene.server.store.notifications(.driver(tenant: scene.carrier.tenant.id, driver: scene.carrier.driverID(0)))
            .first { $0.id == message.id }
        #expect(stored?.readAt.map { abs($0.timeIntervalSince(readAt)) < 0.01 } == true, "\(String(describing: stored))")
        #expect(stored?.readReceivedAt != nil)
    }

    @Test("an ETA for an order dispatch moved to another driver is refused in the driver's words, naming the order")
    func refusalInWords() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        let order = scene.carrier.orders[scene.carrier.trips[0][0].id]![0]
        await scene.live.stop()
        try app.submitETA(order.id, pickup: Date().addingTimeInterval(3600))
        // Meanwhile dispatch gives the order to the other driver.
        _ = try await scene.server.store.assignOrder(order.id, AssignOrderRequest(tripID: scene.carrier.trips[1][0].id),
                                                     tenant: scene.carrier.tenant.id)
        try await scene.live.start()
        await app.syncNow()
        let work = try app.waitingWork()
        #expect(work.changes.isEmpty && work.waitingCount == 0)
        #expect(work.refusals.count == 1)
        let text = work.refusals.first?.text ?? ""
        #expect(text == "Your pickup ETA for \(order.number) was not sent: dispatch gave \(order.number) to another driver or took it off your list.",
                "\(text)")
    }

    @Test("a server that answers late reads as slow, not offline, and the change goes once it answers")
    func slowIsNotOffline() async throws {
        let transport = FlakyTransport()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport) }
        let app = scene.app
        transport.mode = .answerLate
        try app.createExpense(trip: scene.carrier.trips[0][0].id, category: .tolls, amountCents: 700)
        await app.syncNow()
        #expect(app.network.isOnline)
        #expect(app.status.lastError == "The server is slow to answer; retrying.")
        #expect(BannerState(status: SyncStatusSnapshot(isOnline: app.status.isOnline, isSyncing: false, lastError: app.status.lastError,
                                                       lastSyncedAt: app.status.lastSyncedAt)).offline == nil)
        transport.mode = .normal
        await app.syncNow()
        #expect(try app.waitingWork().isEmpty)
        let expenses = try await scene.server.store.expenses(trip: scene.carrier.trips[0][0].id, scene.carrier.scope)
        #expect(expenses.filter { $0.amountCents == 700 }.count == 1)
    }

    @Test("the transport tells a server that took the request and never answered from one that cannot be reached")
    func lateAnswersAreTold() async throws {
        // A listening socket nobody accepts from: the kernel completes the connection, no answer ever comes.
        let silent = try SilentListener()
        defer { silent.close() }
        let transport = AsyncHTTPTransport(timeout: .seconds(1))
        do {
            _ = try await transport.send(HTTPRequestData(method: "GET", url: "http://127.0.0.1:\(silent.port)/healthz", headers: [], body: nil))
            Issue.record("answered")
        } catch let error as TransportError {
            #expect(error.answeredLate, "\(error)")
        }
        let closed = try ChildProcess.freePort()
        do {
            _ = try await transport.send(HTTPRequestData(method: "GET", url: "http://127.0.0.1:\(closed)/healthz", headers: [], body: nil))
            Issue.record("answered")
        } catch let error as TransportError {
            #expect(!error.answeredLate, "\(error)")
        }
    }

    @Test("earnings count a trip in the week it was completed; the next stop is the one due first on the road")
    func earningsAndNextStop() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        calendar.firstWeekday = 1
        let planned = LocalDate(year: 2026, month: 11, day: 13)!
        let completedAt = WireTime.date(milliseconds: WireTime.milliseconds(LocalDate(year: 2026, month: 11, day: 24)!.startOfDay) + 3_600_000)
        let trip = Trip(id: ID(), number: "T-1", driverID: nil, status: .completed, startDate: planned, endDate: planned,
                        origin: "A", destination: "B", revenueCents: 100_000, driverPayCents: 30_000, miles: 100, version: 3,
                        createdAt: planned.startOfDay, updatedAt: completedAt)
        let earnings = EarningsState(trips: [trip], expenses: [], calendar: calendar)
        #expect(earnings.weeks.map(\.start) == [LocalDate(year: 2026, month: 11, day: 22)!], "\(earnings.weeks)")

        let today = LocalDate(year: 2026, month: 11, day: 28)!
        func order(_ number: String, _ status: OrderStatus, pickupDay: LocalDate? = nil, deliveryDay: LocalDate? = nil) -> Order {
            Order(id: ID(), number: number, tripID: nil, driverID: nil, vehicle: Vehicle(year: 2020, make: "Kia", model: "Soul"),
                  pickup: Stop(address: "A", windowStart: pickupDay), delivery: Stop(address: "B", windowStart: deliveryDay),
                  status: status, actualPickupDate: nil, actualDeliveryDate: nil, pickupETA: nil, deliveryETA: nil,
                  revenueCents: 0, paymentTerms: "", version: 1, createdAt: today.startOfDay, updatedAt: today.startOfDay)
        }
        // On the truck, due next week; a pickup due today comes first.
        let onTruck = order("O-1", .pickedUp, deliveryDay: today.adding(days: 6))
        let pickup = order("O-2", .assigned, pickupDay: today)
        let next = Order.nextStop(among: [onTruck, pickup], today: today)
        #expect(next?.order.number == "O-2" && next?.kind == .pickup)
        // Due the same day: the vehicle on the truck first.
        let dueToday = order("O-3", .pickedUp, deliveryDay: today)
        #expect(Order.nextStop(among: [dueToday, pickup], today: today)?.order.number == "O-3")
    }
}

/// A TCP port that takes connections (the kernel's backlog) and never reads
/// or answers: a server that hangs.
final class SilentListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socketFD, 16) == 0 else { throw TestSetupError("cannot listen") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        descriptor = socketFD
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(descriptor) }
}
