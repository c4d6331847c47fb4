import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The load board's tab counts (kept by the database as orders change,
/// never counted over every order per view) and its order (pickup date
/// from an index, orders without one last).
@Suite("Dispatch: the board's counts and order")
struct BoardCountTests {
    /// Each status's orders of a carrier, counted the slow way.
    static func counted(_ store: Store, _ tenant: ID<Tenant>) async throws -> [OrderStatus: Int] {
        try await store.database.read { db in
            var counts: [OrderStatus: Int] = [:]
            for row in try await db.query("SELECT status, COUNT(*) AS n FROM orders WHERE tenant_id = \(tenant) GROUP BY status") {
                counts[try #require(OrderStatus(rawValue: try row.string("status")))] = try row.int("n")
            }
            return counts
        }
    }

    @Test("tab counts stay true through imports, assignments, pickups, deliveries and cancels made at the same moment, and after they are gathered",
          arguments: TestBackend.available)
    func countsKeptThroughChanges(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = alpha.tenant.id
        let before = try await store.orderCounts(tenant: beta.tenant.id)
        let created = try await store.orders.createMany((0..<40).map { index in
            CreateOrderRequest(number: "BC-\(index)", vehicle: Vehicle(make: "Kia"), pickup: Stop(address: "Joliet, IL"),
                               delivery: Stop(address: "Gary, IN"), revenueCents: 10_000)
        }, tenant: tenant)
        #expect(created == 40)
        let orders = try await store.orders.list(.dispatch(tenant: tenant)).filter { $0.number.hasPrefix("BC-") }.sorted { $0.number < $1.number }
        let trip = try await store.trips.create(.init(number: "T-BC", driverID: alpha.driverID(0), origin: "Joliet, IL", destination: "Gary, IN",
                                                      revenueCents: 1, miles: 1), tenant: tenant)
        _ = try await store.trips.update(trip.id, .init(status: .inProgress), tenant: tenant)
        // 24 go to the trip at once (racing each other for the trip's lock), and 6 of the rest are cancelled meanwhile.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for order in orders[0..<24] {
                group.addTask { _ = try await store.orders.assign(order.id, AssignOrderRequest(tripID: trip.id), tenant: tenant) }
            }
            for order in orders[34..<40] {
                group.addTask { _ = try await store.orders.updateStatus(order.id, to: .cancelled, occurredAt: nil, .dispatch(tenant: tenant)) }
            }
            try await group.waitForAll()
        }
        // 16 picked up at once; then 8 of them delivered while 4 still-assigned orders go back to New.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for order in orders[0..<16] {
                group.addTask { _ = try await store.orders.updateStatus(order.id, to: .pickedUp, occurredAt: nil, .dispatch(tenant: tenant)) }
            }
            try await group.waitForAll()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for order in orders[0..<8] {
                group.addTask { _ = try await store.orders.updateStatus(order.id, to: .delivered, occurredAt: nil, .dispatch(tenant: tenant)) }
            }
            for order in orders[20..<24] {
                group.addTask { _ = try await store.orders.assign(order.id, AssignOrderRequest(), tenant: tenant) }
            }
            try await group.waitForAll()
        }
        let expected: [OrderStatus: Int] = [.new: 10 + 4, .assigned: 4, .pickedUp: 8, .delivered: 8, .cancelled: 6]
        let kept = try await store.orderCounts(tenant: tenant)
        #expect(kept.filter { $0.value != 0 } == expected, "kept \(kept)")
        #expect(try await Self.counted(store, tenant) == expected)
        #expect(try await store.integrityProblems() == [])
        // Another carrier's counts did not move.
        #expect(try await store.orderCounts(tenant: beta.tenant.id) == before)

        // Gathered into a row a status (PostgreSQL adds one per change), the counts are the same.
        try await store.gatherStatusCounts()
        #expect(try await store.orderCounts(tenant: tenant).filter { $0.value != 0 } == expected)
        let rows = try await store.database.read { db in
            try await db.first("SELECT COUNT(*) AS n FROM order_status_counts WHERE tenant_id = \(tenant)")?.int("n")
        }
        #expect(rows == expected.count)
        // And they keep counting after it.
        _ = try await store.orders.updateStatus(orders[24].id, to: .cancelled, occurredAt: nil, .dispatch(tenant: tenant))
        let after = try await store.orderCounts(tenant: tenant)
        #expect(after[.cancelled] == 7 && after[.new] == 13, "\(after)")
        #expect(try await store.integrityProblems() == [])
    }

    @Test("the board lists orders by pickup date either way, those without a date last, page after page", arguments: TestBackend.available)
    func pagesAcrossUndatedOrders(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = carrier.tenant.id
        let day = try #require(LocalDate(year: 2026, month: 12, day: 1))
        // Four with a pickup date (two on one day: then by number), one with only a last day ("by" it: sorted by it), three without.
        let dated: [(String, LocalDate?)] = [("PG-2", day.adding(days: 1)), ("PG-1", day), ("PG-3", day), ("PG-0", day.adding(days: 5))]
        let undated: [(String, LocalDate?)] = [("PU-3", nil), ("PU-1", nil), ("PU-2", nil)]
        var requests = (dated + undated).map { number, date in
            CreateOrderRequest(number: number, vehicle: Vehicle(make: "Kia"), pickup: Stop(address: "Joliet, IL", windowStart: date),
                               delivery: Stop(address: "Gary, IN"), revenueCents: 10_000)
        }
        requests.append(CreateOrderRequest(number: "PG-4", vehicle: Vehicle(make: "Kia"),
                                           pickup: Stop(address: "Joliet, IL", windowEnd: day.adding(days: 3)),
                                           delivery: Stop(address: "Gary, IN"), revenueCents: 10_000))
        _ = try await store.orders.createMany(requests, tenant: tenant)
        func board(newestFirst: Bool, page: Int) async throws -> [String] {
            try await store.boardOrders(.init(status: .new, search: "", pickupNewestFirst: newestFirst, page: page, pageSize: 2), tenant: tenant)
                .map(\.number).filter { $0.hasPrefix("P") }
        }
        var oldestFirst: [[String]] = []
        var newestFirst: [[String]] = []
        for page in 0..<5 {
            oldestFirst.append(try await board(newestFirst: false, page: page))
            newestFirst.append(try await board(newestFirst: true, page: page))
        }
        #expect(oldestFirst == [["PG-1", "PG-3"], ["PG-2", "PG-4"], ["PG-0", "PU-1"], ["PU-2", "PU-3"], []])
        #expect(newestFirst == [["PG-0", "PG-4"], ["PG-2", "PG-3"], ["PG-1", "PU-3"], ["PU-2", "PU-1"], []])

        // The same pages reached by Next (after the page's last order), by Last and then Previous (before the page's
        // first), across the step from dated to undated orders, in both orders: as the index reads them, never skipping.
        let ids = Dictionary(uniqueKeysWithValues: try await store.orders.list(.dispatch(tenant: tenant)).map { ($0.number, $0.id) })
        func board(newestFirst: Bool, at anchor: Store.BoardAnchor, page: Int = 0) async throws -> [String] {
            try await store.boardOrders(.init(status: .new, search: "", pickupNewestFirst: newestFirst, page: page, pageSize: 2, anchor: anchor),
                                        tenant: tenant).map(\.number)
        }
        for (newest, pages) in [(false, oldestFirst), (true, newestFirst)] {
            var forward = [try await board(newestFirst: newest, page: 0)]
            while forward.count < 4, let last = forward.last?.last {
                forward.append(try await board(newestFirst: newest, at: .after(try #require(ids[last]))))
            }
            #expect(forward == Array(pages.prefix(4)), "newest first: \(newest)")
            var backward = [try await board(newestFirst: newest, at: .last(rows: 2))]
            while backward.count < 4, let first = backward.first?.first {
                backward.insert(try await board(newestFirst: newest, at: .before(try #require(ids[first]))), at: 0)
            }
            #expect(backward == Array(pages.prefix(4)), "newest first: \(newest)")
        }
        // The last page of an odd count is the short one; a search narrows an anchored page as it does a numbered one.
        #expect(try await board(newestFirst: false, at: .last(rows: 1)) == ["PU-3"])
        let searched = try await store.boardOrders(.init(status: .new, search: "PU-2", pickupNewestFirst: false, page: 0, pageSize: 2,
                                                         anchor: .after(try #require(ids["PG-0"]))), tenant: tenant)
        #expect(searched.map(\.number) == ["PU-2"])
        // An anchor of another carrier reads by the page number instead.
        let elsewhere = try await store.orders.createMany([CreateOrderRequest(number: "PX-1", vehicle: Vehicle(make: "Kia"),
                                                                             pickup: Stop(address: "Joliet, IL"), delivery: Stop(address: "Gary, IN"),
                                                                             revenueCents: 1)],
                                                         tenant: try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0).tenant.id)
        #expect(elsewhere == 1)
        let stranger = try #require(try await store.database.read { db in
            try await db.first("SELECT id FROM orders WHERE number = 'PX-1'")?.string("id")
        }.flatMap { ID<Order>($0) })
        #expect(try await board(newestFirst: false, at: .after(stranger), page: 1) == oldestFirst[1])
        _ = try await store.orders.updateStatus(try #require(ids["PU-1"]), to: .cancelled, occurredAt: nil, .dispatch(tenant: tenant))
        // An order that left the tab still marks its place in it.
        #expect(try await board(newestFirst: false, at: .before(try #require(ids["PU-1"])), page: 2) == ["PG-4", "PG-0"])
        #expect(try await board(newestFirst: false, at: .after(try #require(ids["PU-1"])), page: 2) == ["PU-2", "PU-3"])
        // Past the tab's end is empty (the board shows its last page); before its start is its first page.
        let end = try await store.boardPage(.init(status: .new, search: "", pickupNewestFirst: false, page: 1, pageSize: 2,
                                                  anchor: .after(try #require(ids["PU-3"]))), tenant: tenant)
        #expect(end.orders.isEmpty && !end.later)
        let start = try await store.boardPage(.init(status: .new, search: "", pickupNewestFirst: false, page: 1, pageSize: 2,
                                                    anchor: .before(try #require(ids["PG-3"]))), tenant: tenant)
        #expect(start.orders.map(\.number) == ["PG-1", "PG-3"] && !start.earlier && start.later)
        let middle = try await store.boardPage(.init(status: .new, search: "", pickupNewestFirst: false, page: 1, pageSize: 2,
                                                     anchor: .after(try #require(ids["PG-3"]))), tenant: tenant)
        #expect(middle.orders.map(\.number) == ["PG-2", "PG-4"] && middle.earlier && middle.later)
    }

    @Test("a typed page number is found from the counts by pickup day: every page as the whole tab sorted, both ways, through moves, edits and cancels",
          arguments: TestBackend.available)
    func typedPagesFromDayCounts(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = carrier.tenant.id
        let day = try #require(LocalDate(year: 2026, month: 12, day: 1))
        // 70 dated over 6 days unevenly (day 0 holds 25), some with only a last day; 17 without a date. Numbers out of
        // date order, so a day's orders sort by number. Beta's orders on the same days must not count.
        func request(_ index: Int) -> CreateOrderRequest {
            let date: LocalDate? = index < 70 ? day.adding(days: index < 25 ? 0 : (index * 7) % 6) : nil
            let pickup = index % 9 == 4 ? Stop(address: "Joliet, IL", windowEnd: date) : Stop(address: "Joliet, IL", windowStart: date)
            return CreateOrderRequest(number: "TP-\((index * 37) % 101)", vehicle: Vehicle(make: "Kia"), pickup: pickup,
                                      delivery: Stop(address: "Gary, IN"), revenueCents: 10_000)
        }
        #expect(try await store.orders.createMany((0..<87).map(request), tenant: tenant) == 87)
        #expect(try await store.orders.createMany((0..<30).map(request), tenant: beta.tenant.id) == 30)

        /// The tab sorted in Swift: by pickup date (the window's first day, else its last), number, id; undated last by number.
        func truth(newestFirst: Bool) async throws -> [String] {
            let orders = try await store.orders.list(.dispatch(tenant: tenant)).filter { $0.status == .new }
            func key(_ order: Order) -> (String, String, String) {
                ((order.pickup.windowStart ?? order.pickup.windowEnd).map { "\($0)" } ?? "", order.number, order.id.rawValue)
            }
            let dated = orders.filter { key($0).0 != "" }.sorted { key($0) < key($1) }
            let undated = orders.filter { key($0).0 == "" }.sorted { (key($0).1, key($0).2) < (key($1).1, key($1).2) }
            return (newestFirst ? dated.reversed() + undated.reversed() : dated + undated).map(\.number)
        }
        func check(_ moment: Comment) async throws {
            for newestFirst in [false, true] {
                let all = try await truth(newestFirst: newestFirst)
                for size in [4, 7, 50] {
                    for page in 0...(all.count / size + 1) {
                        let read = try await store.boardPage(.init(status: .new, search: "", pickupNewestFirst: newestFirst, page: page,
                                                                   pageSize: size), tenant: tenant)
                        let expected = Array(all.dropFirst(page * size).prefix(size))
                        #expect(read.orders.map(\.number) == expected, "\(moment) newest first \(newestFirst), size \(size), page \(page)")
                        #expect(read.later == (all.count > (page + 1) * size) && read.earlier == (page > 0), "\(moment) page \(page)")
                    }
                }
            }
            #expect(try await store.integrityProblems() == [], moment)
        }
        try await check("as created")

        // Dates moved (another day, none, one given), orders cancelled and assigned away: the counts follow each.
        let orders = try await store.orders.list(.dispatch(tenant: tenant)).sorted { $0.number < $1.number }
        for (index, order) in orders.prefix(12).enumerated() {
            let moved: LocalDate? = index % 3 == 0 ? nil : day.adding(days: index)
            _ = try await store.orders.update(order.id, .init(pickup: Stop(address: "Joliet, IL", windowStart: moved)), tenant: tenant)
        }
        for order in orders[12..<20] {
            _ = try await store.orders.updateStatus(order.id, to: .cancelled, occurredAt: nil, .dispatch(tenant: tenant))
        }
        let trip = try await store.trips.create(.init(number: "T-TP", driverID: carrier.driverID(0), origin: "Joliet, IL", destination: "Gary, IN",
                                                      revenueCents: 1, miles: 1), tenant: tenant)
        for order in orders[20..<26] { _ = try await store.orders.assign(order.id, AssignOrderRequest(tripID: trip.id), tenant: tenant) }
        try await check("after moves")
        try await store.gatherStatusCounts()
        try await check("gathered")
        // Gathered, a key is one row, and a day no order is on any more is none.
        func rows() async throws -> (kept: Int, keys: Int, versions: [String]) {
            try await store.database.read { db in
                let kept = try await db.first("SELECT COUNT(*) AS n FROM order_day_counts WHERE tenant_id = \(tenant)")?.int("n") ?? 0
                let keys = try await db.first("""
                    SELECT COUNT(*) AS n FROM (SELECT status, \(unsafeRaw: Schema.pickupDue) AS day FROM orders WHERE tenant_id = \(tenant)
                    GROUP BY status, \(unsafeRaw: Schema.pickupDue)) AS days
                    """)?.int("n") ?? 0
                // PostgreSQL's row versions: a gather with nothing to gather rewrites none.
                let versions = db.dialect == .postgres
                    ? try await db.query("SELECT CAST(xmin AS TEXT) AS v FROM order_day_counts ORDER BY v").map { try $0.string("v") } : []
                return (kept, keys, versions)
            }
        }
        let gathered = try await rows()
        #expect(gathered.kept == gathered.keys)
        try await store.gatherStatusCounts()
        #expect(try await rows().versions == gathered.versions)
    }

    @Test("the board's Next, Previous, First and Last links walk a tab of 120 orders from the order beside each page",
          arguments: TestBackend.available)
    func linksWalkTheTab(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let day = try #require(LocalDate(year: 2026, month: 12, day: 1))
        // 110 dated over 11 days, then 10 undated: the walk crosses from one run into the other.
        _ = try await server.store.orders.createMany((0..<120).map { index in
            CreateOrderRequest(number: String(format: "W-%03d", index), vehicle: Vehicle(make: "Kia"),
                               pickup: Stop(address: "Joliet, IL", windowStart: index < 110 ? day.adding(days: index / 10) : nil),
                               delivery: Stop(address: "Gary, IN"), revenueCents: 10_000)
        }, tenant: carrier.tenant.id)
        let all = (0..<120).map { String(format: "W-%03d", $0) }
        @Sendable func numbers(_ html: String) -> [String] { html.matches(of: /class="strong">(W-\d+)<\/a>/).map { String($0.1) } }
        @Sendable func link(_ html: String, _ rel: String) -> String? {
            guard let end = html.range(of: "\" rel=\"\(rel)\""), let start = html.range(of: "href=\"", options: .backwards, range: html.startIndex..<end.lowerBound)
            else { return nil }
            return String(html[start.upperBound..<end.lowerBound]).replacingOccurrences(of: "&amp;", with: "&")
        }
        try await server.run { api in
            let cookie = ["Cookie": try await server.services.consoleSignIn(email: carrier.dispatcher.user.email)]
            let first = try await api.raw(.get, "/board?status=new", headers: cookie).text
            #expect(numbers(first) == Array(all[0..<50]))
            #expect(link(first, "prev") == nil && link(first, "first") == nil)
            let next = try #require(link(first, "next"))
            #expect(next.contains("page=2") && next.contains("after="), Comment(rawValue: next))
            let second = try await api.raw(.get, next, headers: cookie).text
            #expect(numbers(second) == Array(all[50..<100]) && second.contains("Page 2 of 3"))
            let third = try await api.raw(.get, try #require(link(second, "next")), headers: cookie).text
            #expect(numbers(third) == Array(all[100..<120]) && third.contains("Page 3 of 3") && link(third, "next") == nil)
            // Last, then Previous twice, lands on the same pages.
            let last = try await api.raw(.get, try #require(link(first, "last")), headers: cookie).text
            #expect(numbers(last) == Array(all[100..<120]) && last.contains("Page 3 of 3") && last.contains("101–120 of 120"))
            let back = try await api.raw(.get, try #require(link(last, "prev")), headers: cookie).text
            #expect(numbers(back) == Array(all[50..<100]) && back.contains("Page 2 of 3"))
            let start = try await api.raw(.get, try #require(link(back, "prev")), headers: cookie).text
            #expect(numbers(start) == Array(all[0..<50]) && start.contains("Page 1 of 3"))
            // Newest first, the last page ends with the undated orders (they sort last either way).
            let newestLast = try await api.raw(.get, "/board?status=new&sort=pickup_desc&page=3&at=last", headers: cookie).text
            #expect(numbers(newestLast) == Array(all[0..<10].reversed()) + Array(all[110..<120].reversed()))
            // Nonsense anchors read by the page number.
            for junk in ["after=zzz", "before=", "after=00000000-0000-0000-0000-000000000000", "at=first"] {
                let answer = try await api.raw(.get, "/board?status=new&page=2&\(junk)", headers: cookie)
                #expect(answer.status == 200 && numbers(answer.text) == Array(all[50..<100]), Comment(rawValue: junk))
            }

            // 30 orders come before the first page meanwhile: Previous from page 2 reads the 50 before its first order
            // (none skipped), and offers Previous again, to the new first page.
            _ = try await server.store.orders.createMany((0..<30).map { index in
                CreateOrderRequest(number: String(format: "E-%02d", index), vehicle: Vehicle(make: "Kia"),
                                   pickup: Stop(address: "Joliet, IL", windowStart: day.adding(days: -5)),
                                   delivery: Stop(address: "Gary, IN"), revenueCents: 10_000)
            }, tenant: carrier.tenant.id)
            let earlier = (0..<30).map { String(format: "E-%02d", $0) }
            func numbersE(_ html: String) -> [String] { html.matches(of: /class="strong">([EW]-\d+)<\/a>/).map { String($0.1) } }
            let before = try await api.raw(.get, try #require(link(second, "prev")), headers: cookie).text
            #expect(numbersE(before) == Array(all[0..<50]) && before.contains("Page 2 of 3"))
            let newFirst = try await api.raw(.get, try #require(link(before, "prev")), headers: cookie).text
            #expect(numbersE(newFirst) == earlier + Array(all[0..<20]) && newFirst.contains("Page 1 of 3") && link(newFirst, "prev") == nil)
            // 40 of the first orders leave the tab: Next from the old page 2 shows what follows it, and no Next past the end.
            let orders = try await server.store.orders.list(.dispatch(tenant: carrier.tenant.id))
            for order in orders where all[0..<40].contains(order.number) {
                _ = try await server.store.orders.updateStatus(order.id, to: .cancelled, occurredAt: nil, .dispatch(tenant: carrier.tenant.id))
            }
            let after = try await api.raw(.get, try #require(link(second, "next")), headers: cookie).text
            #expect(numbersE(after) == Array(all[100..<120]) && after.contains("Page 3 of 3") && link(after, "next") == nil
                    && link(after, "prev") != nil)
            // The order Next names left the tab too (assigned, cancelled): it still marks where the next page starts.
            func cancel(_ numbers: ArraySlice<String>) async throws {
                for order in try await server.store.orders.list(.dispatch(tenant: carrier.tenant.id)) where numbers.contains(order.number) {
                    _ = try await server.store.orders.updateStatus(order.id, to: .cancelled, occurredAt: nil, .dispatch(tenant: carrier.tenant.id))
                }
            }
            try await cancel(all[97..<100])
            let afterGone = try await api.raw(.get, try #require(link(second, "next")), headers: cookie).text
            #expect(numbersE(afterGone) == Array(all[100..<120]))
            // Every order after it left: the tab's last page, its rows as Last shows them, not an empty board.
            try await cancel(all[100..<120])
            let pastEnd = try await api.raw(.get, try #require(link(second, "next")), headers: cookie)
            let location = try #require(pastEnd.headers[.location])
            #expect(pastEnd.status == 303 && location.contains("at=last"), "\(pastEnd.status) \(location)")
            let end = try await api.raw(.get, location, headers: cookie).text
            #expect(numbersE(end) == Array(all[60..<97]) && end.contains("Page 2 of 2") && end.contains("51–87 of 87"))
        }
    }
}
