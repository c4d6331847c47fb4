import Foundation
import Logging
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Orders of several vehicles (dealer and auction loads): each vehicle
/// with its own VIN, type, condition, lot number and price, the order
/// earning their sum; edits that keep each vehicle's id; yesterday's
/// one-vehicle JSON still taken and answered; orders from before migrated
/// without loss.
@Suite("Several vehicles per order")
struct MultiVehicleOrderTests {
    static let pickup = Stop(address: "1 Auction Way, Matteson, IL")
    static let delivery = Stop(address: "500 Lake St, Milwaukee, WI")

    @Test("an order of three vehicles: ids given, prices summed, each checked by name; an edit keeps, adds and removes vehicles by id",
          arguments: TestBackend.available)
    func threeVehicles(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            let load = [
                Vehicle(year: 2021, make: "Toyota", model: "Camry", vin: "4T1B11HK4MU123456", type: .sedan, lotNumber: "LOT 4411", priceCents: 45_000),
                Vehicle(year: 2019, make: "Ford", model: "F-150", type: .pickup, operable: false, priceCents: 60_000),
                Vehicle(make: "Honda", model: "CR-V", type: .suv, lotNumber: "B-77", priceCents: 40_050),
            ]
            let created = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "D-1", tripID: carrier.trips[0][0].id, vehicles: load, pickup: Self.pickup, delivery: Self.delivery), token: dispatch)
            #expect(created.status == 201, "\(created.text)")
            let order = try created.decode(Order.self)
            #expect(order.vehicles.count == 3 && order.revenueCents == 145_050)
            #expect(order.vehicles.map(\.priceCents) == [45_000, 60_000, 40_050])
            #expect(order.vehicles.map(\.operable) == [true, false, true] && order.vehicles.map(\.type) == [.sedan, .pickup, .suv])
            #expect(order.vehicles[0].lotNumber == "LOT 4411" && Set(order.vehicles.compactMap(\.id)).count == 3)
            #expect(order.vehicle == order.vehicles[0], "yesterday's clients read the first vehicle as `vehicle`")
            // The driver's copy carries them too.
            let mine = try await api.call(.order, order.id.rawValue, token: carrier.driver.accessToken).decode(Order.self)
            #expect(mine.vehicles == order.vehicles)

            // The board finds the load by a later vehicle's VIN-less make and by any lot number.
            for word in ["CR-V", "B-77", "LOT 4411", "Camry"] {
                let found = try await server.store.boardOrders(.init(status: .assigned, search: word, pickupNewestFirst: false, page: 0,
                                                                     pageSize: 50), tenant: carrier.tenant.id)
                #expect(found.map(\.number) == ["D-1"], "\(word)")
            }

            // Refusals name the vehicle: a bad VIN of the second, a revenue that is not the sum, 13 vehicles.
            var bad = load
            bad[1].vin = "NOT A VIN"
            let badVIN = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "D-2", vehicles: bad, pickup: Self.pickup, delivery: Self.delivery), token: dispatch)
            #expect(badVIN.status == 422 && badVIN.error?.field == "vehicles[1].vin", "\(badVIN.text)")
            let mismatch = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "D-2", vehicles: load, pickup: Self.pickup, delivery: Self.delivery, revenueCents: 100), token: dispatch)
            #expect(mismatch.status == 422 && mismatch.error?.field == "revenue_cents", "\(mismatch.text)")
            let unpriced = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "D-2", vehicles: load.map { var vehicle = $0; vehicle.priceCents = nil; return vehicle },
                pickup: Self.pickup, delivery: Self.delivery, revenueCents: 145_050), token: dispatch)
            #expect(unpriced.status == 422 && unpriced.error?.field == "vehicles", "\(unpriced.text)")
            for count in [0, 13] {
                let refused = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                    number: "D-2", vehicles: Array(repeating: Vehicle(make: "Kia", priceCents: 1), count: count), pickup: Self.pickup,
                    delivery: Self.delivery), token: dispatch)
                #expect(refused.status == 422 && refused.error?.field == "vehicles", "\(count): \(refused.text)")
            }
            var twice = load
            twice[2].vin = twice[0].vin
            let sameVIN = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "D-2", vehicles: twice, pickup: Self.pickup, delivery: Self.delivery), token: dispatch)
            #expect(sameVIN.status == 422 && sameVIN.error?.field == "vehicles[2].vin", "one vehicle listed twice: \(sameVIN.text)")
            let pricey = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "D-2", vehicles: Array(repeating: Vehicle(make: "Kia", priceCents: MoneyFormat.largestCents), count: 12),
                pickup: Self.pickup, delivery: Self.delivery), token: dispatch)
            #expect(pricey.status == 422 && pricey.error?.field == "revenue_cents", "twelve of the largest price: \(pricey.text)")
            let longLot = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "D-2", vehicles: [Vehicle(make: "Kia", lotNumber: String(repeating: "9", count: 41), priceCents: 1)],
                pickup: Self.pickup, delivery: Self.delivery), token: dispatch)
            #expect(longLot.status == 422 && longLot.error?.field == "vehicles[0].lot_number", "\(longLot.text)")

            // An edit: the Camry's price changes, the Ford leaves, a Jeep joins; ids stay with their vehicles.
            var edited = order.vehicles
            edited[0].priceCents = 47_500
            edited.remove(at: 1)
            edited.append(Vehicle(year: 2022, make: "Jeep", model: "Wrangler", type: .suv, priceCents: 52_000))
            let saved = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(baseVersion: order.version,
                                                                                                          vehicles: edited), token: dispatch)
            #expect(saved.status == 200, "\(saved.text)")
            let after = try saved.decode(Order.self)
            #expect(after.vehicles.map(\.make) == ["Toyota", "Honda", "Jeep"] && after.revenueCents == 47_500 + 40_050 + 52_000)
            #expect(after.vehicles[0].id == order.vehicles[0].id && after.vehicles[1].id == order.vehicles[2].id)
            #expect(after.vehicles[2].id != nil && !order.vehicles.map(\.id).contains(after.vehicles[2].id))
            // An id the order does not have (the Ford's, removed) is refused, not taken as new.
            var stale = after.vehicles
            stale[0].id = order.vehicles[1].id
            let refused = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(vehicles: stale), token: dispatch)
            #expect(refused.status == 422 && refused.error?.field == "vehicles[0].id", "\(refused.text)")
            // A saved vehicle sent without its price keeps it.
            var samePrice = after.vehicles
            samePrice[1].priceCents = nil
            let kept = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(vehicles: samePrice), token: dispatch)
            #expect(try kept.decode(Order.self).vehicles[1].priceCents == 40_050, "\(kept.text)")
            // Yesterday's revenue alone cannot say which of several vehicles earns it.
            let revenueOnly = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(revenueCents: 1), token: dispatch)
            #expect(revenueOnly.status == 422 && revenueOnly.error?.field == "revenue_cents", "\(revenueOnly.text)")

            // On the truck, the load is what was signed for: its vehicles' details change, none leaves or joins.
            let current = try await api.call(.dispatchOrder, order.id.rawValue, token: dispatch).decode(Order.self)
            let picked = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: .pickedUp), token: dispatch)
            #expect(picked.status == 200, "\(picked.text)")
            let fewer = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(vehicles: Array(current.vehicles.prefix(2))),
                                           token: dispatch)
            #expect(fewer.status == 409 && fewer.errorCode == "invalid_transition" && fewer.error?.field == "vehicles", "\(fewer.text)")
            var recoloured = current.vehicles
            recoloured[2].color = "Red"
            let details = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(vehicles: recoloured), token: dispatch)
            #expect(try details.status == 200 && details.decode(Order.self).vehicles[2].color == "Red", "\(details.text)")
        }
    }

    @Test("yesterday's one-vehicle JSON: created, edited (the vehicle keeps its id, price follows the revenue) and answered with `vehicle`",
          arguments: TestBackend.available)
    func yesterdaysShape(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let json = ["Content-Type": "application/json"]
        try await server.run { api in
            let created = try await api.call(.dispatchCreateOrder, body: """
                {"number":"OLD-1","vehicle":{"year":2019,"make":"Honda","model":"Civic","vin":"","color":"Blue"},
                 "pickup":{"name":"","address":"1 Harbor Rd","contact_name":"","contact_phone":""},
                 "delivery":{"name":"","address":"9 Main St","contact_name":"","contact_phone":""},
                 "revenue_cents":90000,"payment_terms":"COD"}
                """, token: dispatch, headers: json)
            #expect(created.status == 201, "\(created.text)")
            let order = try created.decode(Order.self)
            #expect(order.vehicles.count == 1 && order.vehicle.priceCents == 90_000 && order.vehicle.operable)
            // Yesterday's error names yesterday's field.
            let badVIN = try await api.call(.dispatchCreateOrder, body: """
                {"number":"OLD-2","vehicle":{"make":"Honda","model":"Civic","vin":"XYZ","color":""},
                 "pickup":{"name":"","address":"1 Harbor Rd","contact_name":"","contact_phone":""},
                 "delivery":{"name":"","address":"9 Main St","contact_name":"","contact_phone":""},"revenue_cents":1}
                """, token: dispatch, headers: json)
            #expect(badVIN.status == 422 && badVIN.error?.field == "vehicle.vin", "\(badVIN.text)")
            // An old edit: a new color and revenue; the vehicle keeps its id and lot, and its price is the revenue.
            var marked = order.vehicles
            marked[0].lotNumber = "L-1"
            marked[0].operable = false
            _ = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(vehicles: marked), token: dispatch)
            let edited = try await api.call(.dispatchUpdateOrder, order.id.rawValue, body: """
                {"vehicle":{"year":2019,"make":"Honda","model":"Civic","vin":"","color":"Red"},"revenue_cents":95000}
                """, token: dispatch, headers: json)
            #expect(edited.status == 200, "\(edited.text)")
            let after = try edited.decode(Order.self)
            #expect(after.vehicle.color == "Red" && after.vehicle.id == order.vehicle.id && after.vehicle.lotNumber == "L-1")
            #expect(!after.vehicle.operable, "yesterday's client cannot say a vehicle runs, so it leaves it as it was")
            #expect(after.revenueCents == 95_000 && after.vehicle.priceCents == 95_000)
            // A price and a revenue that disagree are refused, however often sent (not taken one way, then the other).
            for _ in 0..<2 {
                let torn = try await api.call(.dispatchUpdateOrder, order.id.rawValue, body: """
                    {"vehicle":{"make":"Honda","model":"Civic","price_cents":70000},"revenue_cents":90000}
                    """, token: dispatch, headers: json)
                #expect(torn.status == 422 && torn.error?.field == "revenue_cents", "\(torn.text)")
            }
            let object = try JSONSerialization.jsonObject(with: Data(edited.text.utf8)) as? [String: Any] ?? [:]
            let vehicle = object["vehicle"] as? [String: Any] ?? [:]
            #expect(vehicle["make"] as? String == "Honda" && vehicle["color"] as? String == "Red" && vehicle["vin"] as? String == "")
        }
    }

    @Test("an order file lists a load's vehicles on lines of the same number; a vehicle's problem is its own line's, a contradiction is named",
          arguments: TestBackend.available)
    func importedLoads(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let csv = ["Content-Type": "text/csv"]
        let header = "number,year,make,model,vin,type,inoperable,lot,pickup_address,delivery_address,revenue,payment_terms\n"
        try await server.run { api in
            let bad = header + """
                AU-1,2020,Honda,Accord,,sedan,,LOT 1,"1 Auction Way, Matteson, IL","9 Main St, Indianapolis, IN",380,Net 15
                AU-1,2018,Chevrolet,Silverado,NOT-A-VIN,pickup,yes,LOT 2,,,525,
                AU-1,2022,Kia,Sportage,,suv,,LOT 3,"2 Other Rd, Gary, IN",,380,
                AU-1,2022,Kia,Soul,,boat,,LOT 4,,,380,
                """
            let refused = try await api.call(.dispatchImportOrders, body: bad, token: dispatch, headers: csv)
            #expect(refused.status == 422, "\(refused.text)")
            // Each problem on the line that has it: the VIN of line 3, the second pickup address on line 4, the type on line 5.
            let lines = refused.text
            #expect(lines.contains("\"line\":3") && lines.contains("\"field\":\"vin\""), "\(lines)")
            #expect(lines.contains("\"line\":4") && lines.contains("pickup_address") && lines.contains("Line 2 starts order AU-1"), "\(lines)")
            #expect(lines.contains("\"line\":5") && lines.contains("\"field\":\"type\""), "\(lines)")
            let good = header + """
                AU-1,2020,Honda,Accord,,sedan,,LOT 1,"1 Auction Way, Matteson, IL","9 Main St, Indianapolis, IN",380,Net 15
                AU-1,2018,Chevrolet,Silverado,,pickup,yes,LOT 2,,,525,
                AU-1,2022,Kia,Sportage,,suv,,LOT 3,"1 Auction Way, Matteson, IL",,380,Net 15
                AU-2,2015,Mazda,CX-5,,,,,"Portland, OR","Reno, NV",900,COD
                """
            let imported = try await api.call(.dispatchImportOrders, body: good, token: dispatch, headers: csv)
            #expect(imported.status == 201 || imported.status == 200, "\(imported.text)")
            let orders = try await api.call(.dispatchOrders, token: dispatch).decode(Items<Order>.self).items
            let load = try #require(orders.first { $0.number == "AU-1" })
            #expect(load.vehicles.map(\.lotNumber) == ["LOT 1", "LOT 2", "LOT 3"] && load.revenueCents == 128_500)
            #expect(load.vehicles.map(\.operable) == [true, false, true] && load.paymentTerms == "Net 15")
            #expect(orders.first { $0.number == "AU-2" }?.vehicles.count == 1)
        }
    }

    @Test("each vehicle is inspected at each stop: the first on the truck picks the load up (it then stays, whatever dispatch does), the stop's bill of lading goes once all are, the last delivered delivers it; yesterday's app inspects the first",
          arguments: TestBackend.available)
    func inspectedEach(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let (dispatch, driver) = (carrier.dispatcher.accessToken, carrier.driver.accessToken)
        try await server.run { api in
            let order = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "INS-3", tripID: carrier.trips[0][0].id, vehicles: [
                    Vehicle(make: "Honda", model: "Accord", priceCents: 100), Vehicle(make: "Ford", model: "F-150", priceCents: 100),
                    Vehicle(make: "Kia", model: "Soul", priceCents: 100),
                ], pickup: Self.pickup, delivery: Self.delivery), token: dispatch).decode(Order.self)
            let ids = order.vehicles.compactMap(\.id)
            func mails() async throws -> [String] {
                try await server.store.read { db in
                    try await db.query("SELECT kind FROM document_mail WHERE order_id = \(order.id) ORDER BY created_at").map { try $0.string("kind") }
                }
            }
            // The first vehicle on the truck picks the load up; the stop's bill of lading waits for the others.
            try await api.completeInspection(of: order.id, vehicle: ids[0], .pickup, token: driver)
            var now = try await api.call(.order, order.id.rawValue, token: driver).decode(Order.self)
            #expect(now.status == .pickedUp)
            #expect(try await mails() == [])
            // With a vehicle on the truck the load can be neither cancelled nor given to another trip, nor that vehicle taken off.
            let cancel = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: .cancelled), token: dispatch)
            #expect(cancel.status == 409, "\(cancel.text)")
            let other = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(number: "T-OTHER", origin: "Matteson, IL", destination: "Gary, IN", revenueCents: 0, miles: 30), token: dispatch).decode(Trip.self)
            let moved = try await api.call(.dispatchAssignOrder, order.id.rawValue, json: AssignOrderRequest(tripID: other.id), token: dispatch)
            #expect(moved.status == 409, "\(moved.text)")
            let dropLoaded = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                vehicles: Array(now.vehicles.dropFirst())), token: dispatch)
            #expect(dropLoaded.status == 409 && dropLoaded.error?.field == "vehicles", "\(dropLoaded.text)")
            // A vehicle has one inspection per stop; another order's vehicle is no vehicle of this one.
            let twice = try await api.call(.saveInspection, ID<Inspection>().rawValue, json: SaveInspectionRequest(
                orderID: order.id, kind: .pickup, vehicleID: ids[0]), token: driver)
            #expect(twice.status == 409 && twice.errorCode == "already_exists", "\(twice.text)")
            let stranger = try await api.call(.saveInspection, ID<Inspection>().rawValue, json: SaveInspectionRequest(
                orderID: order.id, kind: .pickup, vehicleID: ID()), token: driver)
            #expect(stranger.status == 422 && stranger.error?.field == "vehicle_id", "\(stranger.text)")
            // The second is loaded; the third is not ready and dispatch takes it off: the pickup is done, its bill of lading goes once.
            try await api.completeInspection(of: order.id, vehicle: ids[1], .pickup, token: driver)
            #expect(try await mails() == [])
            now = try await api.call(.dispatchOrder, order.id.rawValue, token: dispatch).decode(Order.self)
            let dropWaiting = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                vehicles: Array(now.vehicles.prefix(2))), token: dispatch)
            #expect(dropWaiting.status == 200, "\(dropWaiting.text)")
            #expect(try await mails() == ["pickup"])
            let inspections = try await api.call(.orderInspections, order.id.rawValue, token: driver).decode(Items<Inspection>.self).items
            #expect(Set(inspections.compactMap(\.vehicleID)) == Set(ids.prefix(2)) && inspections.allSatisfy { $0.completedAt != nil })
            // Delivered with the last of its vehicles.
            try await api.completeInspection(of: order.id, vehicle: ids[0], .delivery, token: driver)
            #expect(try await api.call(.order, order.id.rawValue, token: driver).decode(Order.self).status == .pickedUp)
            try await api.completeInspection(of: order.id, vehicle: ids[1], .delivery, token: driver)
            #expect(try await api.call(.order, order.id.rawValue, token: driver).decode(Order.self).status == .delivered)
            #expect(try await mails() == ["pickup", "delivery"])

            // Yesterday's app names no vehicle: on a one-vehicle order its inspection is that vehicle's.
            let single = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "INS-1", tripID: carrier.trips[0][0].id, vehicle: Vehicle(make: "Mazda"), pickup: Self.pickup, delivery: Self.delivery,
                revenueCents: 500), token: dispatch).decode(Order.self)
            let old = try await api.completeInspection(of: single.id, .pickup, token: driver)
            #expect(old.vehicleID == single.vehicle.id)
            #expect(try await api.call(.order, single.id.rawValue, token: driver).decode(Order.self).status == .pickedUp)
        }
    }

    @Test("the order page marks damage new at delivery against the same vehicle's pickup, and names the signer")
    func newDamagePerVehicle() throws {
        let (now, first, second) = (Date(), ID<Vehicle>(), ID<Vehicle>())
        var order = Order(id: ID(), number: "NEW-1", tripID: nil, driverID: nil, vehicle: Vehicle(), pickup: Self.pickup, delivery: Self.delivery,
                          status: .delivered, actualPickupDate: now, actualDeliveryDate: now, pickupETA: nil, deliveryETA: nil,
                          revenueCents: 2, paymentTerms: "", version: 1, createdAt: now, updatedAt: now)
        order.vehicles = [Vehicle(id: first, make: "Honda", priceCents: 1), Vehicle(id: second, make: "Kia", priceCents: 1)]
        func inspection(_ kind: Inspection.Kind, _ vehicle: ID<Vehicle>, _ damages: [Damage.Kind]) -> Inspection {
            var made = Inspection(id: ID(), orderID: order.id, driverID: nil, kind: kind,
                                  damages: damages.map { Damage(location: "rear_bumper", type: $0, severity: .minor) },
                                  completedAt: now, createdAt: now, updatedAt: now, vehicleID: vehicle)
            made.signerName = kind == .delivery ? "Dana Receiver" : nil
            return made
        }
        let views = ConsoleOrderPages.inspections([
            inspection(.delivery, second, [.dent]), inspection(.pickup, first, [.dent]), inspection(.delivery, first, [.dent, .scratch]),
            inspection(.pickup, second, []),
        ], of: order)
        #expect(views.map(\.kind) == ["Pickup · vehicle 1 (Honda)", "Pickup · vehicle 2 (Kia)", "Delivery · vehicle 1 (Honda)",
                                       "Delivery · vehicle 2 (Kia)"])
        #expect(views[2].damages.map(\.new) == [false, true], "the Honda's dent was there at pickup; its scratch is new")
        #expect(views[3].damages.map(\.new) == [true], "the Kia had no dent at pickup")
        #expect(views[3].signer == "Dana Receiver" && views[0].signer.isEmpty)
    }

    @Test("orders from before several vehicles per order: their vehicle keeps every field, takes the order's id and earns its revenue",
          arguments: TestBackend.available)
    func migrated(_ backend: TestBackend) async throws {
        let configuration = try await backend.freshConfiguration()
        let database = try await ServerServices.openDatabase(configuration, logger: Logger(label: "test"))
        try await Migrator.migrate(database, now: Date(), upTo: 20)
        let (tenant, order) = (ID<Tenant>(), ID<Order>())
        let now = Date()
        // The row and stored document as the server before wrote them.
        let doc = """
            {"id":"\(order)","number":"OLD-7","vehicle":{"year":2018,"make":"Subaru","model":"Outback","vin":"4S4BSANC5J3212345","color":"Green"},\
            "pickup":{"name":"","address":"1 Harbor Rd","contact_name":"","contact_phone":""},\
            "delivery":{"name":"","address":"9 Main St","contact_name":"","contact_phone":""},"status":"new","revenue_cents":123400,\
            "payment_terms":"","version":1,"created_at":"2026-11-01T00:00:00.000Z","updated_at":"2026-11-01T00:00:00.000Z"}
            """
        try await database.write { db in
            try await db.execute("INSERT INTO tenants (id, name, created_at) VALUES (\(tenant), 'Old Carrier', \(now))")
            try await db.execute("""
                INSERT INTO orders (id, tenant_id, number, vehicle_year, vehicle_make, vehicle_model, vehicle_vin, vehicle_color,
                    pickup_address, delivery_address, status, revenue_cents, created_at, updated_at, doc)
                VALUES (\(order), \(tenant), 'OLD-7', 2018, 'Subaru', 'Outback', '4S4BSANC5J3212345', 'Green', '1 Harbor Rd', '9 Main St',
                    'new', 123400, \(now), \(now), \(doc))
                """)
        }
        await database.close()
        let services = try await ServerServices.make(configuration)
        let migrated = try await services.store.orders.order(order, .dispatch(tenant: tenant))
        let expected = Vehicle(id: ID(order.uuid), year: 2018, make: "Subaru", model: "Outback", vin: "4S4BSANC5J3212345", color: "Green",
                               operable: true, priceCents: 123_400)
        #expect(migrated.vehicles == [expected] && migrated.revenueCents == 123_400)
        // The stored document (what the feed and lists send) reads the same.
        let stored = try #require(try await services.store.read { try await OrderRepository.document(order, .dispatch(tenant: tenant), $0) })
        #expect(try WireJSON.decoder().decode(Order.self, from: Data(stored.utf8)).vehicles == [expected])
        // As clients read it (not through the decoder, which would make up a missing list).
        let raw = try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any] ?? [:]
        let listed = raw["vehicles"] as? [[String: Any]] ?? []
        #expect(listed.count == 1 && listed.first?["price_cents"] as? Int == 123_400 && listed.first?["id"] as? String == order.rawValue,
                "\(stored)")
        #expect((raw["vehicle"] as? [String: Any])?["price_cents"] as? Int == 123_400 && raw["number"] as? String == "OLD-7", "\(stored)")
        // The rebuilt search still finds it by its VIN.
        let found = try await services.store.boardOrders(.init(status: .new, search: "4S4BSANC5J", pickupNewestFirst: false, page: 0, pageSize: 10),
                                                         tenant: tenant)
        #expect(found.map(\.id) == [order])
        await services.database.close()
    }
}
