import Foundation

/// Whether an order keeps its windows: late when a window's last day has
/// passed without the pickup or delivery, at risk when the ETA lands after
/// it. The board, the trip page and the driver's lists mark it the same.
public enum Timeliness: String, Sendable, Hashable, CaseIterable {
    case pickupLate = "pickup_late"
    case deliveryLate = "delivery_late"
    case pickupAtRisk = "pickup_at_risk"
    case deliveryAtRisk = "delivery_at_risk"

    public var label: String {
        switch self {
        case .pickupLate: "Pickup late"
        case .deliveryLate: "Delivery late"
        case .pickupAtRisk: "Pickup at risk"
        case .deliveryAtRisk: "Delivery at risk"
        }
    }

    public var isLate: Bool { self == .pickupLate || self == .deliveryLate }
}

extension Stop {
    /// The last day the window allows: its end, or its one day.
    public var lastWindowDay: LocalDate? { windowEnd ?? windowStart }
}

extension Order {
    /// How the order stands against its windows on `today` (UTC days, as
    /// windows are kept); nil when on time, without windows, or done.
    /// Late comes before at risk, the pickup before the delivery.
    public func timeliness(today: LocalDate) -> Timeliness? {
        guard status.isOpen else { return nil }
        let pickupDay = pickup.lastWindowDay, deliveryDay = delivery.lastWindowDay
        if status.isWaiting, let pickupDay, pickupDay < today { return .pickupLate }
        if let deliveryDay, deliveryDay < today { return .deliveryLate }
        if status.isWaiting, let pickupDay, let eta = pickupETA, LocalDate(eta) > pickupDay { return .pickupAtRisk }
        if let deliveryDay, let eta = deliveryETA, LocalDate(eta) > deliveryDay { return .deliveryAtRisk }
        return nil
    }
}
