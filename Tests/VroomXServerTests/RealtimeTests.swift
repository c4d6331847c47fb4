import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The realtime socket against live servers (real WebSockets on loopback).
@Suite("Realtime")
struct RealtimeTests {
    static func counter(_ server: TestServer, _ carrier: CarrierFixture) async throws -> Int64 {
        try await server.store.changeCounter(carrier.tenant.id).counter
    }

    @Test("a driver's socket gets their changes as they commit, and nobody else's", arguments: TestBackend.available)
    func liveAndIsolated(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let b = try await CarrierFixture.make(server, name: "Bravo", drivers: 1, tripsPerDriver: 1)
        let store = server.store
        try await server.run(.live) { api in
            let port = try #require(api.port)
            let socket = RealtimeTestClient(port: port, token: a.drivers[0].accessToken, since: try await Self.counter(server, a))
            try await socket.waitForReady()
            // Work for everyone: this driver, the other driver, the other carrier.
            for index in 0..<5 {
                for (carrier, driver) in [(a, 0), (a, 1), (b, 0)] {
                    _ = try await store.notifications.send(.init(driverID: carrier.driverID(driver), type: .dispatchMessage,
                                                          title: "m\(index)", body: "for \(carrier.tenant.name) \(driver)"),
                                                    tenant: carrier.tenant.id)
                }
            }
            // An edit of the driver's order: the order, and the notification saying what changed.
            let order = a.orders[a.trips[0][0].id]![0]
            _ = try await store.orders.update(order.id, .init(revenueCents: 123_456), tenant: a.tenant.id)
            try await socket.waitUntil("7 changes") { $0.flatMap { $0.changes ?? [] }.count >= 7 }
            try await Task.sleep(for: .milliseconds(200))
            let changes = socket.changes
            #expect(changes.count == 7)
            #expect(changes.map(\.seq) == changes.map(\.seq).sorted())
            for change in changes {
                switch change.row {
                case .notification(let notification): #expect(notification.driverID == a.driverID(0))
                case .order(let updated): #expect(updated.id == order.id && updated.revenueCents == 123_456)
                default: Issue.record("unexpected change \(change)")
                }
            }
            // The socket's cursor lets a client resume over HTTP with nothing missing.
            let tail = try await api.call(.sync, query: "since=\(socket.cursor!)", token: a.drivers[0].accessToken).decode(SyncPage.self)
            #expect(tail.changes.isEmpty)
            await socket.disconnect()
        }
    }

    @Test("a socket joining a carrier already watched: at the hub's position it reads nothing and gets what comes next; behind, it catches up",
          arguments: TestBackend.available)
    func joinWatchedCarrier(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let store = server.store
        try await server.run(.live) { api in
            let port = try #require(api.port)
            let dispatcher = try await server.services.signIn(email: a.dispatcher.user.email).accessToken
            let watching = RealtimeTestClient(port: port, token: dispatcher, since: try await Self.counter(server, a))
            try await watching.waitForReady()
            let head = try await Self.counter(server, a)
            let current = RealtimeTestClient(port: port, token: a.driver.accessToken, since: head)
            try await current.waitForReady()
            #expect(current.messages.first { $0.type == .ready }?.cursor == head)
            let message = try await store.notifications.send(.init(driverID: a.driverID(0), type: .dispatchMessage, title: "next", body: ""),
                                                      tenant: a.tenant.id)
            try await current.waitUntil("the next change") { $0.flatMap { $0.changes ?? [] }.contains { $0.id == message.id.rawValue } }
            // Behind the hub (the same cursor, now old): what it missed comes from the database, then what comes live.
            let behind = RealtimeTestClient(port: port, token: a.driver.accessToken, since: head)
            try await behind.waitForReady()
            let later = try await store.notifications.send(.init(driverID: a.driverID(0), type: .dispatchMessage, title: "later", body: ""),
                                                    tenant: a.tenant.id)
            try await behind.waitUntil("the later change") { $0.flatMap { $0.changes ?? [] }.contains { $0.id == later.id.rawValue } }
            #expect(behind.changes.map(\.id) == [message.id.rawValue, later.id.rawValue])
            for socket in [watching, current, behind] { await socket.disconnect() }
        }
    }

    @Test("the hub hands a change only to who may see it: dispatch and its driver, not the carrier's other drivers",
          arguments: TestBackend.available)
    func hubWakesOnlyTheAudience(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let tenant = carrier.tenant.id
        let other = Subscriber(scope: .driver(tenant: tenant, driver: carrier.driverID(0)), limit: 100)
        let addressee = Subscriber(scope: .driver(tenant: tenant, driver: carrier.driverID(1)), limit: 100)
        let dispatch = Subscriber(scope: carrier.scope, limit: 100)
        for subscriber in [other, addressee, dispatch] { try await server.services.hub.subscribe(subscriber) }
        let message = try await server.store.notifications.send(.init(driverID: carrier.driverID(1), type: .dispatchMessage, title: "Yours",
                                                               body: "b"), tenant: tenant)
        for subscriber in [addressee, dispatch] {
            guard case .batches(let batches, _) = await subscriber.next() else { Issue.record("no batch"); continue }
            #expect(batches.flatMap(\.entries).contains { $0.id == message.id.rawValue })
        }
        // One batch went out to its whole audience at once: the other driver's inbox stayed empty.
        #expect(!other.hasPending)
        for subscriber in [other, addressee, dispatch] { server.services.hub.unsubscribe(subscriber) }
    }

    @Test("a socket cut mid-stream resumes from its cursor with no gap and no duplicate", arguments: TestBackend.available)
    func resumeFromCursor(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let store = server.store
        let start = try await Self.counter(server, a)
        try await server.run(.live) { api in
            let port = try #require(api.port)
            let token = a.driver.accessToken
            let writer = Task {
                for index in 0..<300 {
                    _ = try await store.notifications.send(.init(driverID: a.driverID(0), type: .dispatchMessage, title: "n\(index)", body: ""),
                                                    tenant: a.tenant.id)
                    if index % 50 == 0 { try await Task.sleep(for: .milliseconds(20)) }
                }
            }
            var received: [Int64] = []
            var cursor = start
            // Connect, take some, drop the connection; three times while the writer runs; then once to finish.
            for round in 0..<4 {
                let socket = RealtimeTestClient(port: port, token: token, since: cursor)
                if round < 3 {
                    // Some changes, or everything when the writer was quicker than the sockets.
                    try await socket.waitUntil("some changes") { messages in
                        messages.flatMap { $0.changes ?? [] }.count >= 20 || (messages.last?.cursor ?? 0) >= start + 300
                    }
                } else {
                    try await writer.value
                    try await socket.waitUntil("all changes") { messages in
                        (messages.last?.cursor ?? 0) >= start + 300 && messages.contains { $0.type == .ready }
                    }
                }
                await socket.disconnect()
                // Apply what arrived, as a client does: message by message, keeping the cursor.
                for message in socket.messages {
                    received += (message.changes ?? []).map(\.seq)
                    cursor = message.cursor
                }
            }
            #expect(received == Array((start + 1)...(start + 300)))
        }
    }

    @Test("expired token, revoked session, too-slow consumer and stale cursor close with their codes", arguments: TestBackend.available)
    func closeCodes(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend) {
            $0.realtimeHeartbeat = .milliseconds(100)
            $0.realtimeInboxLimit = 20
        }
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        try await server.run(.live) { api in
            let port = try #require(api.port)
            let now = try await Self.counter(server, a)

            // Heartbeats carry the cursor.
            let idle = RealtimeTestClient(port: port, token: a.drivers[1].accessToken, since: now)
            try await idle.waitUntil("a heartbeat") { $0.contains { $0.type == .heartbeat && $0.cursor == now } }

            // A token that expires while connected: 4001.
            let expiring = RealtimeTestClient(port: port, token: a.drivers[0].accessToken, since: now, tokenInQuery: true)
            try await expiring.waitForReady()
            server.clock.advance(by: 3601)
            #expect(try await expiring.waitForClose() == RealtimeCloseCode.tokenExpired.rawValue)
            // Every token issued before the jump has expired; sign in again.
            let fresh = try await server.services.signIn(email: a.drivers[0].user.email)
            let dispatcher = try await server.services.signIn(email: a.dispatcher.user.email).accessToken

            // A session revoked while connected: 4003.
            let revoked = RealtimeTestClient(port: port, token: fresh.accessToken, since: now)
            try await revoked.waitForReady()
            #expect(try await api.call(.logout, json: LogoutRequest(refreshToken: fresh.refreshToken)).status == 204)
            #expect(try await revoked.waitForClose() == RealtimeCloseCode.sessionRevoked.rawValue)

            // A burst larger than the socket may queue: 4008, and the client resumes from its cursor.
            let trip = a.trips[0][0]
            for index in 0..<15 {
                _ = try await server.store.orders.create(.init(number: "BURST-\(index)", tripID: trip.id, vehicle: Vehicle(),
                                                             pickup: Stop(address: "a"), delivery: Stop(address: "b"), revenueCents: 1),
                                                       tenant: a.tenant.id)
            }
            let beforeBurst = try await Self.counter(server, a)
            let slow = RealtimeTestClient(port: port, token: dispatcher, since: beforeBurst)
            try await slow.waitForReady()
            // One transaction with more than 20 changes (the trip, 17 orders, their expense and notification).
            _ = try await server.store.trips.assign(trip.id, to: a.driverID(1), tenant: a.tenant.id)
            #expect(try await slow.waitForClose() == RealtimeCloseCode.tooSlow.rawValue)

            // A cursor ahead of the server (a restored database): 4410.
            let stale = RealtimeTestClient(port: port, token: dispatcher, since: now + 1_000_000)
            #expect(try await stale.waitForClose() == RealtimeCloseCode.cursorExpired.rawValue)

            // Not an upgrade, or a bad cursor: ordinary JSON errors.
            #expect(try await api.call(.realtime, query: "since=0", token: dispatcher).errorCode == "upgrade_required")
            #expect(try await api.call(.realtime, query: "since=x", token: dispatcher).errorCode == "invalid_parameter")
            #expect(try await api.call(.realtime, query: "since=0").errorCode == "missing_token")
            await idle.disconnect()
        }
    }

    @Test("with two server instances on one PostgreSQL, a write through A reaches a socket on B",
          arguments: TestBackend.postgresOnly)
    func acrossInstances(_ backend: TestBackend) async throws {
        let first = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(first, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let url = try #require(first.services.configuration.databaseURL)
        // The second instance shares the database (and the signing secret).
        let second = try await TestServer.make(.sqlite) { $0.databaseURL = url }
        let start = try await Self.counter(first, a)
        try await first.run(.live) { apiA in
            try await second.run(.live) { apiB in
                let socket = RealtimeTestClient(port: try #require(apiB.port), token: a.driver.accessToken, since: start)
                try await socket.waitForReady()
                let order = a.orders[a.trips[0][0].id]![0]
                try await apiA.completeInspection(of: order.id, .pickup, token: a.driver.accessToken)
                try await socket.waitUntil("the pickup from instance A") { messages in
                    messages.flatMap { $0.changes ?? [] }.contains { change in
                        if case .order(let updated) = change.row { return updated.status == .pickedUp }
                        return false
                    }
                }
                await socket.disconnect()
            }
        }
    }
}
