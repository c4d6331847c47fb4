import Foundation

/// A UUID tagged with the entity it identifies, so a trip id can never be
/// passed where an order id is expected. On the wire and in the database it
/// is the lowercase canonical UUID string.
public struct ID<Entity>: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let uuid: UUID

    public init(_ uuid: UUID = UUIDText.random()) { self.uuid = uuid }

    /// Accepts any letter case; returns nil for anything that is not a UUID.
    public init?(_ string: String) {
        guard let uuid = UUIDText.parse(string) else { return nil }
        self.uuid = uuid
    }

    public var rawValue: String { UUIDText.lowercase(uuid) }
    public var description: String { rawValue }

    /// The order of the lowercase strings, which is the order of the bytes.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        withUnsafeBytes(of: lhs.uuid.uuid) { left in
            withUnsafeBytes(of: rhs.uuid.uuid) { right in left.lexicographicallyPrecedes(right) }
        }
    }
}

/// The canonical UUID text (8-4-4-4-12 hex digits), written and read by
/// hand: ids are on every row a server answers and a phone applies, and
/// Foundation goes through `snprintf` and `sscanf` on Linux.
public enum UUIDText {
    /// A random (version 4) UUID from the system's secure generator.
    /// Foundation's `UUID()` on Linux opens, reads and closes /dev/urandom
    /// for each one, three system calls for every row the server creates
    /// (Apple's Foundation draws from `arc4random` already).
    public static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { out in
            out.storeBytes(of: generator.next() as UInt64, toByteOffset: 0, as: UInt64.self)
            out.storeBytes(of: generator.next() as UInt64, toByteOffset: 8, as: UInt64.self)
            out[6] = out[6] & 0x0f | 0x40  // version 4
            out[8] = out[8] & 0x3f | 0x80  // RFC 4122 variant
        }
        return UUID(uuid: bytes)
    }

    public static func lowercase(_ uuid: UUID) -> String {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        out[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    out[position] = hexDigit(byte >> 4)
                    out[position + 1] = hexDigit(byte & 0x0f)
                    position += 2
                }
                return position
            }
        }
    }

    /// 0…15 as `0`…`9`, `a`…`f` (computed: a table lookup went through the table's global accessor each time).
    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble &+ UInt8(ascii: "0") : nibble &+ (UInt8(ascii: "a") - 10)
    }

    /// Any letter case; nil for anything else. (Foundation's parser, built on
    /// `sscanf`, also took a space, a sign or a one-digit group: such text
    /// named some other id; now it names none.)
    public static func parse(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { utf8 -> UUID? in
            guard utf8.count == 36 else { return nil }
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let valid = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
                var position = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        guard utf8[position] == UInt8(ascii: "-") else { return false }
                        position += 1
                    }
                    guard let high = value(utf8[position]), let low = value(utf8[position + 1]) else { return false }
                    out[index] = high << 4 | low
                    position += 2
                }
                return true
            }
            return valid ? UUID(uuid: bytes) : nil
        }
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension ID: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let id = ID(string) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Expected a UUID, got \"\(string)\"")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
