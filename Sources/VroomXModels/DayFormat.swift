/// Calendar days for people to read, in the US English the product speaks:
/// "Nov 27, 2026"; a span "Nov 27 – 30, 2026", "Nov 27 – Dec 1, 2026" or
/// "Dec 30, 2026 – Jan 2, 2027"; open-ended "from Nov 27, 2026" and
/// "by Nov 30, 2026". One rule for the console, the apps and the
/// notifications the server writes (the wire, forms and CSV files keep
/// `YYYY-MM-DD`).
public enum DayFormat {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// "Nov 27, 2026".
    public static func day(_ date: LocalDate) -> String {
        "\(month(date)) \(date.day), \(date.year)"
    }

    /// The days from `start` to `end`, either open; nil when neither is set.
    public static func span(_ start: LocalDate?, _ end: LocalDate?) -> String? {
        switch (start, end) {
        case let (start?, end?) where start == end || end < start:
            return start == end ? day(start) : "\(day(start)) – \(day(end))"
        case let (start?, end?) where start.year == end.year && start.month == end.month:
            return "\(month(start)) \(start.day) – \(end.day), \(end.year)"
        case let (start?, end?) where start.year == end.year:
            return "\(month(start)) \(start.day) – \(month(end)) \(end.day), \(end.year)"
        case let (start?, end?):
            return "\(day(start)) – \(day(end))"
        case let (start?, nil):
            return "from \(day(start))"
        case let (nil, end?):
            return "by \(day(end))"
        case (nil, nil):
            return nil
        }
    }

    /// LocalDate's month is 1 to 12 however it was made.
    private static func month(_ date: LocalDate) -> String { months[(date.month - 1) % 12] }
}
