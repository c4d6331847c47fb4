import Foundation

/// When an inspection can be made and what it takes to pick up or deliver:
/// applied by the server and by the app before a change is queued.
public enum InspectionRules {
    /// A pickup inspection is made (and completed) on an assigned order, a
    /// delivery inspection on a picked-up one.
    public static func inspectable(_ order: Order, kind: Inspection.Kind) -> Refusal? {
        guard order.status != kind.orderStatus else { return nil }
        return Refusal(.invalidTransition,
                       "Order \(order.number) is \(order.status.label); a \(kind.rawValue) inspection cannot be made or completed now.",
                       field: "kind")
    }

    /// A driver picks up or delivers by completing that inspection of every
    /// vehicle: moving the order to `status` before is refused.
    /// `completed` gives the order's completed inspections.
    public static func required(toMark status: OrderStatus, order: Order, completed: [Inspection]) -> Refusal? {
        guard let kind = Inspection.Kind(completing: status) else { return nil }
        let waiting = remaining(order, kind, completed: completed)
        guard !waiting.isEmpty else { return nil }
        let which = order.vehicles.count == 1 ? "the \(kind.rawValue) inspection" : "the \(kind.rawValue) inspection of every vehicle"
        return Refusal(.inspectionRequired, "Complete \(which) of order \(order.number) to mark it \(status.label).", field: "status")
    }

    /// The vehicle an inspection is about: the one it names, or (one from
    /// before vehicles were inspected each) the order's first; nil when the
    /// order no longer has it.
    public static func vehicle(of order: Order, _ id: ID<Vehicle>?) -> Vehicle? {
        guard let id else { return order.vehicles.first }
        return order.vehicles.first { $0.id == id }
    }

    /// The order's vehicles whose inspection of this kind is not completed
    /// yet, in the order's order: the stop is done when none is left.
    public static func remaining(_ order: Order, _ kind: Inspection.Kind, completed: [Inspection]) -> [Vehicle] {
        let done = Set(completed.filter { $0.kind == kind && $0.completedAt != nil }.compactMap { vehicle(of: order, $0.vehicleID)?.id })
        return order.vehicles.filter { vehicle in vehicle.id.map { !done.contains($0) } ?? true }
    }
}
