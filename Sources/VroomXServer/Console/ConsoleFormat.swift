import Foundation
import VroomXModels

/// How the console shows values: one place for money, dates and labels.
enum ConsoleFormat {
    /// 125050 → "$1,250.50".
    static func money(_ cents: Int) -> String { MoneyFormat.dollars(cents) }

    /// 413250 → "413,250".
    static func grouped<Value: BinaryInteger>(_ value: Value) -> String { NumberText.grouped(value) }

    /// (1, "driver") → "1 driver"; (3, "driver") → "3 drivers".
    static func count(_ number: Int, _ noun: String) -> String { NumberText.count(number, noun) }

    /// Cents as a form or a CSV file shows them: 125050 → "1250.50", -8550 → "-85.50".
    static func dollars(_ cents: Int) -> String {
        let (whole, part) = cents.magnitude.quotientAndRemainder(dividingBy: 100)
        return (cents < 0 ? "-" : "") + "\(whole).\(part < 10 ? "0" : "")\(part)"
    }

    /// An instant for a `<time>` element: the page's script shows it in the
    /// reader's zone; without script it reads in UTC.
    static func time(_ date: Date?) -> TimeView? {
        guard let date else { return nil }
        let utc = WireTime.string(from: date)
        let day = LocalDate(date)
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let minutesOfDay = ((seconds % 86_400) + 86_400) % 86_400 / 60
        let clock = "\(minutesOfDay / 60 < 10 ? "0" : "")\(minutesOfDay / 60):\(minutesOfDay % 60 < 10 ? "0" : "")\(minutesOfDay % 60)"
        return TimeView(iso: utc, text: "\(day) \(clock) UTC")
    }

    static func window(_ stop: Stop) -> String {
        DayFormat.span(stop.windowStart, stop.windowEnd) ?? "any day"
    }

    /// "Nov 27, 2026"; "" for none.
    static func day(_ date: LocalDate?) -> String { date.map(DayFormat.day) ?? "" }

    /// "1 Harbor Rd, Savannah, GA 31401" → "Savannah, GA".
    static func city(_ address: String) -> String {
        // "Tulsa, OK" without the street or ZIP code, as a customer's tracking page shows it.
        let place = TrackingRules.city(of: address)
        if !place.isEmpty { return place }
        let parts = address.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return parts.count >= 3 ? parts.suffix(2).joined(separator: ", ") : address
    }

    static func label(_ pay: PayType, rate: Int) -> String {
        switch pay {
        case .percentage: "\(rate / 100)\(rate % 100 == 0 ? "" : rate % 100 < 10 ? ".0\(rate % 100)" : ".\(rate % 100)")% of revenue"
        case .perMile: "\(money(rate)) per mile"
        case .perTrip: "\(money(rate)) per trip"
        case .perVehicle: "\(money(rate)) per vehicle"
        }
    }

    static func slotName(_ slot: MediaSlot) -> String {
        slot.rawValue.replacingOccurrences(of: "_", with: " ").capitalized
    }
}
