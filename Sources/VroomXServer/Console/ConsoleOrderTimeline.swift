import Foundation
import VroomXModels

/// What happened to an order, and its inspections, as its page shows them.
extension ConsoleOrderPages {
    /// A status the order reached: when, by whom, and when it reached the
    /// server if a phone without signal reported it later.
    static func historyLine(_ event: Store.OrderEvent) -> OrderPageView.Event {
        let who = event.who.map { event.byDriver ? "by \($0) (driver)" : "by \($0)" } ?? "by VroomX"
        let late = event.recordedAt.timeIntervalSince(event.occurredAt) > 300
        return .init(time: ConsoleFormat.time(event.occurredAt), text: "\(event.status.title) · \(who)",
                     reported: late ? ConsoleFormat.time(event.recordedAt) : nil)
    }

    /// ETAs given (by the driver or dispatch) or cleared by a reassignment.
    /// Its times are `<time>` elements, read in the dispatcher's zone like every other.
    static func etaLine(_ event: Store.ETAEvent) -> OrderPageView.Event {
        let etas = [("pickup", event.pickupETA), ("delivery", event.deliveryETA)].compactMap { stop, eta in
            ConsoleFormat.time(eta).map { OrderPageView.ETA(label: stop, iso: $0.iso, text: $0.text) }
        }
        let text: String, after: String
        if event.cleared {
            text = "ETAs of \(event.driverName ?? "the previous driver") cleared: the order went to another driver" + (etas.isEmpty ? "" : " (were")
            after = etas.isEmpty ? "" : ")"
        } else {
            text = etas.isEmpty ? "ETAs removed" : "ETA"
            after = " · " + (event.who.map { name in event.driverName == name ? "by \(name) (driver)" : "by \(name)" } ?? "by VroomX")
        }
        return .init(time: ConsoleFormat.time(event.recordedAt), text: text, etas: etas, after: after)
    }

    /// What happened to an order recorded before status history was kept,
    /// oldest first, from the order's own dates.
    static func timeline(_ order: Order) -> [(Date, OrderPageView.Event)] {
        var events: [(Date, String)] = [(order.createdAt, "Created")]
        if let picked = order.actualPickupDate { events.append((picked, "Picked up by the driver")) }
        if let delivered = order.actualDeliveryDate { events.append((delivered, "Delivered")) }
        if order.status == .cancelled { events.append((order.updatedAt, "Cancelled")) }
        if order.updatedAt > events.map(\.0).max() ?? .distantPast {
            events.append((order.updatedAt, "Last changed (now \(order.status.label), version \(order.version))"))
        }
        return events.map { ($0.0, OrderPageView.Event(time: ConsoleFormat.time($0.0), text: $0.1)) }
    }

    /// The order's inspections, pickup before delivery, each stop vehicle by vehicle.
    static func inspections(_ inspections: [Inspection], of order: Order) -> [OrderPageView.InspectionView] {
        func position(_ inspection: Inspection) -> Int { InspectionRules.position(of: inspection, in: order) }
        // Damage at delivery that the same vehicle's pickup did not have is new (the rule of the PDF).
        var atPickup: [Int: Set<String>] = [:]
        for inspection in inspections where inspection.kind == .pickup {
            atPickup[position(inspection)] = Set(inspection.damages.map { "\($0.location)|\($0.type)" })
        }
        // A vehicle dispatch took off the order is no longer shown.
        return inspections.filter { position($0) < order.vehicles.count }
            .sorted { ($0.kind == .pickup ? 0 : 1, position($0)) < ($1.kind == .pickup ? 0 : 1, position($1)) }
            .map { inspection in
                let index = position(inspection)
                let vehicle = order.vehicles.count > 1 && order.vehicles.indices.contains(index)
                    ? " · vehicle \(index + 1)" + (order.vehicles[index].summary.isEmpty ? "" : " (\(order.vehicles[index].summary))") : ""
                var view = Self.inspection(inspection, vehicle: vehicle)
                if inspection.kind == .delivery {
                    let before = atPickup[index] ?? []
                    for (offset, damage) in inspection.damages.enumerated() where !before.contains("\(damage.location)|\(damage.type)") {
                        view.damages[offset].new = true
                    }
                }
                return view
            }
    }

    static func inspection(_ inspection: Inspection, vehicle: String = "") -> OrderPageView.InspectionView {
        let base = "/console/media/\(inspection.id.rawValue)/"
        let media = inspection.media.sorted { $0.slot.walkOrder < $1.slot.walkOrder }
        return .init(
            kind: (inspection.kind == .pickup ? "Pickup" : "Delivery") + vehicle, completed: ConsoleFormat.time(inspection.completedAt),
            incomplete: inspection.completedAt == nil, odometer: inspection.odometer.map { "\(ConsoleFormat.grouped($0)) mi" } ?? "—",
            notes: inspection.notes, customerUnavailable: inspection.customerUnavailable,
            photos: media.filter { $0.kind == .photo }.map {
                .init(src: base + $0.slot.rawValue, name: $0.slot.title, taken: ConsoleFormat.time($0.captured?.takenAt),
                      place: $0.captured?.placeText ?? "")
            },
            video: media.first { $0.kind == .video }.map { .init(src: base + $0.slot.rawValue, type: $0.contentType) },
            signature: media.first { $0.kind == .signature }.map { .init(src: base + $0.slot.rawValue) },
            damages: inspection.damages.map { .init(location: $0.locationLabel, type: $0.type.rawValue, severity: $0.severity.rawValue, note: $0.note) },
            noDamages: inspection.damages.isEmpty, missing: inspection.missingSlots.map { $0.title }.joined(separator: ", "),
            signer: inspection.signerName ?? "")
    }
}
