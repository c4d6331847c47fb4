import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// A trip that runs itself: its revenue follows its orders unless dispatch
/// types it, it gets under way at the first pickup (or when its driver
/// starts it), and it is offered for completion once every vehicle is delivered.
@Suite("A trip that runs itself")
struct TripRunsItselfTests {
    @Test("revenue follows the orders' prices (cancelled ones left out) and pay on the driver's terms follows it; typed by hand it stays until told to follow again", arguments: TestBackend.available)
    func revenueFollowsOrders(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 0, tripsPerDriver: 0)
        try await server.run { api in
            let dispatch = alpha.dispatcher.accessToken
            let driver = try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(
                email: "ana@alpha.example", name: "Ana Ruiz", payType: .percentage, payRate: 2500), token: dispatch).decode(Driver.self)
            let created = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(
                number: "T-RUN", driverID: driver.id, origin: "Dallas, TX", destination: "Denver, CO", miles: 800), token: dispatch)
            #expect(created.status == 201, "\(created.text)")
            let trip = try created.decode(Trip.self)
            #expect(trip.revenueCents == 0 && !trip.revenueSetByHand && created.text.contains("\"revenue_set_by_hand\":false"))
            func current() async throws -> Trip { try await api.call(.dispatchTrip, trip.id.rawValue, token: dispatch).decode(Trip.self) }
            func order(_ number: String, prices: [Int], trip: ID<Trip>?) async throws -> Order {
                let cars = prices.enumerated().map { Vehicle(year: 2020 + $0.offset, make: "Ford", model: "Escape", priceCents: $0.element) }
                let answer = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                    number: number, tripID: trip, vehicles: cars, pickup: Stop(address: "1 Lot Rd, Dallas, TX"),
                    delivery: Stop(address: "2 Dealer Way, Denver, CO")), token: dispatch)
                #expect(answer.status == 201, "\(answer.text)")
                return try answer.decode(Order.self)
            }
            let dealer = try await order("RUN-1", prices: [150_000, 200_000], trip: trip.id)
            var now = try await current()
            #expect(now.revenueCents == 350_000 && now.driverPayCents == 87_500, "25 % of $3,500: \(now)")
            let single = try await order("RUN-2", prices: [100_000], trip: nil)
            #expect(try await api.call(.dispatchAssignOrder, single.id.rawValue, json: AssignOrderRequest(tripID: trip.id), token: dispatch).status == 200)
            now = try await current()
            #expect(now.revenueCents == 450_000 && now.driverPayCents == 112_500)
            // Repriced: the trip follows.
            var repriced = dealer.vehicles
            repriced[1].priceCents = 250_000
            let edit = try await api.call(.dispatchUpdateOrder, dealer.id.rawValue, json: UpdateOrderRequest(vehicles: repriced), token: dispatch)
            #expect(edit.status == 200, "\(edit.text)")
            #expect(try await current().revenueCents == 500_000)
            // Cancelled: it earns nothing.
            #expect(try await api.call(.dispatchUpdateOrder, single.id.rawValue, json: UpdateOrderRequest(status: .cancelled), token: dispatch).status == 200)
            now = try await current()
            #expect(now.revenueCents == 400_000 && now.driverPayCents == 100_000)

            // Typed by hand: the figure stays whatever the orders do, and pay on the terms follows the typed figure.
            let typed = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(revenueCents: 420_000), token: dispatch)
            #expect(try typed.decode(Trip.self).revenueSetByHand && typed.decode(Trip.self).driverPayCents == 105_000, "\(typed.text)")
            _ = try await order("RUN-3", prices: [90_000], trip: trip.id)
            now = try await current()
            #expect(now.revenueCents == 420_000 && now.revenueSetByHand)
            // Both at once is a mistake, said with its field; nothing changes.
            let both = try await api.call(.dispatchUpdateTrip, trip.id.rawValue,
                                          json: UpdateTripRequest(revenueCents: 1, revenueFollowsOrders: true), token: dispatch)
            #expect(both.status == 422 && both.text.contains("\"field\":\"revenue_follows_orders\""), "\(both.text)")
            // Following again: the orders' sum at once.
            let follow = try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(revenueFollowsOrders: true), token: dispatch)
            let following = try follow.decode(Trip.self)
            #expect(!following.revenueSetByHand && following.revenueCents == 490_000 && following.driverPayCents == 122_500, "\(follow.text)")
            // The OpenAPI document says what the fields mean.
            let document = try await api.call(.openAPI).text
            #expect(document.contains("revenue_follows_orders") && document.contains("revenue_set_by_hand") && document.contains("/v1/trips/{id}/start"))
        }
    }

    @Test("the first pickup puts a planned trip under way; its driver may start it before (a replay answers the same), nobody else, and never a finished one", arguments: TestBackend.available)
    func startsItself(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 2)
        try await server.run { api in
            let dispatch = alpha.dispatcher.accessToken
            let (first, second) = (alpha.trips[0][0], alpha.trips[0][1])
            #expect(first.status == .planned)
            // Picked up (here by dispatch, as the driver's inspection does): under way.
            let order = alpha.orders[first.id]![0]
            #expect(try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(status: .pickedUp), token: dispatch).status == 200)
            #expect(try await api.call(.dispatchTrip, first.id.rawValue, token: dispatch).decode(Trip.self).status == .inProgress)

            // One under way at a time from the phone: the driver's other trip waits for its first pickup.
            let driver = alpha.drivers[0].accessToken
            let busy = try await api.call(.startTrip, second.id.rawValue, token: driver)
            #expect(busy.status == 409 && busy.error?.code == .conflict && busy.text.contains("is under way"), "\(busy.text)")
            // The other driver starts theirs ahead of its first pickup, twice: the same trip back.
            let (own, spare) = (alpha.trips[1][0], alpha.trips[1][1])
            let otherDriver = alpha.drivers[1].accessToken
            let started = try await api.call(.startTrip, own.id.rawValue, token: otherDriver)
            #expect(started.status == 200, "\(started.text)")
            let again = try await api.call(.startTrip, own.id.rawValue, token: otherDriver)
            #expect(try started.decode(Trip.self) == again.decode(Trip.self) && again.decode(Trip.self).status == .inProgress)
            // Another driver's trip is not found; dispatch uses its own endpoint.
            #expect(try await api.call(.startTrip, spare.id.rawValue, token: driver).status == 404)
            #expect(try await api.call(.startTrip, spare.id.rawValue, token: dispatch).status == 403)
            // A cancelled trip does not start again.
            #expect(try await api.call(.dispatchUpdateTrip, spare.id.rawValue, json: UpdateTripRequest(status: .cancelled), token: dispatch).status == 200)
            let refused = try await api.call(.startTrip, spare.id.rawValue, token: otherDriver)
            #expect(refused.status == 409 && refused.text.contains("invalid_transition"), "\(refused.text)")
            // Called off, the running one frees the driver to start another.
            #expect(try await api.call(.dispatchUpdateTrip, own.id.rawValue, json: UpdateTripRequest(status: .cancelled), token: dispatch).status == 200)

            // As an offline mutation, exactly once.
            let planned = try await server.store.trips.create(.init(number: "T-MUT", driverID: alpha.driverID(1), origin: "A", destination: "B",
                                                                   miles: 10), tenant: alpha.tenant.id)
            let mutation = Mutation(.startTrip(.init(tripID: planned.id)))
            for _ in 0..<2 {
                let answer = try await api.call(.mutations, json: MutationBatch([mutation]), token: alpha.drivers[1].accessToken)
                let result = try answer.decode(MutationBatchResult.self).results[0]
                #expect(result.outcome == .applied, "\(answer.text)")
            }
            let after = try await server.store.trips.trip(planned.id, alpha.scope)
            #expect(after.status == .inProgress && after.version == planned.version + 1, "started once")
        }
    }

    @Test("every vehicle delivered or gone: the trip is offered for completion")
    func readyToComplete() {
        let trip = Trip(id: ID(), number: "T-1", driverID: ID(), status: .inProgress, startDate: nil, endDate: nil, origin: "A", destination: "B",
                        revenueCents: 0, driverPayCents: 0, miles: 0, version: 1, createdAt: Date(), updatedAt: Date())
        #expect(trip.readyToComplete(.init(loaded: 0, waiting: 0, delivered: 3)))
        #expect(!trip.readyToComplete(.init(loaded: 1, waiting: 0, delivered: 2)), "one still on the truck")
        #expect(!trip.readyToComplete(.init(loaded: 0, waiting: 1, delivered: 2)), "one still to pick up")
        #expect(!trip.readyToComplete(.init(loaded: 0, waiting: 0, delivered: 0)), "everything cancelled: nothing was carried")
        var planned = trip
        planned.status = .planned
        #expect(!planned.readyToComplete(.init(loaded: 0, waiting: 0, delivered: 3)))
    }
}
