import Foundation

/// An odometer only goes up, and not faster than a truck drives: one rule
/// for the server, the phone and the fuel report. A fuel fill's odometer is
/// a reading like any other.
public enum OdometerRule {
    /// The readings of a unit around a new one, as far as the checker knows
    /// them (the server: all of them; the phone: the last it has seen).
    public struct Neighbours: Sendable {
        /// The highest reading at or before the new one's earliest moment, and when it was taken.
        public var before: (miles: Int, at: Date)?
        /// The lowest reading after the new one's latest moment.
        public var after: Int?
        /// The lowest and highest readings inside the new one's window.
        public var inside: (low: Int, high: Int)?

        public init(before: (miles: Int, at: Date)? = nil, after: Int? = nil, inside: (low: Int, high: Int)? = nil) {
            self.before = before
            self.after = after
            self.inside = inside
        }

        /// What one known reading (`miles` at `at`) is to a new one taken in `window`.
        public init(last miles: Int?, at: Date?, window: ClosedRange<Date>) {
            self.init()
            guard let miles, let at else { return }
            if at <= window.lowerBound {
                before = (miles, at)
            } else if at > window.upperBound {
                after = miles
            } else {
                inside = (miles, miles)
            }
        }
    }

    /// Whether `miles` can be read on unit `unit` in `window` (one moment,
    /// or the span of a fill's day): no lower than a reading before it, no
    /// higher than one after it, no further than the unit can have driven.
    /// `field` names the number in the refusal.
    public static func check(_ miles: Int, unit: String, in window: ClosedRange<Date>, field: String, _ known: Neighbours) -> Refusal? {
        if let inside = known.inside {
            let span = plausibleMiles(afterHours: window.upperBound.timeIntervalSince(window.lowerBound) / 3600)
            guard Double(inside.high - miles) <= span else {
                return Refusal(.odometerDecreased, decreased(unit: unit, last: inside.high), field: field)
            }
            guard Double(miles - inside.low) <= span else {
                return .invalid(field, "Unit \(unit) read \(NumberText.grouped(inside.low)) mi that day; \(NumberText.grouped(miles)) mi is more than it can have driven. Check the reading.")
            }
        }
        if let before = known.before {
            guard before.miles <= miles else { return Refusal(.odometerDecreased, decreased(unit: unit, last: before.miles), field: field) }
            let hours = max(0, window.upperBound.timeIntervalSince(before.at) / 3600)
            guard Double(miles - before.miles) <= plausibleMiles(afterHours: hours) else {
                return .invalid(field, "Unit \(unit) read \(NumberText.grouped(before.miles)) mi \(Int(hours.rounded())) h before; \(NumberText.grouped(miles)) mi is more than it can have driven. Check the reading.")
            }
        }
        if let after = known.after, after < miles {
            return Refusal(.odometerDecreased,
                           "Unit \(unit) read \(NumberText.grouped(after)) mi later than this; a reading cannot be higher than a later one.",
                           field: field)
        }
        return nil
    }

    /// The refusal of a reading lower than the unit's last one.
    public static func decreased(unit: String, last: Int) -> String {
        "Unit \(unit) already read \(NumberText.grouped(last)) mi; a reading cannot be lower than an earlier one."
    }

    /// The most a unit can have driven in `hours`: 1,000 miles of slack
    /// (readings taken minutes apart, clocks off) plus 100 mph around the
    /// clock, so a digit too many is caught rather than blocking every later
    /// reading.
    public static func plausibleMiles(afterHours hours: Double) -> Double { 1_000 + 100 * max(0, hours) }

    /// When a fuel fill dated `date` (the driver's own calendar day, in a
    /// zone the server does not know) can have happened: that day in any
    /// zone on earth, and not after now. Its odometer is a reading somewhere
    /// in that span.
    public static func fillWindow(_ date: LocalDate, now: Date) -> ClosedRange<Date> {
        let start = date.startOfDay.addingTimeInterval(-14 * 3600)
        let end = max(start, min(now, date.startOfDay.addingTimeInterval(38 * 3600)))
        return start...end
    }

    /// The same between two calendar dates (readings of a fill carry a date only).
    public static func plausibleMiles(from earlier: LocalDate, to later: LocalDate) -> Double {
        let days = max(0, later.startOfDay.timeIntervalSince(earlier.startOfDay) / 86_400)
        return plausibleMiles(afterHours: (days + 1) * 24)
    }
}
