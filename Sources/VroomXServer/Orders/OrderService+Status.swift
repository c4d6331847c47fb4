import Foundation
import VroomXModels

/// An order's status and ETAs: the driver's along the road, and dispatch's.
extension OrderService {
    /// A status change by a driver (along the road) or by dispatch. Moving to
    /// the current status is a no-op, so a replayed tap succeeds; anything
    /// the state machine does not allow is `invalid_transition` and nothing
    /// is written. Picking up and delivering stamp the actual dates with the
    /// moment it happened. A driver picks up or delivers by completing that
    /// inspection; asked directly without one, it is `inspection_required`.
    public func updateStatus(_ id: ID<Order>, to status: OrderStatus, occurredAt: Date?, _ scope: Scope) async throws -> Order {
        try await updateStatus(id, to: status, occurredAt: occurredAt, scope, asHistory: false)
    }

    /// `asHistory` is for history the server records itself (the demo
    /// carrier's finished trips): no inspections, and the dates as given.
    /// Never for a request.
    func updateStatus(_ id: ID<Order>, to status: OrderStatus, occurredAt: Date?, _ scope: Scope,
                      asHistory: Bool) async throws -> Order {
        try await store.write(tenant: scope.tenant) { tx in
            guard case let (order, trip)? = try await lockWithTrip(id, scope, tx) else { throw AppError.notFound("Order") }
            if order.status != status { try Self.checkTripCarries(trip, to: status) }
            return try await changeStatus(order, to: status, occurredAt: occurredAt, by: scope.actor, asHistory: asHistory, tx)
        }
    }

    /// An order about to change status, locked in the one order every
    /// status change of trips and orders takes rows: the trip, then its
    /// orders, then a driver. A trip's cancellation or completion (which
    /// locks the trip) and a pickup or delivery of one of its vehicles thus
    /// happen one after the other, never both on what the other saw before.
    func lockWithTrip(_ id: ID<Order>, _ scope: Scope, _ tx: TenantTransaction) async throws -> (Order, Trip?)? {
        guard let seen = try await OrderRepository.find(id, scope, tx.db) else { return nil }
        var trip: Trip?
        if let tripID = seen.tripID { trip = try await TripRepository.lock(tripID, .dispatch(tenant: scope.tenant), tx.db) }
        guard let order = try await OrderRepository.find(id, scope, locking: true, tx.db) else { return nil }
        // Moved to another trip meanwhile: the whole write runs again, with that trip.
        guard order.tripID == seen.tripID else { throw WriteConflict() }
        return (order, trip)
    }

    /// Vehicles are picked up and delivered on a trip that is planned or
    /// under way; a cancelled or completed trip carries nothing more.
    static func checkTripCarries(_ trip: Trip?, to status: OrderStatus) throws {
        guard status == .pickedUp || status == .delivered, let trip, !trip.status.isOpen else { return }
        throw AppError(409, .invalidTransition,
                       "Trip \(trip.number) is \(trip.status.label); its vehicles are no longer picked up or delivered.", field: "status")
    }

    /// Moves an order by the shared rule (`Order.applying`), saves it, and
    /// tells the driver when dispatch moved it. A driver's pickup or
    /// delivery also needs its completed inspection.
    func changeStatus(_ current: Order, to status: OrderStatus, occurredAt: Date?, by actor: Actor,
                      asHistory: Bool = false, _ tx: TenantTransaction) async throws -> Order {
        var order: Order
        do throws(OrderStatusRefusal) {
            guard let moved = try current.applying(status, reportedAt: asHistory ? nil : occurredAt, by: actor, now: tx.now) else {
                return current
            }
            order = moved
        } catch {
            throw AppError(error)
        }
        if asHistory, let occurredAt {
            if status == .pickedUp { order.actualPickupDate = min(occurredAt, tx.now) }
            if status == .delivered { order.actualDeliveryDate = min(occurredAt, tx.now) }
        }
        if actor == .driver, !asHistory, Inspection.Kind(completing: status) != nil {
            let inspections = try await InspectionRepository.of(current.id, tx)
            if let refusal = InspectionRules.required(toMark: status, order: current, completed: inspections) {
                throw AppError(refusal)
            }
        }
        let previousDriver = current.driverID
        let saved = try await save(order, from: current, tx)
        if actor == .dispatcher, let driver = saved.driverID ?? previousDriver {
            try await store.notifications.notify(driver, .orderStatus(saved, trip: saved.tripID ?? current.tripID), tx)
        }
        return saved
    }

    /// New ETAs for an order. Only the fields given change. With a
    /// `baseVersion`, an ETA that someone else changed after that version to
    /// a different value is a `conflict` (the caller sees the server's
    /// value) rather than silently overwritten; without one, the last writer
    /// wins for that field.
    public func updateETA(_ id: ID<Order>, pickup: Date?, delivery: Date?, expected: ETAExpectation? = nil, baseVersion: Int? = nil,
                          _ scope: Scope) async throws -> Order {
        guard pickup != nil || delivery != nil else {
            throw AppError.validation("pickup_eta", "Give pickup_eta, delivery_eta or both.")
        }
        return try await store.write(tenant: scope.tenant) { tx in
            guard let current = try await OrderRepository.find(id, scope, tx.db) else { throw AppError.notFound("Order") }
            let order: Order
            do throws(ETARefusal) {
                order = try current.applyingETAs(pickup: pickup, delivery: delivery, now: tx.now)
            } catch {
                throw AppError(error)
            }
            if let expected {
                // What the driver saw is what counts; the version rule below is for clients that only send a base version.
                if pickup != nil, let saw = expected.pickupETA, saw != current.pickupETA {
                    throw AppError(409, .conflict, "Dispatch changed the pickup ETA since you last saw this order.", field: "pickup_eta")
                }
                if delivery != nil, let saw = expected.deliveryETA, saw != current.deliveryETA {
                    throw AppError(409, .conflict, "Dispatch changed the delivery ETA since you last saw this order.", field: "delivery_eta")
                }
            } else if let baseVersion, baseVersion < current.version {
                let versions = try await OrderRepository.fieldVersions(id, tx)
                if let pickup, versions.pickupETA > baseVersion, current.pickupETA != pickup {
                    throw AppError(409, .conflict, "Dispatch changed the pickup ETA since you last saw this order.", field: "pickup_eta")
                }
                if let delivery, versions.deliveryETA > baseVersion, current.deliveryETA != delivery {
                    throw AppError(409, .conflict, "Dispatch changed the delivery ETA since you last saw this order.", field: "delivery_eta")
                }
            }
            guard order != current else { return current }
            return try await save(order, from: current, tx)
        }
    }

    static func checkETA(_ eta: Date, field: String, now: Date) throws {
        if let problem = Order.etaProblem(eta, field: field, now: now) { throw AppError.validation(problem.field, problem.message) }
    }
}
