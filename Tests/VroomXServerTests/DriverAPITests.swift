import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

@Suite("Driver and dispatch API")
struct DriverAPITests {
    @Test("a driver picks up and delivers by completing inspections; the state machine refuses shortcuts",
          arguments: TestBackend.available)
    func orderStatusMachine(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let token = carrier.driver.accessToken
        try await server.run { api in
            let skip = try await api.call(.updateOrderStatus, order.id.rawValue, json: UpdateOrderStatusRequest(status: .delivered), token: token)
            #expect(skip.status == 409)
            #expect(skip.errorCode == "invalid_transition")
            // Picking up is completing the pickup inspection; asked directly, it is refused.
            let direct = try await api.call(.updateOrderStatus, order.id.rawValue, json: UpdateOrderStatusRequest(status: .pickedUp), token: token)
            #expect(direct.status == 409)
            #expect(direct.errorCode == "inspection_required")
            #expect(try await api.call(.saveInspection, ID<Inspection>().rawValue, json: SaveInspectionRequest(orderID: order.id, kind: .delivery),
                                       token: token).errorCode == "invalid_transition")
            #expect(try await server.store.orders.order(order.id, carrier.scope).status == .assigned)

            server.clock.advance(by: 1800)  // the order has existed half an hour
            let pickupTime = server.clock.now.addingTimeInterval(-600)
            let pickup = try await api.completeInspection(of: order.id, .pickup, token: token, at: pickupTime)
            #expect(pickup.completedAt.map(WireTime.milliseconds) == WireTime.milliseconds(pickupTime))
            let picked = try await api.call(.order, order.id.rawValue, token: token).decode(Order.self)
            #expect(picked.status == .pickedUp)
            #expect(picked.actualPickupDate.map(WireTime.milliseconds) == WireTime.milliseconds(pickupTime))
            #expect(picked.version == order.version + 1)
            // A replayed tap or completion is a no-op, not an error.
            let again = try await api.call(.updateOrderStatus, order.id.rawValue, json: UpdateOrderStatusRequest(status: .pickedUp), token: token)
            #expect(again.status == 200)
            #expect(try again.decode(Order.self).version == picked.version)
            let completedAgain = try await api.call(.completeInspection, pickup.id.rawValue, token: token)
            #expect(try completedAgain.decode(Inspection.self) == pickup)
            #expect(try await api.call(.order, order.id.rawValue, token: token).decode(Order.self) == picked)
            // Drivers cannot cancel or go back.
            #expect(try await api.call(.updateOrderStatus, order.id.rawValue, json: UpdateOrderStatusRequest(status: .cancelled),
                                       token: token).errorCode == "invalid_transition")
            #expect(try await api.call(.updateOrderStatus, order.id.rawValue, json: UpdateOrderStatusRequest(status: .delivered),
                                       token: token).errorCode == "inspection_required")

            let delivery = try await api.readyInspection(of: order.id, .delivery, token: token)
            // A time days before the pickup is no clock drift but a wrong value.
            let beforePickup = try await api.call(.completeInspection, delivery.rawValue,
                                                  json: CompleteInspectionRequest(occurredAt: pickupTime.addingTimeInterval(-3 * 86_400)), token: token)
            #expect(beforePickup.status == 422 && beforePickup.error?.field == "occurred_at")
            #expect(try await server.store.inspections.inspection(delivery, carrier.scope).completedAt == nil, "a refused completion changes nothing")
            // A phone whose clock runs an hour fast still delivers: it happened by the time the server heard of it.
            let future = try await api.call(.completeInspection, delivery.rawValue,
                                            json: CompleteInspectionRequest(occurredAt: server.clock.now.addingTimeInterval(3600)), token: token)
            #expect(future.status == 200)
            let delivered = try await api.call(.order, order.id.rawValue, token: token).decode(Order.self)
            #expect(delivered.status == .delivered)
            #expect(delivered.actualDeliveryDate.map(WireTime.milliseconds) == WireTime.milliseconds(server.clock.now))
            // Delivered orders take no more ETAs.
            #expect(try await api.call(.updateOrderETA, order.id.rawValue, json: UpdateETARequest(deliveryETA: server.clock.now),
                                       token: token).status == 409)
        }
    }

    @Test("ETAs, expenses and notifications from the driver's side", arguments: TestBackend.available)
    func driverWork(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 2)
        let trip = carrier.trips[0][0]
        let order = carrier.orders[trip.id]![1]
        let token = carrier.driver.accessToken
        try await server.run { api in
            let trips = try await api.call(.trips, token: token).decode(Items<Trip>.self).items
            #expect(trips.map(\.id) == [carrier.trips[0][1].id, carrier.trips[0][0].id]) // start_date descending

            let eta = server.clock.now.addingTimeInterval(7200)
            let updated = try await api.call(.updateOrderETA, order.id.rawValue, json: UpdateETARequest(pickupETA: eta), token: token)
                .decode(Order.self)
            #expect(updated.pickupETA.map(WireTime.milliseconds) == WireTime.milliseconds(eta))
            #expect(try await api.call(.updateOrderETA, order.id.rawValue, json: UpdateETARequest(), token: token).status == 422)

            // An expense with a client-chosen id; sending it again returns the same expense.
            let request = CreateExpenseRequest(id: ID(), tripID: trip.id, category: .lodging, amountCents: 8_950,
                                               date: LocalDate(server.clock.now), notes: "Motel")
            let created = try await api.call(.createExpense, json: request, token: token)
            #expect(created.status == 201)
            let replay = try await api.call(.createExpense, json: request, token: token)
            #expect(try replay.decode(Expense.self) == created.decode(Expense.self))
            var changed = request
            changed.amountCents = 1
            #expect(try await api.call(.createExpense, json: changed, token: token).errorCode == "already_exists")
            #expect(try await api.call(.createExpense, json: CreateExpenseRequest(tripID: trip.id, category: .fuel, amountCents: -5,
                                                                                 date: LocalDate(server.clock.now)), token: token).status == 422)
            let expenses = try await api.call(.tripExpenses, trip.id.rawValue, token: token).decode(Items<Expense>.self).items
            #expect(expenses.count == 2)
            #expect(try await api.call(.deleteExpense, request.id!.rawValue, token: token).status == 204)
            #expect(try await api.call(.deleteExpense, request.id!.rawValue, token: token).status == 404)

            let notifications = try await api.call(.notifications, token: token).decode(Items<DriverNotification>.self).items
            #expect(notifications.allSatisfy { $0.driverID == carrier.driverID(0) })
            #expect(notifications.map(\.createdAt) == notifications.map(\.createdAt).sorted(by: >))
            let first = try #require(notifications.first)
            let read = try await api.call(.markNotificationRead, first.id.rawValue, token: token).decode(DriverNotification.self)
            server.clock.advance(by: 60)
            let readAgain = try await api.call(.markNotificationRead, first.id.rawValue, token: token).decode(DriverNotification.self)
            #expect(read.readAt != nil)
            #expect(readAgain.readAt == read.readAt)
            let unread = try await api.call(.notifications, query: "unread=true", token: token).decode(Items<DriverNotification>.self).items
            #expect(unread.count == notifications.count - 1)
            #expect(try await api.call(.notifications, query: "limit=0", token: token).errorCode == "invalid_parameter")
        }
    }

    @Test("dispatch assigns work and messages drivers; each notifies the driver", arguments: TestBackend.available)
    func dispatchFlows(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 0)
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            let trip = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(
                number: "T-9", origin: "Reno, NV", destination: "Boise, ID", revenueCents: 400_000, miles: 420), token: dispatch)
                .decode(Trip.self)
            #expect(trip.status == .planned)
            #expect(trip.driverID == nil)
            #expect(try await api.call(.dispatchCreateTrip, json: CreateTripRequest(number: "T-9", origin: "", destination: "",
                                                                                  revenueCents: 0, miles: 0), token: dispatch).status == 409)
            let order = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "O-1", tripID: trip.id, vehicle: Vehicle(year: 2022, make: "Kia", model: "EV6", vin: "KNDC4DLC0N5000001"),
                pickup: Stop(address: "Reno"), delivery: Stop(address: "Boise"), revenueCents: 200_000), token: dispatch).decode(Order.self)
            #expect(order.status == .new)

            // Assigning the trip assigns its orders and tells the driver, with the driver's default pay.
            let assigned = try await api.call(.dispatchAssignTrip, trip.id.rawValue, json: AssignTripRequest(driverID: carrier.driverID(0)),
                                              token: dispatch).decode(Trip.self)
            #expect(assigned.driverID == carrier.driverID(0))
            #expect(assigned.driverPayCents > 0, "a trip made without a driver is paid by the terms of the driver it goes to")
            let first = carrier.drivers[0].accessToken
            let orders = try await api.call(.tripOrders, trip.id.rawValue, token: first).decode(Items<Order>.self).items
            #expect(orders.map(\.status) == [.assigned])
            var inbox = try await api.call(.notifications, token: first).decode(Items<DriverNotification>.self).items
            #expect(inbox.first?.type == .tripAssignment)
            #expect(inbox.first?.data.tripID == trip.id)

            // A status change by dispatch notifies the driver with status_change (past the minute in which
            // notices about the trip gather into the assignment's).
            server.clock.advance(by: 61)
            _ = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: .cancelled), token: dispatch)
            inbox = try await api.call(.notifications, token: first).decode(Items<DriverNotification>.self).items
            #expect(inbox.first?.type == .statusChange)
            #expect(inbox.first?.data.orderID == order.id)

            // Reassigning moves the trip: the first driver no longer sees it, the second does;
            // pay dispatch set by hand stays with the trip.
            _ = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(driverPayCents: 12_345), token: dispatch)
            let moved = try await api.call(.dispatchAssignTrip, trip.id.rawValue, json: AssignTripRequest(driverID: carrier.driverID(1)),
                                           token: dispatch).decode(Trip.self)
            #expect(moved.driverPayCents == 12_345)
            #expect(try await api.call(.trip, trip.id.rawValue, token: first).status == 404)
            let second = carrier.drivers[1].accessToken
            #expect(try await api.call(.trip, trip.id.rawValue, token: second).status == 200)

            // Messages: dispatch_message and urgent only.
            let urgent = try await api.call(.dispatchSendMessage, json: SendMessageRequest(
                driverID: carrier.driverID(1), type: .urgent, title: "Road closed", body: "Take I-80"), token: dispatch)
            #expect(urgent.status == 201)
            #expect(try await api.call(.dispatchSendMessage, json: SendMessageRequest(
                driverID: carrier.driverID(1), type: .tripAssignment, title: "x", body: "y"), token: dispatch).status == 422)
            // A trip with a vehicle on the truck cannot change hands.
            let loaded = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "O-2", tripID: trip.id, vehicle: Vehicle(), pickup: Stop(address: "a"), delivery: Stop(address: "b"),
                revenueCents: 1), token: dispatch).decode(Order.self)
            try await api.completeInspection(of: loaded.id, .pickup, token: second)
            #expect(try await api.call(.dispatchAssignTrip, trip.id.rawValue, json: AssignTripRequest(driverID: carrier.driverID(0)),
                                       token: dispatch).status == 409)
            // Drivers and their pay terms.
            let driver = try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                email: "New.Driver@Example.com", name: "New Driver", payType: .percentage, payRate: 20_000), token: dispatch)
            #expect(driver.error?.field == "pay_rate")
            let created = try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                email: "New.Driver@Example.com", name: "New Driver", payType: .percentage, payRate: 2_000), token: dispatch).decode(Driver.self)
            #expect(created.email == "new.driver@example.com")
            // The new driver is told by email which carrier added them and how to sign in; the refused one got nothing.
            let invitation = try await server.mailbox.message(to: "new.driver@example.com", subject: "invited you")
            #expect(invitation.subject == "Alpha invited you to VroomX")
            #expect(invitation.body.contains("Hello New Driver,") && invitation.body.contains("sign in with this email address: new.driver@example.com"))
            #expect(server.mailbox.sent.filter { $0.to == "new.driver@example.com" }.count == 1)
            #expect(try await api.call(.dispatchDrivers, token: dispatch).decode(Items<Driver>.self).items.count == 3)
        }
    }

    @Test("a JSON body announced larger than the limit is answered 413 before it is sent, not waited for")
    func announcedTooLarge() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        let socket = try await RawSocket.connect(port: live.port)
        defer { socket.close() }
        try await socket.send(RawHTTP.head("POST", Endpoint.createExpense.path, headers: [
            "Authorization": "Bearer \(carrier.driver.accessToken)", "Content-Type": "application/json",
        ], contentLength: 999_999_999_999) + Array("{}".utf8))
        // Without the check the server waits for the body until its body-rate guard closes the connection, unanswered.
        let answer = try await socket.readResponse(timeout: .seconds(60))
        #expect(answer.status == 413 && answer.errorCode == "payload_too_large", "\(answer.status) \(answer.text)")
    }

    @Test("bad input gets its own code in the shared shape, never a 500", arguments: TestBackend.available)
    func badInput(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let token = carrier.driver.accessToken
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        try await server.run { api in
            func check(_ response: APIResponse, _ status: Int, _ code: String, field: String? = nil, _ comment: Comment? = nil) {
                #expect(response.status == status, comment)
                #expect(response.errorCode == code, "\(response.text)")
                if let field { #expect(response.error?.field == field, "\(response.text)") }
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
            }
            check(try await api.call(.createExpense, body: "{not json", token: token), 400, "malformed_json")
            check(try await api.call(.createExpense, body: "", token: token), 400, "malformed_json")
            check(try await api.call(.createExpense, body: "[1,2]", token: token), 422, "validation_failed")
            check(try await api.call(.createExpense, body: #"{"trip_id":"x","category":"fuel","amount_cents":1,"date":"2026-01-01"}"#,
                                     token: token), 422, "validation_failed", field: "trip_id")
            check(try await api.call(.createExpense, body: #"{"trip_id":"\#(order.tripID!.rawValue)","category":"fuel","amount_cents":"ten","date":"2026-01-01"}"#,
                                     token: token), 422, "validation_failed", field: "amount_cents")
            // A number that is not a whole one within range is bad input in a field, not bad JSON.
            for number in ["1.5", "9223372036854775808", "-9223372036854775809", "1e30"] {
                check(try await api.call(.createExpense, body: #"{"trip_id":"\#(order.tripID!.rawValue)","category":"fuel","amount_cents":\#(number),"date":"2026-01-01"}"#,
                                         token: token), 422, "validation_failed", field: "amount_cents", "amount_cents \(number)")
            }
            check(try await api.call(.createExpense, body: #"{"trip_id":"\#(order.tripID!.rawValue)","category":"snacks","amount_cents":1,"date":"2026-01-01"}"#,
                                     token: token), 422, "validation_failed", field: "category")
            check(try await api.call(.createExpense, body: #"{"trip_id":"\#(order.tripID!.rawValue)","category":"fuel","date":"2026-01-01"}"#,
                                     token: token), 422, "validation_failed", field: "amount_cents")
            check(try await api.call(.createExpense, body: #"{"trip_id":"\#(order.tripID!.rawValue)","category":"fuel","amount_cents":1,"date":"2026-02-30"}"#,
                                     token: token), 422, "validation_failed", field: "date")
            check(try await api.call(.updateOrderStatus, order.id.rawValue, body: #"{"status":"delivered","occurred_at":"2026-11-22T10:00:00.1234567Z"}"#,
                                     token: token), 409, "invalid_transition")
            check(try await api.call(.updateOrderStatus, order.id.rawValue, body: #"{"status":"picked_up","occurred_at":"noon"}"#,
                                     token: token), 422, "validation_failed", field: "occurred_at")
            check(try await api.call(.order, "not-a-uuid", token: token), 400, "invalid_parameter", field: "id")
            check(try await api.call(.order, UUID().uuidString, token: token), 404, "not_found")
            check(try await api.call(.createExpense, json: CreateExpenseRequest(tripID: ID(), category: .fuel, amountCents: 1,
                                                                               date: LocalDate(Date())), token: token), 404, "not_found")
            check(try await api.call(.createExpense, body: "{}", token: token, headers: ["Content-Type": "text/plain"]), 415, "unsupported_media_type")
            let huge = #"{"notes":""# + String(repeating: "x", count: 300_000) + #""}"#
            check(try await api.call(.createExpense, body: huge, token: token), 413, "payload_too_large")
            check(try await api.call(.trips), 401, "missing_token")
            check(try await api.call(.trips, headers: ["Authorization": "Basic abc"]), 401, "invalid_token")
            check(try await api.call(.trips, token: "not.a.jwt"), 401, "invalid_token")
            check(try await api.raw(.get, "/v1/unknown"), 404, "route_not_found")
            let wrongMethod = try await api.raw(.put, "/v1/trips")
            check(wrongMethod, 405, "method_not_allowed")
            #expect(wrongMethod.headers[.allow] == "GET")
            // A fixed segment beside a placeholder (`/orders/import` beside `/orders/{id}`) allows its own methods only.
            let importRead = try await api.raw(.get, "/v1/dispatch/orders/import")
            check(importRead, 405, "method_not_allowed")
            #expect(importRead.headers[.allow] == "POST", "\(importRead.headers[.allow] ?? "none")")
            // HEAD answers as GET does, without the body.
            let head = try await api.raw(.head, "/healthz")
            #expect(head.status == 200 && head.body.isEmpty && head.headers[.contentType] == "application/json; charset=utf-8")
            #expect(try await api.raw(.head, "/v1/trips", headers: ["Authorization": "Bearer \(token)"]).status == 200)
            #expect(try await api.raw(.head, "/v1/trips").status == 401)
            check(try await api.call(.sendCode, json: SendCodeRequest(email: "not an email")), 422, "validation_failed", field: "email")
            check(try await api.call(.verifyCode, json: VerifyCodeRequest(email: "a@b.example", code: "12")), 422, "validation_failed", field: "code")
            check(try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(number: "X", vehicle: Vehicle(vin: "SHORT"),
                                                                                   pickup: Stop(address: "a"), delivery: Stop(address: "b"), revenueCents: 1),
                                     token: carrier.dispatcher.accessToken), 422, "validation_failed", field: "vehicle.vin")
            check(try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(number: "X", vehicle: Vehicle(),
                                                                                   pickup: Stop(address: "  "), delivery: Stop(address: "b"), revenueCents: 1),
                                     token: carrier.dispatcher.accessToken), 422, "validation_failed", field: "pickup.address")
            // Delivered before it is picked up: refused, naming the delivery window.
            let day = LocalDate(Date())
            check(try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "EARLY", vehicle: Vehicle(), pickup: Stop(address: "a", windowStart: day.adding(days: 5)),
                delivery: Stop(address: "b", windowStart: day, windowEnd: day.adding(days: 1)), revenueCents: 1),
                                     token: carrier.dispatcher.accessToken), 422, "validation_failed", field: "delivery.window_end")
            // Open-ended windows are possible whatever their days: a pickup by the 10th, a delivery from the 4th.
            for (pickup, delivery) in [(Stop(address: "a", windowEnd: day.adding(days: 10)), Stop(address: "b", windowStart: day, windowEnd: day.adding(days: 8))),
                                       (Stop(address: "a", windowStart: day.adding(days: 5)), Stop(address: "b", windowStart: day.adding(days: 4)))] {
                #expect(try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                    number: "OPEN-\(UUID().uuidString.prefix(6))", vehicle: Vehicle(), pickup: pickup, delivery: delivery, revenueCents: 1),
                                           token: carrier.dispatcher.accessToken).status == 201)
            }
        }
    }

    @Test("health and the OpenAPI document are public", arguments: TestBackend.available)
    func service(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        try await server.run { api in
            let health = try await api.call(.health).decode(HealthResponse.self)
            #expect(health == HealthResponse(status: "ok", database: backend.rawValue, databaseReachable: true))
            #expect(try await api.call(.openAPI).status == 200)
        }
    }
}
