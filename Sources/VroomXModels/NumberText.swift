/// Counts and whole numbers as people read them, one rule for the console,
/// the driver's app and the terminal client: "413,250", "1 trip", "3 trips".
public enum NumberText {
    /// 413250 → "413,250".
    public static func grouped<Value: BinaryInteger>(_ value: Value) -> String {
        var text: [UInt8] = []
        appendGrouped(value, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// `grouped`'s bytes, for text built in one buffer (a page shows hundreds of figures).
    static func appendGrouped<Value: BinaryInteger>(_ value: Value, to text: inout [UInt8]) {
        if value < 0 { text.append(UInt8(ascii: "-")) }
        let digits = String(value.magnitude).utf8
        var left = digits.count
        for digit in digits {
            text.append(digit)
            left -= 1
            if left > 0, left % 3 == 0 { text.append(UInt8(ascii: ",")) }
        }
    }

    /// (1, "trip") → "1 trip"; (3, "trip") → "3 trips"; a plural of its own
    /// where adding "s" is wrong ("1 batch", "2 batches").
    public static func count(_ number: Int, _ noun: String, plural: String? = nil) -> String {
        "\(grouped(number)) \(number == 1 ? noun : plural ?? noun + "s")"
    }
}
