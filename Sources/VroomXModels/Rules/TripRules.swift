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
}
