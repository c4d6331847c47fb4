extension Trip {
    /// The days the trip runs: start to end, or its one date; nil when it has
    /// no dates yet. An end before the start (never saved so) reads as the start.
    public var days: ClosedRange<LocalDate>? {
        switch (startDate, endDate) {
        case let (start?, end?): return start...max(start, end)
        case let (day?, nil), let (nil, day?): return day...day
        case (nil, nil): return nil
        }
    }

    /// Whether the two trips share a day (a driver cannot run both).
    public func overlaps(_ other: Trip) -> Bool {
        guard let days, let others = other.days else { return false }
        return days.overlaps(others)
    }

    /// A trip's vehicles not yet delivered: on the truck, and still to pick up.
    public struct Vehicles: Sendable, Hashable {
        public var loaded: Int
        public var waiting: Int

        public init(loaded: Int, waiting: Int) {
            self.loaded = loaded
            self.waiting = waiting
        }
    }

    /// Why the trip may not become `status` (one the state machine allows),
    /// or nil: the server refuses with it, the console offers only the rest.
    public func statusRefusal(to status: TripStatus, _ vehicles: Vehicles) -> String? {
        if status != .planned, status != .cancelled, driverID == nil { return "Assign a driver before starting the trip." }
        let open = vehicles.loaded + vehicles.waiting
        if status == .completed, open > 0 {
            return "Trip \(number) still has \(open) \(open == 1 ? "vehicle" : "vehicles") not delivered; deliver, cancel or move them first."
        }
        // Vehicles on the truck keep a trip under way until they are delivered.
        let loaded = vehicles.loaded
        if status == .cancelled || status == .planned, loaded > 0 {
            return "Trip \(number) has \(loaded) \(loaded == 1 ? "vehicle" : "vehicles") on the truck; deliver \(loaded == 1 ? "it" : "them") first."
        }
        return nil
    }
}
