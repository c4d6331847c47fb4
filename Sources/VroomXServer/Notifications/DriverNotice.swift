import Foundation
import VroomXModels

/// What the server tells a driver when dispatch changes their work: the
/// words of every notice it writes, in one place, and what each points at.
struct DriverNotice: Sendable {
    let type: NotificationType
    let title: String
    let body: String
    let data: NotificationData
    /// Work taken away or called off (a trip or order off the driver's
    /// list, cancelled): it stands alone, goes at once at high priority, and
    /// ends any gathering about its trip (`NotificationService.notify`).
    let standsAlone: Bool
    /// Folded into the driver's unread notice about the same trip from the
    /// last minute: building a trip is one notification.
    var coalesces: Bool { !standsAlone && data.tripID != nil }

    init(type: NotificationType, title: String, body: String, data: NotificationData, standsAlone: Bool = false) {
        (self.type, self.title, self.body, self.data, self.standsAlone) = (type, title, body, data, standsAlone)
    }

    /// The notice as one line of a notification that gathers several.
    var line: String { "\(title) — \(body)" }

    /// Dispatch moved one of the driver's orders to another status.
    static func orderStatus(_ order: Order, trip: ID<Trip>?) -> DriverNotice {
        DriverNotice(type: .statusChange, title: "Order \(order.number) \(order.status.label)",
                     body: "Dispatch marked order \(order.number) (\(order.vehiclesSummary)) as \(order.status.label).",
                     data: NotificationData(tripID: trip, orderID: order.id), standsAlone: order.status == .cancelled)
    }

    /// Dispatch edited what the driver needs to know of an order (`DriverChangeNote`).
    static func orderChanged(_ order: Order, _ changes: [String]) -> DriverNotice {
        DriverNotice(type: .statusChange, title: "Order \(order.number) changed",
                     body: DriverChangeNote.body(order.vehiclesSummary.isEmpty ? "order \(order.number)"
                                                     : "order \(order.number) (\(order.vehiclesSummary))", changes),
                     data: NotificationData(tripID: order.tripID, orderID: order.id))
    }

    /// An order given to another driver, or back to the board.
    static func orderTakenOff(_ order: Order, trip: ID<Trip>?) -> DriverNotice {
        DriverNotice(type: .statusChange, title: "Order \(order.number) taken off your list",
                     body: "Dispatch took order \(order.number) (\(order.vehiclesSummary.isEmpty ? "a vehicle" : order.vehiclesSummary), "
                        + "\(order.pickup.address) → \(order.delivery.address)) off your work. Do not pick it up.",
                     data: NotificationData(tripID: trip, orderID: order.id), standsAlone: true)
    }

    static func orderAssigned(_ order: Order, trip: Trip?) -> DriverNotice {
        let onTrip = trip.map { " on trip \($0.number)" } ?? ""
        return DriverNotice(type: .tripAssignment, title: "New order \(order.number)",
                            body: "\(order.vehiclesSummary.isEmpty ? "A vehicle" : order.vehiclesSummary)\(onTrip): \(order.pickup.address) → \(order.delivery.address).",
                            data: NotificationData(tripID: order.tripID, orderID: order.id))
    }

    /// Dispatch moved the driver's trip to another status (and perhaps changed more of it).
    static func tripStatus(_ trip: Trip, also changes: [String]) -> DriverNotice {
        DriverNotice(type: .statusChange, title: "Trip \(trip.number) is \(trip.status.label)",
                     body: "Dispatch changed trip \(trip.number) (\(trip.origin) → \(trip.destination)) to \(trip.status.label)."
                        + (changes.isEmpty ? "" : " Also: \(DriverChangeNote.list(changes))."),
                     data: NotificationData(tripID: trip.id), standsAlone: trip.status == .cancelled)
    }

    /// Dispatch edited the driver's trip; `number` is the one the driver knew it by.
    static func tripChanged(_ trip: Trip, number: String, _ changes: [String]) -> DriverNotice {
        DriverNotice(type: .statusChange, title: "Trip \(trip.number) changed", body: DriverChangeNote.body("trip \(number)", changes),
                     data: NotificationData(tripID: trip.id))
    }

    /// A trip given to another driver (`to`), or to none for now.
    static func tripTakenOff(_ trip: Trip, to driver: ID<Driver>?) -> DriverNotice {
        DriverNotice(type: .statusChange, title: "Trip \(trip.number) taken off your list",
                     body: "Dispatch gave trip \(trip.number) (\(trip.origin) → \(trip.destination)) to \(driver == nil ? "no driver for now" : "another driver"). "
                        + "Do not pick up its vehicles.",
                     data: NotificationData(tripID: trip.id), standsAlone: true)
    }

    static func tripAssigned(_ trip: Trip) -> DriverNotice {
        let when = trip.startDate.map { ", starting \(DayFormat.day($0))" } ?? ""
        return DriverNotice(type: .tripAssignment, title: "New trip \(trip.number)",
                            body: "You have been assigned trip \(trip.number): \(trip.origin) → \(trip.destination)\(when).",
                            data: NotificationData(tripID: trip.id))
    }
}
