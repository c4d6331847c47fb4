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

extension Order {
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
