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

    /// Whether one vehicle's inspection of this kind can be made (and
    /// completed) now. A load is picked up with its first vehicle — from then
    /// on it is on the truck, whatever dispatch does — and its other vehicles
    /// are still inspected at the pickup, one after the other; it is
    /// delivered once every vehicle's delivery inspection is completed.
    public static func inspectable(_ order: Order, kind: Inspection.Kind, vehicle: ID<Vehicle>?, inspections: [Inspection]) -> Refusal? {
        if kind == .pickup, order.status == .pickedUp, let target = self.vehicle(of: order, vehicle)?.id,
           remaining(order, .pickup, completed: inspections).contains(where: { $0.id == target }),
           inspections.contains(where: { $0.kind == .pickup && $0.completedAt != nil }) {
            return nil
        }
        return inspectable(order, kind: kind)
    }

    /// The stop's move of the order that a completed inspection makes: the
    /// first vehicle picked up picks the load up; the last one delivered
    /// delivers it. Nil when the order stays as it is.
    public static func move(_ order: Order, completing kind: Inspection.Kind, inspections: [Inspection]) -> OrderStatus? {
        guard order.status == kind.orderStatus else { return nil }
        if kind == .pickup { return .pickedUp }
        return remaining(order, .delivery, completed: inspections).isEmpty ? .delivered : nil
    }

    /// A driver picks up or delivers by completing inspections: a load is
    /// picked up with its first vehicle's pickup inspection and delivered
    /// with every vehicle's delivery inspection (`move`); moving the order
    /// to `status` before is refused. `completed`: the order's inspections.
    public static func required(toMark status: OrderStatus, order: Order, completed: [Inspection]) -> Refusal? {
        guard let kind = Inspection.Kind(completing: status) else { return nil }
        let waiting = remaining(order, kind, completed: completed)
        let done = kind == .pickup ? waiting.count < order.vehicles.count : waiting.isEmpty
        guard !done else { return nil }
        let which = order.vehicles.count == 1 ? "the \(kind.rawValue) inspection"
            : kind == .pickup ? "the pickup inspection of a vehicle" : "the delivery inspection of every vehicle"
        return Refusal(.inspectionRequired, "Complete \(which) of order \(order.number) to mark it \(status.label).", field: "status")
    }

    /// The vehicle an inspection is about: the one it names, or (one from
    /// before vehicles were inspected each) the order's first; nil when the
    /// order no longer has it.
    public static func vehicle(of order: Order, _ id: ID<Vehicle>?) -> Vehicle? {
        guard let id else { return order.vehicles.first }
        return order.vehicles.first { $0.id == id }
    }

    /// Where the vehicle an inspection is about stands in the order's list
    /// (0 for the first); `order.vehicles.count` when the order no longer has it.
    public static func position(of inspection: Inspection, in order: Order) -> Int {
        let vehicle = self.vehicle(of: order, inspection.vehicleID)
        return order.vehicles.firstIndex { $0.id != nil && $0.id == vehicle?.id } ?? order.vehicles.count
    }

    /// The order's vehicles whose inspection of this kind is not completed
    /// yet, in the order's order: the stop is done when none is left.
    public static func remaining(_ order: Order, _ kind: Inspection.Kind, completed: [Inspection]) -> [Vehicle] {
        let done = Set(completed.filter { $0.kind == kind && $0.completedAt != nil }.compactMap { vehicle(of: order, $0.vehicleID)?.id })
        return order.vehicles.filter { vehicle in vehicle.id.map { !done.contains($0) } ?? true }
    }
}
