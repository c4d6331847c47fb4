import Foundation

/// Times travel as UTC ISO-8601 with millisecond precision
/// (`2026-11-22T14:05:09.120Z`); the server stores them as epoch milliseconds.
/// Formatting and parsing are done by hand: they sit on every response's hot
/// path, and a fixed format needs no locale, calendar or formatter cache.
public enum WireTime {
    public static func string(from date: Date) -> String {
        string(fromMilliseconds: milliseconds(date))
    }

    public static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    public static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    public static func string(fromMilliseconds ms: Int64) -> String {
        let (days, msOfDay) = floorDivide(ms, 86_400_000)
        let (year, month, day) = civilDate(fromDays: days)
        let hour = msOfDay / 3_600_000
        let minute = (msOfDay / 60_000) % 60
        let second = (msOfDay / 1000) % 60
        let milli = msOfDay % 1000
        // A year past 9999 (or before year 0) takes more than four characters: only a clock gone wrong makes one.
        guard (0...9999).contains(year) else {
            return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(hour, 2) + ":" + pad(minute, 2) + ":"
                + pad(second, 2) + "." + pad(milli, 3) + "Z"
        }
        return String(unsafeUninitializedCapacity: 24) { out in
            var at = 0
            put(year, 4, out, &at); put("-", out, &at); put(month, 2, out, &at); put("-", out, &at); put(day, 2, out, &at)
            put("T", out, &at); put(hour, 2, out, &at); put(":", out, &at); put(minute, 2, out, &at); put(":", out, &at)
            put(second, 2, out, &at); put(".", out, &at); put(milli, 3, out, &at); put("Z", out, &at)
            return at
        }
    }

    /// Writes `value` (0 ≤ value < 10^width) as `width` digits at `at`, and moves `at` past them. Times and
    /// dates are written in place: building them from padded strings cost thousands of instructions each.
    @inline(__always)
    static func put(_ value: Int64, _ width: Int, _ out: UnsafeMutableBufferPointer<UInt8>, _ at: inout Int) {
        var rest = value
        for place in (at..<(at + width)).reversed() {
            out[place] = UInt8(truncatingIfNeeded: rest % 10) &+ UInt8(ascii: "0")
            rest /= 10
        }
        at += width
    }

    @inline(__always)
    static func put(_ character: Unicode.Scalar, _ out: UnsafeMutableBufferPointer<UInt8>, _ at: inout Int) {
        out[at] = UInt8(ascii: character)
        at += 1
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`. Returns nil for
    /// anything else, including out-of-range fields.
    public static func parse(_ text: String) -> Date? {
        parseMilliseconds(text).map(date(milliseconds:))
    }

    public static func parseMilliseconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        var i = 0
        func number(_ width: Int) -> Int64? {
            guard i + width <= b.count else { return nil }
            var value: Int64 = 0
            for k in i..<(i + width) {
                let c = b[k]
                guard c >= 48, c <= 57 else { return nil }
                value = value * 10 + Int64(c - 48)
            }
            i += width
            return value
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < b.count, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = number(4), expect(45), let month = number(2), expect(45), let day = number(2),
              i < b.count, b[i] == 84 || b[i] == 116 || b[i] == 32 else { return nil }
        i += 1
        guard let hour = number(2), expect(58), let minute = number(2), expect(58), let second = number(2) else { return nil }
        var millis: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 3 { millis = millis * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        var offsetMinutes: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            let sign: Int64 = b[i] == 45 ? -1 : 1
            i += 1
            guard let oh = number(2), expect(58), let om = number(2), oh < 24, om < 60 else { return nil }
            offsetMinutes = sign * (oh * 60 + om)
        } else {
            return nil
        }
        guard i == b.count, (1...12).contains(month), day >= 1, day <= daysInMonth(year, month),
              hour < 24, minute < 60, second < 61 else { return nil }
        let days = daysFromCivil(year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetMinutes * 60
        return seconds * 1000 + millis
    }

    // Howard Hinnant's civil-from-days algorithms (proleptic Gregorian).
    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilDate(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func daysInMonth(_ year: Int64, _ month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A calendar date without time or zone (trip start/end, pickup windows,
/// expense dates), `YYYY-MM-DD` on the wire and in the database.
public struct LocalDate: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    public init?(year: Int, month: Int, day: Int) {
        guard (1900...2999).contains(year), (1...12).contains(month),
              day >= 1, day <= WireTime.daysInMonth(Int64(year), Int64(month)) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// `YYYY-MM-DD`, digits only: read byte by byte (every trip and order row has dates; splitting the text cost 5,500
    /// instructions a date).
    public init?(_ text: String) {
        var text = text
        let parts: (Int, Int, Int)? = text.withUTF8 { bytes in
            guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
            func number(_ range: Range<Int>) -> Int? {
                var value = 0
                for index in range {
                    let digit = bytes[index] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int(digit)
                }
                return value
            }
            guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
            return (year, month, day)
        }
        guard let (year, month, day) = parts else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// The UTC calendar date of an instant.
    public init(_ date: Date) {
        let days = WireTime.floorDivide(WireTime.milliseconds(date), 86_400_000).0
        let (y, m, d) = WireTime.civilDate(fromDays: days)
        self.year = Int(y)
        self.month = Int(m)
        self.day = Int(d)
    }

    /// The calendar date of an instant where the person is (a driver's
    /// "today" is not UTC's).
    public init(_ date: Date, in timeZone: TimeZone) {
        self.init(date.addingTimeInterval(TimeInterval(timeZone.secondsFromGMT(for: date))))
    }

    /// Midnight UTC at the start of this date.
    public var startOfDay: Date {
        WireTime.date(milliseconds: WireTime.daysFromCivil(Int64(year), Int64(month), Int64(day)) * 86_400_000)
    }

    public func adding(days: Int) -> LocalDate {
        LocalDate(startOfDay.addingTimeInterval(Double(days) * 86_400))
    }

    public var description: String {
        // Four digits for any year made from text or numbers (1900…2999); one made from an instant far off (a clock
        // gone wrong) is written with as many as it has.
        guard (0...9999).contains(year) else {
            return WireTime.pad(Int64(year), 4) + "-" + WireTime.pad(Int64(month), 2) + "-" + WireTime.pad(Int64(day), 2)
        }
        return String(unsafeUninitializedCapacity: 10) { out in
            var at = 0
            WireTime.put(Int64(year), 4, out, &at); WireTime.put("-", out, &at); WireTime.put(Int64(month), 2, out, &at)
            WireTime.put("-", out, &at); WireTime.put(Int64(day), 2, out, &at)
            return at
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let date = LocalDate(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Expected a date YYYY-MM-DD, got \"\(text)\"")
        }
        self = date
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// The one JSON configuration used by server and clients.
public enum WireJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(WireTime.string(from: date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = WireTime.parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "Expected an ISO-8601 time such as 2026-11-22T14:05:09Z, got \"\(text)\"")
            }
            return date
        }
        return decoder
    }
}
