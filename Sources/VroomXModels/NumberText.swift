/// Counts and whole numbers as people read them, one rule for the console,
/// the driver's app and the terminal client: "413,250", "1 trip", "3 trips".
public enum NumberText {
    /// 413250 → "413,250".
    public static func grouped<Value: BinaryInteger>(_ value: Value) -> String {
        var whole = String(value.magnitude)
        var groups = ""
        while whole.count > 3 {
            groups = "," + whole.suffix(3) + groups
            whole.removeLast(3)
        }
        return (value < 0 ? "-" : "") + whole + groups
    }

    /// (1, "trip") → "1 trip"; (3, "trip") → "3 trips"; a plural of its own
    /// where adding "s" is wrong ("1 batch", "2 batches").
    public static func count(_ number: Int, _ noun: String, plural: String? = nil) -> String {
        "\(grouped(number)) \(number == 1 ? noun : plural ?? noun + "s")"
    }
}
