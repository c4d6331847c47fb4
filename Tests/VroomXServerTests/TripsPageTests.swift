import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The console's trips page at any size: open trips and finished ones a
/// page at a time each, order counts for the trips shown only.
@Suite("Trips page")
struct TripsPageTests {
    /// The trip numbers a page lists, in order, per table.
    static func listed(_ html: String, table: String) -> [String] {
        guard let start = html.range(of: "id=\"\(table)\""), let end = html.range(of: "</table>", range: start.upperBound..<html.endIndex) else {
            return []
        }
        return html[start.upperBound..<end.lowerBound].matches(of: /<a class="strong" href="\/trips\/[^"]+">([^<]+)<\/a>/).map { String($0.1) }
    }

    @Test("open trips shown, finished ones 50 a page newest first, page numbers kept in range, another carrier's never shown",
          arguments: TestBackend.available)
    func pages(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let tenant = alpha.tenant.id
        let first = try #require(LocalDate(year: 2026, month: 1, day: 1))
        var finished: [ID<Trip>] = []
        for index in 0..<130 {
            let start = first.adding(days: index)
            finished.append(try await server.store.trips.create(CreateTripRequest(
                number: "F-\(index)", startDate: start, endDate: start.adding(days: 2), origin: "A", destination: "B", miles: 10), tenant: tenant).id)
        }
        try await server.services.database.write { db in
            for (index, trip) in finished.enumerated() {
                try await db.execute("""
                    UPDATE trips SET status = \(index % 10 == 3 ? TripStatus.cancelled : .completed), driver_id = \(alpha.driverID(0)) WHERE id = \(trip)
                    """)
            }
        }
        // The finished count the pager shows is kept as trips change status (the UPDATE above included), and agrees with a count.
        #expect(try await server.store.integrityProblems() == [])
        let open = alpha.trips.flatMap { $0 }.map(\.number).sorted()
        let newestFirst = (0..<130).reversed().map { "F-\($0)" }
        try await server.run { api in
            let cookie = ["Cookie": try await server.services.consoleSignIn(email: alpha.dispatcher.user.email)]
            let page1 = try await api.raw(.get, "/trips", headers: cookie)
            #expect(page1.status == 200)
            #expect(Self.listed(page1.text, table: "open-trips").sorted() == open)
            #expect(Self.listed(page1.text, table: "finished-trips") == Array(newestFirst[0..<50]))
            #expect(page1.text.contains("1–50") && page1.text.contains("130"), "the pager says which and how many")
            let page3 = try await api.raw(.get, "/trips?page=3", headers: cookie)
            #expect(Self.listed(page3.text, table: "finished-trips") == Array(newestFirst[100..<130]))
            #expect(Self.listed(page3.text, table: "open-trips").sorted() == open, "the open trips' first page beside every finished page")
            for (asked, expected) in [("999999999999", 100..<130), ("-5", 0..<50), ("two", 0..<50), ("0", 0..<50)] {
                let answer = try await api.raw(.get, "/trips?page=\(asked)", headers: cookie)
                #expect(answer.status == 200 && Self.listed(answer.text, table: "finished-trips") == Array(newestFirst[expected]), "page=\(asked)")
            }
            // Each open trip counts its own orders.
            let tripWithOrders = try #require(alpha.trips.first?.first)
            let orders = alpha.orders[tripWithOrders.id]?.count ?? 0
            #expect(orders > 0 && page1.text.contains("<td class=\"num\">\(orders)</td>"))
            // Another carrier sees its own trips only.
            let other = ["Cookie": try await server.services.consoleSignIn(email: beta.dispatcher.user.email)]
            let theirs = try await api.raw(.get, "/trips", headers: other)
            #expect(Self.listed(theirs.text, table: "open-trips").sorted() == beta.trips.flatMap { $0 }.map(\.number).sorted())
            #expect(Self.listed(theirs.text, table: "finished-trips").isEmpty && theirs.text.contains("No trip is completed or cancelled yet."))
        }
        // The finished page is read in the index's order: no sort of every finished trip.
        if backend == .sqlite {
            let plan = try await server.services.database.read { db in
                try await db.query("""
                    EXPLAIN QUERY PLAN SELECT \(Trip.columns) FROM trips WHERE tenant_id = \(tenant) AND \(unsafeRaw: Schema.tripFinished)
                    ORDER BY \(Trip.order.sql) LIMIT 50 OFFSET 0
                    """).map { try $0.string("detail") }
            }
            #expect(plan.contains { $0.contains("trips_finished") } && !plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
            // And the open ones from their own index, not by reading every trip the carrier ran.
            let openPlan = try await server.services.database.read { db in
                try await db.query("EXPLAIN QUERY PLAN " + TripRepository.openQuery(tenant: tenant)).map { try $0.string("detail") }
            }
            #expect(openPlan.contains { $0.contains("trips_open") } && !openPlan.contains { $0.contains("TEMP B-TREE") }, "\(openPlan)")
        }
    }

    @Test("open trips 50 a page, under way before planned, each by start date (none last) then number; each pager keeps the other list's page",
          arguments: TestBackend.available)
    func openPages(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let tenant = alpha.tenant.id
        let first = try #require(LocalDate(year: 2026, month: 6, day: 1))
        // 130 open trips (one in three under way; dates over 9 days, some on one day, one in eight without), 70 finished.
        struct Made { let number: String; let underWay: Bool; let start: LocalDate? }
        var made: [Made] = []
        var ids: [ID<Trip>] = []
        for index in 0..<200 {
            let start: LocalDate? = index % 8 == 5 ? nil : first.adding(days: (index * 7) % 9)
            let number = String(format: "O-%03d", (index * 37) % 200)
            ids.append(try await server.store.trips.create(CreateTripRequest(number: number, startDate: start, origin: "A", destination: "B", miles: 10),
                                                           tenant: tenant).id)
            if index < 130 { made.append(Made(number: number, underWay: index % 3 == 0, start: start)) }
        }
        try await server.services.database.write { db in
            for (index, trip) in ids.enumerated() where index % 3 == 0 || index >= 130 {
                let status: TripStatus = index >= 130 ? .completed : .inProgress
                try await db.execute("UPDATE trips SET status = \(status), driver_id = \(alpha.driverID(0)) WHERE id = \(trip)")
            }
        }
        let expected = made.sorted {
            ($0.underWay ? 0 : 1, $0.start == nil ? 1 : 0, $0.start ?? first, $0.number) < ($1.underWay ? 0 : 1, $1.start == nil ? 1 : 0, $1.start ?? first, $1.number)
        }.map(\.number)
        let newestFinished = try await server.store.tripsPage(tenant: tenant, open: (0, 1), finished: (0, 100)).finished.map(\.number)
        #expect(newestFinished.count == 70)
        try await server.run { api in
            let cookie = ["Cookie": try await server.services.consoleSignIn(email: alpha.dispatcher.user.email)]
            var listed: [String] = []
            for page in 1...3 {
                let answer = try await api.raw(.get, page == 1 ? "/trips" : "/trips?open_page=\(page)&page=2", headers: cookie)
                #expect(answer.status == 200)
                listed += Self.listed(answer.text, table: "open-trips")
                #expect(Self.listed(answer.text, table: "finished-trips") == Array(newestFinished[page == 1 ? 0..<50 : 50..<70]), "open page \(page)")
                #expect(answer.text.contains("aria-label=\"Open trips pages\"") && answer.text.contains("of 130"))
                if page == 2 {
                    // Each pager's links keep the page the other list is on.
                    #expect(answer.text.contains("href=\"/trips?open_page=3&amp;page=2\" rel=\"next\""))
                    #expect(answer.text.contains("href=\"/trips?page=2\" rel=\"prev\""), "back to the open trips' first page")
                    #expect(answer.text.contains("href=\"/trips?open_page=2\" rel=\"prev\""), "back to the finished trips' first page")
                }
            }
            #expect(listed == expected)
            // Out of range: the last page, or the first.
            for (asked, range) in [("999999999999", 100..<130), ("-3", 0..<50), ("x", 0..<50)] {
                let answer = try await api.raw(.get, "/trips?open_page=\(asked)", headers: cookie)
                #expect(answer.status == 200 && Self.listed(answer.text, table: "open-trips") == Array(expected[range]), "open_page=\(asked)")
            }
            // Another carrier's list has its own trips and no pager.
            let other = ["Cookie": try await server.services.consoleSignIn(email: beta.dispatcher.user.email)]
            let theirs = try await api.raw(.get, "/trips", headers: other)
            #expect(Self.listed(theirs.text, table: "open-trips").sorted() == beta.trips.flatMap { $0 }.map(\.number).sorted())
            #expect(!theirs.text.contains("Open trips pages"))
        }
        // Read in the order of the index `trips_open_listed`: no sort of the carrier's open trips.
        if backend == .sqlite {
            let plan = try await server.services.database.read { db in
                try await db.query("""
                    EXPLAIN QUERY PLAN SELECT \(Trip.columns) FROM trips WHERE tenant_id = \(tenant) AND \(unsafeRaw: Schema.tripOpen)
                    ORDER BY \(unsafeRaw: Schema.tripOpenListed), id LIMIT 50 OFFSET 50
                    """).map { try $0.string("detail") }
            }
            #expect(plan.contains { $0.contains("trips_open_listed") } && !plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
        }
    }

    @Test("a finished trips page past the first is found from the counts by start day: each page as the whole list read in order, through date moves",
          arguments: TestBackend.available)
    func finishedPagesFromDayCounts(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        let tenant = alpha.tenant.id
        let first = try #require(LocalDate(year: 2026, month: 3, day: 1))
        // 64 trips: many on one day, the rest over four more, 9 without a start date; beta's on the same days.
        var trips: [ID<Trip>] = []
        for index in 0..<64 {
            let start: LocalDate? = index >= 55 ? nil : first.adding(days: index < 20 ? 2 : index % 5)
            trips.append(try await store.trips.create(CreateTripRequest(number: "D-\(index)", startDate: start, origin: "A", destination: "B",
                                                                        miles: 10), tenant: tenant).id)
            if index < 10 {
                _ = try await store.trips.create(CreateTripRequest(number: "D-\(index)", startDate: start, origin: "A", destination: "B", miles: 10),
                                                 tenant: beta.tenant.id)
            }
        }
        func finish(_ ids: ArraySlice<ID<Trip>>) async throws {
            try await server.services.database.write { db in
                for (index, trip) in ids.enumerated() {
                    try await db.execute("""
                        UPDATE trips SET status = \(index % 7 == 3 ? TripStatus.cancelled : .completed), driver_id = \(alpha.driverID(0)) WHERE id = \(trip)
                        """)
                }
            }
        }
        try await finish(trips[0..<60])
        func check(_ moment: Comment) async throws {
            let all = try await store.tripsPage(tenant: tenant, open: (0, 1), finished: (0, 1_000))
            #expect(all.finished.count == all.finishedTotal && all.finishedTotal > 50, moment)
            for size in [6, 50] {
                for page in 0...(all.finishedTotal / size + 1) {
                    let read = try await store.tripsPage(tenant: tenant, open: (0, 1), finished: (page * size, size))
                    #expect(read.finished.map(\.number) == all.finished.dropFirst(page * size).prefix(size).map(\.number),
                            "\(moment) size \(size) page \(page)")
                }
            }
            #expect(try await store.integrityProblems() == [], moment)
        }
        try await check("as finished")
        // Start dates moved (to another day, to none, one given) on finished trips and on one still planned, which then finishes.
        _ = try await store.trips.update(trips[62], .init(startDate: first.adding(days: 1)), tenant: tenant)
        try await server.services.database.write { db in
            for (index, trip) in trips[20..<30].enumerated() {
                let moved: LocalDate? = index % 3 == 0 ? nil : first.adding(days: index % 4)
                try await db.execute("UPDATE trips SET start_date = \(moved) WHERE id = \(trip)")
            }
            try await db.execute("UPDATE trips SET start_date = \(first) WHERE id = \(trips[57])")
        }
        try await finish(trips[60..<64])
        try await check("after moves")
        try await store.gatherStatusCounts()
        try await check("gathered")
    }

    @Test("a trip's page weighs what is left to carry against the trailer while it is open, and says what it delivered once finished")
    func loadLine() async throws {
        let server = try await TestServer.make(.sqlite)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = try #require(alpha.trips.first?.first)
        let vehicles = (alpha.orders[trip.id] ?? []).reduce(0) { $0 + $1.vehicles.count }
        @Sendable func loadLine(_ html: String) -> String {
            guard let start = html.range(of: "id=\"trip-load\">"), let end = html[start.upperBound...].range(of: "</span>") else { return "" }
            return String(html[start.upperBound..<end.lowerBound])
        }
        try await server.run { api in
            let cookie = ["Cookie": try await server.services.consoleSignIn(email: alpha.dispatcher.user.email)]
            let open = try await api.raw(.get, "/trips/\(trip.id)", headers: cookie)
            #expect(vehicles > 0 && loadLine(open.text).hasPrefix(ConsoleFormat.count(vehicles, "vehicle") + " to carry"), "\(loadLine(open.text))")
            try await server.services.database.write { db in
                try await db.execute("""
                    UPDATE orders SET status = \(OrderStatus.delivered), actual_pickup_at = created_at, actual_delivery_at = created_at
                    WHERE trip_id = \(trip.id)
                    """)
                try await db.execute("UPDATE trips SET status = \(TripStatus.completed) WHERE id = \(trip.id)")
            }
            let completed = try await api.raw(.get, "/trips/\(trip.id)", headers: cookie)
            #expect(loadLine(completed.text) == ConsoleFormat.count(vehicles, "vehicle") + " delivered", "\(loadLine(completed.text))")
            try await server.services.database.write { db in
                try await db.execute("UPDATE orders SET status = \(OrderStatus.cancelled) WHERE trip_id = \(trip.id)")
                try await db.execute("UPDATE trips SET status = \(TripStatus.cancelled) WHERE id = \(trip.id)")
            }
            let cancelled = try await api.raw(.get, "/trips/\(trip.id)", headers: cookie)
            #expect(cancelled.status == 200 && loadLine(cancelled.text).isEmpty, "\(loadLine(cancelled.text))")
        }
    }

    @Test("an open trip's page offers the 50 soonest pickups waiting for a trip and finds any other by search; a finished trip's offers none")
    func addingOrders() async throws {
        let server = try await TestServer.make(.sqlite)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = try #require(alpha.trips.first?.first)
        let first = try #require(LocalDate(year: 2026, month: 12, day: 1))
        _ = try await server.store.orders.createMany((0..<70).map { index in
            CreateOrderRequest(number: "N-\(index)", vehicle: Vehicle(make: "Toyota", model: "Camry"),
                               pickup: Stop(address: "\(index) Harbor Rd, Savannah, GA", windowStart: first.adding(days: index)),
                               delivery: Stop(address: index == 69 ? "1 Main St, Zebulon, GA" : "9 Peachtree St, Atlanta, GA"), revenueCents: 100_000)
        }, tenant: alpha.tenant.id)
        // The soonest is on a trip that has no driver yet: still on the New tab, but not waiting for a trip.
        let driverless = try await server.store.trips.create(CreateTripRequest(number: "NO-DRIVER", origin: "A", destination: "B", miles: 10),
                                                             tenant: alpha.tenant.id)
        let soonest = try #require(try await server.store.boardOrders(.init(status: .new, search: "N-0", pickupNewestFirst: false, page: 0,
                                                                             pageSize: 1), tenant: alpha.tenant.id).first)
        _ = try await server.store.orders.assign(soonest.id, AssignOrderRequest(tripID: driverless.id), tenant: alpha.tenant.id)
        @Sendable func offered(_ html: String) -> [String] {
            guard let select = html.range(of: "<select id=\"order_id\""), let end = html[select.upperBound...].range(of: "</select>") else { return [] }
            return html[select.upperBound..<end.lowerBound].components(separatedBy: "<option value=\"").dropFirst(2).compactMap {
                $0.split(separator: ">").dropFirst().first.map { String($0.prefix { $0 != " " && $0 != "<" }) }
            }
        }
        try await server.run { api in
            let cookie = ["Cookie": try await server.services.consoleSignIn(email: alpha.dispatcher.user.email)]
            let page = try await api.raw(.get, "/trips/\(trip.id)", headers: cookie)
            #expect(offered(page.text) == (1...50).map { "N-\($0)" }, "soonest pickup first, 50 of them: \(offered(page.text))")
            #expect(page.text.contains("The 50 soonest pickups of the orders waiting for a trip: search to find another."))
            let found = try await api.raw(.get, "/trips/\(trip.id)?add_q=%20zebulon%0A", headers: cookie)
            #expect(offered(found.text) == ["N-69"] && found.text.contains("1 order waiting for a trip matches “zebulon”."), "\(offered(found.text))")
            #expect(found.text.contains("value=\"zebulon\""), "the search stays in its box, trimmed")
            let onTrip = try await api.raw(.get, "/trips/\(trip.id)?add_q=N-0", headers: cookie)
            #expect(!offered(onTrip.text).contains("N-0"), "an order on a trip with no driver is not offered: \(offered(onTrip.text))")
            let many = try await api.raw(.get, "/trips/\(trip.id)?add_q=harbor", headers: cookie)
            #expect(offered(many.text).count == 50
                    && many.text.contains("The 50 soonest pickups of the orders waiting for a trip that match “harbor”: add a word to narrow them."))
            try await server.services.database.write { db in
                try await db.execute("UPDATE orders SET status = \(OrderStatus.cancelled) WHERE trip_id = \(trip.id)")
                try await db.execute("UPDATE trips SET status = \(TripStatus.cancelled) WHERE id = \(trip.id)")
            }
            let finished = try await api.raw(.get, "/trips/\(trip.id)", headers: cookie)
            #expect(finished.status == 200 && !finished.text.contains("id=\"add_q\"") && offered(finished.text).isEmpty)
        }
    }

    @Test("a trip page's Add takes only an order waiting for a trip: one on another trip or given to a driver meanwhile stays there, and the refusal says where")
    func addTakesOnlyWaitingOrders() async throws {
        let server = try await TestServer.make(.sqlite)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let (here, there) = (try #require(alpha.trips.first?.first), try #require(alpha.trips.first?.last))
        let tenant = alpha.tenant.id
        let created = try await server.store.orders.createMany([
            CreateOrderRequest(number: "W-1", vehicle: Vehicle(make: "Kia", model: "Soul"), pickup: Stop(address: "1 A St, Tulsa, OK"),
                               delivery: Stop(address: "2 B St, Dallas, TX"), revenueCents: 50_000),
        ], tenant: tenant)
        #expect(created == 1)
        let order = try #require(try await server.store.boardOrders(.init(status: .new, search: "W-1", pickupNewestFirst: false, page: 0,
                                                                           pageSize: 1), tenant: tenant).first)
        _ = try await server.store.orders.assign(order.id, AssignOrderRequest(driverID: alpha.driverID(0)), tenant: tenant)
        await #expect(throws: AppError.self) { _ = try await server.store.orders.add(order.id, to: here.id, tenant: tenant) }
        #expect(try await server.store.orders.order(order.id, alpha.scope).tripID == nil)
        _ = try await server.store.orders.assign(order.id, AssignOrderRequest(tripID: there.id), tenant: tenant)
        do {
            _ = try await server.store.orders.add(order.id, to: here.id, tenant: tenant)
            Issue.record("an order on another trip was taken")
        } catch let error as AppError {
            #expect(error.status == 409 && error.body.message == "Order W-1 is on trip \(there.number) now. To move it here, take it off that trip first.")
        }
        #expect(try await server.store.orders.order(order.id, alpha.scope).tripID == there.id)
        _ = try await server.store.orders.assign(order.id, AssignOrderRequest(), tenant: tenant)
        #expect(try await server.store.orders.add(order.id, to: here.id, tenant: tenant).added)
        #expect(try await !server.store.orders.add(order.id, to: here.id, tenant: tenant).added, "already here: nothing changes")
    }

    @Test("the trips under way, the orders still to move on them and the trips with a track (the map's), from the open trips' index: another carrier's never",
          arguments: TestBackend.available)
    func underWay(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha")
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let tenant = alpha.tenant.id
        let (rolling, planned) = (alpha.trips[0][0], alpha.trips[0][1])
        let (rollingToo, done) = (alpha.trips[1][0], alpha.trips[1][1])
        func orders(_ trip: Trip) -> [ID<Order>] { alpha.orders[trip.id, default: []].map(\.id) }
        try await server.services.database.write { db in
            for (trip, status) in [(rolling, TripStatus.inProgress), (rollingToo, .inProgress), (done, .completed), (beta.trips[0][0], .inProgress)] {
                try await db.execute("UPDATE trips SET status = \(status) WHERE id = \(trip.id)")
            }
            // On the trips under way: one order waiting, one on the truck; one delivered, one waiting.
            for (order, status) in [(orders(rolling)[0], OrderStatus.assigned), (orders(rolling)[1], .pickedUp),
                                    (orders(rollingToo)[0], .delivered), (orders(rollingToo)[1], .assigned)] {
                let now = Date()
                try await db.execute("""
                    UPDATE orders SET status = \(status), actual_pickup_at = \(status == .assigned ? nil : now),
                    actual_delivery_at = \(status == .delivered ? now : nil) WHERE id = \(order)
                    """)
            }
        }
        let ahead = try await server.store.orders.ahead(tenant: tenant).map(\.id)
        #expect(Set(ahead) == [orders(rolling)[0], orders(rolling)[1], orders(rollingToo)[1]] && ahead.count == 3, "\(ahead)")
        // The map's slim read holds what the whole order holds, column for column (each stop's place, fence, window and
        // contact; ETAs and arrivals set to different times, so that no two columns read crosswise would pass).
        try await server.services.database.write { db in
            let start = Date(timeIntervalSince1970: 1_790_000_000)
            try await db.execute("""
                UPDATE orders SET pickup_eta = \(start), delivery_eta = \(start.addingTimeInterval(60)),
                arrived_at_pickup = \(start.addingTimeInterval(120)), arrived_at_delivery = \(start.addingTimeInterval(180)),
                pickup_latitude = 32.1, pickup_longitude = -81.2, pickup_radius_m = 250, delivery_latitude = 33.3, delivery_longitude = -84.4,
                pickup_window_start = '2026-12-01', pickup_window_end = '2026-12-02', delivery_window_start = '2026-12-03',
                delivery_window_end = '2026-12-04', pickup_contact_name = 'Pat', pickup_contact_phone = '555-0101',
                delivery_contact_name = 'Lee', delivery_contact_phone = '555-0199', pickup_name = 'Yard', delivery_name = 'Dealer'
                WHERE id = \(orders(rolling)[1])
                """)
        }
        for slim in try await server.store.orders.ahead(tenant: tenant) {
            let order = try await server.store.orders.order(slim.id, alpha.scope)
            #expect(slim.number == order.number && slim.tripID == order.tripID && slim.driverID == order.driverID && slim.status == order.status
                    && slim.pickup == order.pickup && slim.delivery == order.delivery && slim.pickupETA == order.pickupETA
                    && slim.deliveryETA == order.deliveryETA && slim.arrivedAtPickup == order.arrivedAtPickup
                    && slim.arrivedAtDelivery == order.arrivedAtDelivery && slim.createdAt == order.createdAt, "\(slim) against \(order)")
            if slim.id == orders(rolling)[1] {
                #expect(slim.pickup.location?.latitude == 32.1 && slim.delivery.geofenceRadiusMeters == nil && slim.pickup.geofenceRadiusMeters == 250
                        && slim.delivery.contactPhone == "555-0199" && slim.arrivedAtDelivery == Date(timeIntervalSince1970: 1_790_000_180))
            }
        }
        let scope = Scope.dispatch(tenant: tenant)
        #expect(Set(try await server.store.trips.list(scope, status: .inProgress).map(\.id)) == [rolling.id, rollingToo.id])
        #expect(try await server.store.trips.list(scope, status: .planned).map(\.id) == [planned.id])
        #expect(try await server.store.trips.list(scope, status: .completed).map(\.id) == [done.id])
        // The map reads tracks only of the trips a driver shared positions on since the day before.
        let now = server.clock.now
        _ = try await server.store.location.record(RecordLocationsRequest(fixes: (0..<3).map { minute in
            GeoPosition(latitude: 32.40, longitude: -81.60 + Double(minute) * 0.01, accuracyMeters: 8,
                        recordedAt: now.addingTimeInterval(Double(minute - 3) * 60), speedMetersPerSecond: 20)
        }), .driver(tenant: tenant, driver: alpha.driverID(0)))
        let underWay = [rolling.id, rollingToo.id, beta.trips[0][0].id]
        #expect(try await server.store.location.tripsWithFixes(underWay, since: now.addingTimeInterval(-3600), tenant: tenant) == [rolling.id])
        #expect(try await server.store.location.tripsWithFixes(underWay, since: now, tenant: tenant).isEmpty, "no fix since now")
        #expect(try await server.store.location.tripsWithFixes(underWay, since: now.addingTimeInterval(-3600), tenant: beta.tenant.id).isEmpty)
        if backend == .sqlite {
            func plan(_ query: SQL) async throws -> [String] {
                try await server.services.database.read { db in try await db.query("EXPLAIN QUERY PLAN " + query).map { try $0.string("detail") } }
            }
            // From an index of open trips (`trips_open`, `trips_open_listed`), or `trips_under_way` (those in progress, by driver).
            func readsOpenTrips(_ plan: [String]) -> Bool { plan.contains { $0.contains("trips_open") || $0.contains("trips_under_way") } }
            let aheadPlan = try await plan(OrderRepository.aheadQuery(tenant: tenant))
            #expect(readsOpenTrips(aheadPlan) && aheadPlan.contains { $0.contains("orders_by_trip") }, "\(aheadPlan)")
            let tripsPlan = try await plan("SELECT id FROM trips WHERE \(TripRepository.filter(scope, status: .inProgress))")
            #expect(readsOpenTrips(tripsPlan), "\(tripsPlan)")
        }
    }
}
