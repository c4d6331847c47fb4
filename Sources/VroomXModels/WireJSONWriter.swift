import Foundation

extension WireJSON {
    private static let authority = encoder()

    /// The bytes `WireJSON.encoder()` writes for `value`, several times
    /// cheaper: `JSONEncoder` wraps every nested value (an id, a date, an
    /// enum) in an encoder of its own, about half of what a phone spends
    /// queueing a change and much of what the server spends answering.
    ///
    /// Values are written by the types' own `encode(to:)`. Only what this
    /// writer knows to write exactly as `JSONEncoder` does is written here:
    /// a string with a control character other than a line feed, return or
    /// tab, a number that is not finite, data, a URL, a
    /// nested or super encoder, a key given twice or anything else is handed
    /// to `JSONEncoder` whole. The answer, or the error, is always its own.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        if let bytes = quickly(value) { return bytes }
        return Array(try authority.encode(value))
    }

    /// The same, as text.
    public static func string<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }

    /// The bytes when the quick path writes the value, nil when it leaves it to `JSONEncoder`.
    static func quickly<T: Encodable>(_ value: T) -> [UInt8]? {
        let writer = JSONWriter()
        let encoder = WriterEncoder(writer)
        guard (try? encoder.encodeValue(value)) != nil, !writer.bailed else { return nil }
        return writer.bytes
    }
}

/// Anything the quick path does not write; `JSONEncoder` then writes the value.
private struct NotPlain: Error {}

/// The text written so far, and the objects and arrays still open. A
/// value's members are written as they come; when the value's
/// `encode(to:)` returns, its object's members are put in key order (the
/// order `.sortedKeys` gives: by the keys' bytes).
private final class JSONWriter {
    enum Kind { case object, array }

    /// An open object or array, as a container names it: where it is among those open, and which it is (a container
    /// kept past its value's end must not write into whatever opened there since).
    struct FrameRef {
        let index: Int
        let id: Int
    }

    struct Frame {
        let id: Int
        let kind: Kind
        /// Where the object's `{` or the array's `[` is.
        let start: Int
        /// The object's first member in `members`.
        let firstMember: Int
        /// The array's elements so far.
        var count = 0
    }

    /// Where a member's key begins (its opening quote), and the byte after the key's closing quote.
    struct Member {
        let start: Int
        let keyEnd: Int
    }

    // Not checked for exclusive access at run time: every access is synchronous, by one encoding, and the checks were a
    // third of the writing.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    @exclusivity(unchecked) var frames: [Frame] = []
    @exclusivity(unchecked) var members: [Member] = []
    /// Set where the quick path met something it leaves to `JSONEncoder`, even when the type caught the error and went on.
    @exclusivity(unchecked) var bailed = false
    @exclusivity(unchecked) private var lastID = 0
    /// `JSONEncoder` refuses deeper nesting.
    static let maximumDepth = 512

    init() { bytes.reserveCapacity(512) }

    func fail() -> NotPlain {
        bailed = true
        return NotPlain()
    }

    // MARK: Containers

    /// A number no other frame or value of this encoding has.
    func newID() -> Int {
        lastID += 1
        return lastID
    }

    func open(_ kind: Kind) -> FrameRef {
        if frames.count >= Self.maximumDepth { bailed = true }
        let frame = Frame(id: newID(), kind: kind, start: bytes.count, firstMember: members.count)
        frames.append(frame)
        bytes.append(kind == .object ? UInt8(ascii: "{") : UInt8(ascii: "["))
        return FrameRef(index: frames.count - 1, id: frame.id)
    }

    func isOpen(_ frame: FrameRef) -> Bool { frames.indices.contains(frame.index) && frames[frame.index].id == frame.id }

    /// Before an array's element: the comma after the one before.
    func element(of frame: FrameRef) throws {
        guard isOpen(frame), frames[frame.index].kind == .array else { throw fail() }
        if frames[frame.index].count > 0 { bytes.append(UInt8(ascii: ",")) }
        frames[frame.index].count += 1
    }

    /// Before an object's member: its key and colon, noted for sorting. A key beyond ASCII (or one that needs an escape)
    /// is left to `JSONEncoder`, whose order for such keys is its own.
    func key(_ key: String, in frame: FrameRef) throws {
        guard isOpen(frame), frames[frame.index].kind == .object else { throw fail() }
        let start = bytes.count
        try string(key, plainASCII: true)
        members.append(Member(start: start, keyEnd: bytes.count))
        bytes.append(UInt8(ascii: ":"))
    }

    /// Closes the innermost open object or array.
    func close() throws {
        guard let frame = frames.popLast() else { throw fail() }
        guard frame.kind == .object else {
            bytes.append(UInt8(ascii: "]"))
            return
        }
        // Each member runs from its key to the next member's key (or the end); sorted, they are joined by commas.
        let end = bytes.count
        var spans = (frame.firstMember..<members.count).map { index in
            (key: (members[index].start + 1)..<(members[index].keyEnd - 1), whole: members[index].start..<(index + 1 < members.count ? members[index + 1].start : end))
        }
        members.removeSubrange(frame.firstMember...)
        guard spans.count > 1 else {
            bytes.append(UInt8(ascii: "}"))
            return
        }
        try bytes.withUnsafeBufferPointer { buffer in
            /// By the keys' bytes, as `.sortedKeys` orders plain ASCII keys; a shorter key before a longer one it begins.
            func order(_ a: Range<Int>, _ b: Range<Int>) -> Int {
                let compared = memcmp(buffer.baseAddress! + a.lowerBound, buffer.baseAddress! + b.lowerBound, min(a.count, b.count))
                return compared != 0 ? Int(compared) : a.count - b.count
            }
            var sorted = true
            for index in spans.indices.dropFirst() {
                let compared = order(spans[index - 1].key, spans[index].key)
                if compared == 0 { throw fail() }  // a key twice: `JSONEncoder` decides
                if compared > 0 { sorted = false }
            }
            guard !sorted else { return }
            var twice = false
            spans.sort { a, b in
                let compared = order(a.key, b.key)
                if compared == 0 { twice = true }
                return compared < 0
            }
            if twice { throw fail() }
        }
        var joined: [UInt8] = []
        joined.reserveCapacity(end - frame.start + spans.count + 1)
        joined.append(UInt8(ascii: "{"))
        for (index, span) in spans.enumerated() {
            if index > 0 { joined.append(UInt8(ascii: ",")) }
            joined.append(contentsOf: bytes[span.whole])
        }
        joined.append(UInt8(ascii: "}"))
        bytes.replaceSubrange(frame.start..<end, with: joined)
    }

    // MARK: Values

    func null() { bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }

    func bool(_ value: Bool) {
        if value { bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65]) } else { bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65]) }
    }

    func integer<I: BinaryInteger>(_ value: I) {
        if let small = Int64(exactly: value) { return int64(small) }
        bytes.append(contentsOf: String(value).utf8)
    }

    private func int64(_ value: Int64) {
        if value == 0 { return bytes.append(UInt8(ascii: "0")) }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // up to 20 digits, written backwards
        var count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            while magnitude > 0 {
                raw[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            bytes.append(contentsOf: raw[(24 - count)...])
        }
    }

    /// As `JSONEncoder` writes a number: the shortest text that reads back (`1e-07` and `1e+20` with an exponent), without a
    /// trailing `.0`. Those that are not finite (an error there) are left to it.
    func floating<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) throws {
        guard value.isFinite else { throw fail() }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// - Parameter plainASCII: a key, which must need no escape and hold nothing beyond ASCII.
    func string(_ value: String, plainASCII: Bool = false) throws {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        try value.withUTF8 { utf8 in
            var plainFrom = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte >= 0x7F {
                if plainASCII { throw fail() }
                if byte >= 0x7F { continue }
                let escape: UInt8
                switch byte {
                case UInt8(ascii: "\""): escape = UInt8(ascii: "\"")
                case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
                case 0x0A: escape = UInt8(ascii: "n")
                case 0x0D: escape = UInt8(ascii: "r")
                case 0x09: escape = UInt8(ascii: "t")
                default: throw fail()
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainFrom..<index]))
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(escape)
                plainFrom = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainFrom...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// The encoder every value of one encoding is handed: what a value's
/// `encode(to:)` opens belongs to that value until it returns.
private final class WriterEncoder: Encoder {
    let writer: JSONWriter
    /// The object or array the value being encoded opened, if any.
    @exclusivity(unchecked) private var opened: JSONWriter.FrameRef?
    /// Whether the value being encoded asked for a single value container, and how many values it wrote through it.
    @exclusivity(unchecked) private var wroteSingle = false
    @exclusivity(unchecked) private var singleWrites = 0
    /// Which value is being encoded: a single value container kept past its value's end must not write.
    @exclusivity(unchecked) private var value = 0

    /// Not kept (it cost as much as the writing): a type that reads it is left to `JSONEncoder`.
    var codingPath: [any CodingKey] {
        writer.bailed = true
        return []
    }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ writer: JSONWriter) { self.writer = writer }

    /// Writes one value: the types `JSONEncoder` writes itself (dates as wire times), or whatever the value's
    /// `encode(to:)` makes, its object's keys sorted when it returns.
    func encodeValue<T: Encodable>(_ value: T) throws {
        // Metatypes compared, not a cast a value: most values are none of these.
        if T.self == Date.self, let date = value as? Date { return try writer.string(WireTime.string(from: date)) }
        if T.self == Data.self || T.self == URL.self || T.self == Decimal.self { throw writer.fail() }
        // Once anything is left to `JSONEncoder`, nothing more is written (and a value nested past its limit unwinds).
        guard !writer.bailed else { throw NotPlain() }
        let saved = (opened, wroteSingle, singleWrites, self.value)
        (opened, wroteSingle, singleWrites, self.value) = (nil, false, 0, writer.newID())
        defer { (opened, wroteSingle, singleWrites, self.value) = saved }
        let depth = writer.frames.count
        do {
            try value.encode(to: self)
        } catch {
            // The key or comma before the value is written already: a type that catches the error and goes on would
            // leave it behind, where `JSONEncoder` leaves nothing.
            writer.bailed = true
            throw error
        }
        // A value that wrote nothing is an empty object to `JSONEncoder` (or an error); such a rare thing is left to it.
        guard opened != nil || singleWrites == 1, writer.frames.count == depth + (opened == nil ? 0 : 1) else { throw writer.fail() }
        if opened != nil { try writer.close() }
    }

    /// Before a value written through a single value container of `owner`: one value, while its owner is being encoded.
    func single(of owner: Int) throws {
        guard owner == value, singleWrites == 0 else { throw writer.fail() }
        singleWrites += 1
    }

    private func open(_ kind: JSONWriter.Kind) -> JSONWriter.FrameRef {
        if let opened {
            // The same value asking again for its container gets the one it has; a different kind cannot be.
            if writer.isOpen(opened), writer.frames[opened.index].kind == kind { return opened }
            writer.bailed = true
            return opened
        }
        if wroteSingle { writer.bailed = true }
        let frame = writer.open(kind)
        opened = frame
        return frame
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedWriter<Key>(encoder: self, frame: open(.object)))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedWriter(encoder: self, frame: open(.array))
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        if opened != nil || wroteSingle { writer.bailed = true }
        wroteSingle = true
        return SingleWriter(encoder: self, owner: value)
    }
}

/// Where what the quick path leaves to `JSONEncoder` is written meanwhile (and thrown away): a nested container, a super encoder.
private func detachedContainer<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
    let encoder = WriterEncoder(JSONWriter())
    return KeyedEncodingContainer(KeyedWriter<Key>(encoder: encoder, frame: encoder.writer.open(.object)))
}

private func detachedUnkeyedContainer() -> any UnkeyedEncodingContainer {
    let encoder = WriterEncoder(JSONWriter())
    return UnkeyedWriter(encoder: encoder, frame: encoder.writer.open(.array))
}

private struct KeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: WriterEncoder
    let frame: JSONWriter.FrameRef
    var writer: JSONWriter { encoder.writer }
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil(forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.null() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.bool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); try writer.string(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); try writer.floating(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); try writer.floating(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try writer.key(key.stringValue, in: frame); writer.integer(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try writer.key(key.stringValue, in: frame)
        try encoder.encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        writer.bailed = true
        return detachedContainer(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        writer.bailed = true
        return detachedUnkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        writer.bailed = true
        return WriterEncoder(JSONWriter())
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder() }
}

private struct UnkeyedWriter: UnkeyedEncodingContainer {
    let encoder: WriterEncoder
    let frame: JSONWriter.FrameRef
    var writer: JSONWriter { encoder.writer }
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { writer.isOpen(frame) ? writer.frames[frame.index].count : 0 }

    private func next() throws { try writer.element(of: frame) }

    mutating func encodeNil() throws { try next(); writer.null() }
    mutating func encode(_ value: Bool) throws { try next(); writer.bool(value) }
    mutating func encode(_ value: String) throws { try next(); try writer.string(value) }
    mutating func encode(_ value: Double) throws { try next(); try writer.floating(value) }
    mutating func encode(_ value: Float) throws { try next(); try writer.floating(value) }
    mutating func encode(_ value: Int) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: Int8) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: Int16) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: Int32) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: Int64) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt8) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt16) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt32) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt64) throws { try next(); writer.integer(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try next()
        try encoder.encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        writer.bailed = true
        return detachedContainer(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        writer.bailed = true
        return detachedUnkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        writer.bailed = true
        return WriterEncoder(JSONWriter())
    }
}

private struct SingleWriter: SingleValueEncodingContainer {
    let encoder: WriterEncoder
    /// The value this container writes.
    let owner: Int
    var writer: JSONWriter { encoder.writer }
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func next() throws { try encoder.single(of: owner) }

    mutating func encodeNil() throws { try next(); writer.null() }
    mutating func encode(_ value: Bool) throws { try next(); writer.bool(value) }
    mutating func encode(_ value: String) throws { try next(); try writer.string(value) }
    mutating func encode(_ value: Double) throws { try next(); try writer.floating(value) }
    mutating func encode(_ value: Float) throws { try next(); try writer.floating(value) }
    mutating func encode(_ value: Int) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: Int8) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: Int16) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: Int32) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: Int64) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt8) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt16) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt32) throws { try next(); writer.integer(value) }
    mutating func encode(_ value: UInt64) throws { try next(); writer.integer(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try next()
        try encoder.encodeValue(value)
    }
}
