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

    /// How far along the order's trouble is: dispatch is alerted again only
    /// when it gets further (the pickup at risk, then late, then the delivery).
    public var rank: Int {
        switch self {
        case .pickupAtRisk: 1
        case .pickupLate: 2
        case .deliveryAtRisk: 3
        case .deliveryLate: 4
        }
    }
}

extension Stop {
    /// The last day the window allows: its end, or its one day.
    public var lastWindowDay: LocalDate? { windowEnd ?? windowStart }
}

extension Order {
    /// How the order stands against its windows on `today` (UTC days, as
    /// windows are kept); nil when on time, without windows, or done.
    /// Late comes before at risk, the pickup before the delivery.
    /// `computedETA` is the truck's arrival at its next stop estimated from
    /// its position (the server's `ComputedETA`): after the window it is at
    /// risk too, whatever the driver said.
    public func timeliness(today: LocalDate, computedETA: Date? = nil) -> Timeliness? {
        guard status.isOpen else { return nil }
        let pickupDay = pickup.lastWindowDay, deliveryDay = delivery.lastWindowDay
        if status.isWaiting, let pickupDay, pickupDay < today { return .pickupLate }
        if let deliveryDay, deliveryDay < today { return .deliveryLate }
        if status.isWaiting, let pickupDay, [pickupETA, computedETA].contains(where: { $0.map { LocalDate($0) > pickupDay } ?? false }) {
            return .pickupAtRisk
        }
        let deliveryETAs = status.isWaiting ? [deliveryETA] : [deliveryETA, computedETA]
        if let deliveryDay, deliveryETAs.contains(where: { $0.map { LocalDate($0) > deliveryDay } ?? false }) { return .deliveryAtRisk }
        return nil
    }

    /// What the alert to dispatch says: "Delivery at risk: the truck's ETA Dec 2 is after the window's last day, Dec 1".
    public func alertText(_ standing: Timeliness, computedETA: Date? = nil) -> String {
        let stop = standing == .pickupLate || standing == .pickupAtRisk ? pickup : delivery
        let day = stop.lastWindowDay.map(DayFormat.day) ?? "its day"
        switch standing {
        case .pickupLate: return "Pickup late: the window ended \(day) and the vehicle is not picked up"
        case .deliveryLate: return "Delivery late: the window ended \(day) and the vehicle is not delivered"
        case .pickupAtRisk, .deliveryAtRisk:
            let driver = standing == .pickupAtRisk ? pickupETA : deliveryETA
            // Whichever ETA lands after the window: the driver's first.
            let late = [(driver, "the driver's ETA"), (computedETA, "the truck's ETA from its position")].first { eta, _ in
                guard let eta, let last = stop.lastWindowDay else { return false }
                return LocalDate(eta) > last
            }
            let eta = late.flatMap { eta, whose in eta.map { "\(whose) \(DayFormat.day(LocalDate($0)))" } } ?? "the ETA"
            return "\(standing.label): \(eta) is after the window's last day, \(day)"
        }
    }
}
