/// Money for people to read: 125050 → "$1,250.50". One rule for the
/// console, the driver's app and the notifications the server writes.
public enum MoneyFormat {
    /// The largest amount any money field holds: $100,000,000.00.
    public static let largestCents = 100_000_000_00

    public static func dollars(_ cents: Int) -> String {
        // The magnitude, not abs(): abs(Int.min) traps.
        let magnitude = cents.magnitude
        let fraction = magnitude % 100
        return (cents < 0 ? "-" : "") + "$" + NumberText.grouped(magnitude / 100) + "." + (fraction < 10 ? "0" : "") + String(fraction)
    }
}
