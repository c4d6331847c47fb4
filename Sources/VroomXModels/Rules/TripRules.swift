/// Rules about trips the server and the phone both apply.
public enum TripRules {
    /// Why the driver may not start a trip while another of theirs is under way.
    public static func oneUnderWay(running: String, starting: String) -> String {
        "Trip \(running) is under way; finish it before starting \(starting) (its first pickup starts it anyway)."
    }
}

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

    /// A trip's orders by where their vehicles are: on the truck, still to
    /// pick up, and delivered (cancelled ones are gone).
    public struct Vehicles: Sendable, Hashable {
        public var loaded: Int
        public var waiting: Int
        public var delivered: Int

        public init(loaded: Int, waiting: Int, delivered: Int = 0) {
            self.loaded = loaded
            self.waiting = waiting
            self.delivered = delivered
        }

        public init(_ orders: [Order]) {
            self.init(loaded: orders.count { $0.status == .pickedUp }, waiting: orders.count { $0.status.isWaiting },
                      delivered: orders.count { $0.status == .delivered })
        }
    }

    /// Under way with every vehicle delivered or gone: dispatch is offered
    /// to complete it (the console says so; the driver's phone tells them).
    public func readyToComplete(_ vehicles: Vehicles) -> Bool {
        status == .inProgress && vehicles.loaded == 0 && vehicles.waiting == 0 && vehicles.delivered > 0
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
        // Vehicles delivered: the trip ran and is never planned again; with every one delivered it is completed
        // (its pay and revenue stand), not cancelled. Cut short, its waiting vehicles go back to the board.
        let delivered = vehicles.delivered
        if status == .planned, delivered > 0 {
            return "Trip \(number) has delivered \(delivered) \(delivered == 1 ? "vehicle" : "vehicles"); it is under way, not planned again."
        }
        if status == .cancelled, delivered > 0, vehicles.waiting == 0 {
            return "Every vehicle of trip \(number) is delivered; mark it completed rather than cancelled."
        }
        return nil
    }
}
