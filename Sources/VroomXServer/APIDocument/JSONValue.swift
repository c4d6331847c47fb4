import Foundation

/// A JSON value the API document is assembled from, written out with sorted
/// keys so the same code always serves the same bytes.
indirect enum JSONValue: Encodable, Equatable, Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    case string(String)
    case integer(Int64)
    /// A decimal; a whole one is written without a fraction (`-90`, not `-90.0`).
    case number(Double)
    case boolean(Bool)
    case null
    case array([JSONValue])
    case object([String: JSONValue])

    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int64) { self = .integer(value) }
    init(booleanLiteral value: Bool) { self = .boolean(value) }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(Dictionary(elements) { _, last in last }) }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, let whole = Int64(exactly: value) { try container.encode(whole) } else { try container.encode(value) }
        case .boolean(let value): try container.encode(value)
        case .null: try container.encodeNil()
        case .array(let values): try container.encode(values)
        case .object(let members): try container.encode(members)
        }
    }

    /// A member of an object (nil for other values or a missing key).
    subscript(key: String) -> JSONValue? {
        get {
            guard case .object(let members) = self else { return nil }
            return members[key]
        }
        set {
            guard case .object(var members) = self else { return }
            members[key] = newValue
            self = .object(members)
        }
    }

    /// How many members an object has (0 for other values).
    var objectCount: Int {
        guard case .object(let members) = self else { return 0 }
        return members.count
    }

    /// This object with the other's members added (the other's win).
    func merging(_ other: JSONValue) -> JSONValue {
        guard case .object(let mine) = self, case .object(let theirs) = other else { return other }
        return .object(mine.merging(theirs) { _, last in last })
    }

    /// The JSON text, pretty-printed with sorted keys.
    var bytes: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? [UInt8](encoder.encode(self))) ?? Array("{}".utf8)
    }
}
