import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Push delivery through the durable queue to a local server that speaks
/// the APNs provider API over HTTP/2 and TLS and checks every request.
@Suite("Push")
struct PushTests {
    /// Device tokens as iOS reports them: 32 bytes, hex.
    static func deviceToken(_ seed: Int) -> String {
        (0..<32).map { String(format: "%02x", ($0 * 7 + seed * 13) & 0xff) }.joined()
    }

    struct Setup {
        let server: TestServer
        let apns: LocalAPNsServer
        let carrier: CarrierFixture
    }

    /// A server with APNs pointed at a fresh local APNs server (checking
    /// provider tokens against the server's clock), and a carrier.
    static func setUp(_ backend: TestBackend) async throws -> Setup {
        let clock = ManualClock(Date())
        let apns = try await LocalAPNsServer.started(now: { clock.now })
        let server = try await TestServer.make(backend, clock: clock) { $0.apns = apns.apnsConfiguration }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        return Setup(server: server, apns: apns, carrier: carrier)
    }

    static func register(_ token: String, platform: DevicePlatform = .ios, driver: Int = 0, _ setup: Setup) async throws {
        let session = setup.carrier.drivers[driver]
        _ = try await setup.server.store.people.registerDeviceToken(.init(token: token, platform: platform),
                                                             user: session.user.id, tenant: setup.carrier.tenant.id)
    }

    static func message(_ setup: Setup, title: String = "Load change", body: String = "Call dispatch",
                        type: NotificationType = .dispatchMessage, driver: Int = 0) async throws -> DriverNotification {
        try await setup.server.store.notifications.send(.init(driverID: setup.carrier.driverID(driver), type: type, title: title, body: body),
                                                 tenant: setup.carrier.tenant.id)
    }

    @Test("each new notification reaches every iOS device of its driver, as APNs expects it", arguments: TestBackend.available)
    func deliversEveryKind(_ backend: TestBackend) async throws {
        let setup = try await Self.setUp(backend)
        defer { Task { await setup.apns.stop() } }
        let (phone, tablet, android, otherDriver) = (Self.deviceToken(1), Self.deviceToken(2), Self.deviceToken(3), Self.deviceToken(4))
        try await Self.register(phone, setup)
        try await Self.register(tablet, setup)
        try await Self.register(android, platform: .android, setup)
        try await Self.register(otherDriver, driver: 1, setup)
        let store = setup.server.store
        let tenant = setup.carrier.tenant.id
        let trip = setup.carrier.trips[0][0]
        let order = setup.carrier.orders[trip.id]![0]

        try await setup.server.run { _ in
            // Past the minute in which notices about a trip gather into one (each change below stands alone).
            setup.server.clock.advance(by: 61)
            let message = try await Self.message(setup)
            let urgent = try await Self.message(setup, title: "Road closed", body: "I-80 closed at exit 12", type: .urgent)
            _ = try await store.orders.updateStatus(order.id, to: .pickedUp, occurredAt: nil, .dispatch(tenant: tenant))
            // A new order assigned to the driver, a while later (the clock moves once nothing is in flight:
            // a push claimed and not yet answered would be claimed again).
            try await waitUntil("6 pushes") { setup.apns.received.count >= 6 }
            try await waitUntil("an empty queue") { try await store.pendingPushCount() == 0 }
            setup.server.clock.advance(by: 61)
            let created = try await store.orders.create(.init(number: "NEW-1", tripID: trip.id, vehicle: Vehicle(year: 2024, make: "Ford", model: "F-150"),
                                                            pickup: Stop(address: "1 Main"), delivery: Stop(address: "2 Elm"),
                                                            revenueCents: 90_000, paymentTerms: "COD"), tenant: tenant)
            try await waitUntil("8 pushes") { setup.apns.received.count >= 8 }
            try await waitUntil("an empty queue") { try await store.pendingPushCount() == 0 }
            try await Task.sleep(for: .milliseconds(200))

            let received = setup.apns.received
            #expect(setup.apns.violations.isEmpty)
            #expect(received.count == 8)
            #expect(Set(received.map(\.deviceToken)) == [phone, tablet], "the Android token and the other driver's get nothing")
            #expect(setup.apns.connections.count == 1, "one HTTP/2 connection carries every push")
            let byType = Dictionary(grouping: received) { $0.payload["notification_type"] as? String ?? "" }
            #expect(byType.mapValues(\.count) == ["dispatch_message": 2, "urgent": 2, "status_change": 2, "trip_assignment": 2])

            for push in received {
                #expect(push.headers["apns-topic"] == setup.apns.topic)
                #expect(push.headers["apns-push-type"] == "alert")
                let expiration = try #require(push.headers["apns-expiration"].flatMap(TimeInterval.init))
                let dayLater = setup.server.clock.now.addingTimeInterval(24 * 3600).timeIntervalSince1970
                #expect(expiration <= dayLater + 5 && expiration >= dayLater - 61 - 5, "a day after it was queued")
                #expect((push.aps["alert"] as? [String: String])?["title"]?.isEmpty == false)
                #expect(push.aps["sound"] as? String == "default")
                #expect(push.body.count <= 4096)
            }
            func pushes(_ type: String) -> [LocalAPNsServer.ReceivedPush] { byType[type] ?? [] }
            #expect(pushes("dispatch_message").allSatisfy { $0.headers["apns-priority"] == "5" && $0.headers["apns-collapse-id"] == nil })
            #expect(pushes("dispatch_message").allSatisfy { $0.payload["notification_id"] as? String == message.id.rawValue })
            #expect(pushes("urgent").allSatisfy { $0.headers["apns-priority"] == "10" })
            #expect(pushes("urgent").allSatisfy { ($0.aps["alert"] as? [String: String])?["body"] == "I-80 closed at exit 12" })
            #expect(pushes("urgent").allSatisfy { $0.payload["notification_id"] as? String == urgent.id.rawValue })
            #expect(pushes("status_change").allSatisfy {
                $0.headers["apns-priority"] == "5" && $0.headers["apns-collapse-id"] == "trip-\(trip.id)"
                    && $0.payload["order_id"] as? String == order.id.rawValue && $0.payload["trip_id"] as? String == trip.id.rawValue
            })
            #expect(pushes("trip_assignment").allSatisfy {
                $0.headers["apns-priority"] == "10" && $0.payload["order_id"] as? String == created.id.rawValue
                    && $0.headers["apns-collapse-id"] == "trip-\(trip.id)"
            })
        }
    }

    @Test("building a 6-vehicle trip within a minute is one notification listing every change, one alert at once and one replacing it when the building stops; a read notice, a minute's quiet and work taken away stand alone", arguments: TestBackend.available)
    func buildingATripIsOneNotification(_ backend: TestBackend) async throws {
        let setup = try await Self.setUp(backend)
        defer { Task { await setup.apns.stop() } }
        let phone = Self.deviceToken(5)
        try await Self.register(phone, setup)
        let store = setup.server.store
        let tenant = setup.carrier.tenant.id
        let driver = setup.carrier.driverID(0)
        let driverScope = Scope.driver(tenant: tenant, driver: driver)
        try await setup.server.run { api in
            setup.server.clock.advance(by: 61)  // past the fixture's own gathering
            let before = try await store.notifications.list(driverScope, limit: 500).count
            let dispatch = setup.carrier.dispatcher.accessToken
            // Dispatch builds a trip as one does: the trip for the driver, then its vehicles one order at a time
            // (a dealer load of three, then three more), then fixes the dates — seconds apart.
            let trip = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(
                number: "T-SIX", driverID: driver, origin: "Dallas, TX", destination: "Denver, CO", miles: 800), token: dispatch).decode(Trip.self)
            var numbers: [String] = []
            for (index, count) in [3, 1, 1, 1].enumerated() {
                setup.server.clock.advance(by: 20)
                let cars = (0..<count).map { Vehicle(year: 2021, make: "Toyota", model: "Camry \(index)-\($0)", priceCents: 80_000) }
                let answer = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                    number: "SIX-\(index)", tripID: trip.id, vehicles: cars, pickup: Stop(address: "1 Lot Rd, Dallas, TX"),
                    delivery: Stop(address: "2 Dealer Way, Denver, CO")), token: dispatch)
                #expect(answer.status == 201, "\(answer.text)")
                numbers.append("SIX-\(index)")
            }
            setup.server.clock.advance(by: 20)
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(miles: 812), token: dispatch).status == 200)

            let notes = try await store.notifications.list(driverScope, limit: 500)
            #expect(notes.count == before + 1, "one notification for the whole trip: \(notes.prefix(8).map(\.title))")
            let note = try #require(notes.first)
            #expect(note.title == "New trip T-SIX" && note.type == .tripAssignment && note.data.tripID == trip.id && note.data.orderID == nil)
            for number in numbers { #expect(note.body.contains("New order \(number)"), "\(note.body)") }
            #expect(note.body.contains("miles"), "the trip's edit is listed: \(note.body)")
            #expect(note.body.split(separator: "\n").count == 1 + 4 + 1)
            // The first alert went at once; the gathered one waits for the building to stop, then replaces it.
            try await waitUntil("the first alert") { setup.apns.received.count == 1 }
            try await waitUntil("the gathered alert alone waiting") { try await store.pendingPushCount() == 1 }
            setup.server.clock.advance(by: 61)
            try await waitUntil("the gathered alert") { setup.apns.received.count == 2 }
            let alerts = setup.apns.received
            #expect(alerts.allSatisfy { $0.headers["apns-collapse-id"] == "trip-\(trip.id)" && $0.headers["apns-priority"] == "10" })
            #expect(((alerts[1].aps["alert"] as? [String: String])?["body"] ?? "").contains("New order SIX-3"))

            // A minute's quiet: the next change is a notification of its own.
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(miles: 820), token: dispatch).status == 200)
            #expect(try await store.notifications.list(driverScope, limit: 500).count == before + 2)
            // Read by the driver: what follows does not hide in it.
            let latest = try #require(try await store.notifications.list(driverScope, limit: 1).first)
            _ = try await store.notifications.markRead(latest.id, driverScope)
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(miles: 830), token: dispatch).status == 200)
            #expect(try await store.notifications.list(driverScope, limit: 500).count == before + 3)
            // Taken away: said on its own, at once, however recent the last notice.
            #expect(try await api.call(.dispatchAssignTrip, trip.id.rawValue, json: AssignTripRequest(driverID: nil), token: dispatch).status == 200)
            let last = try await store.notifications.list(driverScope, limit: 500)
            #expect(last.count == before + 4 && last.contains { $0.title == "Trip T-SIX taken off your list" }, "\(last.prefix(3).map(\.title))")
            // Dispatch's own messages never gather.
            _ = try await Self.message(setup, title: "Fuel card")
            _ = try await Self.message(setup, title: "Fuel card again")
            #expect(try await store.notifications.list(driverScope, limit: 500).count == before + 6)
        }
    }

    @Test("work taken away ends the gathering: the gathered alert still waiting is dropped, the removal goes at once at high priority, and a new assignment is a notification of its own; text of many code points gathers within the database's limit", arguments: TestBackend.available)
    func takenAwayStandsAlone(_ backend: TestBackend) async throws {
        let setup = try await Self.setUp(backend)
        defer { Task { await setup.apns.stop() } }
        try await Self.register(Self.deviceToken(6), setup)
        let store = setup.server.store
        let tenant = setup.carrier.tenant.id
        let driver = setup.carrier.driverID(0)
        let driverScope = Scope.driver(tenant: tenant, driver: driver)
        try await setup.server.run { _ in
            setup.server.clock.advance(by: 61)
            let trip = try await store.trips.create(.init(number: "P-1", driverID: driver, origin: "A", destination: "B", miles: 100), tenant: tenant)
            try await waitUntil("the first alert") { setup.apns.received.count == 1 }
            _ = try await store.trips.update(trip.id, UpdateTripRequest(miles: 250), tenant: tenant)
            try await waitUntil("the gathered alert alone waiting") { try await store.pendingPushCount() == 1 }
            _ = try await store.trips.assign(trip.id, to: nil, tenant: tenant)
            try await waitUntil("the removal") { setup.apns.received.count == 2 }
            let removal = setup.apns.received[1]
            let removalTitle = (removal.aps["alert"] as? [String: String])?["title"]
            #expect(removalTitle == "Trip P-1 taken off your list" && removal.headers["apns-priority"] == "10")
            // Nothing else waits: the gathered alert would have replaced the removal on the phone.
            try await waitUntil("an empty queue") { try await store.pendingPushCount() == 0 }
            setup.server.clock.advance(by: 120)
            try await Task.sleep(for: .milliseconds(300))
            #expect(setup.apns.received.count == 2)
            // Back to the same driver within the minute: said on its own, newest.
            setup.server.clock.advance(by: -110)
            _ = try await store.trips.assign(trip.id, to: driver, tenant: tenant)
            let newest = try #require(try await store.notifications.list(driverScope, limit: 1).first)
            #expect(newest.title == "New trip P-1" && !newest.body.contains("•"), "\(newest.body)")

            // Hindi addresses: each notice is hundreds of code points; every order goes on, each notification stays within 4,000.
            setup.server.clock.advance(by: 120)
            let hindi = String(String(repeating: "प्लॉट क्षेत्र १२, अंधेरी पूर्व, मुंबई, महाराष्ट्र ", count: 20).unicodeScalars.prefix(480))
            let long = try await store.trips.create(.init(number: "P-2", driverID: driver, origin: "A", destination: "B", miles: 100), tenant: tenant)
            for index in 0..<8 {
                _ = try await store.orders.create(.init(number: "HI-\(index)", tripID: long.id, vehicle: Vehicle(make: "Tata"),
                                                        pickup: Stop(address: hindi), delivery: Stop(address: hindi), revenueCents: 1), tenant: tenant)
            }
            let notes = try await store.notifications.list(driverScope, limit: 50).filter { $0.data.tripID == long.id }
            #expect(notes.count > 1 && notes.allSatisfy { $0.body.unicodeScalars.count <= DriverNotification.longestBody })
            let told = notes.map { (note: DriverNotification) -> Int in
                note.body.components(separatedBy: "New order HI-").count - 1 + (note.title.hasPrefix("New order HI-") ? 1 : 0)
            }
            #expect(told.reduce(0, +) == 8, "every order told: \(told)")
        }
    }

    @Test("the badge is the driver's unread count when the push is queued", arguments: TestBackend.available)
    func badgeIsUnreadCount(_ backend: TestBackend) async throws {
        let setup = try await Self.setUp(backend)
        defer { Task { await setup.apns.stop() } }
        let token = Self.deviceToken(7)
        try await Self.register(token, setup)
        let store = setup.server.store
        let driverScope = Scope.driver(tenant: setup.carrier.tenant.id, driver: setup.carrier.driverID(0))
        try await setup.server.run { _ in
            let unreadBefore = try await store.notifications.list(driverScope, unreadOnly: true).count
            let first = try await Self.message(setup, title: "one")
            _ = try await Self.message(setup, title: "two")
            try await waitUntil("two pushes") { setup.apns.received.count == 2 }
            _ = try await store.notifications.markRead(first.id, driverScope)
            _ = try await Self.message(setup, title: "three")
            try await waitUntil("three pushes") { setup.apns.received.count == 3 }
            var badges: [String: Int] = [:]
            for push in setup.apns.received {
                let title = (push.aps["alert"] as? [String: String])?["title"] ?? ""
                badges[title] = push.badge ?? -1
            }
            #expect(badges == ["one": unreadBefore + 1, "two": unreadBefore + 2, "three": unreadBefore + 2])
            #expect(try await store.notifications.list(driverScope, unreadOnly: true).count == unreadBefore + 2)
        }
    }

    @Test("410 Unregistered, BadDeviceToken and DeviceTokenNotForTopic remove the token", arguments: TestBackend.available)
    func deadTokensAreForgotten(_ backend: TestBackend) async throws {
        let setup = try await Self.setUp(backend)
        defer { Task { await setup.apns.stop() } }
        let (good, uninstalled, bad, wrongApp) = (Self.deviceToken(10), Self.deviceToken(11), Self.deviceToken(12), Self.deviceToken(13))
        for token in [good, uninstalled, bad, wrongApp] { try await Self.register(token, setup) }
        setup.apns.script(uninstalled, .unregistered)
        setup.apns.script(bad, .badDeviceToken)
        setup.apns.script(wrongApp, .deviceTokenNotForTopic)
        let store = setup.server.store
        let user = setup.carrier.drivers[0].user.id
        try await setup.server.run { _ in
            _ = try await Self.message(setup)
            try await waitUntil("four answers") { setup.apns.received.count == 4 }
            try await waitUntil("dead tokens forgotten") {
                try await store.people.deviceTokens(user: user, tenant: setup.carrier.tenant.id).map(\.token) == [good]
            }
            #expect(try await store.pendingPushCount() == 0)
            _ = try await Self.message(setup, title: "again")
            try await waitUntil("the next push") { setup.apns.received.count == 5 }
            try await Task.sleep(for: .milliseconds(300))
            #expect(setup.apns.received.count == 5)
            #expect(setup.apns.received.last?.deviceToken == good)
            #expect(setup.apns.violations.isEmpty)
        }
    }

    @Test("429 and 5xx are retried with backoff (Retry-After respected) until delivered", arguments: TestBackend.available)
    func transientFailuresRetry(_ backend: TestBackend) async throws {
        let setup = try await Self.setUp(backend)
        defer { Task { await setup.apns.stop() } }
        let token = Self.deviceToken(20)
        try await Self.register(token, setup)
        setup.apns.script(token, .tooManyRequests(retryAfter: 30), .internalServerError, .serviceUnavailable)
        let clock = setup.server.clock
        let store = setup.server.store
        try await setup.server.run { _ in
            _ = try await Self.message(setup)
            try await waitUntil("the first attempt") { setup.apns.received.count == 1 }
            // Nothing more until Retry-After has passed (the worker looks every second).
            try await Task.sleep(for: .milliseconds(2200))
            #expect(setup.apns.received.count == 1)
            #expect(try await store.pendingPushCount() == 1)
            clock.advance(by: 29)
            try await Task.sleep(for: .milliseconds(1500))
            #expect(setup.apns.received.count == 1)
            clock.advance(by: 2)
            try await waitUntil("the retry after 429") { setup.apns.received.count == 2 }
            // Then exponential: 2 s after the second failure, 4 s after the third
            // (counted from when each failure is recorded).
            try await waitUntil("the second failure recorded") { try await Self.attempts(store) == 2 }
            clock.advance(by: 2)
            try await waitUntil("the retry after 500") { setup.apns.received.count == 3 }
            try await waitUntil("the third failure recorded") { try await Self.attempts(store) == 3 }
            clock.advance(by: 3)
            try await Task.sleep(for: .milliseconds(1500))
            #expect(setup.apns.received.count == 3)
            clock.advance(by: 1)
            try await waitUntil("delivery") { setup.apns.received.count == 4 }
            try await waitUntil("an empty queue") { try await store.pendingPushCount() == 0 }
            #expect(setup.apns.received.map(\.reply) == [.tooManyRequests(retryAfter: 30), .internalServerError, .serviceUnavailable, .ok])
            #expect(Set(setup.apns.received.map { $0.headers["apns-id"] }).count == 1, "every attempt is the same notification")
            let tokens = try await store.people.deviceTokens(user: setup.carrier.drivers[0].user.id, tenant: setup.carrier.tenant.id)
            #expect(tokens.map(\.token) == [token], "a transient failure keeps the token")
        }
    }

    static func attempts(_ store: Store) async throws -> Int {
        try await store.read { db in try await db.first("SELECT MAX(attempts) AS n FROM push_queue")?.optionalInt("n") ?? 0 }
    }

    @Test("a queued push survives a server restart and goes out as soon as the server is back", arguments: TestBackend.available)
    func queueSurvivesRestart(_ backend: TestBackend) async throws {
        let clock = ManualClock(Date())
        let apns = try await LocalAPNsServer.started(now: { clock.now })
        let apnsPort = apns.port
        var configuration = apns.apnsConfiguration
        // No periodic look at the queue within the test: only the look at start can send what waited.
        configuration.queueCheckInterval = .seconds(3600)
        await apns.stop() // APNs unreachable: the connection is refused
        let server = try await TestServer.make(backend, clock: clock) { [configuration] in $0.apns = configuration }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let setup = Setup(server: server, apns: apns, carrier: carrier)
        let token = Self.deviceToken(30)
        try await Self.register(token, setup)

        let live = try await LiveServer(server)
        // Sent through the running instance: its commit wakes its push service (no periodic look within the test).
        let running = try #require(live.services?.store)
        let message = try await running.notifications.send(.init(driverID: carrier.driverID(0), type: .dispatchMessage,
                                                          title: "Stored while APNs was away", body: "Call dispatch"),
                                                    tenant: carrier.tenant.id)
        // The push service tries, fails to connect, and schedules a retry.
        try await waitUntil("a failed attempt") {
            try await Self.attempts(server.store) >= 1
        }
        await live.stop()
        #expect(try await server.store.pendingPushCount() == 1)

        try await apns.start(port: apnsPort)
        defer { Task { await apns.stop() } }
        clock.advance(by: 60)
        try await live.start()
        try await waitUntil("delivery after the restart") { apns.delivered.count == 1 }
        try await waitUntil("an empty queue") { try await server.store.pendingPushCount() == 0 }
        await live.stop()
        #expect(apns.delivered.first?.payload["notification_id"] as? String == message.id.rawValue)
        #expect(apns.delivered.first?.deviceToken == token)
        #expect(apns.violations.isEmpty)
    }

    @Test("the provider token is reused for 50 minutes, then renewed", arguments: [TestBackend.sqlite])
    func providerTokenReuse(_ backend: TestBackend) async throws {
        let setup = try await Self.setUp(backend)
        defer { Task { await setup.apns.stop() } }
        try await Self.register(Self.deviceToken(40), setup)
        let clock = setup.server.clock
        try await setup.server.run { _ in
            for index in 0..<3 { _ = try await Self.message(setup, title: "m\(index)") }
            try await waitUntil("three pushes") { setup.apns.delivered.count == 3 }
            clock.advance(by: 49 * 60)
            _ = try await Self.message(setup, title: "at 49 minutes")
            try await waitUntil("the fourth push") { setup.apns.delivered.count == 4 }
            clock.advance(by: 2 * 60)
            _ = try await Self.message(setup, title: "at 51 minutes")
            try await waitUntil("the fifth push") { setup.apns.delivered.count == 5 }
        }
        let tokens = setup.apns.delivered.map(\.providerToken)
        #expect(Set(tokens.prefix(4)).count == 1)
        #expect(tokens[4] != tokens[0])
        #expect(setup.apns.violations.isEmpty)
    }

    @Test("a long message is shortened to fit APNs' 4 KB payload, whole characters only")
    func payloadFits() async throws {
        let setup = try await Self.setUp(.sqlite)
        defer { Task { await setup.apns.stop() } }
        try await Self.register(Self.deviceToken(50), setup)
        try await setup.server.run { _ in
            _ = try await Self.message(setup, title: "Long", body: String(repeating: "🚚\"\n", count: 1300))
            try await waitUntil("the push") { setup.apns.delivered.count == 1 }
        }
        let push = try #require(setup.apns.delivered.first)
        #expect(push.body.count <= 4096)
        let body = try #require((push.aps["alert"] as? [String: String])?["body"])
        #expect(body.hasSuffix("…"))
        #expect(body.dropLast().hasSuffix("🚚\"\n") || body.dropLast().hasSuffix("🚚\"") || body.dropLast().hasSuffix("🚚"))
        #expect(body.count > 500)
        #expect(setup.apns.violations.isEmpty)
    }

    @Test("without APNs configured, notifications are still recorded and nothing is queued", arguments: TestBackend.available)
    func notConfigured(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        #expect(server.services.configuration.apns == nil)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        _ = try await server.store.people.registerDeviceToken(.init(token: Self.deviceToken(60), platform: .ios),
                                                       user: carrier.drivers[0].user.id, tenant: carrier.tenant.id)
        try await server.run { api in
            let sent = try await api.call(.dispatchSendMessage, json: SendMessageRequest(driverID: carrier.driverID(0), type: .urgent,
                                                                                         title: "Storm", body: "Stop at the next exit"),
                                          token: carrier.dispatcher.accessToken)
            #expect(sent.status == 201)
            let inbox = try await api.call(.notifications, token: carrier.driver.accessToken).decode(Items<DriverNotification>.self).items
            #expect(inbox.contains { $0.title == "Storm" })
            #expect(try await server.store.pendingPushCount() == 0)
        }
    }

    @Test("APNs is configured from the environment, and a half configuration is an error at start")
    func configurationFromEnvironment() async throws {
        let apns = try await LocalAPNsServer(now: { Date() })
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID().uuidString.prefix(6)).p8")
        try apns.providerKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        #expect(try ServerConfiguration.fromEnvironment([:]).apns == nil)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["VROOMX_APNS_KEY_FILE": keyFile.path]) }
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["VROOMX_APNS_KEY_FILE": "/nonexistent.p8"]) }
        let environment = ["VROOMX_APNS_KEY_FILE": keyFile.path, "VROOMX_APNS_KEY_ID": "ABC123DEFG", "VROOMX_APNS_TEAM_ID": "DEF123GHIJ",
                           "VROOMX_APNS_TOPIC": "com.example.driver"]
        let production = try #require(try ServerConfiguration.fromEnvironment(environment).apns)
        #expect(production.baseURL == "https://api.push.apple.com" && production.topic == "com.example.driver")
        var sandboxEnvironment = environment
        sandboxEnvironment["VROOMX_APNS_ENVIRONMENT"] = "sandbox"
        #expect(try ServerConfiguration.fromEnvironment(sandboxEnvironment).apns?.baseURL == "https://api.sandbox.push.apple.com")
        sandboxEnvironment["VROOMX_APNS_ENVIRONMENT"] = "staging"
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(sandboxEnvironment) }
        // A key file that is not a P-256 key fails when the server starts, not at the first push.
        var broken = production
        broken.privateKeyPEM = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        await #expect(throws: ConfigurationError.self) { _ = try await APNsClient(configuration: broken, clock: .system) }
        // Secrets stay out of logs.
        #expect(!"\(production)".contains("PRIVATE KEY"))
    }
}
