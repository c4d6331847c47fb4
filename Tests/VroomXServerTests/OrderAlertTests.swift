import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Dispatch is alerted once per order that becomes late or at risk: at once
/// when its own facts say so (the driver's ETA), by the sweep when the
/// calendar or the truck's position does; by email to the carrier's alert
/// address; a window dispatch moves lets a new trouble alert again.
@Suite("Late and at-risk alerts")
struct OrderAlertTests {
    static func alert(_ server: TestServer, _ order: ID<Order>, tenant: ID<Tenant>) async throws -> String? {
        try await server.store.read { try await OrderRepository.alert(of: order, tenant: tenant, $0) }?.text
    }

    @Test("the driver's ETA after the window alerts at once and once, emailed to the alert address; a moved window clears it; the sweep alerts a passed window and a truck too far to make it",
          arguments: TestBackend.available)
    func alertsOnce(_ backend: TestBackend) async throws {
        // At midday: near midnight a truck 11 km from a pickup due today could not make it either (a run at 23:50 UTC alerted it).
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? .current
        let midday = calendar.startOfDay(for: Date()).addingTimeInterval(12 * 3600)
        let server = try await TestServer.make(backend, clock: ManualClock(midday))
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let driver = carrier.driver.accessToken, dispatch = carrier.dispatcher.accessToken
        let tenant = carrier.tenant.id, trip = carrier.trips[0][0].id
        let today = LocalDate(server.clock.now)
        try await server.run { api in
            #expect(try await api.call(.dispatchUpdateCarrierProfile, json: UpdateCarrierProfileRequest(alertEmail: "ops@alpha.example"),
                                       token: dispatch).status == 200)
            #expect(try await api.call(.dispatchUpdateCarrierProfile, json: UpdateCarrierProfileRequest(alertEmail: "not an address"),
                                       token: dispatch).errorCode == "validation_failed")
            func order(_ number: String, pickupDay: LocalDate, deliveryDay: LocalDate, pickupAt: GeoPoint? = nil) async throws -> Order {
                let made = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                    number: number, tripID: trip, vehicle: Vehicle(year: 2022, make: "Kia", model: "Soul", vin: ""),
                    pickup: Stop(address: "Joliet, IL", windowStart: pickupDay, location: pickupAt),
                    delivery: Stop(address: "Gary, IN", windowStart: deliveryDay), revenueCents: 50_000), token: dispatch)
                #expect(made.status == 201, "\(made.text)")
                return try made.decode(Order.self)
            }
            // The driver says the delivery will be two days after its window: alerted at once, by email too.
            let late = try await order("AR-1", pickupDay: today, deliveryDay: today)
            let eta = try await api.call(.updateOrderETA, late.id.rawValue, json: UpdateETARequest(deliveryETA: server.clock.now.addingTimeInterval(2 * 86_400)),
                                         token: driver)
            #expect(eta.status == 200, "\(eta.text)")
            let text = try #require(try await Self.alert(server, late.id, tenant: tenant))
            #expect(text.hasPrefix("Delivery at risk: the driver's ETA") && text.hasSuffix("after the window's last day, \(DayFormat.day(today))"), "\(text)")
            try await waitUntil("the alert is mailed") { server.mailbox.latest(to: "ops@alpha.example") != nil }
            let mail = try #require(server.mailbox.latest(to: "ops@alpha.example"))
            #expect(mail.subject == "Delivery at risk: order AR-1" && mail.body.contains("Order AR-1: Delivery at risk"), "\(mail)")
            // Later still: no second alert.
            _ = try await api.call(.updateOrderETA, late.id.rawValue, json: UpdateETARequest(deliveryETA: server.clock.now.addingTimeInterval(3 * 86_400)),
                                   token: driver)
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.mailbox.sent.filter { $0.to == "ops@alpha.example" }.count == 1)
            // Dispatch gives it three more days: on time, the last alert stays in its story, and a new trouble alerts again.
            let moved = try await api.call(.dispatchUpdateOrder, late.id.rawValue, json: UpdateOrderRequest(
                delivery: Stop(address: "Gary, IN", windowStart: today, windowEnd: today.adding(days: 5))), token: dispatch)
            #expect(moved.status == 200, "\(moved.text)")
            #expect(try await Self.alert(server, late.id, tenant: tenant) == text)
            _ = try await api.call(.updateOrderETA, late.id.rawValue, json: UpdateETARequest(deliveryETA: server.clock.now.addingTimeInterval(7 * 86_400)),
                                   token: driver)
            #expect(try await Self.alert(server, late.id, tenant: tenant) != text)
            try await waitUntil("the second alert is mailed") { server.mailbox.sent.filter { $0.to == "ops@alpha.example" }.count == 2 }

            // The calendar: a pickup whose window ended yesterday; the truck: 3,000 km from a pickup due today.
            let missed = try await order("AR-2", pickupDay: today.adding(days: -1), deliveryDay: today.adding(days: 3))
            let far = try await order("AR-3", pickupDay: today, deliveryDay: today.adding(days: 3), pickupAt: GeoPoint(latitude: 41.5, longitude: -88.1))
            let onTime = try await order("AR-4", pickupDay: today.adding(days: 1), deliveryDay: today.adding(days: 4))
            #expect(try await api.call(.dispatchUpdateTrip, trip.rawValue, json: UpdateTripRequest(status: .inProgress), token: dispatch).status == 200)
            // One fix that jumps a continent away does not alert; two that agree do.
            func fix(_ latitude: Double, _ ago: TimeInterval) -> GeoPosition {
                GeoPosition(latitude: latitude, longitude: -88.1, accuracyMeters: 10, recordedAt: server.clock.now.addingTimeInterval(-ago),
                            speedMetersPerSecond: nil)
            }
            #expect(try await api.call(.recordLocations, json: RecordLocationsRequest(fixes: [fix(41.4, 300), fix(41.5 - 27, 240)]),
                                       token: driver).status == 200)
            _ = try await server.store.orderAlerts.sweep()
            #expect(try await Self.alert(server, far.id, tenant: tenant) == nil, "a single fix far away")
            #expect(try await api.call(.recordLocations, json: RecordLocationsRequest(fixes: [fix(41.5 - 27.01, 60)]), token: driver).status == 200)
            #expect(try await server.store.orderAlerts.sweep() >= 1)
            #expect(try await Self.alert(server, missed.id, tenant: tenant)?.hasPrefix("Pickup late: the window ended") == true)
            let position = try #require(try await Self.alert(server, far.id, tenant: tenant))
            #expect(position.hasPrefix("Pickup at risk: the truck's ETA from its position"), "\(position)")
            #expect(try await Self.alert(server, onTime.id, tenant: tenant) == nil)
            // Swept again: nothing new.
            #expect(try await server.store.orderAlerts.sweep() == 0)
        }
    }

    @Test("the sweep reads the orders due from their indexes: more than a page of them, each carrier's its own, told again only as they get further",
          arguments: TestBackend.available)
    func sweepsTheDue(_ backend: TestBackend) async throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? .current
        let server = try await TestServer.make(backend, clock: ManualClock(calendar.startOfDay(for: Date()).addingTimeInterval(12 * 3600)))
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let today = LocalDate(server.clock.now)
        func request(_ number: String, pickup: Int, delivery: Int) -> CreateOrderRequest {
            CreateOrderRequest(number: number, vehicle: Vehicle(year: 2022, make: "Kia", model: "Soul", vin: ""),
                               pickup: Stop(address: "Joliet, IL", windowStart: today.adding(days: pickup)),
                               delivery: Stop(address: "Gary, IN", windowStart: today.adding(days: delivery)), revenueCents: 50_000)
        }
        // Alpha: 550 pickups that ended yesterday (more than a page of 500) among 550 not due for days; a picked-up
        // order whose delivery ended yesterday; a delivered one whose windows passed (done: never alerted).
        _ = try await server.store.orders.createMany((0..<1_100).map { index in
            index.isMultiple(of: 2) ? request("L-\(index)", pickup: -1, delivery: 3) : request("F-\(index)", pickup: 5, delivery: 8)
        } + [request("P-1", pickup: -3, delivery: -1), request("D-1", pickup: -3, delivery: -1)], tenant: alpha.tenant.id)
        _ = try await server.store.orders.createMany((0..<3).map { request("B-\($0)", pickup: -1, delivery: 3) }, tenant: beta.tenant.id)
        try await server.services.database.write { db in
            for (number, status) in [("P-1", OrderStatus.pickedUp), ("D-1", .delivered)] {
                try await db.execute("""
                    UPDATE orders SET status = \(status), driver_id = \(alpha.driverID(0)), actual_pickup_at = \(server.clock.now),
                    actual_delivery_at = \(status == .delivered ? server.clock.now : nil) WHERE tenant_id = \(alpha.tenant.id) AND number = \(number)
                    """)
            }
        }
        func alert(_ number: String, _ tenant: ID<Tenant>) async throws -> String? {
            let id = try await server.services.database.read { db in
                try await db.first("SELECT id FROM orders WHERE tenant_id = \(tenant) AND number = \(number)")?.id("id", as: Order.self)
            }
            return try await Self.alert(server, try #require(id), tenant: tenant)
        }
        #expect(try await server.store.orderAlerts.sweep() == 550 + 1 + 3)
        #expect(try await alert("L-998", alpha.tenant.id)?.hasPrefix("Pickup late") == true)
        #expect(try await alert("P-1", alpha.tenant.id)?.hasPrefix("Delivery late") == true)
        #expect(try await alert("B-2", beta.tenant.id)?.hasPrefix("Pickup late") == true)
        #expect(try await alert("F-999", alpha.tenant.id) == nil)
        #expect(try await alert("D-1", alpha.tenant.id) == nil)
        #expect(try await server.store.orderAlerts.sweep() == 0, "told already")
        // A page of due orders is read again a while after their ids: one no longer due by then is left out.
        let (late, notDue) = try await server.services.database.read { db in
            (try await db.first("SELECT id FROM orders WHERE tenant_id = \(alpha.tenant.id) AND number = 'L-0'")?.id("id", as: Order.self),
             try await db.first("SELECT id FROM orders WHERE tenant_id = \(alpha.tenant.id) AND number = 'F-1'")?.id("id", as: Order.self))
        }
        let reread = try await server.store.read {
            try await OrderRepository.withAlertRank([try #require(late), try #require(notDue)], dueBy: today.adding(days: 1), tenant: alpha.tenant.id, $0)
        }
        #expect(reread.map(\.order.number) == ["L-0"] && reread.map(\.alerted) == [2], "\(reread.map(\.order.number))")
        #expect(try await server.store.read {
            try await OrderRepository.withAlertRank([try #require(late)], dueBy: today.adding(days: 1), tenant: beta.tenant.id, $0)
        }.isEmpty, "another carrier's")
        // Four days on, Alpha's late pickups are picked up and their deliveries have passed: told again, once. Beta's are
        // still late pickups (told already); the others are due tomorrow, on time.
        server.clock.advance(by: 4 * 86_400)
        try await server.services.database.write { db in
            try await db.execute("""
                UPDATE orders SET status = \(OrderStatus.pickedUp), driver_id = \(alpha.driverID(0)), actual_pickup_at = \(server.clock.now)
                WHERE tenant_id = \(alpha.tenant.id) AND number LIKE 'L-%'
                """)
        }
        #expect(try await server.store.orderAlerts.sweep() == 550)
        #expect(try await alert("L-0", alpha.tenant.id)?.hasPrefix("Delivery late") == true)
        #expect(try await alert("F-1", alpha.tenant.id) == nil)
        #expect(try await server.store.orderAlerts.sweep() == 0)
        if backend == .sqlite {
            let plan = try await server.services.database.read { db in
                try await db.query("EXPLAIN QUERY PLAN " + OrderRepository.dueForAlertQuery(by: today, tenant: alpha.tenant.id))
                    .map { try $0.string("detail") }
            }
            #expect(plan.contains { $0.contains("orders_pickup_due") } && plan.contains { $0.contains("orders_delivery_due") }, "\(plan)")
        }
    }
}
