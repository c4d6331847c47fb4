import DriverKit
import Foundation
import NIOConcurrencyHelpers
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// Stands in for UNUserNotificationCenter, which cannot exist on Linux:
/// answers the permission prompt as told and records what the app asks.
final class RecordingPushService: PushNotificationService, Sendable {
    struct Record {
        var authorizationRequests = 0
        var registrations = 0
        var badges: [Int] = []
    }
    let allow: Bool
    private let record = NIOLockedValueBox(Record())
    init(allow: Bool) { self.allow = allow }

    var recorded: Record { record.withLockedValue { $0 } }
    func requestAuthorization() async -> Bool {
        record.withLockedValue { $0.authorizationRequests += 1 }
        return allow
    }
    func registerForRemoteNotifications() async { record.withLockedValue { $0.registrations += 1 } }
    func setBadgeCount(_ count: Int) async { record.withLockedValue { $0.badges.append(count) } }
}

@Suite("Push notifications in DriverKit")
@MainActor
struct PushNotificationTests {
    static let deviceToken = Data((0..<32).map { UInt8($0 * 5 + 1) })

    /// What iOS hands the app: the payload as `userInfo`.
    static func userInfo(_ push: LocalAPNsServer.ReceivedPush) throws -> [AnyHashable: Any] {
        try #require(try JSONSerialization.jsonObject(with: push.body) as? [AnyHashable: Any])
    }

    static func unread(_ server: TestServer, _ carrier: CarrierFixture) async throws -> [DriverNotification] {
        try await server.store.notifications.list(.driver(tenant: carrier.tenant.id, driver: carrier.driverID(0)), unreadOnly: true)
    }

    @Test("sign-in asks permission and registers the token; pushes from the real server open the right screen, are marked read, and the badge follows; logout removes the token")
    func endToEnd() async throws {
        let clock = ManualClock(Date())
        let apns = try await LocalAPNsServer.started(now: { clock.now })
        defer { Task { await apns.stop() } }
        let apnsConfiguration = apns.apnsConfiguration
        let server = try await TestServer.make(.sqlite, clock: clock) { $0.apns = apnsConfiguration }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let service = RecordingPushService(allow: true)
        let device = try DriverDevice.make(server: live, push: service)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        try await eventually("permission asked and registration requested") { service.recorded.registrations == 1 }
        #expect(service.recorded.authorizationRequests == 1)
        #expect(app.push.isAuthorized == true)

        // The system hands over the token; the app registers it for this driver.
        app.push.didRegister(deviceToken: Self.deviceToken)
        let hex = PushController.hex(Self.deviceToken)
        #expect(hex.count == 64 && hex.hasPrefix("01060b10"))
        var registered: [String] = []
        for _ in 0..<500 where registered != [hex] {
            registered = try await server.store.people.deviceTokens(user: carrier.driver.user.id, tenant: carrier.tenant.id).map(\.token)
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(registered == [hex])
        await app.syncNow()

        // Dispatch assigns a new order (past the minute in which the trip's notices gather): the push reaches APNs for this device.
        clock.advance(by: 61)
        let trip = carrier.trips[0][0]
        let order = try await server.store.orders.create(.init(
            number: "PUSH-1", tripID: trip.id, vehicle: Vehicle(year: 2023, make: "Tesla", model: "Model Y"),
            pickup: Stop(address: "1 Dock Rd"), delivery: Stop(address: "9 Lot Ave"), revenueCents: 80_000), tenant: carrier.tenant.id)
        try await waitUntil("the assignment push") { apns.delivered.count == 1 }
        let assignment = try #require(PushPayload(userInfo: try Self.userInfo(apns.delivered[0])))
        #expect(assignment.notificationType == .tripAssignment)
        #expect(assignment.aps.badge == (try await Self.unread(server, carrier)).count)

        // Arriving in the foreground: a banner, and the new order is fetched.
        #expect(app.push.willPresent(assignment) == .banner)
        try await eventually("the new order and its notification in the cache") {
            try app.database.order(order.id) != nil && app.database.notifications().contains { $0.id == assignment.notificationID }
        }
        try await eventually("the badge shows the unread count") { app.push.badgeCount == (try? app.database.unreadCount()) }

        // Tapped: the trip opens, the notification is read here and on the server, the badge drops.
        let badgeBefore = app.push.badgeCount
        app.push.didOpen(assignment)
        #expect(app.push.destination == .trip(trip.id))
        app.push.consumeDestination()
        #expect(app.push.destination == nil)
        try await eventually("the badge drops") { app.push.badgeCount == badgeBefore - 1 }
        #expect(service.recorded.badges.last == app.push.badgeCount)
        try await waitUntil("read on the server") {
            try await !Self.unread(server, carrier).contains { $0.id == assignment.notificationID }
        }
        try await eventually("the local unread count matches the server") {
            app.push.badgeCount == (try? app.database.unreadCount())
        }
        #expect(app.push.badgeCount == (try await Self.unread(server, carrier)).count)

        // Dispatch changes the order's status: the order opens.
        _ = try await server.store.orders.updateStatus(order.id, to: .cancelled, occurredAt: nil, carrier.scope)
        try await waitUntil("the status push") { apns.delivered.count == 2 }
        let statusChange = try #require(PushPayload(userInfo: try Self.userInfo(apns.delivered[1])))
        app.push.didOpen(statusChange)
        #expect(app.push.destination == .order(order.id))

        // A dispatch message opens Messages; an urgent one raises an alert with its text.
        _ = try await server.store.notifications.send(.init(driverID: carrier.driverID(0), type: .dispatchMessage, title: "Gate code", body: "4471"),
                                               tenant: carrier.tenant.id)
        _ = try await server.store.notifications.send(.init(driverID: carrier.driverID(0), type: .urgent, title: "Storm", body: "Park at the next exit"),
                                               tenant: carrier.tenant.id)
        try await waitUntil("two more pushes") { apns.delivered.count == 4 }
        let payloads = try apns.delivered.suffix(2).map { try #require(PushPayload(userInfo: try Self.userInfo($0))) }
        let message = try #require(payloads.first { $0.notificationType == .dispatchMessage })
        let urgent = try #require(payloads.first { $0.notificationType == .urgent })
        app.push.didOpen(message)
        #expect(app.push.destination == .messages)
        #expect(app.push.willPresent(urgent) == .soundOnly)
        #expect(app.push.urgentAlert == .init(title: "Storm", body: "Park at the next exit"))
        app.push.dismissUrgentAlert()
        app.push.didOpen(urgent)
        #expect(app.push.destination == .urgent(title: "Storm", body: "Park at the next exit"))
        #expect(app.push.urgentAlert?.body == "Park at the next exit")
        #expect(apns.violations.isEmpty)

        // Logout: no more pushes for this driver here.
        try await eventually("everything synced") { try app.database.unsyncedCount() == 0 }
        try await app.auth.logout()
        #expect(try await server.store.people.deviceTokens(user: carrier.driver.user.id, tenant: carrier.tenant.id).isEmpty)
        #expect(try app.database.deviceState().pushToken == hex, "the token is the app install's; the next driver registers it")
        await app.shutdown()
        await live.stop()
    }

    @Test("a token from an offline moment registers on the next sync, a new token replaces the old, and a driver who declines is not registered")
    func registrationRules() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 3, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live, push: RecordingPushService(allow: true))
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        func tokens(_ driver: Int) async throws -> [String] {
            try await server.store.people.deviceTokens(user: carrier.drivers[driver].user.id, tenant: carrier.tenant.id).map(\.token)
        }

        await live.stop()
        app.push.didRegister(deviceToken: Self.deviceToken)
        await app.syncNow()
        try await live.start()
        #expect(try await tokens(0).isEmpty)
        await app.syncNow()
        #expect(try await tokens(0) == [PushController.hex(Self.deviceToken)])

        let newToken = Data(repeating: 0xab, count: 32)
        app.push.didRegister(deviceToken: newToken)
        await app.syncNow()
        #expect(try await tokens(0) == [PushController.hex(newToken)])

        // The next driver on this device gets the install's token; the previous one no longer.
        try await app.auth.logout()
        try await device.signIn(carrier.drivers[1].user.email, mailbox: server.mailbox)
        await app.syncNow()
        #expect(try await tokens(1) == [PushController.hex(newToken)])
        #expect(try await tokens(0).isEmpty)
        await app.shutdown()

        let declining = RecordingPushService(allow: false)
        let other = try DriverDevice.make(server: live, push: declining)
        try await other.signIn(carrier.drivers[2].user.email, mailbox: server.mailbox)
        try await eventually("permission asked") { other.app.push.isAuthorized == false }
        #expect(declining.recorded.registrations == 0)
        await other.app.shutdown()
        await live.stop()
    }

    @Test("a notification opened before it synced is marked read once it arrives")
    func openedBeforeSync() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live, push: RecordingPushService(allow: true))
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        await live.stop()
        let note = try await server.store.notifications.send(.init(driverID: carrier.driverID(0), type: .dispatchMessage, title: "Dock 4", body: "Use dock 4"),
                                                      tenant: carrier.tenant.id)
        let payload = PushPayload(aps: .init(alert: .init(title: note.title, body: note.body), badge: 1, sound: "default"),
                                  notificationType: note.type, notificationID: note.id, tripID: nil, orderID: nil)
        app.push.didOpen(payload)
        #expect(app.push.destination == .messages)
        #expect(try app.database.notifications().contains { $0.id == note.id } == false)
        try await live.start()
        await app.syncNow()
        try await waitUntil("read on the server") { try await !Self.unread(server, carrier).contains { $0.id == note.id } }
        #expect(try app.database.notifications().first { $0.id == note.id }?.readAt != nil)
        await app.shutdown()
        await live.stop()
    }

    @Test("payloads map to destinations; foreign or malformed payloads are ignored")
    func payloadMapping() throws {
        let trip = ID<Trip>(), order = ID<Order>()
        #expect(NotificationDestination(type: .tripAssignment, tripID: trip, orderID: order, title: "", body: "") == .trip(trip))
        #expect(NotificationDestination(type: .tripAssignment, tripID: nil, orderID: order, title: "", body: "") == .order(order))
        #expect(NotificationDestination(type: .statusChange, tripID: trip, orderID: order, title: "", body: "") == .order(order))
        #expect(NotificationDestination(type: .statusChange, tripID: trip, orderID: nil, title: "", body: "") == .trip(trip))
        #expect(NotificationDestination(type: .dispatchMessage, tripID: trip, orderID: nil, title: "", body: "") == .messages)
        #expect(NotificationDestination(type: .urgent, tripID: nil, orderID: nil, title: "T", body: "B") == .urgent(title: "T", body: "B"))

        let future: [AnyHashable: Any] = ["aps": ["alert": ["title": "New", "body": "Feature"], "badge": 3],
                                          "notification_type": "document_request", "notification_id": ID<DriverNotification>().rawValue]
        let decoded = try #require(PushPayload(userInfo: future))
        #expect(decoded.notificationType == nil)
        #expect(NotificationDestination(decoded) == .messages)
        #expect(PushPayload(userInfo: ["aps": ["content-available": 1]]) == nil)
        #expect(PushPayload(userInfo: ["something": "else"]) == nil)
        #expect(PushController.hex(Data([0x00, 0x0f, 0xff])) == "000fff")
    }
}
