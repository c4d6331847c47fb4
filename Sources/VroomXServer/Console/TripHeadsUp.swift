import VroomXModels

/// What a dispatcher should know about an open trip before it runs: its
/// driver's other trips on the same days, and the driver's units that are
/// out of service or whose papers have run out, or will before the trip ends.
/// Said, not enforced: a team may share a truck, and papers renew on the road.
enum TripHeadsUp {
    static func lines(for trip: Trip, driver: Driver, otherTrips: [Trip], units: [Equipment], today: LocalDate) -> [String] {
        guard trip.status.isOpen else { return [] }
        var lines = otherTrips
            .filter { $0.id != trip.id && $0.status.isOpen && $0.driverID == driver.id && trip.overlaps($0) }
            .map { other in
                let days = other.days.flatMap { DayFormat.span($0.lowerBound, $0.upperBound) } ?? ""
                return "\(driver.name) also has trip \(other.number) on \(days)."
            }
        // Papers matter until the trip ends (or today, for a trip without dates).
        let lastDay = max(today, trip.days?.upperBound ?? today)
        for unit in units where unit.driverID == driver.id && unit.status != .retired {
            let name = "\(unit.kind == .truck ? "Truck" : "Trailer") \(unit.unitNumber)"
            if unit.status != .active { lines.append("\(name) is \(unit.status.label).") }
            for paper in unit.documents {
                guard let expires = paper.expiresOn else { continue }
                if expires < today {
                    lines.append("\(name)'s \(paper.kind.label) expired \(DayFormat.day(expires)).")
                } else if expires < lastDay {
                    lines.append("\(name)'s \(paper.kind.label) runs out \(DayFormat.day(expires)), before this trip ends.")
                }
            }
        }
        return lines
    }

    /// The trailer the driver pulls, when one is assigned with a known capacity.
    static func trailer(of driver: ID<Driver>?, units: [Equipment]) -> (name: String, capacity: Int)? {
        units.first { $0.kind == .trailer && $0.driverID == driver && $0.status != .retired && $0.specs.capacityCars != nil }
            .flatMap { unit in unit.specs.capacityCars.map { ("Trailer \(unit.unitNumber)", $0) } }
    }

    /// The vehicles a trip still has to carry (its orders not delivered or
    /// cancelled) against its driver's trailer: "7 vehicles · Trailer 107
    /// holds 9", and whether that is more than it holds.
    static func load(_ orders: [Order], trailer: (name: String, capacity: Int)?) -> (text: String, over: Bool) {
        let carried = orders.filter { $0.status != .delivered && $0.status != .cancelled }.reduce(0) { $0 + $1.vehicles.count }
        let count = ConsoleFormat.count(carried, "vehicle") + " to carry"
        guard let trailer else { return (count, false) }
        return (count + " · \(trailer.name) holds \(trailer.capacity)", carried > trailer.capacity)
    }

    /// What a finished trip moved: "7 vehicles delivered"; nothing when it moved none.
    static func delivered(_ orders: [Order]) -> String {
        let moved = orders.filter { $0.status == .delivered }.reduce(0) { $0 + $1.vehicles.count }
        return moved == 0 ? "" : ConsoleFormat.count(moved, "vehicle") + " delivered"
    }
}
