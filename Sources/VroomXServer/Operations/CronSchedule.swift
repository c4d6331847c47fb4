import Foundation

/// When a scheduled job runs, written as cron writes it: five fields,
/// minute (0–59), hour (0–23), day of month (1–31), month (1–12) and day of
/// week (0–6, Sunday 0 or 7), each `*`, a number, a range `a-b`, a list
/// `a,b`, or a step `*/n` / `a-b/n`. As in cron, when both day fields are
/// restricted a day matching either runs. Times are in `timeZone` (the
/// server's own, as cron's are).
public struct CronSchedule: Sendable, Equatable, CustomStringConvertible {
    let minutes: Set<Int>
    let hours: Set<Int>
    let daysOfMonth: Set<Int>
    let months: Set<Int>
    let daysOfWeek: Set<Int>
    let dayOfMonthRestricted: Bool
    let dayOfWeekRestricted: Bool
    public let description: String

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public init(_ text: String) throws {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard text.utf8.count <= 200, fields.count == 5 else {
            throw Invalid(description: "a schedule has five fields: minute hour day-of-month month day-of-week, e.g. \"15 2 * * *\" (02:15 every day)")
        }
        minutes = try Self.field(fields[0], "minute", 0...59)
        hours = try Self.field(fields[1], "hour", 0...23)
        daysOfMonth = try Self.field(fields[2], "day of month", 1...31)
        months = try Self.field(fields[3], "month", 1...12)
        // 7 is Sunday too.
        daysOfWeek = Set(try Self.field(fields[4], "day of week", 0...7).map { $0 % 7 })
        dayOfMonthRestricted = !fields[2].hasPrefix("*")
        dayOfWeekRestricted = !fields[4].hasPrefix("*")
        description = fields.joined(separator: " ")
        guard daysOfMonth.contains(where: { day in months.contains { month in day <= Self.longestMonth[month - 1] } }) || dayOfWeekRestricted else {
            throw Invalid(description: "\"\(description)\" names a day no month has")
        }
    }

    private static let longestMonth = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

    private static func field(_ text: String, _ name: String, _ range: ClosedRange<Int>) throws -> Set<Int> {
        var values = Set<Int>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = part.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count <= 2 else { throw Invalid(description: "the \(name) field \"\(text)\" is not a cron field") }
            var step = 1
            if pieces.count == 2 {
                guard let value = Int(pieces[1]), (1...range.upperBound).contains(value) else {
                    throw Invalid(description: "the \(name) field's step \"\(pieces[1])\" must be 1 to \(range.upperBound)")
                }
                step = value
            }
            let span: ClosedRange<Int>
            if pieces[0] == "*" {
                span = range
            } else {
                let bounds = pieces[0].split(separator: "-", omittingEmptySubsequences: false)
                guard (1...2).contains(bounds.count), let low = Int(bounds[0]), let high = Int(bounds[bounds.count - 1]),
                      range.contains(low), range.contains(high), low <= high else {
                    throw Invalid(description: "the \(name) field \"\(text)\" must hold numbers from \(range.lowerBound) to \(range.upperBound)")
                }
                // `5/15` means from 5 to the end, every 15.
                span = low...(pieces.count == 2 && bounds.count == 1 ? range.upperBound : high)
            }
            values.formUnion(stride(from: span.lowerBound, through: span.upperBound, by: step))
        }
        return values
    }

    /// The first time after `date` the schedule names (nil only if none
    /// within eight years). Times are read on the wall clock, as cron does:
    /// one that a change to summer time skips runs just after the change
    /// (02:15 on that night is 03:15), and one the change back repeats runs
    /// once, the first time.
    public func next(after date: Date, in timeZone: TimeZone = .current) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let times = hours.sorted().flatMap { hour in minutes.sorted().map { (hour, $0) } }
        var day = calendar.dateComponents([.year, .month, .day], from: date)
        for _ in 0..<(8 * 366) {
            guard let noon = calendar.date(from: DateComponents(year: day.year, month: day.month, day: day.day, hour: 12)) else { return nil }
            let parts = calendar.dateComponents([.year, .month, .day, .weekday], from: noon)
            if let month = parts.month, let dayOfMonth = parts.day, let weekday = parts.weekday,
               months.contains(month), matchesDay(day: dayOfMonth, weekday: weekday - 1) {
                // The earliest of the day's times still ahead (a skipped time moved past the change can come after a later one).
                let ahead = times.compactMap { hour, minute in
                    calendar.date(from: DateComponents(year: parts.year, month: month, day: dayOfMonth, hour: hour, minute: minute))
                }.filter { $0 > date }
                if let first = ahead.min() { return first }
            }
            guard let following = calendar.date(byAdding: .day, value: 1, to: noon) else { return nil }
            day = calendar.dateComponents([.year, .month, .day], from: following)
        }
        return nil
    }

    private func matchesDay(day: Int, weekday: Int) -> Bool {
        switch (dayOfMonthRestricted, dayOfWeekRestricted) {
        case (true, true): daysOfMonth.contains(day) || daysOfWeek.contains(weekday)
        case (true, false): daysOfMonth.contains(day)
        case (false, true): daysOfWeek.contains(weekday)
        case (false, false): true
        }
    }
}
