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
        guard let tape = Tape(text), let value = try? tape.decode(T.self, at: 0), !tape.bail.happened else { return nil }
        return value
    }
}

/// Anything the quick path does not read; `JSONDecoder` then reads the text.
private struct NotPlain: Error {}

/// Whether the quick path met anything it leaves to `JSONDecoder`, kept
/// even when the type being decoded catches the error (`try?`) and goes on:
/// its answer must still be the one `JSONDecoder` leads it to.
private final class Bail: @unchecked Sendable {
    var happened = false
}

/// The text's values in order, each with where it sits and where the value
/// after it (and after everything inside it) starts: an object's members are
/// found by stepping from key to key. A struct of constants: a class's
/// mutable arrays would be checked for exclusive access at every read.
private struct Tape {
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
    let tokens: [Token]
    let bail = Bail()

    init?(_ text: String) {
        var reader = TapeReader(bytes: Array(text.utf8))
        guard let tokens = reader.read() else { return nil }
        bytes = reader.bytes
        self.tokens = tokens
    }
}

/// Makes a tape, or says the text is not plain JSON.
private struct TapeReader {
    typealias Kind = Tape.Kind
    let bytes: [UInt8]
    private var tokens: [Tape.Token] = []
    /// Deeper text is left to `JSONDecoder`, which has its own limit.
    private static let maximumDepth = 64

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func read() -> [Tape.Token]? {
        guard bytes.count < Int(Int32.max) else { return nil }
        tokens.reserveCapacity(bytes.count / 6 + 2)
        var at = 0
        guard value(&at, depth: 0) else { return nil }
        skipSpace(&at)
        return at == bytes.count ? tokens : nil
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

    private mutating func append(_ kind: Kind, _ flag: Bool, _ start: Int, _ end: Int) {
        tokens.append(Tape.Token(kind: kind, flag: flag, start: Int32(start), end: Int32(end), next: Int32(tokens.count + 1)))
    }

    private mutating func value(_ at: inout Int, depth: Int) -> Bool {
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

    private mutating func container(_ at: inout Int, depth: Int, kind: Kind, close: UInt8) -> Bool {
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
    private mutating func string(_ at: inout Int) -> Bool {
        let start = at + 1
        var beyondASCII = false
        // Strings are most of the text: scanned without a bounds check a byte.
        let end: Int? = bytes.withUnsafeBufferPointer { text in
            var index = start
            while index < text.count {
                let byte = text[index]
                if byte == UInt8(ascii: "\"") { return index }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                if byte >= 0x80 { beyondASCII = true }
                index += 1
            }
            return nil
        }
        guard let end else { return false }
        append(.string, beyondASCII, start, end)
        at = end + 1
        return true
    }

    private mutating func literal(_ word: StaticString, _ kind: Kind, _ flag: Bool, _ at: inout Int) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - at >= count else { return false }
        for offset in 0..<count where bytes[at + offset] != word.utf8Start[offset] { return false }
        append(kind, flag, at, at + count)
        at += count
        return true
    }

    /// JSON's grammar exactly: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
    private mutating func number(_ at: inout Int) -> Bool {
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

}

extension Tape {
    /// Throw this for anything left to `JSONDecoder`.
    func notPlain() -> some Error {
        bail.happened = true
        return NotPlain()
    }

    func isNull(_ index: Int) -> Bool { tokens[index].kind == .null }

    func string(at index: Int) throws -> String {
        let token = tokens[index]
        guard token.kind == .string else { throw notPlain() }
        // The bytes came from a Swift string: they are UTF-8 already.
        return String(decoding: bytes[Int(token.start)..<Int(token.end)], as: UTF8.self)
    }

    func bool(at index: Int) throws -> Bool {
        guard tokens[index].kind == .bool else { throw notPlain() }
        return tokens[index].flag
    }

    /// A plain integer that fits; anything else (a fraction, an exponent, too
    /// large) is `JSONDecoder`'s to accept or refuse.
    func integer<Integer: FixedWidthInteger>(at index: Int) throws -> Integer {
        let token = tokens[index]
        guard token.kind == .number, token.flag else { throw notPlain() }
        var at = Int(token.start)
        let negative = bytes[at] == UInt8(ascii: "-")
        if negative { at += 1 }
        var value: Integer = 0
        while at < Int(token.end) {
            let digit = Integer(truncatingIfNeeded: bytes[at] &- UInt8(ascii: "0"))
            let (shifted, shiftOverflow) = value.multipliedReportingOverflow(by: 10)
            let (next, addOverflow) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !shiftOverflow, !addOverflow else { throw notPlain() }
            value = next
            at += 1
        }
        return value
    }

    func double(at index: Int) throws -> Double {
        let token = tokens[index]
        guard token.kind == .number, let value = Double(String(decoding: bytes[Int(token.start)..<Int(token.end)], as: UTF8.self)),
              value.isFinite else { throw notPlain() }
        if value == 0 {
            // `JSONDecoder` refuses a number that is not zero but rounds to it (1e-400).
            var at = Int(token.start)
            while at < Int(token.end), bytes[at] | 0x20 != UInt8(ascii: "e") {
                if bytes[at] >= UInt8(ascii: "1"), bytes[at] <= UInt8(ascii: "9") { throw notPlain() }
                at += 1
            }
        }
        return value
    }

    func decode<T: Decodable>(_ type: T.Type, at index: Int) throws -> T {
        // The types `JSONDecoder` reads its own way: dates as the wire decoder's
        // strategy says; the rest are left to it.
        if T.self == Date.self {
            guard let date = WireTime.parse(try string(at: index)), let value = date as? T else { throw notPlain() }
            return value
        }
        if T.self == URL.self || T.self == Data.self || T.self == Decimal.self || T.self == Float.self { throw notPlain() }
        return try T(from: TapeDecoder(tape: self, index: index))
    }

    /// The value of `name` in the object at `object`; nil when it has none.
    /// Every key is compared: a key given twice is left to `JSONDecoder`.
    func member(_ name: String, of object: Int) throws -> Int? {
        var utf8Name = name
        return try utf8Name.withUTF8 { wanted in
            try tokens.withUnsafeBufferPointer { tokens in
                try bytes.withUnsafeBufferPointer { text in
                    var found: Int?
                    var key = object + 1
                    let end = Int(tokens[object].next)
                    while key < end {
                        let token = tokens[key]
                        let matches: Bool
                        if token.flag {
                            // Beyond ASCII, Swift's string equality (which `JSONDecoder` uses) is not byte equality.
                            matches = try string(at: key) == name
                        } else if Int(token.end - token.start) == wanted.count, let textStart = text.baseAddress, let wantedStart = wanted.baseAddress {
                            matches = memcmp(textStart + Int(token.start), wantedStart, wanted.count) == 0
                        } else {
                            matches = Int(token.end - token.start) == wanted.count
                        }
                        if matches {
                            guard found == nil else { throw notPlain() }
                            found = key + 1
                        }
                        key = Int(tokens[key + 1].next)
                    }
                    return found
                }
            }
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
    /// Not kept: a type that reads it is left to `JSONDecoder`.
    var codingPath: [any CodingKey] { tape.bail.happened = true; return [] }
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
    var codingPath: [any CodingKey] { tape.bail.happened = true; return [] }

    init(tape: Tape, object: Int) throws {
        guard tape.tokens[object].kind == .object else { throw tape.notPlain() }
        self.tape = tape
        self.object = object
    }

    var allKeys: [Key] {
        let names = (try? tape.keys(of: object)) ?? []
        // A key given twice is `JSONDecoder`'s to read.
        if Set(names).count != names.count { tape.bail.happened = true }
        return names.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool { (try? tape.member(key.stringValue, of: object)) != .some(nil) }

    private func required(_ key: Key) throws -> Int {
        guard let index = try tape.member(key.stringValue, of: object) else { throw tape.notPlain() }
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
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw tape.notPlain() }
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
    func superDecoder() throws -> any Decoder { throw tape.notPlain() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw tape.notPlain() }
}

private struct TapeArray: UnkeyedDecodingContainer {
    let tape: Tape
    let end: Int
    var cursor: Int
    let count: Int?
    var currentIndex = 0
    var codingPath: [any CodingKey] { tape.bail.happened = true; return [] }
    var isAtEnd: Bool { cursor >= end }

    init(tape: Tape, array: Int) throws {
        guard tape.tokens[array].kind == .array else { throw tape.notPlain() }
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

    /// The next element, read by `body`; the cursor moves only when it was read, as `JSONDecoder`'s does.
    private mutating func read<Value>(_ body: (Tape, Int) throws -> Value) throws -> Value {
        guard cursor < end else { throw tape.notPlain() }
        let value = try body(tape, cursor)
        cursor = Int(tape.tokens[cursor].next)
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard cursor < end else { throw tape.notPlain() }
        guard tape.isNull(cursor) else { return false }
        return try read { _, _ in true }
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try read { try $0.bool(at: $1) } }
    mutating func decode(_ type: String.Type) throws -> String { try read { try $0.string(at: $1) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try read { try $0.double(at: $1) } }
    mutating func decode(_ type: Float.Type) throws -> Float { throw tape.notPlain() }
    mutating func decode(_ type: Int.Type) throws -> Int { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try read { try $0.integer(at: $1) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try read { try $0.integer(at: $1) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try read { try $0.decode(type, at: $1) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try read { try TapeObject<NestedKey>(tape: $0, object: $1) })
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try read { try TapeArray(tape: $0, array: $1) } }
    mutating func superDecoder() throws -> any Decoder { throw tape.notPlain() }
}

private struct TapeValue: SingleValueDecodingContainer {
    let tape: Tape
    let index: Int
    var codingPath: [any CodingKey] { tape.bail.happened = true; return [] }

    func decodeNil() -> Bool { tape.isNull(index) }
    func decode(_ type: Bool.Type) throws -> Bool { try tape.bool(at: index) }
    func decode(_ type: String.Type) throws -> String { try tape.string(at: index) }
    func decode(_ type: Double.Type) throws -> Double { try tape.double(at: index) }
    func decode(_ type: Float.Type) throws -> Float { throw tape.notPlain() }
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
