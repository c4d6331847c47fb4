import Foundation
import VroomXModels

/// What a driver types for money, fuel and miles, read the same way by the
/// app's fields and the terminal client's options. Nil: not a value.
public enum DriverInput {
    /// "84.20", "84", "$1,084.2" → cents; at most $100,000,000.
    public static func cents(_ text: String) -> Int? {
        let cleaned = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "$", with: "").replacingOccurrences(of: ",", with: "")
        let parts = cleaned.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = DecimalText.int64(parts[0], in: 0...100_000_000) else { return nil }
        guard parts.count == 2 else { return Int(whole) * 100 }
        guard (1...2).contains(parts[1].count), let fraction = DecimalText.int64(parts[1].padding(toLength: 2, withPad: "0", startingAt: 0))
        else { return nil }
        return Int(whole) * 100 + Int(fraction)
    }

    /// "120.5" → 120500 thousandths (gallons or litres, up to three decimals).
    public static func milli(_ text: String) -> Int? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = DecimalText.int64(parts[0], in: 0...9_999_999) else { return nil }
        guard parts.count == 2 else { return Int(whole) * 1000 }
        guard (1...3).contains(parts[1].count), let fraction = DecimalText.int64(parts[1].padding(toLength: 3, withPad: "0", startingAt: 0))
        else { return nil }
        return Int(whole) * 1000 + Int(fraction)
    }

    /// What the driver is told when `miles` refuses the text.
    public static let milesRule = "The odometer is whole miles, 0 to \(NumberText.grouped(FieldLimits.odometerMiles.range.upperBound))."

    /// Whole miles, "412350" or "412,350", as far as an odometer reads (`FieldLimits.odometerMiles`).
    public static func miles(_ text: String) -> Int? {
        let range = FieldLimits.odometerMiles.range
        return DecimalText.int64(text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: ""),
                                 in: Int64(range.lowerBound)...Int64(range.upperBound)).map(Int.init)
    }
}
