/// Money for people to read: 125050 → "$1,250.50". One rule for the
/// console, the driver's app and the notifications the server writes.
public enum MoneyFormat {
    /// The largest amount any money field holds: $100,000,000.00.
    public static let largestCents = 100_000_000_00

    public static func dollars(_ cents: Int) -> String {
        // The magnitude, not abs(): abs(Int.min) traps.
        let magnitude = cents.magnitude
        let fraction = UInt8(magnitude % 100)
        var text: [UInt8] = []
        text.reserveCapacity(32)
        if cents < 0 { text.append(UInt8(ascii: "-")) }
        text.append(UInt8(ascii: "$"))
        NumberText.appendGrouped(magnitude / 100, to: &text)
        text.append(contentsOf: [UInt8(ascii: "."), UInt8(ascii: "0") + fraction / 10, UInt8(ascii: "0") + fraction % 10])
        return String(decoding: text, as: UTF8.self)
    }
}
