import Foundation

/// Why an order cannot move to a status: the server answers it as an
/// error, the app refuses the tap before anything is queued.
public enum OrderStatusRefusal: Error, Sendable, Hashable {
    /// The state machine does not allow it.
    case invalidTransition(from: OrderStatus, to: OrderStatus)
    /// `assigned` needs a driver (assign the order or its trip instead).
    case needsDriver
    /// The moment given for a pickup or delivery is not believable.
    case badTime(FieldProblem)
}

/// Why an order's ETAs cannot change as asked: the server answers it as
/// an error, the app refuses before anything is queued.
public enum ETARefusal: Error, Sendable, Hashable {
    /// Delivered or cancelled: its times are history.
    case closed(number: String, status: OrderStatus)
    /// A pickup ETA once the vehicle is on the truck.
    case alreadyPickedUp
    case outOfRange(FieldProblem)

    public var message: String {
        switch self {
        case .closed(let number, let status): return "Order \(number) is \(status.label); its ETAs can no longer change."
        case .alreadyPickedUp: return "The vehicle is already picked up."
        case .outOfRange(let problem): return problem.message
        }
    }

    public var field: String? {
        switch self {
        case .closed: return nil
        case .alreadyPickedUp: return "pickup_eta"
        case .outOfRange(let problem): return problem.field
        }
    }
}

extension Order {
    /// The order with new ETAs (only the ones given change) — the rule the
    /// server applies and the app applies before it queues the change.
    public func applyingETAs(pickup: Date?, delivery: Date?, now: Date) throws(ETARefusal) -> Order {
        guard status.isOpen else { throw .closed(number: number, status: status) }
        var order = self
        if let pickup {
            guard status != .pickedUp else { throw .alreadyPickedUp }
            if let problem = Self.etaProblem(pickup, field: "pickup_eta", now: now) { throw .outOfRange(problem) }
            order.pickupETA = pickup
        }
        if let delivery {
            if let problem = Self.etaProblem(delivery, field: "delivery_eta", now: now) { throw .outOfRange(problem) }
            order.deliveryETA = delivery
        }
        return order
    }

    /// An ETA is a plan: from yesterday (a late update) to a year ahead.
    public static func etaProblem(_ eta: Date, field: String, now: Date) -> FieldProblem? {
        guard eta > now.addingTimeInterval(-86_400), eta < now.addingTimeInterval(366 * 86_400) else {
            return FieldProblem(field, "\(field) must be between yesterday and a year from now.")
        }
        return nil
    }

    /// How far before its lower bound a reported time may be and still be
    /// taken as a clock a little behind (and moved up to the bound).
    public static let clockSlack: TimeInterval = 24 * 3600

    /// The order after moving to `status` — the one rule the server applies
    /// and the app applies on the device before a change is queued. Moving
    /// to the current status is not a transition (nil: nothing to do, so a
    /// replayed tap never fails). Picking up and delivering stamp the actual
    /// dates with `eventTime`; going back to `new` clears driver and trip.
    /// Whether the pickup or delivery inspection is complete is checked by
    /// the caller, which has the inspections.
    public func applying(_ status: OrderStatus, reportedAt: Date?, by actor: Actor, now: Date) throws(OrderStatusRefusal) -> Order? {
        guard status != self.status else { return nil }
        guard self.status.canTransition(to: status, by: actor) else {
            throw .invalidTransition(from: self.status, to: status)
        }
        var order = self
        order.status = status
        switch status {
        case .new:
            order.driverID = nil
            order.tripID = nil
        case .assigned:
            guard driverID != nil else { throw .needsDriver }
        case .pickedUp:
            order.actualPickupDate = try eventTime(reportedAt, of: .pickedUp, now: now)
        case .delivered:
            order.actualDeliveryDate = try eventTime(reportedAt, of: .delivered, now: now)
        case .cancelled:
            break
        }
        return order
    }

    /// When a pickup or delivery happened, from the time a driver's device
    /// reported (nil: now). Device clocks drift, and a change queued offline
    /// arrives late, so the report is kept where it can be true and moved
    /// to the nearest time that can be: never after `now` (it had happened
    /// by the time it was received), never before the order existed, and a
    /// delivery never before its pickup. A time far before that bound is no
    /// clock drift but a wrong value, and refused.
    public func eventTime(_ reported: Date?, of status: OrderStatus, now: Date) throws(OrderStatusRefusal) -> Date {
        guard let reported else { return now }
        let earliest = status == .delivered ? (actualPickupDate ?? createdAt) : createdAt
        if reported >= now { return max(now, earliest) }
        if reported >= earliest { return reported }
        guard reported >= earliest.addingTimeInterval(-Self.clockSlack) else {
            throw .badTime(FieldProblem("occurred_at", status == .delivered && actualPickupDate != nil
                ? "occurred_at is before the vehicle was picked up." : "occurred_at is before the order existed."))
        }
        return earliest
    }
}
