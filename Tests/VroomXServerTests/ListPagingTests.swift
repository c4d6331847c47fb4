import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Every list endpoint answers pages of at most `limit` rows with a cursor
/// to the next; walking the pages yields the whole list once, in order.
@Suite("List paging")
struct ListPagingTests {
    /// Follows `next_cursor` until the last page; returns the ids in order.
    static func walk(_ api: TestAPI, _ endpoint: Endpoint, _ parameters: String..., filter: String? = nil, limit: Int,
                     token: String) async throws -> (ids: [String], pages: Int) {
        var ids: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            var query = "limit=\(limit)"
            if let filter { query += "&" + filter }
            if let cursor { query += "&cursor=\(cursor)" }
            let answer = try await api.call(endpoint, parameters: parameters, query: query, token: token)
            guard answer.status == 200 else { throw TestSetupError("\(endpoint) page: \(answer.status) \(answer.text)") }
            let page = try answer.decode(PagedIDs.self)
            #expect(page.items.count <= limit)
            ids += page.items.map(\.id)
            cursor = page.nextCursor
            pages += 1
        } while cursor != nil && pages < 100
        return (ids, pages)
    }

    struct PagedIDs: Decodable {
        struct Item: Decodable { let id: String }
        let items: [Item]
        let nextCursor: String?
        enum CodingKeys: String, CodingKey {
            case items
            case nextCursor = "next_cursor"
        }
    }

    @Test("pages of trips (undated ones last), orders, expenses, notifications and drivers cover each list exactly once",
          arguments: TestBackend.available)
    func pagesCoverLists(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 3, tripsPerDriver: 3)
        let store = server.store
        let tenant = carrier.tenant.id
        // Trips without a start date sort after dated ones; several share a creation millisecond.
        for index in 0..<4 {
            _ = try await store.trips.create(.init(number: "UNDATED-\(index)", driverID: carrier.driverID(0), origin: "A",
                                                 destination: "B", revenueCents: 1000, miles: 10), tenant: tenant)
        }
        let driverScope = Scope.driver(tenant: tenant, driver: carrier.driverID(0))
        let trip = carrier.trips[0][0]
        for index in 0..<5 {
            _ = try await store.expenses.create(.init(tripID: trip.id, category: .tolls, amountCents: 100 + index,
                                                    date: LocalDate(server.clock.now)), driverScope)
        }
        let driver = carrier.driver.accessToken
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            let expectedTrips = try await store.trips.list(driverScope).map(\.id.rawValue)
            #expect(expectedTrips.count == 7)
            let trips = try await Self.walk(api, .trips, limit: 2, token: driver)
            #expect(trips.ids == expectedTrips && trips.pages == 4)

            let allTrips = try await store.trips.list(carrier.scope).map(\.id.rawValue)
            #expect(try await Self.walk(api, .dispatchTrips, limit: 3, token: dispatch).ids == allTrips)
            let allOrders = try await store.orders.list(carrier.scope).map(\.id.rawValue)
            #expect(allOrders.count == 18)
            #expect(try await Self.walk(api, .dispatchOrders, limit: 4, token: dispatch).ids == allOrders)
            let assigned = try await store.orders.list(carrier.scope, status: .assigned).map(\.id.rawValue)
            #expect(try await Self.walk(api, .dispatchOrders, filter: "status=assigned", limit: 5, token: dispatch).ids == assigned)
            #expect(try await Self.walk(api, .orders, limit: 1, token: driver).ids
                    == (try await store.orders.list(driverScope)).map(\.id.rawValue))
            // A last page that is exactly full says so: no cursor to an empty page.
            let tripOrders = try await Self.walk(api, .tripOrders, trip.id.rawValue, limit: 1, token: driver)
            #expect(tripOrders.ids.count == 2 && tripOrders.pages == 2)
            #expect(try await Self.walk(api, .tripOrders, trip.id.rawValue, limit: 2, token: driver).pages == 1)
            let expenses = try await store.expenses.list(trip: trip.id, driverScope).map(\.id.rawValue)
            #expect(expenses.count == 6)
            #expect(try await Self.walk(api, .tripExpenses, trip.id.rawValue, limit: 4, token: driver).ids == expenses)
            #expect(try await Self.walk(api, .dispatchTripExpenses, trip.id.rawValue, limit: 5, token: dispatch).ids == expenses)
            let notifications = try await store.notifications.list(driverScope, limit: 500).map(\.id.rawValue)
            #expect(try await Self.walk(api, .notifications, limit: 2, token: driver).ids == notifications)
            let drivers = try await store.people.drivers(tenant: tenant).map(\.id.rawValue)
            #expect(try await Self.walk(api, .dispatchDrivers, limit: 2, token: dispatch).ids == drivers)

            // Without a limit a page holds up to the default; a single page has no cursor.
            let whole = try await api.call(.trips, token: driver).decode(PagedIDs.self)
            #expect(whole.items.map(\.id) == expectedTrips && whole.nextCursor == nil)

            // Limits outside 1…500 and cursors this server did not give are refused: unreadable, too long,
            // or with values of the wrong kind for the list's keys (orders: a time in milliseconds, then an id).
            func cursor(_ json: String) -> String {
                "cursor=" + Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            let wrongKinds = [#"["x","y"]"#, "[1,2]", #"[1,"\u0000"]"#, #"[1,"a\nb"]"#, #"[null,"a"]"#].map(cursor)
            for bad in ["limit=0", "limit=501", "limit=-1", "limit=1e3", "cursor=bm9wZQ", "cursor=%5B%5D",
                        "cursor=" + String(repeating: "A", count: 2000)] + wrongKinds {
                let answer = try await api.call(.dispatchOrders, query: bad, token: dispatch)
                #expect(answer.status == 400 && answer.errorCode == "invalid_parameter", "\(bad): \(answer.status) \(answer.text)")
            }
        }
    }

    @Test("a page led by one large document reserves little more than the page needs", arguments: TestBackend.available)
    func largeFirstDocument(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let database = server.store.database
        try await database.write { db in
            try await db.execute("CREATE TABLE scratch_documents (n BIGINT NOT NULL, doc TEXT NOT NULL)")
            try await db.execute("INSERT INTO scratch_documents (n, doc) VALUES (0, \("\"" + String(repeating: "x", count: 400_000) + "\""))")
            for n in 1...20 { try await db.execute("INSERT INTO scratch_documents (n, doc) VALUES (\(n), '{}')") }
        }
        let rows = try await database.read { db in try await db.documents("SELECT doc, n FROM scratch_documents ORDER BY n", limit: 500) }
        #expect(rows.count == 21 && !rows.hasMore)
        #expect(rows.joined.readableBytes == 400_002 + 20 * 3)
        // A hundred times the first document would be 40 MB.
        #expect(rows.joined.capacity <= 1 << 20, "\(rows.joined.capacity) bytes reserved")
    }

    @Test("a page continues after its last row even when rows are added in front meanwhile", arguments: TestBackend.available)
    func stableUnderInserts(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 3)
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            let before = try await server.store.orders.list(carrier.scope).map(\.id.rawValue)
            let first = try await api.call(.dispatchOrders, query: "limit=2", token: dispatch).decode(PagedIDs.self)
            // A newer order sorts first; the next page must neither repeat nor skip anything.
            server.clock.advance(by: 5)
            _ = try await server.store.orders.create(.init(number: "NEWEST", vehicle: Vehicle(make: "Kia"), pickup: Stop(address: "P"),
                                                         delivery: Stop(address: "D"), revenueCents: 1), tenant: carrier.tenant.id)
            var ids = first.items.map(\.id)
            var cursor = first.nextCursor
            while let next = cursor {
                let page = try await api.call(.dispatchOrders, query: "limit=2&cursor=\(next)", token: dispatch).decode(PagedIDs.self)
                ids += page.items.map(\.id)
                cursor = page.nextCursor
            }
            #expect(ids == before)
        }
    }
}
