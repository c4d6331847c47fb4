import Foundation
import VroomXModels

/// Which trip and driver an order goes with.
extension OrderService {
    /// Puts an order on a trip (it follows the trip's driver), gives it to a
    /// driver directly (off any trip), or with neither takes it back to
    /// unassigned. Only orders not yet picked up can move.
    public func assign(_ id: ID<Order>, _ request: AssignOrderRequest, tenant: ID<Tenant>) async throws -> Order {
        try await assign(id, request, tenant: tenant, expecting: .anywhere).order
    }

    /// Takes an order off a trip, if it is still on that trip when the write
    /// happens (someone may have moved it meanwhile: then it stays where they put it).
    public func remove(_ id: ID<Order>, from trip: ID<Trip>, tenant: ID<Tenant>) async throws -> Order {
        try await assign(id, AssignOrderRequest(), tenant: tenant, expecting: .onTrip(trip)).order
    }

    /// Puts an order that waits on no trip and for no driver onto `trip` (a
    /// trip page's Add). One put on another trip or given to a driver
    /// meanwhile stays there, and the refusal names where: an order is never
    /// taken from where it is unseen. `added` is false when the order was on `trip` already.
    public func add(_ id: ID<Order>, to trip: ID<Trip>, tenant: ID<Tenant>) async throws -> (order: Order, added: Bool) {
        let (order, changed) = try await assign(id, AssignOrderRequest(tripID: trip), tenant: tenant, expecting: .onNoTripBut(trip))
        return (order, changed)
    }

    /// Where the order must be when the write happens.
    private enum Expected {
        case anywhere
        case onTrip(ID<Trip>)
        /// On no trip and with no driver (or on this trip already: then nothing changes).
        case onNoTripBut(ID<Trip>)
    }

    /// The order as it is now, and whether this changed it.
    private func assign(_ id: ID<Order>, _ request: AssignOrderRequest, tenant: ID<Tenant>,
                        expecting expected: Expected) async throws -> (order: Order, changed: Bool) {
        let scope = Scope.dispatch(tenant: tenant)
        return try await store.write(tenant: tenant) { tx in
            guard let current = try await OrderRepository.find(id, scope, tx.db) else { throw AppError.notFound("Order") }
            switch expected {
            case .anywhere:
                break
            case .onTrip(let trip):
                if current.tripID != trip { throw AppError.notFound("Order on this trip") }
            case .onNoTripBut(let trip):
                if current.tripID == trip { return (current, false) }
                if let other = current.tripID {
                    let trip = try await TripRepository.find(other, scope, tx.db).map { "trip \($0.number)" } ?? "another trip"
                    throw AppError.conflict("Order \(current.number) is on \(trip) now. To move it here, take it off that trip first.")
                }
                if let driver = current.driverID {
                    let name = try await DriverRepository.find(driver, tenant: tenant, tx.db)?.name ?? "a driver"
                    throw AppError.conflict("Order \(current.number) is assigned to \(name) now. To move it here, take it from them on the order's page first.")
                }
            }
            guard current.status.isWaiting else {
                throw AppError.conflict("Order \(current.number) is \(current.status.label) and cannot be reassigned.")
            }
            var order = current
            let previousDriver = current.driverID
            var trip: Trip?
            if let tripID = request.tripID {
                guard let found = try await TripRepository.lock(tripID, scope, tx.db) else {
                    throw AppError(422, .validationFailed, "No such trip in this carrier.", field: "trip_id")
                }
                if let driverID = request.driverID, driverID != found.driverID {
                    throw AppError.validation("driver_id", "An order on a trip goes with the trip's driver.")
                }
                try Self.checkTakesOrders(found)
                if let driver = found.driverID { _ = try await store.people.assignableDriver(driver, tenant: tenant, tx.db) }
                trip = found
                order.tripID = found.id
                order.driverID = found.driverID
            } else {
                if let driverID = request.driverID { _ = try await store.people.assignableDriver(driverID, tenant: tenant, tx.db) }
                order.tripID = nil
                order.driverID = request.driverID
            }
            order.status = order.driverID == nil ? .new : .assigned
            guard order != current else { return (current, false) }
            let saved = try await save(order, from: current, tx)
            if let driver = saved.driverID, driver != previousDriver {
                try await store.notifications.notify(driver, .orderAssigned(saved, trip: trip), tx)
            }
            if let previousDriver, previousDriver != saved.driverID {
                try await store.notifications.notify(previousDriver, .orderTakenOff(saved, trip: current.tripID), tx)
            }
            return (saved, true)
        }
    }

    /// Orders go on trips that are still to run or under way, never on a
    /// finished or cancelled one (its pay and revenue are settled).
    static func checkTakesOrders(_ trip: Trip) throws(AppError) {
        guard trip.status.isOpen else {
            throw AppError.validation("trip_id", "Trip \(trip.number) is \(trip.status.label); orders go on planned trips or trips under way.")
        }
    }
}
