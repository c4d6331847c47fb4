import Foundation

/// Reads JSON the wire encoder wrote (a row's stored document, an order's
/// vehicles) several times cheaper than `JSONDecoder`, which spends about
/// 35,000 instructions on one vehicle; the map reads hundreds of orders a view.
///
/// Values are built by the types' own `init(from:)`, so each type's rules stay
/// written once. Only the plain JSON stored text holds is read here: text with
/// an escape, a key given twice, a number that is not a plain integer where an
/// integer is asked for, or anything else this reader does not take is handed
/// to `JSONDecoder` whole. The answer, or the error, is always the one
/// `WireJSON.decoder()` gives.
public enum StoredJSON {
    private static let authority = WireJSON.decoder()

    public static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        if let value = quickly(type, from: text) { return value }
        return try authority.decode(T.self, from: Data(text.utf8))
    }

    /// The value when the quick path reads the text, nil when it leaves it to the decoder.
    static func quickly<T: Decodable>(_ type: T.Type, from text: String) -> T? {
        guard let tape = Tape(text) else { return nil }
        return try? tape.decode(T.self, at: 0)
    }
}

/// Anything the quick path does not read; `JSONDecoder` then reads the text.
private struct NotPlain: Error {}

/// The text's values in order, each with where it sits and where the value
/// after it (and after everything inside it) starts: an object's members are
/// found by stepping from key to key.
private final class Tape {
    enum Kind: UInt8 { case object, array, string, number, bool, null }

    struct Token {
        var kind: Kind
        /// A string with bytes beyond ASCII, a number that is an integer (no fraction or exponent), or `true`.
        var flag: Bool
        var start: Int32
        var end: Int32
        /// The index of the token after this value's own.
        var next: Int32
    }

    let bytes: [UInt8]
    private(set) var tokens: [Token] = []
    /// Deeper text is left to `JSONDecoder`, which has its own limit.
    private static let maximumDepth = 64

    init?(_ text: String) {
        bytes = Array(text.utf8)
        guard bytes.count < Int(Int32.max) else { return nil }
        tokens.reserveCapacity(bytes.count / 6 + 2)
        var at = 0
        guard value(&at, depth: 0) else { return nil }
        skipSpace(&at)
        guard at == bytes.count else { return nil }
    }

    // MARK: Reading the text

    private func skipSpace(_ at: inout Int) {
        while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
    }

    private func consume(_ byte: UInt8, _ at: inout Int) -> Bool {
        skipSpace(&at)
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    private func append(_ kind: Kind, _ flag: Bool, _ start: Int, _ end: Int) {
        tokens.append(Token(kind: kind, flag: flag, start: Int32(start), end: Int32(end), next: Int32(tokens.count + 1)))
    }

    private func value(_ at: inout Int, depth: Int) -> Bool {
        skipSpace(&at)
        guard at < bytes.count, depth < Self.maximumDepth else { return false }
        switch bytes[at] {
        case UInt8(ascii: "{"): return container(&at, depth: depth, kind: .object, close: UInt8(ascii: "}"))
        case UInt8(ascii: "["): return container(&at, depth: depth, kind: .array, close: UInt8(ascii: "]"))
        case UInt8(ascii: "\""): return string(&at)
        case UInt8(ascii: "t"): return literal("true", .bool, true, &at)
        case UInt8(ascii: "f"): return literal("false", .bool, false, &at)
        case UInt8(ascii: "n"): return literal("null", .null, false, &at)
        default: return number(&at)
        }
    }

    private func container(_ at: inout Int, depth: Int, kind: Kind, close: UInt8) -> Bool {
        let own = tokens.count
        append(kind, false, at, at)
        at += 1
        if !consume(close, &at) {
            repeat {
                if kind == .object {
                    skipSpace(&at)
                    guard at < bytes.count, bytes[at] == UInt8(ascii: "\""), string(&at), consume(UInt8(ascii: ":"), &at) else { return false }
                }
                guard value(&at, depth: depth + 1) else { return false }
            } while consume(UInt8(ascii: ","), &at)
            guard consume(close, &at) else { return false }
        }
        tokens[own].end = Int32(at)
        tokens[own].next = Int32(tokens.count)
        return true
    }

    /// A string without escapes; one with an escape goes to `JSONDecoder`.
    private func string(_ at: inout Int) -> Bool {
        let start = at + 1
        var beyondASCII = false
        at = start
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                append(.string, beyondASCII, start, at)
                at += 1
                return true
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return false }
            if byte >= 0x80 { beyondASCII = true }
            at += 1
        }
        return false
    }

    private func literal(_ word: StaticString, _ kind: Kind, _ flag: Bool, _ at: inout Int) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - at >= count else { return false }
        for offset in 0..<count where bytes[at + offset] != word.utf8Start[offset] { return false }
        append(kind, flag, at, at + count)
        at += count
        return true
    }

    /// JSON's grammar exactly: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
    private func number(_ at: inout Int) -> Bool {
        let start = at
        func digits(_ at: inout Int) -> Int {
            let first = at
            while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
            return at - first
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        let integerStart = at
        let integerDigits = digits(&at)
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return false }
        var integer = true
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            integer = false
            guard digits(&at) > 0 else { return false }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            integer = false
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard digits(&at) > 0 else { return false }
        }
        append(.number, integer, start, at)
        return true
    }

    // MARK: Values

    func isNull(_ index: Int) -> Bool { tokens[index].kind == .null }

    func string(at index: Int) throws -> String {
        let token = tokens[index]
        guard token.kind == .string else { throw NotPlain() }
        // The bytes came from a Swift string: they are UTF-8 already.
        return String(decoding: bytes[Int(token.start)..<Int(token.end)], as: UTF8.self)
    }

    func bool(at index: Int) throws -> Bool {
        guard tokens[index].kind == .bool else { throw NotPlain() }
        return tokens[index].flag
    }

    /// A plain integer that fits; anything else (a fraction, an exponent, too
    /// large) is `JSONDecoder`'s to accept or refuse.
    func integer<Integer: FixedWidthInteger>(at index: Int) throws -> Integer {
        let token = tokens[index]
        guard token.kind == .number, token.flag else { throw NotPlain() }
        var at = Int(token.start)
        let negative = bytes[at] == UInt8(ascii: "-")
        if negative { at += 1 }
        var value: Integer = 0
        while at < Int(token.end) {
            let digit = Integer(truncatingIfNeeded: bytes[at] &- UInt8(ascii: "0"))
            let (shifted, shiftOverflow) = value.multipliedReportingOverflow(by: 10)
            let (next, addOverflow) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !shiftOverflow, !addOverflow else { throw NotPlain() }
            value = next
            at += 1
        }
        return value
    }

    func double(at index: Int) throws -> Double {
        let token = tokens[index]
        guard token.kind == .number, let value = Double(String(decoding: bytes[Int(token.start)..<Int(token.end)], as: UTF8.self)),
              value.isFinite else { throw NotPlain() }
        return value
    }

    func decode<T: Decodable>(_ type: T.Type, at index: Int) throws -> T {
        // The types `JSONDecoder` reads its own way: dates as the wire decoder's
        // strategy says; the rest are left to it.
        if T.self == Date.self {
            guard let date = WireTime.parse(try string(at: index)), let value = date as? T else { throw NotPlain() }
            return value
        }
        if T.self == URL.self || T.self == Data.self || T.self == Decimal.self || T.self == Float.self { throw NotPlain() }
        return try T(from: TapeDecoder(tape: self, index: index))
    }

    /// The value of `name` in the object at `object`; nil when it has none.
    func member(_ name: String, of object: Int) throws -> Int? {
        var found: Int?
        var key = object + 1
        let end = Int(tokens[object].next)
        while key < end {
            if try keyMatches(key, name) {
                guard found == nil else { throw NotPlain() }
                found = key + 1
            }
            key = Int(tokens[key + 1].next)
        }
        return found
    }

    private func keyMatches(_ key: Int, _ name: String) throws -> Bool {
        let token = tokens[key]
        // Beyond ASCII, Swift's string equality (which `JSONDecoder` uses) is not byte equality.
        if token.flag { return try string(at: key) == name }
        var name = name
        return name.withUTF8 { utf8 in
            guard utf8.count == Int(token.end - token.start) else { return false }
            var at = Int(token.start)
            for byte in utf8 {
                guard bytes[at] == byte else { return false }
                at += 1
            }
            return true
        }
    }

    func keys(of object: Int) throws -> [String] {
        var names: [String] = []
        var key = object + 1
        while key < Int(tokens[object].next) {
            names.append(try string(at: key))
            key = Int(tokens[key + 1].next)
        }
        return names
    }
}

// MARK: The decoding protocols over the tape

private struct TapeDecoder: Decoder {
    let tape: Tape
    let index: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try TapeObject<Key>(tape: tape, object: index))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { try TapeArray(tape: tape, array: index) }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { TapeValue(tape: tape, index: index) }
}

private struct TapeObject<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let tape: Tape
    let object: Int
    var codingPath: [any CodingKey] { [] }

    init(tape: Tape, object: Int) throws {
        guard tape.tokens[object].kind == .object else { throw NotPlain() }
        self.tape = tape
        self.object = object
    }

    var allKeys: [Key] { ((try? tape.keys(of: object)) ?? []).compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { (try? tape.member(key.stringValue, of: object)) != .some(nil) }

    private func required(_ key: Key) throws -> Int {
        guard let index = try tape.member(key.stringValue, of: object) else { throw NotPlain() }
        return index
    }

    private func present(_ key: Key) throws -> Int? {
        guard let index = try tape.member(key.stringValue, of: object), !tape.isNull(index) else { return nil }
        return index
    }

    func decodeNil(forKey key: Key) throws -> Bool { tape.isNull(try required(key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try tape.bool(at: try required(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try tape.string(at: try required(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try tape.double(at: try required(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw NotPlain() }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try tape.integer(at: try required(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try tape.integer(at: try required(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try tape.integer(at: try required(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try tape.integer(at: try required(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try tape.integer(at: try required(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try tape.integer(at: try required(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try tape.integer(at: try required(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try tape.integer(at: try required(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try tape.integer(at: try required(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try tape.integer(at: try required(key)) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try tape.decode(type, at: try required(key)) }

    // The common optional members, read with one look-up rather than three.
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(key).map { try tape.string(at: $0) } }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(key).map { try tape.bool(at: $0) } }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key).map { try tape.integer(at: $0) } }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key).map { try tape.integer(at: $0) } }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(key).map { try tape.decode(type, at: $0) } }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try TapeObject<NestedKey>(tape: tape, object: try required(key)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try TapeArray(tape: tape, array: try required(key)) }
    func superDecoder() throws -> any Decoder { throw NotPlain() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw NotPlain() }
}

private struct TapeArray: UnkeyedDecodingContainer {
    let tape: Tape
    let end: Int
    var cursor: Int
    let count: Int?
    var currentIndex = 0
    var codingPath: [any CodingKey] { [] }
    var isAtEnd: Bool { cursor >= end }

    init(tape: Tape, array: Int) throws {
        guard tape.tokens[array].kind == .array else { throw NotPlain() }
        self.tape = tape
        end = Int(tape.tokens[array].next)
        cursor = array + 1
        var elements = 0
        var element = cursor
        while element < end {
            elements += 1
            element = Int(tape.tokens[element].next)
        }
        count = elements
    }

    private mutating func next() throws -> Int {
        guard cursor < end else { throw NotPlain() }
        let index = cursor
        cursor = Int(tape.tokens[index].next)
        currentIndex += 1
        return index
    }

    mutating func decodeNil() throws -> Bool {
        guard cursor < end else { throw NotPlain() }
        guard tape.isNull(cursor) else { return false }
        _ = try next()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try tape.bool(at: try next()) }
    mutating func decode(_ type: String.Type) throws -> String { try tape.string(at: try next()) }
    mutating func decode(_ type: Double.Type) throws -> Double { try tape.double(at: try next()) }
    mutating func decode(_ type: Float.Type) throws -> Float { throw NotPlain() }
    mutating func decode(_ type: Int.Type) throws -> Int { try tape.integer(at: try next()) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try tape.integer(at: try next()) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try tape.integer(at: try next()) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try tape.integer(at: try next()) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try tape.integer(at: try next()) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try tape.integer(at: try next()) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try tape.integer(at: try next()) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try tape.integer(at: try next()) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try tape.integer(at: try next()) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try tape.integer(at: try next()) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try tape.decode(type, at: try next()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try TapeObject<NestedKey>(tape: tape, object: try next()))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try TapeArray(tape: tape, array: try next()) }
    mutating func superDecoder() throws -> any Decoder { throw NotPlain() }
}

private struct TapeValue: SingleValueDecodingContainer {
    let tape: Tape
    let index: Int
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { tape.isNull(index) }
    func decode(_ type: Bool.Type) throws -> Bool { try tape.bool(at: index) }
    func decode(_ type: String.Type) throws -> String { try tape.string(at: index) }
    func decode(_ type: Double.Type) throws -> Double { try tape.double(at: index) }
    func decode(_ type: Float.Type) throws -> Float { throw NotPlain() }
    func decode(_ type: Int.Type) throws -> Int { try tape.integer(at: index) }
    func decode(_ type: Int8.Type) throws -> Int8 { try tape.integer(at: index) }
    func decode(_ type: Int16.Type) throws -> Int16 { try tape.integer(at: index) }
    func decode(_ type: Int32.Type) throws -> Int32 { try tape.integer(at: index) }
    func decode(_ type: Int64.Type) throws -> Int64 { try tape.integer(at: index) }
    func decode(_ type: UInt.Type) throws -> UInt { try tape.integer(at: index) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try tape.integer(at: index) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try tape.integer(at: index) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try tape.integer(at: index) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try tape.integer(at: index) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try tape.decode(type, at: index) }
}
