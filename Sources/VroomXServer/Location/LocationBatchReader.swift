import Foundation
import VroomXModels

/// Reads a batch of positions in the shape phones send it —
/// `{"id":"…","fixes":[{"latitude":…,"longitude":…,"recorded_at":"…",…},…]}`
/// — without Foundation's decoder, which spent 28,000 instructions a fix, a
/// fifth of the server's work on a batch (every truck sends one every few
/// seconds). Anything outside that shape — another key, a key twice, an
/// escape in a string, a number JSON does not allow or a double cannot hold,
/// a time it cannot read — gives nil, and the body goes to the decoder,
/// which either reads it the same way or names what is wrong with it.
enum LocationBatchReader {
    static func read(_ body: UnsafeRawBufferPointer) -> RecordLocationsRequest? {
        var reader = Reader(bytes: body)
        var id: ID<RecordLocationsRequest>??
        var fixes: [GeoPosition]?
        guard reader.object({ key, reader in
            switch key {
            case "id" where id == nil:
                if reader.null() { id = .some(nil); return true }
                guard let text = reader.string(), let parsed = ID<RecordLocationsRequest>(String(decoding: text, as: UTF8.self)) else { return false }
                id = parsed
                return true
            case "fixes" where fixes == nil:
                var read: [GeoPosition] = []
                guard reader.array({ reader in
                    guard let fix = fix(&reader) else { return false }
                    read.append(fix)
                    return true
                }) else { return false }
                fixes = read
                return true
            default:
                return false
            }
        }), reader.atEnd, let fixes else { return nil }
        return RecordLocationsRequest(id: id ?? nil, fixes: fixes)
    }

    private static func fix(_ reader: inout Reader) -> GeoPosition? {
        var latitude, longitude: Double?
        var accuracy, speed, heading: Double??
        var recordedAt: Date?
        guard reader.object({ key, reader in
            switch key {
            case "latitude" where latitude == nil: latitude = reader.number(); return latitude != nil
            case "longitude" where longitude == nil: longitude = reader.number(); return longitude != nil
            case "accuracy_meters" where accuracy == nil: accuracy = reader.optionalNumber(); return accuracy != nil
            case "speed_meters_per_second" where speed == nil: speed = reader.optionalNumber(); return speed != nil
            case "heading" where heading == nil: heading = reader.optionalNumber(); return heading != nil
            case "recorded_at" where recordedAt == nil:
                recordedAt = reader.string().flatMap { WireTime.parse(String(decoding: $0, as: UTF8.self)) }
                return recordedAt != nil
            default:
                return false
            }
        }), let latitude, let longitude, let recordedAt else { return nil }
        return GeoPosition(latitude: latitude, longitude: longitude, accuracyMeters: accuracy ?? nil, recordedAt: recordedAt,
                           speedMetersPerSecond: speed ?? nil, heading: heading ?? nil)
    }

    /// JSON tokens over the body's bytes; each read returns nil (or false)
    /// for anything but what it expects.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var at = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var atEnd: Bool {
            mutating get {
                skipSpace()
                return at == bytes.count
            }
        }

        private mutating func skipSpace() {
            while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        /// `{ "key": value, … }`, each member read by `member` (false: not this shape).
        mutating func object(_ member: (String, inout Reader) -> Bool) -> Bool {
            guard take(UInt8(ascii: "{")) else { return false }
            if take(UInt8(ascii: "}")) { return true }
            repeat {
                guard let key = string(), take(UInt8(ascii: ":")), member(String(decoding: key, as: UTF8.self), &self) else { return false }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}"))
        }

        mutating func array(_ element: (inout Reader) -> Bool) -> Bool {
            guard take(UInt8(ascii: "[")) else { return false }
            if take(UInt8(ascii: "]")) { return true }
            repeat {
                guard element(&self) else { return false }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "]"))
        }

        /// A string's bytes; one with an escape or a control character is left to the decoder.
        mutating func string() -> UnsafeRawBufferPointer? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = at
            while at < bytes.count {
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    at += 1
                    return UnsafeRawBufferPointer(rebasing: bytes[start..<(at - 1)])
                }
                guard byte != UInt8(ascii: "\\"), byte >= 0x20 else { return nil }
                at += 1
            }
            return nil
        }

        mutating func null() -> Bool {
            skipSpace()
            guard bytes.count - at >= 4, bytes[at] == UInt8(ascii: "n"), bytes[at + 1] == UInt8(ascii: "u"),
                  bytes[at + 2] == UInt8(ascii: "l"), bytes[at + 3] == UInt8(ascii: "l") else { return false }
            at += 4
            return true
        }

        /// A number (`.some(nil)` for null), nil when it is neither.
        mutating func optionalNumber() -> Double?? {
            if null() { return .some(nil) }
            return number().map { .some($0) }
        }

        /// A JSON number (`-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`) a double holds.
        mutating func number() -> Double? {
            skipSpace()
            let start = at
            func digits() -> Int {
                let first = at
                while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
                return at - first
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
            let whole = at
            guard digits() > 0, bytes[whole] != UInt8(ascii: "0") || at == whole + 1 else { return nil }
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                at += 1
                guard digits() > 0 else { return nil }
            }
            let mantissa = UnsafeRawBufferPointer(rebasing: bytes[start..<at])
            var exponent = false
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                exponent = true
                at += 1
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                guard digits() > 0 else { return nil }
            }
            guard let value = Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)),
                  value.isFinite else { return nil }
            // A zero is read only when written as one: the decoder refuses a number too small for a double (1e-400)
            // and some zeros with an exponent (0e1), which a double's parser reads as 0.
            if value == 0, exponent || mantissa.contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) { return nil }
            return value
        }
    }
}
