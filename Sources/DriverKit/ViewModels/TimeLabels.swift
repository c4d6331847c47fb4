import Foundation

/// Human time labels for lists: "Just now", "5m ago", "2h ago",
/// "Yesterday", "Feb 10" (and "Feb 10, 2025" in another year).
public struct TimeLabels: Sendable {
    public let calendar: Calendar

    public init(calendar: Calendar) { self.calendar = calendar }

    public func relative(_ date: Date, now: Date) -> String {
        let seconds = now.timeIntervalSince(date)
        if seconds < 60 { return "Just now" }
        if calendar.isDate(date, inSameDayAs: now) {
            if seconds < 3600 { return "\(Int(seconds / 60))m ago" }
            return "\(Int(seconds / 3600))h ago"
        }
        if let yesterday = calendar.date(byAdding: .day, value: -1, to: now), calendar.isDate(date, inSameDayAs: yesterday) {
            return "Yesterday"
        }
        return day(date, now: now)
    }

    /// "Feb 10", with the year when it is not the current one.
    public func day(_ date: Date, now: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        let month = Self.months[(parts.month ?? 1) - 1]
        let sameYear = calendar.component(.year, from: now) == parts.year
        return sameYear ? "\(month) \(parts.day ?? 1)" : "\(month) \(parts.day ?? 1), \(parts.year ?? 0)"
    }

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}
