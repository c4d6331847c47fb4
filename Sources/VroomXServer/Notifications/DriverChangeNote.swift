import VroomXModels

/// What a driver is told when dispatch changes the details of a trip or an
/// order the driver has: each change the driver acts on, in words, with its
/// new value. The app gets the new row through the feed either way; the
/// notification is what makes the driver look.
enum DriverChangeNote {
    /// Changes a driver acts on between two versions of a trip (its status
    /// has a notification of its own).
    static func changes(from old: Trip, to new: Trip) -> [String] {
        var changes: [String] = []
        if new.number != old.number { changes.append("now numbered \(new.number)") }
        if new.origin != old.origin || new.destination != old.destination {
            changes.append("route \(new.origin) → \(new.destination) (was \(old.origin) → \(old.destination))")
        }
        if new.startDate != old.startDate || new.endDate != old.endDate {
            changes.append("dates \(dates(new.startDate, new.endDate)) (were \(dates(old.startDate, old.endDate)))")
        }
        if new.driverPayCents != old.driverPayCents {
            changes.append("your pay \(MoneyFormat.dollars(new.driverPayCents)) (was \(MoneyFormat.dollars(old.driverPayCents)))")
        }
        if new.miles != old.miles { changes.append("miles \(new.miles) (were \(old.miles))") }
        return changes
    }

    /// Changes a driver acts on between two versions of an order's details.
    static func changes(from old: Order, to new: Order) -> [String] {
        var changes: [String] = []
        // What tells the vehicles apart at the lot (a price is the order amount's line).
        let described = { (vehicle: Vehicle) in
            [vehicle.summary, vehicle.color, vehicle.vin, vehicle.lotNumber ?? "", vehicle.type?.rawValue ?? "", vehicle.operable ? "" : "inoperable"]
        }
        if new.vehicles.map(described) != old.vehicles.map(described) {
            changes.append(new.vehicles.count == 1 && old.vehicles.count == 1 ? "vehicle \(vehicle(new.vehicle))"
                           : "\(new.vehicles.count) vehicles: " + new.vehicles.map(vehicle).joined(separator: "; "))
        }
        changes += stop("pickup", from: old.pickup, to: new.pickup)
        changes += stop("delivery", from: old.delivery, to: new.delivery)
        if new.paymentTerms != old.paymentTerms { changes.append("payment terms \(new.paymentTerms.isEmpty ? "none" : new.paymentTerms)") }
        if new.revenueCents != old.revenueCents {
            changes.append("order amount \(MoneyFormat.dollars(new.revenueCents)) (was \(MoneyFormat.dollars(old.revenueCents)))")
        }
        return changes
    }

    /// "Dispatch changed trip T-1002: your pay $1,200.00 (was $1,100.00); miles 700 (were 660)."
    static func body(_ what: String, _ changes: [String]) -> String {
        "Dispatch changed \(what): \(list(changes))."
    }

    /// The changes as one run of text.
    static func list(_ changes: [String]) -> String {
        changes.joined(separator: "; ")
    }

    /// A sentence the server wrote around typed values, without the
    /// direction controls typed into them: one unclosed right-to-left
    /// override in an address would turn the rest of the sentence around.
    static func withoutDirectionControls(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !bidiControls.contains($0.value) }))
    }

    private static let bidiControls: Set<UInt32> = [0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]

    /// A stop's place, times and people; its map point alone (found from
    /// the address) is no news to the driver.
    private static func stop(_ label: String, from old: Stop, to new: Stop) -> [String] {
        var changes: [String] = []
        if new.name != old.name || new.address != old.address {
            changes.append("\(label) at \([new.name, new.address].filter { !$0.isEmpty }.joined(separator: ", "))")
        }
        if new.windowStart != old.windowStart || new.windowEnd != old.windowEnd {
            changes.append("\(label) window \(dates(new.windowStart, new.windowEnd)) (was \(dates(old.windowStart, old.windowEnd)))")
        }
        if new.contactName != old.contactName || new.contactPhone != old.contactPhone {
            let contact = [new.contactName, new.contactPhone].filter { !$0.isEmpty }.joined(separator: ", ")
            changes.append("\(label) contact \(contact.isEmpty ? "none" : contact)")
        }
        return changes
    }

    private static func dates(_ start: LocalDate?, _ end: LocalDate?) -> String {
        guard let span = DayFormat.span(start, end) else { return "not set" }
        return start != nil && start == end ? "on \(span)" : span
    }

    private static func vehicle(_ vehicle: Vehicle) -> String {
        let parts = [vehicle.summary.isEmpty ? "not described" : vehicle.summary, vehicle.color,
                     vehicle.vin.isEmpty ? "" : "VIN \(vehicle.vin)", vehicle.lotNumber.map { "lot \($0)" } ?? "",
                     vehicle.operable ? "" : "inoperable"]
        return parts.filter { !$0.isEmpty }.joined(separator: ", ")
    }
}
