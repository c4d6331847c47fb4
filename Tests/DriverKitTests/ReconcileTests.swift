@testable import DriverKit
import Foundation
import NIOConcurrencyHelpers
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
        _ = try await scene.server.store.trips.update(trip.id, UpdateTripRequest(status: .inProgress), tenant: scene.carrier.tenant.id)
        await app.syncNow()
        // Fixes stamped by the phone's own (fast) clock, a minute apart, ending now.
        for minute in 0..<5 {
            let fix = GeoPosition(latitude: 41.5 + Double(minute) * 0.01, longitude: -88.1, accuracyMeters: 8,
                                  recordedAt: fast().addingTimeInterval(Double(minute - 4) * 60))
            #expect(try app.location.record(fix) == .kept)
        }
        try app.location.flush()
        await app.syncNow()
        let stored = try await scene.server.store.location.track(of: trip.id, tenant: scene.carrier.tenant.id, since: .distantPast)
        #expect(stored.count == 5)
        // Stamped as the server's clock would have: none in the future, the last about now.
        #expect(stored.allSatisfy { $0.recordedAt <= Date().addingTimeInterval(5) })
        #expect(abs((stored.last?.recordedAt ?? .distantPast).timeIntervalSinceNow) < 10)
        let report = try app.database.positionReport(for: app.location.counts.batchIDs)
        #expect(report.batches == app.location.counts.batches && report.reached == 5 && report.leftOut == 0, "\(report)")
    }

    @Test("a phone whose clock was set 3 hours back while offline: its pickup and read receipt reach dispatch at the true times, not refused")
    func clockSetBackOffline() async throws {
        let scene = try await DriverScene.make()
        // Made two hours ago: a time stamped three hours back would be before either existed.
        scene.server.clock.advance(by: -2 * 3600)
        let order = try await scene.server.store.orders.create(.init(
            number: "O-EARLY", tripID: scene.carrier.trips[0][0].id, vehicle: Vehicle(year: 2021, make: "Kia", model: "Soul"),
            pickup: Stop(address: "1 Harbor Rd"), delivery: Stop(address: "9 Main St"), revenueCents: 50_000), tenant: scene.carrier.tenant.id)
        let message = try await scene.server.store.notifications.send(
            SendMessageRequest(driverID: scene.carrier.driverID(0), type: .dispatchMessage, title: "Gate code", body: "4411"),
            tenant: scene.carrier.tenant.id)
        scene.server.clock.advance(by: Date().timeIntervalSince(scene.server.clock.now))
        await scene.app.syncNow()
        await scene.app.shutdown()
        await scene.live.stop()
        // The driver sets the phone's clock three hours back, with no signal: the app cannot know.
        let behind: @Sendable () -> Date = { Date().addingTimeInterval(-3 * 3600) }
        let device = try DriverDevice.make(server: scene.live, stateDirectory: scene.device.stateDirectory, clock: behind)
        let app = device.app
        #expect(!app.serverClock.isKnown)
        let pickedUpAt = Date()
        try await app.inspectAndComplete(order.id, .pickup)
        try app.markNotificationRead(message.id)
        try await Task.sleep(for: .seconds(2))
        scene.server.clock.advance(by: Date().timeIntervalSince(scene.server.clock.now))
        try await scene.live.start()
        app.launch()
        await app.syncNow()
        try await eventually("sent", timeout: .seconds(30)) { try app.database.unsyncedCount() == 0 }
        let stored = try await scene.server.store.orders.order(order.id, scene.carrier.scope)
        #expect(stored.status == .pickedUp)
        #expect(stored.actualPickupDate.map { abs($0.timeIntervalSince(pickedUpAt)) < 3 } == true, "\(String(describing: stored.actualPickupDate))")
        let read = try await scene.server.store.notifications.list(.driver(tenant: scene.carrier.tenant.id, driver: scene.carrier.driverID(0)))
            .first { $0.id == message.id }?.readAt
        #expect(read.map { abs($0.timeIntervalSince(pickedUpAt)) < 3 } == true, "\(String(describing: read))")
        await app.shutdown()
    }

    @Test("a message read in a dead zone is stored read when the driver read it, with when the receipt arrived")
    func readReceiptTime() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        let message = try await scene.server.store.notifications.send(
            SendMessageRequest(driverID: scene.carrier.driverID(0), type: .dispatchMessage, title: "Gate code", body: "4411"),
            tenant: scene.carrier.tenant.id)
        await app.syncNow()
        await scene.live.stop()
        let readAt = app.serverClock.now
        try app.markNotificationRead(message.id)
        // The receipt waits for the network; the message was read before it arrives.
        try await Task.sleep(for: .seconds(3))
        // The test server's clock stands still unless moved: it is now now.
        scene.server.clock.advance(by: Date().timeIntervalSince(scene.server.clock.now))
        try await scene.live.start()
        await app.syncNow()
        let stored = try await scene.server.store.notifications.list(.driver(tenant: scene.carrier.tenant.id, driver: scene.carrier.driverID(0)))
            .first { $0.id == message.id }
        let read = try #require(stored?.readAt), received = try #require(stored?.readReceivedAt)
        // The phone's clock is learnt from whole seconds in the Date header: within a second.
        #expect(abs(read.timeIntervalSince(readAt)) < 1.1, "read \(read), at \(readAt)")
        #expect(received.timeIntervalSince(read) > 1.8, "received \(received), read \(read)")
    }

    @Test("an ETA for an order dispatch moved to another driver is refused in the driver's words, naming the order")
    func refusalInWords() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        let order = scene.carrier.orders[scene.carrier.trips[0][0].id]![0]
        await scene.live.stop()
        try app.submitETA(order.id, pickup: Date().addingTimeInterval(3600))
        // Meanwhile dispatch gives the order to the other driver.
        _ = try await scene.server.store.orders.assign(order.id, AssignOrderRequest(tripID: scene.carrier.trips[1][0].id),
                                                     tenant: scene.carrier.tenant.id)
        try await scene.live.start()
        await app.syncNow()
        let work = try app.waitingWork()
        #expect(work.changes.isEmpty && work.waitingCount == 0)
        #expect(work.refusals.count == 1)
        let text = work.refusals.first?.text ?? ""
        #expect(text == "Not sent: the pickup ETA for \(order.number) — dispatch gave \(order.number) to another driver or took it away.",
                "\(text)")
    }

    @Test("a backlog report whose answer was lost is sent again: dispatch is not left told that work waits on a phone that has none")
    func lostBacklogAnswer() async throws {
        let transport = LosingBacklogAnswers()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport) }
        let app = scene.app
        // Refused by the server (a bell in the note): the phone reports it, and the report's answer is lost on the way back.
        transport.loseAnswers(true)
        try app.createExpense(trip: scene.carrier.trips[0][0].id, category: .tolls, amountCents: 322, notes: "bell\u{7} esc")
        await app.syncNow()
        #expect(try app.waitingWork().refusals.count == 1)
        #expect(transport.lost > 0)
        #expect(try await scene.server.store.deviceBacklogs.reports(tenant: scene.carrier.tenant.id).count == 1, "the server has the report")
        // The driver drops it: nothing waits on the phone, and the phone cannot know the server had heard of it.
        transport.loseAnswers(false)
        try app.discard(try #require(app.waitingWork().refused.first).id)
        await app.syncNow()
        #expect(try await scene.server.store.deviceBacklogs.reports(tenant: scene.carrier.tenant.id).isEmpty)
    }

    @Test("a refused change reaches dispatch's view of the phone with its reason, even when what the driver typed would not pass as it is")
    func refusalsReportedToDispatch() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        // A note with a bell character in it: the server refuses the expense.
        try app.createExpense(trip: scene.carrier.trips[0][0].id, category: .tolls, amountCents: 322, notes: "bell\u{7} esc")
        await app.syncNow()
        #expect(try app.waitingWork().refusals.count == 1)
        let reports = try await scene.server.store.deviceBacklogs.reports(tenant: scene.carrier.tenant.id)
        let item = try #require(reports.first?.backlog.items.first)
        #expect(reports.first?.driverID == scene.carrier.driverID(0))
        #expect(item.status == .refused && item.what == "the $3.22 tolls expense on \(scene.carrier.trips[0][0].number)", "\(item)")
        #expect(item.detail.contains("bell  esc") && item.reason.hasPrefix("Refused: "), "\(item)")
        // Dropped by the driver: dispatch no longer sees it.
        try app.discard(try #require(app.waitingWork().refused.first).id)
        await app.syncNow()
        #expect(try await scene.server.store.deviceBacklogs.reports(tenant: scene.carrier.tenant.id).isEmpty)
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
        let expenses = try await scene.server.store.expenses.list(trip: scene.carrier.trips[0][0].id, scene.carrier.scope)
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

/// A second driver signs in on a phone that still holds the first one's work.
@Suite("Work handed over on a shared phone", .serialized)
@MainActor
struct HandOverTests {
    @Test("the first driver's offline pickup and expense reach dispatch in their name while the second is signed in; the first's session then ends")
    func secondDriverOnThePhone() async throws {
        let transport = FlakyTransport()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport) }
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let trip = carrier.trips[0][0]
        let order = carrier.orders[trip.id]![0]
        let alexRefresh = try #require(await app.api.credentials.current?.refreshToken)
        // Alex works with no signal: a pickup with its photos, and an expense.
        await live.stop()
        let inspection = try await app.inspectAndComplete(order.id, .pickup)
        let expense = try app.createExpense(trip: trip.id, category: .fuel, amountCents: 30_117)
        #expect(try app.database.unsyncedCount() > MediaSlot.requiredPhotos.count)
        // The phone gets signal, the server refuses photos for now (busy), and Sam signs in on it.
        try await live.start()
        transport.only = "/v1/uploads"
        transport.mode = .serverFailing
        let samEmail = carrier.drivers[1].user.email
        try await DriverDevice(app: app, stateDirectory: scene.device.stateDirectory).signIn(samEmail, mailbox: server.mailbox)
        #expect(try app.database.account()?.email == samEmail)
        // Sam's own state holds none of it; he is told the phone sends it for Alex.
        #expect(try app.waitingWork().isEmpty)
        #expect(try app.database.unsyncedCount() == 0)
        #expect(try app.database.order(order.id) == nil)
        #expect(app.auth.setAsideWork.first?.sentInTheirName == true)
        #expect(app.auth.setAsideWork.first?.notice.contains("in their name") == true)
        // Dispatch sees the work waiting on a device: the pickup went, the photos wait.
        try await eventually("Alex's changes sent and the waiting photos reported", timeout: .seconds(30)) {
            try app.database.outbox().filter { $0.isUnsynced }.count == 1   // the completion waits for its photos
        }
        await app.handOver.runNow()
        let waiting = try await server.store.deviceBacklogs.reports(tenant: carrier.tenant.id)
        #expect(waiting.contains { $0.driverID == carrier.driverID(0) && $0.backlog.waitingFiles == MediaSlot.requiredPhotos.count },
                "\(waiting)")
        #expect(try await server.store.expenses.list(trip: trip.id, carrier.scope).first { $0.id == expense }?.driverID == carrier.driverID(0))
        // The photos get through: the pickup completes in Alex's name, and his session on this phone ends.
        transport.mode = .normal
        try app.database.releaseUploadBackoff()
        await app.handOver.runNow()
        try await eventually("handed over", timeout: .seconds(30)) { try app.database.ownersToHandOver().isEmpty }
        let completed = try await server.store.inspections.inspection(inspection, carrier.scope)
        #expect(completed.completedAt != nil && completed.driverID == carrier.driverID(0))
        #expect(try await server.store.orders.order(order.id, carrier.scope).status == .pickedUp)
        #expect(try await server.store.deviceBacklogs.reports(tenant: carrier.tenant.id).isEmpty, "nothing waits on a device any more")
        try await server.run(.router) { api in
            let refresh = try await api.call(.refresh, json: RefreshRequest(refreshToken: alexRefresh))
            #expect(refresh.status == 401, "Alex's session on the phone ended: \(refresh.text)")
        }
        // Sam's device state never held Alex's work, and still does not.
        #expect(try app.database.orders().allSatisfy { $0.driverID == carrier.driverID(1) })
        #expect(app.auth.setAsideWork.isEmpty || { app.auth.refreshSetAsideWork(); return app.auth.setAsideWork.isEmpty }())
    }
}

/// Delivers backlog reports to the server and, while told to, loses their
/// answers on the way back (the phone cannot tell whether the server has them).
final class LosingBacklogAnswers: HTTPTransport, Sendable {
    let real = AsyncHTTPTransport()
    private let state = NIOLockedValueBox<(losing: Bool, lost: Int)>((false, 0))

    var lost: Int { state.withLockedValue { $0.lost } }
    func loseAnswers(_ losing: Bool) { state.withLockedValue { $0.losing = losing } }

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        let answer = try await real.send(request)
        let losing = request.url.hasSuffix(Endpoint.reportDeviceBacklog.path) && state.withLockedValue { state in
            if state.losing { state.lost += 1 }
            return state.losing
        }
        if losing { throw TransportError(description: "the answer was lost (test)") }
        return answer
    }
}
