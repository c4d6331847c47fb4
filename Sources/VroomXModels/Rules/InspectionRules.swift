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

    /// A driver picks up or delivers by completing that inspection: moving
    /// the order to `status` without it is refused.
    public static func required(toMark status: OrderStatus, order: Order, completed: (Inspection.Kind) -> Bool) -> Refusal? {
        guard let kind = Inspection.Kind(completing: status), !completed(kind) else { return nil }
        return Refusal(.inspectionRequired, "Complete the \(kind.rawValue) inspection of order \(order.number) to mark it \(status.label).",
                       field: "status")
    }
}
