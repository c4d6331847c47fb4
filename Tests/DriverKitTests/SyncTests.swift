import DriverKit
import Foundation
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// DriverKit's outbox and sync engine against the real server.
@Suite("DriverKit sync")
@MainActor
struct SyncTests {
    @Test("changes made offline show at once, then reach the server exactly once on reconnect")
    func offlineThenReconnect() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        #expect(try app.database.trips().count == 2)
        let trip = carrier.trips[0][0]
        let (first, second) = (carrier.orders[trip.id]![0], carrier.orders[trip.id]![1])
        let notification = try app.database.notifications().first!

        await live.stop()
        // Picked up and delivered with no signal: two inspections, twelve photos.
        #expect(throws: LocalRejection.self) { try app.updateOrderStatus(first.id, to: .pickedUp) }
        let pickup = try await app.inspectAndComplete(first.id, .pickup)
        #expect(try app.database.order(first.id)?.status == .pickedUp)
        let delivery = try await app.inspectAndComplete(first.id, .delivery)
        try app.submitETA(second.id, pickup: Date().addingTimeInterval(3600))
        let expense = try app.createExpense(trip: trip.id, category: .fuel, amountCents: 6_123, notes: "diesel")
        let doomed = try app.createExpense(trip: trip.id, category: .tolls, amountCents: 300)
        try app.deleteExpense(doomed) // never left the device: both cancel out
        try app.markNotificationRead(notification.id)
        // The cache shows it all at once, offline.
        #expect(try app.database.order(first.id)?.status == .delivered)
        #expect(try app.database.expenses(trip: trip.id).contains { $0.id == expense })
        #expect(try !app.database.expenses(trip: trip.id).contains { $0.id == doomed })
        #expect(try app.database.notifications().first { $0.id == notification.id }?.readAt != nil)
        // 3 changes per inspection and 6 photos each, the ETA, the expense, the read mark.
        #expect(try app.database.unsyncedCount() == 2 * (3 + 6) + 3)
        // Invalid changes are refused on the device, nothing queued.
        #expect(throws: LocalRejection.self) { try app.updateOrderStatus(second.id, to: .delivered) }
        do {
            try app.updateOrderStatus(second.id, to: .pickedUp)
            Issue.record("a pickup without its inspection was accepted")
        } catch let rejection as LocalRejection {
            #expect(rejection.code == .inspectionRequired)
        }
        let localPickup = try #require(try app.database.order(first.id)?.actualPickupDate)
        await app.syncNow()
        try await eventually("offline seen") { !app.status.isOnline }
        #expect(app.status.offlineBanner == "You're offline — showing cached data")

        // The server's clock stands still in tests; the phone's ran on. Bring the server up to the phone's time
        // (a change can never reach the server before it happened).
        server.clock.set(Date().addingTimeInterval(1))
        try await live.start()
        await app.syncNow()
        try await eventually("everything synced", timeout: .seconds(60)) { try app.database.unsyncedCount() == 0 }
        let order = try await server.store.orders.order(first.id, carrier.scope)
        #expect(order.status == .delivered)
        // Stamped with when the driver completed each inspection, not when it synced.
        #expect(order.actualPickupDate.map(WireTime.milliseconds) == WireTime.milliseconds(localPickup))
        #expect(order.actualDeliveryDate != nil)
        for inspection in [pickup, delivery] {
            let stored = try await server.store.inspections.inspection(inspection, carrier.scope)
            #expect(stored.completedAt != nil && stored.media.count == MediaSlot.requiredPhotos.count)
        }
        #expect(try await server.store.orders.order(second.id, carrier.scope).pickupETA != nil)
        let expenses = try await server.store.expenses.list(trip: trip.id, carrier.scope)
        #expect(expenses.filter { $0.id == expense }.count == 1)
        #expect(!expenses.contains { $0.id == doomed })
        #expect(try await server.store.notifications.list(carrier.scope, limit: 500).first { $0.id == notification.id }?.readAt != nil)
        // And the device's cache equals the server's truth.
        #expect(try app.database.order(first.id) == order)
        try await eventually("online again") { app.status.isOnline }
        await app.shutdown()
        await live.stop()
    }

    @Test("the server applied a batch but the answer was lost: the replay applies nothing twice")
    func lostAnswer() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let transport = FlakyTransport()
        let device = try DriverDevice.make(server: live, transport: transport)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        let trip = carrier.trips[0][0]

        transport.mode = .loseAnswers
        try app.submitETA(carrier.orders[trip.id]![0].id, delivery: Date().addingTimeInterval(86_400))
        let expense = try app.createExpense(trip: trip.id, category: .lodging, amountCents: 9_900)
        await app.syncNow()
        #expect(transport.sent >= 1)                                       // it reached the server…
        #expect(try app.database.unsyncedCount() == 2)                     // …but the device never heard back
        let applied = try await carrier.fingerprint(server)
        #expect(try await server.store.expenses.list(trip: trip.id, carrier.scope).filter { $0.id == expense }.count == 1)

        transport.mode = .normal
        await app.syncNow()
        #expect(try app.database.unsyncedCount() == 0)
        #expect(try await carrier.fingerprint(server) == applied)      // the replay changed nothing
        await app.shutdown()
        await live.stop()
    }

    @Test("a client killed with changes queued drains them exactly once after restart")
    func killedAndRestarted() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        var device = try DriverDevice.make(server: live)
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await device.app.syncNow()
        let trip = carrier.trips[0][0]
        let before = try await carrier.fingerprint(server)

        await live.stop()
        let expenses = try (0..<20).map { index in
            try device.app.createExpense(trip: trip.id, category: .other, amountCents: 100 + index)
        }
        try device.app.submitETA(carrier.orders[trip.id]![0].id, pickup: Date().addingTimeInterval(3600))
        // The process dies: no shutdown, nothing flushed but what is in SQLite.
        let directory = device.stateDirectory
        device = try DriverDevice.make(server: live, stateDirectory: directory)
        #expect(try device.app.database.unsyncedCount() == 21)
        #expect(device.app.auth.state == .locked)

        try await live.start()
        device.app.launch()
        try await eventually("outbox drained") { try device.app.database.unsyncedCount() == 0 }
        // Start a second time and sync again: nothing more happens.
        await device.app.syncNow()
        let serverExpenses = try await server.store.expenses.list(trip: trip.id, carrier.scope)
        for id in expenses { #expect(serverExpenses.filter { $0.id == id }.count == 1) }
        #expect(try await carrier.fingerprint(server).count == before.count + 20)
        await device.app.shutdown()
        await live.stop()
    }

    @Test("a rejected change puts the server's truth back and says why; other changes go through")
    func rejection() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        let trip = carrier.trips[0][0]
        let (cancelled, other) = (carrier.orders[trip.id]![0], carrier.orders[trip.id]![1])
        let late = carrier.orders[carrier.trips[0][1].id]![0]
        // This inspection reaches the server before the signal goes.
        let lateInspection = try app.startInspection(order: late.id, kind: .pickup)
        await app.syncNow()
        #expect(try await server.store.inspections.documents(of: late.id, carrier.scope).count == 1)

        await live.stop()
        try await app.inspectAndComplete(cancelled.id, .pickup)
        try await app.inspectAndComplete(other.id, .pickup)
        try app.updateInspection(lateInspection, customerUnavailable: true)
        for slot in MediaSlot.requiredPhotos {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("late-\(slot).jpg")
            try Data(MediaSamples.jpeg(size: 1024)).write(to: file)
            try await app.attach(file, to: lateInspection, slot: slot)
        }
        try app.completeInspection(lateInspection)
        #expect(try [cancelled, other, late].allSatisfy { try app.database.order($0.id)?.status == .pickedUp })
        // Meanwhile dispatch cancelled two of the orders.
        _ = try await server.store.orders.update(cancelled.id, .init(status: .cancelled), tenant: carrier.tenant.id)
        _ = try await server.store.orders.update(late.id, .init(status: .cancelled), tenant: carrier.tenant.id)
        try await live.start()
        await app.syncNow()

        try await eventually("everything settled", timeout: .seconds(60)) {
            try app.database.outbox().allSatisfy { $0.status == .failed } && app.database.uploads().allSatisfy { $0.status != .pending }
        }
        // The server's truth: the cancelled orders are back to cancelled, the other one is picked up.
        #expect(try app.database.order(cancelled.id)?.status == .cancelled)
        #expect(try app.database.order(late.id)?.status == .cancelled)
        #expect(try app.database.order(other.id)?.status == .pickedUp)
        #expect(try await server.store.orders.order(other.id, carrier.scope).status == .pickedUp)
        // The refused inspection's photos are evidence of a vehicle that may be on the truck: kept, never deleted.
        #expect(try app.database.inspections(order: cancelled.id).isEmpty)
        let held = try #require(try app.evidence().first)
        #expect(held.inspection.orderID == cancelled.id && held.files.count == MediaSlot.requiredPhotos.count)
        #expect(held.files.allSatisfy { FileManager.default.fileExists(atPath: $0.path) && $0.status == .failed })
        // Kept on purpose, they are not waiting to go; signing out would lose them, so it says so.
        #expect(try app.database.unsyncedCount() == 0)
        #expect(try app.waitingWork().waitingCount == 0)
        #expect(ProfileViewModel(app: app).state.signOutWarning?.contains("the \(cancelled.number) pickup inspection kept on this phone") == true)
        let exported = try app.exportEvidence(held.id, to: FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID())"))
        #expect(FileManager.default.fileExists(atPath: exported.appendingPathComponent("inspection.json").path))
        let exportedFiles = try FileManager.default.contentsOfDirectory(atPath: exported.path)
        #expect(exportedFiles.count == MediaSlot.requiredPhotos.count + 1, "\(exportedFiles)")
        // The one the server has stays, open; its files made it.
        #expect(try app.database.inspection(lateInspection)?.completedAt == nil)
        try await eventually("failures shown") { app.status.failed.count >= 2 }
        #expect(Set(app.status.failed.map(\.errorCode)).isSubset(of: ["invalid_transition", "dependency_failed"]))
        #expect(app.status.failed.allSatisfy { $0.failure == .rejected })
        // The driver decides: the evidence goes (with its changes), the other refusal is dismissed.
        try app.discardEvidence(held.id)
        // From the outbox itself: the observed status can lag it on a loaded machine.
        for entry in try app.database.outbox() where entry.status == .failed { try app.discard(entry.id) }
        try await eventually("dismissed") { app.status.failed.isEmpty }
        #expect(try app.database.unsyncedCount() == 0)
        await app.shutdown()
        await live.stop()
    }

    @Test("offline is no attempt: changes made while the server cannot be reached wait, however many syncs, and all go when it answers")
    func offlineIsNoAttempt() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let transport = FlakyTransport()
        let device = try DriverDevice.make(server: live, transport: transport)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        transport.mode = .offline
        var expenses: [ID<Expense>] = []
        for index in 0..<7 {
            expenses.append(try app.createExpense(trip: carrier.trips[0][0].id, category: .tolls, amountCents: 100 + index))
            await app.syncNow()  // every command of the terminal client tries
        }
        for _ in 0..<10 { await app.syncNow() }
        #expect(try app.database.outbox().allSatisfy { $0.attempts == 0 && $0.status == .pending })
        #expect(app.status.failed.isEmpty)
        transport.mode = .normal
        await app.syncNow()
        try await eventually("all seven sent") { try app.database.unsyncedCount() == 0 }
        let onServer = try await server.store.expenses.list(trip: carrier.trips[0][0].id, carrier.scope).map(\.id)
        #expect(expenses.allSatisfy(onServer.contains))
        await app.shutdown()
        await live.stop()
    }

    @Test("a failing server counts attempts; after five the driver sees the failure, and the change is still retried on its own")
    func attemptsExhausted() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let transport = FlakyTransport()
        let clock = TestClock()
        let device = try DriverDevice.make(server: live, transport: transport, clock: clock.read)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        transport.mode = .serverFailing
        let expense = try app.createExpense(trip: carrier.trips[0][0].id, category: .repairs, amountCents: 45_000)
        // Automatic retries wait out the backoff: 5 s, 10 s, 20 s, 40 s (±20 %).
        for _ in 0..<5 {
            await app.sync.requestSync()
            try await eventually("attempt recorded") { try app.database.outbox().first?.nextAttemptAt ?? .distantPast > clock.now || app.status.failed.count == 1 }
            clock.advance(by: 100)
        }
        let entry = try #require(try app.database.outbox().first)
        #expect(entry.status == .failed)
        #expect(entry.failure == .transient)
        #expect(entry.attempts == SyncEngine.maxAttempts)
        #expect(try app.database.unsyncedCount() == 1)                  // still the driver's work
        // "Not sent yet" shows it failing, with Retry, and Drop after a warning naming it.
        let row = try #require(NotSentViewModel(app: app).rows.first)
        #expect(row.failed && row.why.contains("tried 5 times"), "\(row)")
        #expect(row.actions == [.retry, .discard(warning: "Drop \(row.title)? It will never reach dispatch.")] && row.title.contains("$450.00"), "\(row)")
        // Nobody pressed retry: once the server answers and the change is due again, it goes by itself.
        transport.mode = .normal
        clock.advance(by: 1000)
        await app.syncNow()
        try await eventually("sent on its own") { try app.database.unsyncedCount() == 0 }
        #expect(try await server.store.expenses.list(trip: carrier.trips[0][0].id, carrier.scope).contains { $0.id == expense })
        await app.shutdown()
        await live.stop()
    }

    @Test("logout refuses while work is unsynced, unless forced; it clears cache, tokens, PIN and the device token")
    func logoutRules() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        let profile = ProfileViewModel(app: app)
        try app.database.setPushToken("a1b2c3d4e5f6")
        await app.syncNow()
        #expect(try await server.store.people.deviceTokens(user: carrier.driver.user.id, tenant: carrier.tenant.id).map(\.token) == ["a1b2c3d4e5f6"])

        await live.stop()
        try app.submitETA(carrier.orders[carrier.trips[0][0].id]![0].id, pickup: Date().addingTimeInterval(3600))
        try await eventually("count shown") { app.status.unsyncedCount == 1 }
        let number = carrier.orders[carrier.trips[0][0].id]![0].number
        #expect(profile.state.signOutWarning
                == "Not at dispatch yet: the pickup ETA for \(number). Signing out would lose it. Sync first, or log out anyway.")
        await #expect(throws: AuthError.unsyncedChanges(count: 1, atStake: "the pickup ETA for \(number)")) { try await profile.signOut() }
        #expect(app.auth.state == .unlocked)

        try await live.start()
        await app.syncNow()
        try await profile.signOut()
        #expect(app.auth.state == .signedOut)
        #expect(try app.database.trips().isEmpty)
        #expect(try app.database.account() == nil)
        #expect(await app.hasSession == false)
        #expect(try await server.store.people.deviceTokens(user: carrier.driver.user.id, tenant: carrier.tenant.id).isEmpty)
        let secrets = try String(contentsOf: device.stateDirectory.appendingPathComponent("secrets.json"), encoding: .utf8)
        #expect(secrets == "{}")
        await app.shutdown()
        await live.stop()
    }

    @Test("a realtime change from dispatch reaches the cache without asking")
    func realtimeTriggersPull() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live, realtime: true)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        try await eventually("realtime connected") { app.status.realtimeConnected }
        _ = try await live.services!.store.notifications.send(.init(driverID: carrier.driverID(0), type: .urgent, title: "Storm ahead",
                                                             body: "Stop at the next safe place."), tenant: carrier.tenant.id)
        try await eventually("message arrived") { try app.database.notifications().contains { $0.title == "Storm ahead" } }
        let messages = MessagesViewModel(app: app)
        let urgent = try #require(try app.database.notifications().first { $0.title == "Storm ahead" })
        #expect(messages.open(urgent.id) == .alert(title: "Storm ahead", body: "Stop at the next safe place."))
        try await eventually("read") { try app.database.notifications().first { $0.id == urgent.id }?.readAt != nil }
        await app.shutdown()
        await live.stop()
    }

    @Test("realtime changes are applied from the frames: 20 dispatch changes arrive without one pull of the feed")
    func realtimeAppliesFrames() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let transport = FlakyTransport()
        let device = try DriverDevice.make(server: live, transport: transport, realtime: true)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.syncNow()
        try await eventually("realtime connected") { app.status.realtimeConnected }
        // Let the sign-in's own syncs settle before counting.
        try await Task.sleep(for: .milliseconds(500))
        let pullsBefore = transport.pulls
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        for index in 0..<20 {
            _ = try await live.services!.store.notifications.send(.init(driverID: carrier.driverID(0), type: .dispatchMessage,
                                                                 title: "Note \(index)", body: "b"), tenant: carrier.tenant.id)
        }
        _ = try await live.services!.store.orders.updateETA(order.id, pickup: Date().addingTimeInterval(7200), delivery: nil, carrier.scope)
        try await eventually("all arrived") {
            try app.database.notifications().filter { $0.title.hasPrefix("Note ") }.count == 20
                && app.database.order(order.id)?.pickupETA != nil
        }
        #expect(transport.pulls == pullsBefore, "changes the frames carried were read again with GET /v1/sync")
        let tenant = carrier.tenant.id
        let serverCursor = try await server.store.database.read { @Sendable db in
            try await db.first("SELECT change_seq FROM tenants WHERE id = \(tenant)")?.int64("change_seq")
        }
        try await eventually("cursor caught up") { try app.database.syncPosition().cursor == serverCursor }
        await app.shutdown()
        await live.stop()
    }

    @Test("a socket the server replaced with a newer one (4029) comes back only after a growing backoff, though each had been ready")
    func backsOffWhenReplaced() async throws {
        let server = try await TestServer.make(.sqlite) { $0.realtimeLimits.socketsPerUser = 1 }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live, realtime: true)
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        try await eventually("realtime connected") { app.status.realtimeConnected }
        // Another socket of the driver takes the only place; the app's comes back and takes it over.
        var waits: [Duration] = []
        for _ in 0..<3 {
            // Timed from before the rival connects: the app's socket closes, and its backoff starts, after that.
            let replaced = ContinuousClock.now
            let rival = RealtimeTestClient(port: live.port, token: carrier.driver.accessToken, since: 0)
            try await rival.waitForReady()
            #expect(try await rival.waitForClose(timeout: .seconds(60)) == RealtimeCloseCode.tooManyConnections.rawValue)
            waits.append(ContinuousClock.now - replaced)
        }
        // Reconnect backoff 1 s, 2 s, 4 s (±20 %): it grows although every socket had become ready.
        #expect(waits[0] >= .milliseconds(700), "\(waits)")
        #expect(waits[1] >= .milliseconds(1500), "\(waits)")
        #expect(waits[2] >= .milliseconds(3000), "\(waits)")
        await app.shutdown()
        await live.stop()
    }
}
