import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Drivers' first pages answered from an instance's memory, and never older
/// than what the driver, this instance or the client's change number knows.
///
/// "From memory" is shown by changing a trip's stored document behind the
/// server's back (no change logged, nobody told): an answer from memory keeps
/// the old words, one from the database has the new ones.
@Suite("Read cache")
struct ReadCacheTests {
    static func trips(_ api: TestAPI, _ token: String, seen: Int64? = nil, query: String? = nil) async throws -> [Trip] {
        let headers = seen.map { [ChangeNumber.header: String($0)] } ?? [:]
        let answer = try await api.call(.trips, query: query, token: token, headers: headers)
        guard answer.status == 200 else { throw TestSetupError("trips answered \(answer.status): \(answer.text)") }
        return try answer.decode(Items<Trip>.self).items
    }

    /// Renames a trip's origin in its stored document only.
    static func editBehindTheServersBack(_ server: TestServer, _ trip: ID<Trip>, origin: String) async throws {
        try await server.services.database.write { db in
            let doc = try #require(try await db.first("SELECT doc FROM trips WHERE id = \(trip)")?.string("doc"))
            var object = try #require(try JSONSerialization.jsonObject(with: Data(doc.utf8)) as? [String: Any])
            object["origin"] = origin
            let edited = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
            try await db.execute("UPDATE trips SET doc = \(edited) WHERE id = \(trip)")
        }
    }

    /// Reads until the instance keeps the page (it starts following the
    /// carrier on the first read).
    static func untilKept(_ server: TestServer, pages: Int, _ read: () async throws -> Void) async throws {
        for _ in 0..<200 {
            try await read()
            if server.services.hub.reads.usage.pages >= pages { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestSetupError("the page was never kept")
    }

    static func counter(_ server: TestServer, _ carrier: CarrierFixture) async throws -> Int64 {
        try await server.store.changeCounter(carrier.tenant.id).counter
    }

    @Test("a first page comes from memory until a change for its driver; the driver's own and dispatch's writes are read at once",
          arguments: TestBackend.available)
    func followsTheLog(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let (me, other) = (alpha.drivers[0].accessToken, alpha.drivers[1].accessToken)
        let myTrip = alpha.trips[0][0]
        try await server.run(.live) { api in
            try await Self.untilKept(server, pages: 1) { _ = try await Self.trips(api, me) }
            try await Self.editBehindTheServersBack(server, myTrip.id, origin: "Unlogged")
            let heard = try await Self.counter(server, alpha)
            #expect(try await Self.trips(api, me).first?.origin == myTrip.origin, "from memory")
            #expect(try await Self.trips(api, me, seen: heard).first?.origin == myTrip.origin, "a change number heard: still from memory")
            #expect(try await Self.trips(api, me, seen: heard + 1).first?.origin == "Unlogged",
                    "a change number this instance has not heard: from the database")
            #expect(try await Self.trips(api, me, query: "limit=1").first?.origin == "Unlogged", "another page size is its own page")

            // Another driver's change leaves my page in memory.
            _ = try await server.store.trips.update(alpha.trips[1][0].id, UpdateTripRequest(origin: "Fresno"), tenant: alpha.tenant.id)
            #expect(try await Self.trips(api, other).first?.origin == "Fresno")
            #expect(try await Self.trips(api, me).first?.origin == myTrip.origin, "still from memory")

            // Dispatch's write through the API names the change number and is read at once, with or without it.
            let edit = try await api.call(.dispatchUpdateTrip, myTrip.id.rawValue, body: #"{"origin":"Reno"}"#, token: alpha.dispatcher.accessToken)
            #expect(edit.status == 200)
            let reached = try #require(edit.headers[.init(ChangeNumber.header)!].flatMap { Int64($0) })
            #expect(reached == (try await Self.counter(server, alpha)))
            #expect(try await Self.trips(api, me).first?.origin == "Reno")
            #expect(try await Self.trips(api, me, seen: reached).first?.origin == "Reno")
            // Kept again, and from memory again.
            try await Self.untilKept(server, pages: 2) { _ = try await Self.trips(api, me) }
            try await Self.editBehindTheServersBack(server, myTrip.id, origin: "Unlogged again")
            #expect(try await Self.trips(api, me).first?.origin == "Reno")

            // Taken away: gone from my first page at once, on the other driver's.
            _ = try await server.store.trips.assign(myTrip.id, to: alpha.driverID(1), tenant: alpha.tenant.id)
            #expect(try await Self.trips(api, me).isEmpty)
            #expect(Set(try await Self.trips(api, other).map(\.id)) == [myTrip.id, alpha.trips[1][0].id])

            // A read writes nothing and names no change; a bad change number is refused like any bad header.
            let read = try await api.call(.trips, token: me)
            #expect(read.headers[.init(ChangeNumber.header)!] == nil)
            for bad in ["-1", "x", "99999999999999999999", "1.5", ""] where !bad.isEmpty {
                let refused = try await api.call(.trips, token: me, headers: [ChangeNumber.header: bad])
                #expect(refused.status == 400 && refused.errorCode == "invalid_parameter", "\(bad): \(refused.status)")
            }
        }
    }

    @Test("an answer replayed for an Idempotency-Key or a batch sent again names a change number too, at least the first answer's",
          arguments: TestBackend.available)
    func replaysNameTheNumber(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = alpha.trips[0][0]
        try await server.run { api in
            func number(_ answer: APIResponse) -> Int64? { answer.headers[.init(ChangeNumber.header)!].flatMap { Int64($0) } }
            let key = ["Idempotency-Key": UUID().uuidString]
            let first = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, body: #"{"origin":"Reno"}"#,
                                           token: alpha.dispatcher.accessToken, headers: key)
            let reached = try #require(number(first))
            _ = try await server.store.trips.update(trip.id, UpdateTripRequest(destination: "Elko"), tenant: alpha.tenant.id)
            let again = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, body: #"{"origin":"Reno"}"#,
                                           token: alpha.dispatcher.accessToken, headers: key)
            #expect(again.headers[.init("Idempotent-Replayed")!] == "true")
            #expect(number(again) == reached + 2, "the carrier's number now: the trip's edit and its notice came after")

            let batch = MutationBatch([Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .tolls, amountCents: 500,
                                                                                date: LocalDate(Date()))))])
            let applied = try await api.call(.mutations, json: batch, token: alpha.driver.accessToken)
            let sent = try #require(number(applied))
            let replayed = try await api.call(.mutations, json: batch, token: alpha.driver.accessToken)
            #expect(replayed.text.contains("\"replayed\":true") && number(replayed) == sent)
        }
    }

    @Test("the driver's orders and a trip's orders: an order moved between trips or drivers leaves both lists at once",
          arguments: TestBackend.available)
    func ordersLists(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let me = alpha.drivers[0].accessToken
        let trip = alpha.trips[0][0]
        let order = try #require(alpha.orders[trip.id]?.first)
        try await server.run(.live) { api in
            func orders(_ endpoint: Endpoint, _ parameters: String...) async throws -> [ID<Order>] {
                try await api.call(endpoint, parameters: parameters, token: me).decode(Items<Order>.self).items.map(\.id)
            }
            try await Self.untilKept(server, pages: 2) {
                _ = try await orders(.orders)
                _ = try await orders(.tripOrders, trip.id.rawValue)
            }
            #expect(try await orders(.orders).contains(order.id))
            _ = try await server.store.orders.assign(order.id, AssignOrderRequest(tripID: alpha.trips[1][0].id), tenant: alpha.tenant.id)
            #expect(!(try await orders(.orders)).contains(order.id))
            #expect(!(try await orders(.tripOrders, trip.id.rawValue)).contains(order.id))
        }
    }

    @Test("memory is bounded: the oldest pages go first, and one driver keeps at most a few pages")
    func bounded() async throws {
        let cache = ReadCache(limitBytes: 8 * 1024, trusted: true)
        let tenant = ID<Tenant>()
        cache.connect { _ in true }
        cache.begin(tenant, heard: 0, known: 0)
        func page(_ driver: ID<Driver>, _ name: String, bytes: Int) async throws {
            _ = try await cache.page(.init(tenant: tenant, driver: driver, page: name), seen: nil) {
                Reply(status: .ok, body: .init(repeating: UInt8(ascii: "x"), count: bytes))
            }
        }
        for _ in 0..<40 { try await page(ID(), "trips", bytes: 500) }
        #expect(cache.usage.bytes <= 8 * 1024 && cache.usage.pages == 16)
        let greedy = ID<Driver>()
        for index in 0..<100 { try await page(greedy, "trip \(index) orders", bytes: 10) }
        #expect(cache.usage.pages <= 16 + ReadCache.pagesPerDriver)
        try await page(ID(), "too big", bytes: 2 * 1024)
        #expect(cache.usage.bytes <= 8 * 1024)
    }

    @Test("a page read while the cache forgot everything (its LISTEN connection lost and back) is not kept, whatever came after")
    func readAcrossAReconnection() async throws {
        let cache = ReadCache(limitBytes: 1 << 20, trusted: true)
        let (tenant, driver) = (ID<Tenant>(), ID<Driver>())
        cache.connect { _ in true }
        cache.begin(tenant, heard: 0, known: 0)
        let key = ReadCache.Key(tenant: tenant, driver: driver, page: "trips")
        _ = try await cache.page(key, seen: nil) {
            // Read before a write the instance never hears of; meanwhile the connection drops, comes back, and the carrier is followed anew.
            cache.notificationsLost()
            cache.notificationsArrive()
            cache.begin(tenant, heard: 7, known: 7)
            return Reply(status: .ok, body: ByteBuffer(string: "before the write"))
        }
        #expect(cache.usage.pages == 0)
        let fresh = try await cache.page(key, seen: 7) { Reply(status: .ok, body: ByteBuffer(string: "after")) }
        #expect(fresh.body.map { String(buffer: $0) } == "after" && cache.usage.pages == 1)
    }

    @Test("the LISTEN probe: a connection hearing its own probes is kept; one hearing nothing, or only another instance's, is given up; a probe that cannot be sent is not held against it")
    func listenProbe() async throws {
        // Watches until it gives up or four probes were sent (then it is stopped), however slow the machine.
        func watch(patience: Duration, _ send: @escaping @Sendable (ListenProbe, String) async throws -> Void) async -> Bool {
            let probe = ListenProbe(interval: .milliseconds(10), patience: patience)
            let (sent, done) = (NIOLockedValueBox(0), NIOLockedValueBox(false))
            let watching = Task {
                let listening = await probe.watch { payload in
                    sent.withLockedValue { $0 += 1 }
                    try await send(probe, payload)
                }
                done.withLockedValue { $0 = true }
                return listening
            }
            for _ in 0..<6000 where sent.withLockedValue({ $0 }) < 4 && !done.withLockedValue({ $0 }) {
                try? await Task.sleep(for: .milliseconds(10))
            }
            watching.cancel()
            return await watching.value
        }
        #expect(await watch(patience: .seconds(30)) { probe, payload in probe.heard(payload) } == true)
        #expect(await watch(patience: .milliseconds(100)) { _, _ in } == false)
        #expect(await watch(patience: .milliseconds(100)) { probe, _ in probe.heard("probe:another-instance:1") } == false)
        #expect(await watch(patience: .milliseconds(100)) { _, _ in throw DatabaseUnavailable(.connectionLost, "down") } == true)
    }

    @Test("with two instances on one PostgreSQL, a write through A is read through B at once by its change number",
          arguments: TestBackend.postgresOnly)
    func acrossInstances(_ backend: TestBackend) async throws {
        let first = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(first, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let url = try #require(first.services.configuration.databaseURL)
        let second = try await TestServer.make(.sqlite) { $0.databaseURL = url }
        let trip = alpha.trips[0][0]
        try await first.run(.live) { apiA in
            try await second.run(.live) { apiB in
                try await Self.untilKept(second, pages: 1) { _ = try await Self.trips(apiB, alpha.driver.accessToken) }
                for round in 0..<20 {
                    let origin = "Route \(round)"
                    let edit = try await apiA.call(.dispatchUpdateTrip, trip.id.rawValue, body: #"{"origin":"\#(origin)"}"#,
                                                   token: alpha.dispatcher.accessToken)
                    let reached = try #require(edit.headers[.init(ChangeNumber.header)!].flatMap { Int64($0) }, "\(edit.status) \(edit.text)")
                    #expect(try await Self.trips(apiB, alpha.driver.accessToken, seen: reached).first?.origin == origin, "round \(round)")
                    // Read again through B to have it kept for the next round.
                    _ = try await Self.trips(apiB, alpha.driver.accessToken)
                }
                // Without the number, B's memory follows A's writes once their notification arrives.
                let edit = try await apiA.call(.dispatchUpdateTrip, trip.id.rawValue, body: #"{"origin":"Last"}"#, token: alpha.dispatcher.accessToken)
                #expect(edit.status == 200)
                var seen = ""
                for _ in 0..<200 where seen != "Last" {
                    seen = try await Self.trips(apiB, alpha.driver.accessToken).first?.origin ?? ""
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(seen == "Last")
            }
        }
    }

    @Test("while the LISTEN connection is down nothing is answered from memory; once it is back, pages are kept afresh",
          arguments: TestBackend.postgresOnly)
    func listenerLost(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = alpha.trips[0][0]
        let token = alpha.driver.accessToken
        try await server.run(.live) { api in
            try await Self.untilKept(server, pages: 1) { _ = try await Self.trips(api, token) }
            // Cut this instance's LISTEN connection, as a network fault would.
            let cut = try await server.services.database.write { db in
                try await db.query("""
                    SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity
                    WHERE datname = current_database() AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()
                    """).count
            }
            #expect(cut == 1)
            var pages = 1
            for _ in 0..<200 where pages > 0 {
                pages = server.services.hub.reads.usage.pages
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(pages == 0, "the lost connection drops what was kept")
            try await Self.editBehindTheServersBack(server, trip.id, origin: "While deaf")
            #expect(try await Self.trips(api, token).first?.origin == "While deaf")
            // Reconnected (within a second), it keeps pages again and answers from them.
            try await Self.untilKept(server, pages: 1) { _ = try await Self.trips(api, token) }
            try await Self.editBehindTheServersBack(server, trip.id, origin: "Unlogged")
            #expect(try await Self.trips(api, token).first?.origin == "While deaf")
        }
    }
}
