import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Drivers who leave, who moved an order, edits that would overwrite
/// someone else's, and which trips take orders.
@Suite("Dispatch: people and history")
struct DispatchPeopleTests {
    @Test("a deactivated driver is signed out everywhere, cannot sign in or take work, and keeps their history",
          arguments: TestBackend.available)
    func deactivation(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let leaving = carrier.driverID(0)
        let trip = carrier.trips[0][0]
        try await server.run { api in
            let email = carrier.driver.user.email
            let device = try await api.signIn(email, server: server)
            _ = try await api.call(.registerDeviceToken, json: RegisterDeviceTokenRequest(token: "leaving-driver-phone", platform: .ios),
                                   token: device.accessToken)

            // Open work must go to someone else first.
            let refused = try await api.call(.dispatchDeactivateDriver, leaving.rawValue, token: dispatch)
            #expect(refused.status == 409)
            #expect(refused.error?.message.contains("trips planned or under way: 1") == true, "\(refused.text)")
            let handedOver = try await api.call(.dispatchAssignTrip, trip.id.rawValue, json: AssignTripRequest(driverID: carrier.driverID(1)),
                                                token: dispatch)
            #expect(handedOver.status == 200)

            let deactivated = try await api.call(.dispatchDeactivateDriver, leaving.rawValue, token: dispatch).decode(Driver.self)
            #expect(deactivated.deactivatedAt != nil)
            // Sessions end (the per-instance session cache is 10 s), refresh tokens stop working, device tokens go.
            server.clock.advance(by: 11)
            #expect(try await api.call(.me, token: device.accessToken).error?.code == .sessionRevoked)
            #expect(try await api.call(.refresh, json: RefreshRequest(refreshToken: device.refreshToken)).status == 401)
            #expect(try await server.store.people.deviceTokens(user: carrier.driver.user.id, tenant: carrier.tenant.id).isEmpty)
            // Sign-in is refused with a reason; no session is made.
            server.clock.advance(by: 61)
            #expect(try await api.call(.sendCode, json: SendCodeRequest(email: email)).status == 202)
            let signIn = try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: try await server.code(for: email)))
            #expect(signIn.status == 403)
            #expect(signIn.error?.code == .accountDeactivated)
            // No new work goes to them.
            let newTrip = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(
                number: "T-NEW", driverID: leaving, origin: "A", destination: "B", revenueCents: 100, miles: 1), token: dispatch)
            #expect(newTrip.status == 422)
            #expect(newTrip.error?.field == "driver_id")
            #expect(try await api.call(.dispatchAssignTrip, trip.id.rawValue, json: AssignTripRequest(driverID: leaving),
                                       token: dispatch).status == 422)
            // Their history stays: the list still has them, marked.
            let listed = try await api.call(.dispatchDrivers, token: dispatch).decode(Items<Driver>.self).items
            #expect(listed.first { $0.id == leaving }?.deactivatedAt != nil)

            // Reactivated, they sign in again.
            let back = try await api.call(.dispatchReactivateDriver, leaving.rawValue, token: dispatch).decode(Driver.self)
            #expect(back.deactivatedAt == nil)
            server.clock.advance(by: 61)
            let again = try await api.signIn(email, server: server)
            #expect(again.driver?.id == leaving)
            // Another carrier's dispatcher cannot touch them.
            let other = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0)
            #expect(try await api.call(.dispatchDeactivateDriver, leaving.rawValue, token: other.dispatcher.accessToken).status == 404)
        }
    }

    @Test("an order's status history says who moved it and when",
          arguments: TestBackend.available)
    func statusHistory(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            let trip = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(
                number: "T-1", driverID: carrier.driverID(0), origin: "A", destination: "B", revenueCents: 100, miles: 1),
                                          token: dispatch).decode(Trip.self)
            let order = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "O-1", tripID: trip.id, vehicle: Vehicle(make: "Kia"), pickup: Stop(address: "P"), delivery: Stop(address: "D"),
                revenueCents: 100), token: dispatch).decode(Order.self)
            server.clock.advance(by: 600)
            try await api.completeInspection(of: order.id, .pickup, token: carrier.driver.accessToken)
            server.clock.advance(by: 600)
            _ = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: .delivered), token: dispatch)

            let history = try await server.store.orderHistory(order.id, tenant: carrier.tenant.id)
            #expect(history.map(\.status) == [.assigned, .pickedUp, .delivered])
            #expect(history.map(\.who) == ["dispatch@alpha.example", carrier.drivers[0].driver!.name, "dispatch@alpha.example"])
            #expect(history.map(\.byDriver) == [false, true, false])
            // Another carrier reads nothing of it.
            let other = try await CarrierFixture.make(server, name: "Beta", drivers: 0, tripsPerDriver: 0)
            #expect(try await server.store.orderHistory(order.id, tenant: other.tenant.id).isEmpty)
        }
    }

    @Test("an edit based on an old version is refused when someone else changed the details, not when only the driver's ETA moved",
          arguments: TestBackend.available)
    func editConflicts(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let order = try #require(carrier.orders[carrier.trips[0][0].id]?.first)
        try await server.run { api in
            // The driver sets an ETA: the dispatcher's form from before still saves.
            let eta = server.clock.now.addingTimeInterval(3600)
            #expect(try await api.call(.updateOrderETA, order.id.rawValue, json: UpdateETARequest(pickupETA: eta),
                                       token: carrier.driver.accessToken).status == 200)
            let saved = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                vehicle: Vehicle(make: "Honda"), baseVersion: order.version), token: dispatch)
            #expect(saved.status == 200)
            let current = try saved.decode(Order.self)
            #expect(current.vehicle.make == "Honda" && current.pickupETA != nil)

            // A second dispatcher's form from before that save is refused, and nothing is written.
            let stale = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                revenueCents: 1, baseVersion: order.version), token: dispatch)
            #expect(stale.status == 409)
            #expect(stale.error?.field == "base_version")
            #expect(try await server.store.orders.order(order.id, carrier.scope).revenueCents == order.revenueCents)
            // Based on the current version, it saves.
            #expect(try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                revenueCents: 1, baseVersion: current.version), token: dispatch).status == 200)
        }
    }

    @Test("pay that follows the driver's terms follows the trip's revenue; pay set by hand stays", arguments: TestBackend.available)
    func payFollowsTerms(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let (byTerms, byHand) = (carrier.trips[0][0], carrier.trips[0][1])
        let tenant = carrier.tenant.id
        // The fixture's driver is paid 25 % of revenue.
        #expect(byTerms.driverPayCents == byTerms.revenueCents / 4)
        let raised = try await server.store.trips.update(byTerms.id, .init(revenueCents: 800_000), tenant: tenant)
        #expect(raised.driverPayCents == 200_000)
        _ = try await server.store.trips.update(byHand.id, .init(driverPayCents: 12_345), tenant: tenant)
        let kept = try await server.store.trips.update(byHand.id, .init(revenueCents: 900_000), tenant: tenant)
        #expect(kept.driverPayCents == 12_345)
        // Revenue and pay in one edit: the pay sent is the pay.
        let both = try await server.store.trips.update(byTerms.id, .init(revenueCents: 400_000, driverPayCents: 50_000), tenant: tenant)
        #expect(both.driverPayCents == 50_000)
    }

    @Test("the driver is told what dispatch changed on their trip and order, and nothing when nothing they act on changed",
          arguments: TestBackend.available)
    func driverToldOfEdits(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let (dispatch, driver) = (carrier.dispatcher.accessToken, carrier.driver.accessToken)
        let trip = carrier.trips[0][0]
        let order = try #require(carrier.orders[trip.id]?.first)
        try await server.run { api in
            func told(_ title: String) async throws -> [DriverNotification] {
                try await api.call(.notifications, token: driver).decode(Items<DriverNotification>.self).items.filter { $0.title == title }
            }
            // Each edit below comes more than a minute after the last: notices about a trip within a minute gather into one.
            func later() { server.clock.advance(by: 61) }
            later()
            let start = try #require(trip.startDate).adding(days: 1)
            let edited = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(
                startDate: start, endDate: start.adding(days: 2), destination: "Tampa, FL", driverPayCents: 123_456), token: dispatch)
            #expect(edited.status == 200)
            let tripNote = try #require(try await told("Trip \(trip.number) changed").first)
            #expect(tripNote.body == "Dispatch changed trip \(trip.number): route \(trip.origin) → Tampa, FL (was \(trip.origin) → \(trip.destination)); "
                + "dates \(DayFormat.span(start, start.adding(days: 2))!) (were \(DayFormat.span(trip.startDate, trip.endDate)!)); "
                + "your pay $1,234.56 (was \(MoneyFormat.dollars(trip.driverPayCents))).")
            #expect(tripNote.data.tripID == trip.id)
            // Revenue is the carrier's business: no news for the driver.
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(revenueCents: 999_999), token: dispatch).status == 200)
            #expect(try await told("Trip \(trip.number) changed").count == 1)

            var delivery = order.delivery
            delivery.address = "1 Bay St, Tampa, FL"
            delivery.contactPhone = "+1 555 0177"
            later()
            #expect(try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(delivery: delivery), token: dispatch).status == 200)
            let orderNote = try #require(try await told("Order \(order.number) changed").first)
            #expect(orderNote.body.contains("delivery at \([delivery.name, "1 Bay St, Tampa, FL"].filter { !$0.isEmpty }.joined(separator: ", "))"))
            #expect(orderNote.body.contains("delivery contact") && orderNote.body.contains("+1 555 0177"))
            #expect(!orderNote.body.contains("pickup"))
            #expect(orderNote.data.orderID == order.id && orderNote.data.tripID == trip.id)
            // A colour alone is news (the note names it); a right-to-left override typed in a value does not turn the note around.
            var painted = order.vehicle
            painted.color = "Midnight Blue"
            later()
            #expect(try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(vehicle: painted), token: dispatch).status == 200)
            #expect(try await told("Order \(order.number) changed").contains { $0.body.contains("Midnight Blue") })
            later()
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(origin: "\u{202E}Macon, GA"), token: dispatch).status == 200)
            #expect(try await told("Trip \(trip.number) changed").contains { $0.body.contains("route Macon, GA → Tampa, FL") })

            // The same edit again changes nothing and tells nothing.
            later()
            #expect(try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(delivery: delivery), token: dispatch).status == 200)
            #expect(try await told("Order \(order.number) changed").count == 2)

            // Work taken away is news too: the order off the trip, then the trip to nobody.
            // An empty body (a client's bug, a misspelt key) is not "take it back": that is said with null.
            for body in ["{}", #"{"tripid": null}"#] {
                let empty = try await api.call(.dispatchAssignOrder, order.id.rawValue, body: body, token: dispatch)
                #expect(empty.status == 422 && empty.error?.field == "trip_id or driver_id", "\(empty.text)")
            }
            #expect(try await api.call(.dispatchAssignTrip, trip.id.rawValue, body: "{}", token: dispatch).status == 422)
            #expect(try await api.call(.dispatchAssignOrder, order.id.rawValue, json: AssignOrderRequest(), token: dispatch).status == 200)
            let orderGone = try #require(try await told("Order \(order.number) taken off your list").first)
            #expect(orderGone.body.contains("Do not pick it up.") && orderGone.data.orderID == order.id)
            #expect(try await api.call(.dispatchAssignTrip, trip.id.rawValue, json: AssignTripRequest(driverID: nil), token: dispatch).status == 200)
            let tripGone = try #require(try await told("Trip \(trip.number) taken off your list").first)
            #expect(tripGone.body.contains("to no driver for now") && tripGone.data.tripID == trip.id)
            // Every note the server writes around a typed value drops its direction controls, not only the edit notes.
            #expect(tripGone.body.contains("(Macon, GA → Tampa, FL)") && !tripGone.body.unicodeScalars.contains("\u{202E}"))
            // A dispatcher's own message keeps its text as typed (a right-to-left mark belongs to the words).
            let hebrew = "\u{200F}שלום, call dispatch"
            #expect(try await api.call(.dispatchSendMessage, json: SendMessageRequest(driverID: carrier.driverID(0), type: .dispatchMessage,
                                                                                       title: "Hello", body: hebrew), token: dispatch).status == 201)
            #expect(try await told("Hello").first?.body == hebrew)
        }
    }

    @Test("dispatch edits a driver's name, phone and pay terms; the driver sees them; new trips follow the terms, assigned ones keep their pay",
          arguments: TestBackend.available)
    func driverEdits(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let (dispatch, id) = (carrier.dispatcher.accessToken, carrier.driverID(0))
        let assigned = carrier.trips[0][0]
        try await server.run { api in
            let before = try #require(try await server.store.people.driver(id, tenant: carrier.tenant.id))
            let edited = try await api.call(.dispatchUpdateDriver, id.rawValue, json: UpdateDriverRequest(
                name: "  Alex Q. Rivera ", phone: "+1 912 555 0101", payType: .perMile, payRate: 65, baseVersion: before.version), token: dispatch)
            #expect(edited.status == 200, "\(edited.text)")
            let driver = try edited.decode(Driver.self)
            #expect(driver.name == "Alex Q. Rivera" && driver.phone == "+1 912 555 0101" && driver.payType == .perMile && driver.payRate == 65)
            #expect(driver.version == before.version + 1 && driver.email == before.email)
            // The driver's own app sees it.
            let me = try await api.call(.me, token: carrier.driver.accessToken).decode(MeResponse.self)
            #expect(me.driver?.name == "Alex Q. Rivera" && me.driver?.payType == .perMile)
            // The trip already assigned keeps its pay; a new one is paid on the new terms.
            #expect(try await server.store.trips.trip(assigned.id, carrier.scope).driverPayCents == assigned.driverPayCents)
            let next = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(number: "T-NEW-TERMS", driverID: id, origin: "A",
                                                                                       destination: "B", revenueCents: 100_000, miles: 300),
                                          token: dispatch).decode(Trip.self)
            #expect(next.driverPayCents == 300 * 65)

            // Each refusal names its field; nothing is saved.
            for (body, field) in [(UpdateDriverRequest(name: " "), "name"), (UpdateDriverRequest(payRate: 100_01), "pay_rate"),
                                  (UpdateDriverRequest(payType: .percentage, payRate: 10_001), "pay_rate"),
                                  (UpdateDriverRequest(phone: String(repeating: "5", count: 41)), "phone"),
                                  (UpdateDriverRequest(baseVersion: 0), "base_version")] {
                let refused = try await api.call(.dispatchUpdateDriver, id.rawValue, json: body, token: dispatch)
                #expect(refused.status == 422 && refused.error?.field == field, "\(body): \(refused.text)")
            }
            let stale = try await api.call(.dispatchUpdateDriver, id.rawValue, json: UpdateDriverRequest(name: "Old Tab", baseVersion: before.version),
                                           token: dispatch)
            #expect(stale.status == 409 && stale.error?.field == "base_version")
            #expect(try await server.store.people.driver(id, tenant: carrier.tenant.id)?.name == "Alex Q. Rivera")
            // The same edit again changes nothing and writes no version.
            let again = try await api.call(.dispatchUpdateDriver, id.rawValue, json: UpdateDriverRequest(name: "Alex Q. Rivera"), token: dispatch)
            #expect(try again.decode(Driver.self).version == driver.version)
        }
    }

    @Test("an order is taken off a trip only while it is on that trip: one moved meanwhile stays where it was put",
          arguments: TestBackend.available)
    func removeOnlyFromItsTrip(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let tenant = carrier.tenant.id
        let (first, second) = (carrier.trips[0][0], carrier.trips[0][1])
        let order = try #require(carrier.orders[first.id]?.first)
        // Another dispatcher moves it to the second trip; a page still showing it on the first then removes it from there.
        _ = try await server.store.orders.assign(order.id, AssignOrderRequest(tripID: second.id), tenant: tenant)
        await #expect(throws: AppError.self) { try await server.store.orders.remove(order.id, from: first.id, tenant: tenant) }
        #expect(try await server.store.orders.order(order.id, carrier.scope).tripID == second.id)
        let removed = try await server.store.orders.remove(order.id, from: second.id, tenant: tenant)
        #expect(removed.tripID == nil && removed.status == .new)
    }

    @Test("trip and order numbers ignore capital letters: of lookalikes written at once, one is kept", arguments: TestBackend.available)
    func lookalikeNumbers(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let other = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0)
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            // Eight spellings of one number at once: exactly one trip is made, the rest are told why.
            let spellings = ["RACE-X", "race-x", "Race-X", "rACE-x", "RaCe-X", "race-X", "RACE-x", "rAcE-X"]
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for number in spellings {
                    group.addTask { try await api.call(.dispatchCreateTrip, json: CreateTripRequest(number: number, origin: "A", destination: "B", revenueCents: 1, miles: 1), token: dispatch).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.sorted() == [201] + Array(repeating: 409, count: 7), "\(statuses)")
            #expect(try await server.store.trips.list(carrier.scope).filter { $0.number.lowercased() == "race-x" }.count == 1)
            // Another carrier's numbers are its own.
            #expect(try await api.call(.dispatchCreateTrip, json: CreateTripRequest(number: "race-x", origin: "A", destination: "B", revenueCents: 1, miles: 1), token: other.dispatcher.accessToken).status == 201)

            func order(_ number: String) -> CreateOrderRequest {
                CreateOrderRequest(number: number, vehicle: Vehicle(make: "Kia"), pickup: Stop(address: "P"), delivery: Stop(address: "D"),
                                   revenueCents: 100)
            }
            #expect(try await api.call(.dispatchCreateOrder, json: order("O-Case-1"), token: dispatch).status == 201)
            let twin = try await api.call(.dispatchCreateOrder, json: order("o-case-1"), token: dispatch)
            #expect(twin.status == 409 && twin.error?.code == .alreadyExists && twin.error?.field == "number")
            #expect(twin.error?.message == "Order O-Case-1 already has this number (numbers ignore capital letters).")
            let again = try await api.call(.dispatchCreateOrder, json: order("O-Case-1"), token: dispatch)
            #expect(again.status == 409 && again.error?.message == "An order numbered O-Case-1 already exists.", "\(again.text)")
            // What reads the same is stored the same: spaces of any kind fold to one, accents are composed;
            // invisible marks and line separators are refused.
            #expect(try await api.call(.dispatchCreateOrder, json: order("O\u{00A0}\u{3000}Wide"), token: dispatch).decode(Order.self).number == "O Wide")
            #expect(try await api.call(.dispatchCreateOrder, json: order("O  wide"), token: dispatch).status == 409)
            #expect(try await api.call(.dispatchCreateOrder, json: order("Cafe\u{301}-9"), token: dispatch).decode(Order.self).number == "Caf\u{E9}-9")
            #expect(try await api.call(.dispatchCreateOrder, json: order("Caf\u{E9}-9"), token: dispatch).status == 409)
            // Composed longer than 64 (U+FB2C is two code points composed), or with no letter or digit: refused on the field.
            for bad in [String(repeating: "\u{FB2C}", count: 22), "\u{2800}", " \u{301}"] {
                let refused = try await api.call(.dispatchCreateOrder, json: order(bad), token: dispatch)
                #expect(refused.status == 422 && refused.error?.field == "number", "\(refused.text)")
            }
            for invisible in ["\u{FE0F}", "\u{034F}", "\u{3164}", "\u{E000}", "\u{2028}", "\u{2029}"] {
                let refused = try await api.call(.dispatchCreateOrder, json: order("O-Ca" + invisible + "se-2"), token: dispatch)
                #expect(refused.status == 422 && refused.error?.field == "number", "U+\(String(invisible.unicodeScalars.first!.value, radix: 16))")
            }
            // The check reads the folded-number index, not every order of the carrier.
            let plan = try await server.services.database.write { db -> String in
                let lookup: SQL = "SELECT number FROM orders WHERE tenant_id = \(carrier.tenant.id) AND lower(number) = lower(\("x"))"
                if db.dialect == .postgres {
                    _ = try await db.query("SELECT set_config('enable_seqscan', 'off', true) AS off")
                    return try await db.query("EXPLAIN " + lookup).map { try $0.string("QUERY PLAN") }.joined(separator: "\n")
                }
                return try await db.query("EXPLAIN QUERY PLAN " + lookup).map { try $0.string("detail") }.joined(separator: "\n")
            }
            #expect(plan.contains("orders_by_folded_number"), "\(plan)")
            // A board search with characters no one types (a NUL, which PostgreSQL refuses) finds nothing, and fails nothing;
            // a % inside a combined character is still a literal %.
            for search in ["ab\u{0}cd", "%\u{301}", "Z_\u{301}"] {
                let found = try await server.store.boardOrders(.init(status: .new, search: search, pickupNewestFirst: false, page: 0, pageSize: 50),
                                                               tenant: carrier.tenant.id)
                #expect(found.isEmpty, "\(search.unicodeScalars.map(\.value))")
            }
        }
    }

    @Test("claiming numbers never deadlocks with the rows a write holds: new trips for a driver beside renames of theirs all succeed",
          arguments: TestBackend.available)
    func numberClaimsTakeTurns(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 4)
        let dispatch = carrier.dispatcher.accessToken
        let driver = carrier.driverID(0)
        try await server.run { api in
            // A create locks the driver; a rename locks its trip and then tells the driver (a row that needs the driver).
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for (lane, trip) in carrier.trips[0].enumerated() {
                    group.addTask {
                        var statuses: [Int] = []
                        for round in 0..<10 {
                            statuses.append(try await api.call(.dispatchCreateTrip, json: CreateTripRequest(
                                number: "C-\(lane)-\(round)", driverID: driver, origin: "A", destination: "B", revenueCents: 1, miles: 1),
                                token: dispatch).status)
                            statuses.append(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(
                                number: "R-\(lane)-\(round)"), token: dispatch).status)
                        }
                        return statuses
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 201 }, "\(statuses.filter { $0 >= 300 })")
        }
    }

    @Test("each new driver is mailed an invitation; a carrier adds at most its hourly allowance, then 429 until the next hour")
    func invitationsAreCapped() async throws {
        let server = try await TestServer.make(.sqlite) {
            $0.auth.invitationsPerHour = 2
            $0.driverAppURL = "https://apps.example.com/vroomx-driver"
            $0.publicURL = "https://vroomx.alpha.example"
        }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 0, tripsPerDriver: 0)
        try await server.run { api in
            func invite(_ index: Int, token: String) async throws -> APIResponse {
                try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                    email: "new\(index)@alpha.example", name: "New \(index)", payType: .perMile, payRate: 60), token: token)
            }
            let token = carrier.dispatcher.accessToken
            // Refused invitations send nothing and do not count: an email already taken, a name of several lines.
            for _ in 0..<3 {
                #expect(try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                    email: carrier.dispatcher.user.email, name: "Taken", payType: .perMile, payRate: 60), token: token).status == 409)
            }
            let phishing = try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                email: "new9@alpha.example", name: "Sam,\n\nURGENT: verify your account at http://evil.example", payType: .perMile, payRate: 60),
                token: token)
            #expect(phishing.status == 422 && phishing.error?.field == "name", "\(phishing.text)")
            let reversed = try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                email: "new9@alpha.example", name: "Sam", phone: "\u{202E}5550101", payType: .perMile, payRate: 60), token: token)
            #expect(reversed.status == 422 && reversed.error?.field == "phone", "\(reversed.text)")
            #expect(try await invite(1, token: token).status == 201)
            #expect(try await invite(2, token: token).status == 201)
            let refused = try await invite(3, token: token)
            #expect(refused.status == 429 && refused.error?.code == .rateLimited, "\(refused.text)")
            let wait = try #require(refused.headers[.retryAfter].flatMap { Int($0) })
            #expect((1...3600).contains(wait))
            #expect(try await server.store.people.drivers(tenant: carrier.tenant.id).count == 2, "the refused driver was not added")
            for index in 1...2 { _ = try await server.mailbox.message(to: "new\(index)@alpha.example", subject: "invited you") }
            // Where to get the app and the server's address, as the operator set them.
            let invitation = try await server.mailbox.message(to: "new1@alpha.example", subject: "invited you").body
            #expect(invitation.contains("Install the VroomX Driver app on your phone (https://apps.example.com/vroomx-driver) and sign in"))
            #expect(invitation.contains("vroomx-driver login --server https://vroomx.alpha.example --email new1@alpha.example"))
            // Another carrier has its own allowance.
            let other = try await CarrierFixture.make(server, name: "Bravo", drivers: 0, tripsPerDriver: 0)
            #expect(try await invite(4, token: other.dispatcher.accessToken).status == 201)
            // The next hour, the first carrier adds again.
            server.clock.advance(by: TimeInterval(wait))
            let fresh = try await server.services.signIn(email: carrier.dispatcher.user.email).accessToken
            #expect(try await invite(3, token: fresh).status == 201)
            for index in 3...4 { _ = try await server.mailbox.message(to: "new\(index)@alpha.example", subject: "invited you") }
            #expect(server.mailbox.sent.filter { $0.subject.contains("invited you") }.count == 4)
        }
    }

    @Test("an import naming two trips of one driver never deadlocks with edits of the second: every import and every edit succeeds",
          arguments: TestBackend.available)
    func importBesideTripEdits(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let dispatch = carrier.dispatcher.accessToken
        let (first, second) = (carrier.trips[0][0], carrier.trips[0][1])
        let now = server.clock.now
        try await server.run { api in
            for round in 0..<3 {
                // Many lines on the first trip, then one on the second: taken line by line, the import held the driver
                // when it came to the second trip, which an edit held while it waited for the driver.
                let orders = try (0..<120).map { line in
                    try ValidOrder(CreateOrderRequest(
                        number: "I-\(round)-\(line)", tripID: line == 119 ? second.id : first.id,
                        vehicle: Vehicle(year: 2020, make: "Kia", model: "Soul"),
                        pickup: Stop(name: "Lot", address: "1 Harbor Rd, Savannah, GA"),
                        delivery: Stop(name: "Dealer", address: "9 Main St, Orlando, FL"), revenueCents: 1), now: now)
                }
                async let imported = server.store.orders.createMany(orders, tenant: carrier.tenant.id)
                var statuses: [Int] = []
                for edit in 0..<15 {
                    statuses.append(try await api.call(.dispatchUpdateTrip, second.id.rawValue, json: UpdateTripRequest(
                        miles: 100 + round * 15 + edit), token: dispatch).status)
                }
                #expect(try await imported == 120)
                #expect(statuses.allSatisfy { $0 == 200 }, "round \(round): \(statuses)")
            }
        }
    }

    @Test("a trip is renumbered unless another trip has the number; an edit from an old version is refused and writes nothing",
          arguments: TestBackend.available)
    func tripEdits(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let dispatch = carrier.dispatcher.accessToken
        let (trip, other) = (carrier.trips[0][0], carrier.trips[0][1])
        try await server.run { api in
            let renumbered = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(
                number: "T-RENAMED", baseVersion: trip.version), token: dispatch)
            #expect(renumbered.status == 200)
            let saved = try renumbered.decode(Trip.self)
            #expect(saved.number == "T-RENAMED" && saved.version == trip.version + 1)
            // The driver's copy says so too.
            #expect(try await api.call(.trip, trip.id.rawValue, token: carrier.driver.accessToken).decode(Trip.self).number == "T-RENAMED")

            let taken = try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(number: "T-RENAMED"), token: dispatch)
            #expect(taken.status == 409 && taken.error?.code == .alreadyExists && taken.error?.field == "number")
            // Numbers ignore capital letters: "t-renamed" would read as the same trip to the driver.
            let lookalike = try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(number: "t-Renamed"), token: dispatch)
            #expect(lookalike.status == 409 && lookalike.error?.code == .alreadyExists && lookalike.error?.field == "number")
            #expect(lookalike.error?.message == "Trip T-RENAMED already has this number (numbers ignore capital letters).")
            // A trip may change the case of its own number.
            let recased = try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(number: other.number.lowercased()),
                                             token: dispatch)
            #expect(recased.status == 200 && (try? recased.decode(Trip.self).number) == other.number.lowercased(), "\(recased.text)")
            let created = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(number: "t-renamed", origin: "A", destination: "B", revenueCents: 1, miles: 1), token: dispatch)
            #expect(created.status == 409 && created.error?.code == .alreadyExists, "\(created.text)")
            let blank = try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(number: "  "), token: dispatch)
            #expect(blank.status == 422 && blank.error?.field == "number")

            // Edited from the version before the renumbering: refused, nothing written.
            let stale = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(
                miles: 999, baseVersion: trip.version), token: dispatch)
            #expect(stale.status == 409 && stale.error?.code == .conflict && stale.error?.field == "base_version")
            #expect(try await server.store.trips.trip(trip.id, carrier.scope).miles == trip.miles)
            for bad in [0, saved.version + 1] {
                let outside = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(miles: 1, baseVersion: bad),
                                                 token: dispatch)
                #expect(outside.status == 422 && outside.error?.field == "base_version")
            }
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(
                miles: 999, baseVersion: saved.version), token: dispatch).status == 200)

            // Its two vehicles are still waiting: it cannot be completed, and the answer counts them.
            #expect(try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(status: .inProgress),
                                       token: dispatch).status == 200)
            let early = try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(status: .completed), token: dispatch)
            #expect(early.status == 409 && early.error?.message.contains("still has 2 vehicles not delivered") == true, "\(early.text)")

            // With a vehicle on the truck the trip can be neither cancelled nor planned again.
            let (loaded, waiting) = (carrier.orders[other.id]![0], carrier.orders[other.id]![1])
            _ = try await server.store.orders.updateStatus(loaded.id, to: .pickedUp, occurredAt: nil, carrier.scope)
            for status in [TripStatus.cancelled, .planned] {
                let refused = try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(status: status), token: dispatch)
                #expect(refused.status == 409 && refused.error?.message.contains("has 1 vehicle on the truck") == true, "\(refused.text)")
            }
            #expect(try await server.store.trips.trip(other.id, carrier.scope).status == .inProgress)

            // Delivered, the trip is cancelled: the waiting vehicle goes back to the board and off the driver's list.
            _ = try await server.store.orders.updateStatus(loaded.id, to: .delivered, occurredAt: nil, carrier.scope)
            #expect(try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(status: .cancelled),
                                       token: dispatch).status == 200)
            let released = try await server.store.orders.order(waiting.id, carrier.scope)
            #expect(released.status == .new && released.tripID == nil && released.driverID == nil)
            #expect(try await server.store.orders.order(loaded.id, carrier.scope).tripID == other.id, "a delivered vehicle stays on its trip")
            let driverOrders = try await api.call(.orders, query: "limit=500", token: carrier.driver.accessToken).text
            #expect(!driverOrders.contains(waiting.id.rawValue))

            // A cancelled trip's figures are settled; a number is one line.
            let settled = try await api.call(.dispatchUpdateTrip, other.id.rawValue, json: UpdateTripRequest(driverPayCents: 1), token: dispatch)
            #expect(settled.status == 409 && settled.error?.code == .invalidTransition, "\(settled.text)")
            #expect(try await server.store.trips.trip(other.id, carrier.scope).driverPayCents == other.driverPayCents)
            for number in ["T\n2", "T\t2", "T\u{200B}2"] {
                let split = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(number: number), token: dispatch)
                #expect(split.status == 422 && split.error?.field == "number", "\(split.text)")
            }
        }
    }

    @Test("orders go on planned trips or trips under way, never on completed or cancelled ones", arguments: TestBackend.available)
    func closedTripsTakeNoOrders(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            let trip = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(
                number: "T-1", origin: "A", destination: "B", revenueCents: 100, miles: 1), token: dispatch).decode(Trip.self)
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(status: .cancelled),
                                       token: dispatch).status == 200)
            let created = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "O-1", tripID: trip.id, vehicle: Vehicle(), pickup: Stop(address: "P"), delivery: Stop(address: "D"),
                revenueCents: 1), token: dispatch)
            #expect(created.status == 422)
            #expect(created.error?.field == "trip_id")
            let loose = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "O-2", vehicle: Vehicle(), pickup: Stop(address: "P"), delivery: Stop(address: "D"), revenueCents: 1),
                                           token: dispatch).decode(Order.self)
            let assigned = try await api.call(.dispatchAssignOrder, loose.id.rawValue, json: AssignOrderRequest(tripID: trip.id), token: dispatch)
            #expect(assigned.status == 422)
            #expect(try await server.store.orders.order(loose.id, carrier.scope).tripID == nil)
        }
    }

    @Test("the driver form refuses pay terms it does not offer, rather than reading them as a percentage")
    func payTermsFromTheForm() {
        var errors = FieldErrors()
        let unknown = ConsolePeoplePages.payTerms(ConsoleForm(values: ["pay_type": ["<b>"], "pay_rate": ["10"]]), errors: &errors)
        #expect(errors.messages["pay_type"] == "Choose how the driver is paid." && unknown.rate == nil)
        var none = FieldErrors()
        _ = ConsolePeoplePages.payTerms(ConsoleForm(values: ["pay_rate": ["10"]]), errors: &none)
        #expect(none.messages["pay_type"] != nil, "a form without the field is refused too")
        var fine = FieldErrors()
        let mile = ConsolePeoplePages.payTerms(ConsoleForm(values: ["pay_type": ["per_mile"], "pay_rate": ["0.65"]]), errors: &fine)
        #expect(fine.isEmpty && mile.type == .perMile && mile.rate == 65)
    }
}
