import DriverKit
import Foundation
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// The driver's work is never lost, stranded, misattributed or silently
/// dropped: each way it was, tried against the real server.
@Suite("DriverKit reliability")
@MainActor
struct ReliabilityTests {
    /// Once the phone has synced: the expense is neither on the server nor on the phone.
    static func expectGoneEverywhere(_ expense: ID<Expense>, trip: ID<Trip>, _ scene: DriverScene) async throws {
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        await app.syncNow()
        try await eventually("settled") { try app.database.unsyncedCount() == 0 }
        #expect(try await serverExpenses(server, carrier, trip: trip).allSatisfy { $0.id != expense })
        #expect(try app.database.expenses(trip: trip).allSatisfy { $0.id != expense })
        await app.shutdown()
        await live.stop()
    }

    /// A signed-in device whose mutation batches reach the server and lose their answers.
    static func sceneLosingBatchAnswers() async throws -> (DriverScene, FlakyTransport) {
        let transport = FlakyTransport()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport) }
        transport.only = "/v1/mutations"
        transport.mode = .loseAnswers
        return (scene, transport)
    }

    static func serverExpenses(_ server: TestServer, _ carrier: CarrierFixture, trip: ID<Trip>) async throws -> [Expense] {
        try await server.store.expenses.list(trip: trip, carrier.scope)
    }

    @Test("the next driver on a phone never sees or sends the previous driver's work; it waits for its owner")
    func nextDriverDoesNotInherit() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live)
        let app = device.app
        let (alex, sam) = (carrier.drivers[0].user.email, carrier.drivers[1].user.email)
        try await device.signIn(alex, mailbox: server.mailbox)
        await app.syncNow()
        let alexTrip = carrier.trips[0][0]
        await live.stop()
        let expense = try app.createExpense(trip: alexTrip.id, category: .fuel, amountCents: 8420)
        // Alex forgets the PIN: five wrong PINs end the session on the device.
        app.auth.lock()
        for _ in 0..<AuthFlow.maxPINAttempts { try? await app.auth.unlock(pin: "0000") }
        #expect(app.auth.state == .signedOut)

        try await live.start()
        server.clock.advance(by: 61)
        try await device.signIn(sam, mailbox: server.mailbox)
        await app.syncNow()
        #expect(try app.database.trips().map(\.id) == carrier.trips[1].map(\.id), "Sam sees his own work only")
        #expect(try app.database.expenses(trip: alexTrip.id).isEmpty)
        #expect(try await Self.serverExpenses(server, carrier, trip: alexTrip.id).allSatisfy { $0.id != expense })
        #expect(try app.database.unsyncedCount() == 0, "Alex's change is not Sam's")
        #expect(app.auth.setAsideWork.map(\.email) == [alex] && app.auth.setAsideWork.first?.count == 1)
        #expect(app.auth.setAsideWork.first?.notice.contains(alex) == true)

        // Sam signs out; Alex signs in again: the expense goes, under Alex.
        try await app.auth.logout()
        server.clock.advance(by: 61)
        try await device.signIn(alex, mailbox: server.mailbox)
        await app.syncNow()
        try await eventually("Alex's expense sent") { try app.database.unsyncedCount() == 0 }
        let stored = try #require(try await Self.serverExpenses(server, carrier, trip: alexTrip.id).first { $0.id == expense })
        #expect(stored.driverID == carrier.driverID(0))
        await app.shutdown()
        await live.stop()
    }

    @Test("a refresh whose answer was lost survives: the same token brings the same successor, even minutes later")
    func refreshSurvivesLostAnswer() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let transport = FlakyTransport()
        let clock = TestClock()
        let device = try DriverDevice.make(server: live, transport: transport, clock: clock.read)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        // The access token is about to expire: the refresh reaches the server, its answer is lost.
        clock.advance(by: 3600 - 30)
        transport.only = "/v1/auth/refresh"
        transport.mode = .loseAnswers
        await app.syncNow()
        #expect(app.auth.state != .signedOut)
        // Ten minutes later the phone has a network again and refreshes with the token it still has.
        server.clock.advance(by: 600)
        clock.advance(by: 600)
        transport.mode = .normal
        let expense = try app.createExpense(trip: carrier.trips[0][0].id, category: .tolls, amountCents: 500)
        await app.syncNow()
        try await eventually("synced after the refresh") { try app.database.unsyncedCount() == 0 }
        #expect(app.auth.state != .signedOut)
        #expect(try await Self.serverExpenses(server, carrier, trip: carrier.trips[0][0].id).contains { $0.id == expense })
        await app.shutdown()
        await live.stop()
    }

    @Test("a backlog larger than a request goes in batches; a batch the server finds too large is halved; pulls go on while pushes fail")
    func largeBacklogAndPullsDuringFailures() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let transport = FlakyTransport()
        let device = try DriverDevice.make(server: live, transport: transport)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        let trip = carrier.trips[0][0].id
        await live.stop()
        // 150 expenses with long notes: about 330 KB of changes, more than the server takes in one request.
        let note = String(repeating: "Receipt line. ", count: 135)
        var created: [ID<Expense>] = []
        for index in 0..<150 { created.append(try app.createExpense(trip: trip, category: .other, amountCents: 100 + index, notes: note)) }
        try await live.start()
        // And a transport that refuses bodies over 64 KB, as a stricter proxy would: batches are halved until they pass.
        transport.mode = .tooLarge
        await app.syncNow()
        try await eventually("all 150 on the server", timeout: .seconds(60)) { try app.database.unsyncedCount() == 0 }
        let onServer = Set(try await Self.serverExpenses(server, carrier, trip: trip).map(\.id))
        #expect(created.allSatisfy(onServer.contains))
        #expect(app.status.failed.isEmpty)

        // Pushes fail (the server keeps failing the batch), yet an urgent message from dispatch arrives.
        transport.mode = .serverFailing
        transport.only = "/v1/mutations"
        _ = try app.createExpense(trip: trip, category: .tolls, amountCents: 200)
        _ = try await server.store.notifications.send(.init(driverID: carrier.driverID(0), type: .urgent, title: "Road closed", body: "Take I-75"),
                                               tenant: carrier.tenant.id)
        await app.syncNow()
        #expect(try app.database.notifications().contains { $0.title == "Road closed" })
        #expect(try app.database.unsyncedCount() == 1)
        await app.shutdown()
        await live.stop()
    }

    @Test("the driver's own queued ETA edits follow each other; dispatch's change in between is a conflict")
    func chainedETAEdits() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let (first, second) = (server.clock.now.addingTimeInterval(3600), server.clock.now.addingTimeInterval(5400))
        await live.stop()
        try app.submitETA(order.id, pickup: first)
        try app.submitETA(order.id, pickup: second)
        try await live.start()
        await app.syncNow()
        try await eventually("both sent") { try app.database.unsyncedCount() == 0 }
        #expect(app.status.failed.isEmpty, "\(app.status.failed.map(\.errorMessage))")
        #expect(try await server.store.orders.order(order.id, carrier.scope).pickupETA.map(WireTime.milliseconds) == WireTime.milliseconds(second))

        // Offline again; dispatch moves the ETA meanwhile: the driver's edit is refused with the truth, not written over it.
        await live.stop()
        try app.submitETA(order.id, pickup: first)
        let dispatchETA = server.clock.now.addingTimeInterval(9000)
        _ = try await server.store.orders.update(order.id, UpdateOrderRequest(pickupETA: dispatchETA), tenant: carrier.tenant.id)
        try await live.start()
        await app.syncNow()
        try await eventually("refused") { app.status.failed.count == 1 }
        #expect(app.status.failed.first?.errorCode == "conflict")
        #expect(try app.database.order(order.id)?.pickupETA.map(WireTime.milliseconds) == WireTime.milliseconds(dispatchETA))
        await app.shutdown()
        await live.stop()
    }

    @Test("a mutation's answer that arrives after the feed brought a newer version of its row leaves the newer one",
          arguments: [MutationOutcome.applied, .rejected])
    func answerOvertakenByFeed(_ outcome: MutationOutcome) async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = try await server.store.orders.order(carrier.orders[carrier.trips[0][0].id]![0].id, carrier.scope)
        try await eventually("synced") { try app.database.order(order.id)?.version == order.version }
        await live.stop()
        try app.submitETA(order.id, pickup: server.clock.now.addingTimeInterval(3600))
        let entry = try #require(try app.database.outbox().last)

        // Dispatch changes the order; a realtime frame brings it to the phone before the batch's answer does.
        let deliveryETA = server.clock.now.addingTimeInterval(86_400)
        let newer = try await server.store.orders.update(order.id, UpdateOrderRequest(deliveryETA: deliveryETA), tenant: carrier.tenant.id)
        let cursor = try app.database.syncPosition().cursor
        #expect(try app.database.applyLive([Change(seq: cursor + 1, entity: .order, id: order.id.rawValue, op: .upsert, row: .order(newer))],
                                           from: cursor, to: cursor + 1, syncedAt: Date()))
        // The answer carries the row as the batch saw it, before dispatch's change.
        try app.database.settle([MutationResult(id: entry.id, outcome: outcome, code: outcome == .rejected ? .conflict : nil,
                                                row: .order(order))],
                                now: Date(), retryDelay: { _ in 60 }, maxAttempts: 5)
        let cached = try #require(try app.database.order(order.id))
        #expect(cached.version == newer.version)
        #expect(cached.deliveryETA.map(WireTime.milliseconds) == WireTime.milliseconds(deliveryETA))
        await app.shutdown()
    }

    @Test("a phone whose clock runs ten minutes fast still picks up; the pickup is stamped with the server's time")
    func fastDeviceClock() async throws {
        let fast: @Sendable () -> Date = { Date().addingTimeInterval(600) }
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, clock: fast) }
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        server.clock.set(Date())
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        #expect(abs(app.serverClock.skew + 600) < 5, "the skew learnt from the server's Date header: \(app.serverClock.skew)")
        let tapped = Date()
        try await app.inspectAndComplete(order.id, .pickup)
        await app.syncNow()
        // The photos go first, then the change: on a machine busy with the rest of the suite, retries with backoff take a while.
        try await eventually("picked up on the server", timeout: .seconds(90)) { try app.database.unsyncedCount() == 0 }
        #expect(app.status.failed.isEmpty, "\(app.status.failed.map(\.errorMessage))")
        let stored = try await server.store.orders.order(order.id, carrier.scope)
        #expect(stored.status == .pickedUp)
        let stamped = try #require(stored.actualPickupDate)
        // Between the tap and now by the true clock (however slow a busy machine made the sync), not ten minutes ahead.
        #expect(stamped >= tapped.addingTimeInterval(-5) && stamped <= Date().addingTimeInterval(5), "stamped \(stamped), tapped \(tapped)")
        await app.shutdown()
        await live.stop()
    }

    @Test("deleting an expense whose creation is on its way deletes it on the server too")
    func deleteWhileCreateInFlight() async throws {
        let transport = FlakyTransport()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport) }
        let (carrier, app) = (scene.carrier, scene.app)
        let trip = carrier.trips[0][0].id
        transport.holdMutations()
        let expense = try app.createExpense(trip: trip, category: .lodging, amountCents: 9900)
        try await eventually("the creation is on its way") { transport.heldCount == 1 }
        try app.deleteExpense(expense)
        transport.release()
        try await Self.expectGoneEverywhere(expense, trip: trip, scene)
    }

    @Test("deleting an expense whose creation went out without an answer deletes it on the server too")
    func deleteAfterUnansweredCreate() async throws {
        let (scene, transport) = try await Self.sceneLosingBatchAnswers()
        let (server, carrier, app) = (scene.server, scene.carrier, scene.app)
        let trip = carrier.trips[0][0].id
        let expense = try app.createExpense(trip: trip, category: .tolls, amountCents: 1250)
        await app.syncNow()
        // The server applied the creation; the phone never heard.
        #expect(try await Self.serverExpenses(server, carrier, trip: trip).contains { $0.id == expense })
        try app.deleteExpense(expense)
        transport.mode = .normal
        try await Self.expectGoneEverywhere(expense, trip: trip, scene)
    }

    @Test("an answer replayed after the feed moved on never brings a row back: an expense created and deleted while answers were lost stays deleted")
    func replayedAnswerAfterFeedMovedOn() async throws {
        let (scene, transport) = try await Self.sceneLosingBatchAnswers()
        let (server, carrier, app) = (scene.server, scene.carrier, scene.app)
        let trip = carrier.trips[0][0].id
        let expense = try app.createExpense(trip: trip, category: .tolls, amountCents: 1250)
        await app.syncNow()                 // created on the server, the answer lost; the pull brings the expense
        try app.deleteExpense(expense)
        await app.syncNow()                 // deleted on the server, the answer lost; the pull brings the deletion
        #expect(try await Self.serverExpenses(server, carrier, trip: trip).allSatisfy { $0.id != expense })
        transport.mode = .normal
        try await Self.expectGoneEverywhere(expense, trip: trip, scene)
    }

    @Test("a change the feed shows applied leaves the outbox: dispatch's later ETA is what the phone shows, not the driver's earlier one laid over it")
    func appliedChangeSeenInFeed() async throws {
        let (scene, transport) = try await Self.sceneLosingBatchAnswers()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        try app.submitETA(order.id, delivery: server.clock.now.addingTimeInterval(3 * 86_400))
        await app.syncNow()                 // applied on the server, the answer lost; the pull brings the order
        #expect(try app.database.unsyncedCount() == 0)
        let dispatchETA = server.clock.now.addingTimeInterval(4 * 86_400)
        _ = try await server.store.orders.update(order.id, UpdateOrderRequest(deliveryETA: dispatchETA), tenant: carrier.tenant.id)
        await app.syncNow()
        transport.mode = .normal
        await app.syncNow()
        let onServer = try await server.store.orders.order(order.id, carrier.scope)
        let onPhone = try #require(try app.database.orders().first { $0.id == order.id })
        #expect(onServer.deliveryETA.map(WireTime.milliseconds) == WireTime.milliseconds(dispatchETA))
        #expect(onPhone.deliveryETA.map(WireTime.milliseconds) == WireTime.milliseconds(dispatchETA))
        #expect(onPhone.version == onServer.version)
        await app.shutdown()
        await live.stop()
    }

    @Test("a change that altered nothing on the server is known applied from the feed too: a second, identical ETA is not laid over dispatch's")
    func unchangedChangeSeenInFeed() async throws {
        let (scene, transport) = try await Self.sceneLosingBatchAnswers()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let eta = server.clock.now.addingTimeInterval(3 * 86_400)
        try app.submitETA(order.id, delivery: eta)
        try app.submitETA(order.id, delivery: eta)       // the same again: nothing to change on the server
        await app.syncNow()
        #expect(try app.database.unsyncedCount() == 0)
        let dispatchETA = server.clock.now.addingTimeInterval(4 * 86_400)
        _ = try await server.store.orders.update(order.id, UpdateOrderRequest(deliveryETA: dispatchETA), tenant: carrier.tenant.id)
        transport.mode = .normal
        await app.syncNow()
        let onPhone = try #require(try app.database.orders().first { $0.id == order.id })
        #expect(onPhone.deliveryETA.map(WireTime.milliseconds) == WireTime.milliseconds(dispatchETA))
        #expect(onPhone.version == (try await server.store.orders.order(order.id, carrier.scope)).version)
        await app.shutdown()
        await live.stop()
    }

    @Test("changes sent without an answer while the pull failed too are looked for in the feed before they go again")
    func unansweredLookedUpBeforeResent() async throws {
        let transport = FlakyTransport()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport) }
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let trip = carrier.trips[0][0].id
        transport.mode = .loseAnswers                     // every answer, the pull's too
        let expense = try app.createExpense(trip: trip, category: .tolls, amountCents: 700)
        await app.syncNow()
        #expect(try app.database.unsyncedCount() == 1)
        let batches = transport.batches
        transport.mode = .normal
        await app.syncNow()
        #expect(try app.database.unsyncedCount() == 0)
        #expect(transport.batches == batches, "the feed showed it applied: not sent again")
        #expect(try await Self.serverExpenses(server, carrier, trip: trip).filter { $0.id == expense }.count == 1)
        #expect(try app.database.expenses(trip: trip).contains { $0.id == expense })
        await app.shutdown()
        await live.stop()
    }

    @Test("a delete never overtakes its failed create: deleting an expense whose creation keeps failing cancels both")
    func deleteAfterFailedCreate() async throws {
        let transport = FlakyTransport()
        let clock = TestClock()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport, clock: clock.read) }
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let trip = carrier.trips[0][0].id
        transport.only = "/v1/mutations"
        transport.mode = .serverFailing
        let expense = try app.createExpense(trip: trip, category: .repairs, amountCents: 12_000)
        for _ in 0..<SyncEngine.maxAttempts {
            await app.syncNow()
            clock.advance(by: 1000)
        }
        try await eventually("the create failed") { app.status.failed.count == 1 }
        try app.deleteExpense(expense)
        transport.mode = .normal
        await app.syncNow()
        clock.advance(by: 1000)
        await app.syncNow()
        #expect(try app.database.outbox().isEmpty)
        #expect(try await Self.serverExpenses(server, carrier, trip: trip).allSatisfy { $0.id != expense })
        #expect(try app.database.expenses(trip: trip).allSatisfy { $0.id != expense })
        await app.shutdown()
        await live.stop()
    }

    @Test("photos wait while their inspection's save keeps failing; none fails for it, and all go once it lands")
    func filesWaitForTheirInspection() async throws {
        let transport = FlakyTransport()
        let clock = TestClock()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport, clock: clock.read) }
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        transport.only = "/v1/mutations"
        transport.mode = .serverFailing
        let inspection = try await app.inspectAndComplete(order.id, .pickup)
        for _ in 0..<(SyncEngine.maxAttempts + 1) {
            await app.syncNow()
            clock.advance(by: 1000)
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try app.database.uploads(inspection: inspection).allSatisfy { $0.attempts == 0 && $0.status == .pending })
        transport.mode = .normal
        await app.syncNow()
        // The device's clock moves on meanwhile: a file the loaded server answered 503 waits out its backoff by
        // that clock (frozen, it would wait for ever).
        try await eventually("everything landed", timeout: .seconds(60)) {
            clock.advance(by: 1)
            return try app.database.unsyncedCount() == 0
        }
        #expect(try await server.store.orders.order(order.id, carrier.scope).status == .pickedUp)
        await app.shutdown()
        await live.stop()
    }

    @Test("a message opened from a push before it synced is marked read, even if the app is killed first")
    func readWhenSyncedSurvivesKill() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, device) = (scene.server, scene.carrier, scene.live, scene.device)
        let message = try await server.store.notifications.send(.init(driverID: carrier.driverID(0), type: .dispatchMessage, title: "Call me",
                                                               body: "About O-1"), tenant: carrier.tenant.id)
        await live.stop()
        let payload = PushPayload(aps: .init(alert: .init(title: "Call me", body: "About O-1"), badge: 1, sound: "default"),
                                  notificationType: .dispatchMessage, notificationID: message.id, tripID: nil, orderID: nil)
        device.app.push.didOpen(payload)
        // The app is killed; it starts again with a network.
        let restarted = try DriverDevice.make(server: live, stateDirectory: device.stateDirectory)
        try await live.start()
        restarted.app.launch()
        await restarted.app.syncNow()
        try await eventually("read on the server") {
            try restarted.app.database.notifications().first { $0.id == message.id }?.readAt != nil
        }
        let stored = try await server.store.notifications.list(.driver(tenant: carrier.tenant.id, driver: carrier.driverID(0)))
        #expect(stored.first { $0.id == message.id }?.readAt != nil)
        await device.app.shutdown()
        await restarted.app.shutdown()
        await live.stop()
    }

    @Test("a PIN set offline waits only as its scrypt hash, which the server then takes")
    func offlinePINIsOnlyAHash() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live)
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox, pin: nil)
        await live.stop()
        try await device.app.auth.setUpPIN("2580")
        let secrets = try String(contentsOf: device.stateDirectory.appendingPathComponent("secrets.json"), encoding: .utf8)
        let stored = try JSONDecoder().decode([String: String].self, from: Data(secrets.utf8))
        let pending = try #require(stored["pin_pending_upload"].flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self) })
        #expect(pending.hasPrefix("scrypt$") && pending != "2580")
        try await live.start()
        await device.app.syncNow()
        try await eventually("the PIN reached the server") { device.app.auth.state == .unlocked && (try? device.app.database.account()?.serverPINPending) == false }
        #expect(try await serverPINHash(server, user: carrier.driver.user.id) == pending)
        await device.app.shutdown()
        await live.stop()
    }

    @Test("cancelling Forgot PIN goes back to the lock screen with the session intact")
    func forgotPINCancelled() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        app.auth.lock()
        #expect(app.auth.state == .locked)
        server.clock.advance(by: 61)
        try await app.auth.sendCode(to: carrier.driver.user.email)
        app.auth.cancelCode()
        #expect(app.auth.state == .locked)
        #expect(await app.hasSession)
        try await app.auth.unlock(pin: "2580")
        await app.syncNow()
        #expect(app.status.lastError == nil)
        await app.shutdown()
        await live.stop()
    }

    @Test("a logout that could not reach the server is sent later, ending that session there")
    func pendingLogout() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        await live.stop()
        try await app.auth.logout()
        try await live.start()
        server.clock.advance(by: 61)
        try await DriverDevice(app: app, stateDirectory: scene.device.stateDirectory).signIn(carrier.driver.user.email, mailbox: server.mailbox)
        var loggedOut = 0
        for _ in 0..<200 where loggedOut == 0 {
            loggedOut = try await Self.loggedOutSessions(server, user: carrier.driver.user.id)
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(loggedOut == 1, "the session signed out offline ended on the server")
        await app.shutdown()
        await live.stop()
    }

    nonisolated static func loggedOutSessions(_ server: TestServer, user: ID<User>) async throws -> Int {
        try await server.store.database.read { db in
            try await db.first("SELECT COUNT(*) AS n FROM sessions WHERE user_id = \(user) AND revoked_reason = 'logout'")?.int("n") ?? 0
        }
    }
}
