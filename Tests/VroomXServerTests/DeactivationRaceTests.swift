import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Deactivation against everything that could slip past it at the same
/// moment: new work, a sign-in, a device token, a live socket, a message.
@Suite("Dispatch: deactivation races")
struct DeactivationRaceTests {
    @Test("deactivating a driver and giving them a trip at the same moment never both succeed", arguments: TestBackend.available)
    func deactivationAgainstNewWork(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = carrier.tenant.id
        for round in 0..<12 {
            let driver = try await store.people.createDriver(tenant: tenant, .init(email: "race\(round)@alpha.test", name: "Racer \(round)",
                                                                              payType: .perMile, payRate: 60))
            let loose = try await store.trips.create(.init(number: "T-L\(round)", origin: "A", destination: "B", revenueCents: 1, miles: 1),
                                                   tenant: tenant)
            async let deactivated = Self.succeeds { try await store.people.deactivate(driver.id, tenant: tenant) }
            async let created = Self.succeeds {
                try await store.trips.create(.init(number: "T-N\(round)", driverID: driver.id, origin: "A", destination: "B",
                                                 revenueCents: 1, miles: 1), tenant: tenant)
            }
            async let assigned = Self.succeeds { try await store.trips.assign(loose.id, to: driver.id, tenant: tenant) }
            let (off, newTrip, handed) = await (deactivated, created, assigned)
            #expect(!(off && (newTrip || handed)), "round \(round): deactivated \(off), new trip \(newTrip), assigned \(handed)")
            let now = try #require(try await store.people.driver(driver.id, tenant: tenant))
            let open = try await store.trips.list(.dispatch(tenant: tenant)).filter { $0.driverID == driver.id }
            #expect(now.deactivatedAt == nil || open.isEmpty, "round \(round): a deactivated driver holds \(open.map(\.number))")
        }
    }

    @Test("a sign-in racing a deactivation never leaves a live session", arguments: TestBackend.available)
    func deactivationAgainstSignIn(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = carrier.tenant.id
        for round in 0..<12 {
            let driver = try await store.people.createDriver(tenant: tenant, .init(email: "signin\(round)@alpha.test", name: "Signer \(round)",
                                                                              payType: .perMile, payRate: 60))
            let user = try #require(try await store.people.accounts(email: driver.email).first?.user)
            async let session = Self.result {
                try await store.createSession(user: user, refreshTokenHash: "hash-\(round)", lifetime: 3600)
            }
            async let deactivated = Self.succeeds { try await store.people.deactivate(driver.id, tenant: tenant) }
            let (made, off) = await (session, deactivated)
            #expect(off)
            if let made {
                #expect(try await !store.sessionIsActive(made), "round \(round): the session made during deactivation is still live")
            }
        }
    }

    @Test("deactivating again ends a session that got in anyway; a revoked session registers no device token",
          arguments: TestBackend.available)
    func deactivationIsRepeatable(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = carrier.tenant.id
        let session = try await server.services.tokens.verify(carrier.driver.accessToken).session
        _ = try await store.people.deactivate(carrier.driverID(0), tenant: tenant)
        #expect(try await !store.sessionIsActive(session))
        // The session's token is still in an instance's 10 s cache: storing a push token checks the database.
        await #expect(throws: AppError.self) {
            try await store.people.registerDeviceToken(.init(token: "late-token", platform: .ios), user: carrier.driver.user.id, tenant: tenant,
                                                session: session)
        }
        #expect(try await store.people.deviceTokens(user: carrier.driver.user.id, tenant: tenant).isEmpty)
        // A session written behind the store's back (as a lost race would) ends at the next deactivation.
        let slipped = ID<Session>()
        try await server.services.database.write { db in
            try await db.execute("""
                INSERT INTO sessions (id, tenant_id, user_id, created_at, expires_at)
                VALUES (\(slipped), \(tenant), \(carrier.driver.user.id), 0, \(Int64.max / 2))
                """)
        }
        #expect(try await store.sessionIsActive(slipped))
        _ = try await store.people.deactivate(carrier.driverID(0), tenant: tenant)
        #expect(try await !store.sessionIsActive(slipped))
    }

    @Test("a deactivated driver's realtime socket closes at once, not at the next heartbeat")
    func socketClosesOnDeactivation() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let live = try await LiveServer(server)
        let socket = RealtimeTestClient(port: live.port, token: carrier.driver.accessToken, since: 0)
        try await socket.waitForReady()
        // Through the live instance's own store, whose commits its sockets hear.
        _ = try await #require(live.services).store.people.deactivate(carrier.driverID(0), tenant: carrier.tenant.id)
        // The heartbeat is 25 s; the close must come from the driver's own change.
        let code = try await socket.waitForClose(timeout: .seconds(10))
        #expect(code == RealtimeCloseCode.sessionRevoked.rawValue)
        await live.stop()
    }

    @Test("a signed-out driver's realtime socket is sent nothing more: the next change closes it, undelivered")
    func socketClosesOnSignOut() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let live = try await LiveServer(server)
        let socket = RealtimeTestClient(port: live.port, token: carrier.driver.accessToken, since: 0)
        try await socket.waitForReady()
        let client = HTTPTestClient(baseURL: live.baseURL)
        #expect(try await client.send(.logout, json: LogoutRequest(refreshToken: carrier.driver.refreshToken)).status == 204)
        _ = try await #require(live.services).store.notifications.send(.init(driverID: carrier.driverID(0), type: .dispatchMessage,
                                                                       title: "Gate code 4411", body: ""), tenant: carrier.tenant.id)
        // The heartbeat is 25 s: the close comes with the change it does not deliver.
        let code = try await socket.waitForClose(timeout: .seconds(10))
        #expect(code == RealtimeCloseCode.sessionRevoked.rawValue)
        #expect(!socket.changes.contains { $0.entity == .notification }, "a change reached a signed-out socket")
        await live.stop()
    }

    @Test("after deactivation the driver's token is refused at once, though this instance had the session cached as live: no request, no socket")
    func endedSessionRefusedAtOnce() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let live = try await LiveServer(server)
        let token = carrier.driver.accessToken
        let authorization = ["Authorization": "Bearer \(token)"]
        #expect(try await RawHTTP.request(port: live.port, "GET", "/v1/trips", headers: authorization).status == 200)
        _ = try await #require(live.services).store.people.deactivate(carrier.driverID(0), tenant: carrier.tenant.id)
        // Within the 10 s an active session stays cached: refused all the same.
        let after = try await RawHTTP.request(port: live.port, "GET", "/v1/trips", headers: authorization)
        #expect(after.status == 401, "\(after.status)")
        do {
            var socket = try await RawWebSocket.open(port: live.port, token: token)
            socket.socket.close()
            Issue.record("a socket opened on an ended session")
        } catch {
            #expect("\(error)".contains("401"), "\(error)")
        }
        await live.stop()
    }

    @Test("completing a trip and adding an order to it at the same moment never both succeed", arguments: TestBackend.available)
    func completionAgainstNewOrders(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = carrier.tenant.id
        for round in 0..<12 {
            let trip = try await store.trips.create(.init(number: "T-C\(round)", driverID: carrier.driverID(0), origin: "A", destination: "B",
                                                        revenueCents: 1, miles: 1), tenant: tenant)
            _ = try await store.trips.update(trip.id, .init(status: .inProgress), tenant: tenant)
            async let completed = Self.succeeds { try await store.trips.update(trip.id, .init(status: .completed), tenant: tenant) }
            async let added = Self.succeeds {
                try await store.orders.create(.init(number: "O-C\(round)", tripID: trip.id, vehicle: Vehicle(), pickup: Stop(address: "P"),
                                                  delivery: Stop(address: "D"), revenueCents: 1), tenant: tenant)
            }
            let (done, joined) = await (completed, added)
            #expect(!(done && joined), "round \(round): the trip completed and took a new order")
        }
        #expect(try await store.integrityProblems() == [])
    }

    @Test("cancelling a trip and picking up its vehicle at the same moment never both succeed: no cancelled trip carries a vehicle",
          arguments: TestBackend.available)
    func cancellationAgainstPickup(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = carrier.tenant.id
        var outcomes: [String: Int] = [:]
        for round in 0..<80 {
            let trip = try await store.trips.create(.init(number: "T-X\(round)", driverID: carrier.driverID(0), origin: "A", destination: "B",
                                                        revenueCents: 1, miles: 1), tenant: tenant)
            if round.isMultiple(of: 2) { _ = try await store.trips.update(trip.id, .init(status: .inProgress), tenant: tenant) }
            let order = try await store.orders.create(.init(number: "O-X\(round)", tripID: trip.id, vehicle: Vehicle(), pickup: Stop(address: "P"),
                                                          delivery: Stop(address: "D"), revenueCents: 1), tenant: tenant)
            async let cancelled = Self.succeeds { try await store.trips.update(trip.id, .init(status: .cancelled), tenant: tenant) }
            // The status path of the API and the dispatcher's edit of the order (`PATCH /v1/dispatch/orders/{id}`), in turn.
            async let picked = Self.succeeds {
                if round % 4 < 2 {
                    _ = try await store.orders.updateStatus(order.id, to: .pickedUp, occurredAt: nil, .dispatch(tenant: tenant))
                } else {
                    _ = try await store.orders.update(order.id, UpdateOrderRequest(status: .pickedUp), tenant: tenant)
                }
            }
            let (off, loaded) = await (cancelled, picked)
            #expect(!(off && loaded), "round \(round): the trip was cancelled and its vehicle picked up")
            outcomes["cancelled \(off), picked up \(loaded)", default: 0] += 1
        }
        #expect(try await store.integrityProblems() == [], "\(outcomes)")
    }

    @Test("no messages to a deactivated driver; a base_version that never existed is refused; a trip completes only when delivered",
          arguments: TestBackend.available)
    func refusals(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let trip = carrier.trips[0][0]
        let order = try #require(carrier.orders[trip.id]?.first)
        try await server.run { api in
            _ = try await api.call(.dispatchAssignTrip, carrier.trips[1][0].id.rawValue, json: AssignTripRequest(driverID: nil),
                                   token: dispatch)
            #expect(try await api.call(.dispatchDeactivateDriver, carrier.driverID(1).rawValue, token: dispatch).status == 200)
            let message = try await api.call(.dispatchSendMessage, json: SendMessageRequest(
                driverID: carrier.driverID(1), type: .urgent, title: "Still there?", body: ""), token: dispatch)
            #expect(message.status == 422)
            #expect(message.error?.field == "driver_id")

            for base in [0, -1, order.version + 1, Int.max] {
                let edit = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                    revenueCents: 5, baseVersion: base), token: dispatch)
                #expect(edit.status == 422, "base_version \(base): \(edit.text)")
                #expect(edit.error?.field == "base_version")
            }
            #expect(try await server.store.orders.order(order.id, carrier.scope).revenueCents == order.revenueCents)

            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(status: .inProgress),
                                       token: dispatch).status == 200)
            let early = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(status: .completed),
                                           token: dispatch)
            #expect(early.status == 409)
            #expect(early.error?.field == "status")
            for order in carrier.orders[trip.id] ?? [] {
                for status in [OrderStatus.pickedUp, .delivered] {
                    #expect(try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: status),
                                               token: dispatch).status == 200)
                }
            }
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(status: .completed),
                                       token: dispatch).status == 200)
        }
    }

    private static func succeeds<T: Sendable>(_ body: @Sendable () async throws -> T) async -> Bool {
        await result(body) != nil
    }

    private static func result<T: Sendable>(_ body: @Sendable () async throws -> T) async -> T? {
        try? await body()
    }
}
