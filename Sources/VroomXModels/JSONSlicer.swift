import Foundation

/// Finds where values sit in JSON text without building them: where each
/// feed row is, so a client can store it without encoding it again, and
/// where each change is, so a page can be decoded in parts.
public struct JSONSlicer {
    /// Where an array of objects sits in the text, and each of its elements.
    public struct ArrayLayout: Equatable, Sendable {
        /// From the `[` to just past the `]`.
        public var array: Range<Int>
        public var elements: [Element]
    }

    public struct Element: Equatable, Sendable {
        /// From the `{` to just past the `}`.
        public var range: Range<Int>
        /// The value of the member asked for, when the element has it.
        public var member: Range<Int>?
    }

    let bytes: [UInt8]
    var index = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The array of objects at `arrayKey` of the top-level object, with where
    /// the `member` value of each element is. Nil when the text is not shaped
    /// so (or not complete).
    public static func layout(of arrayKey: String, member: String, in bytes: [UInt8]) -> ArrayLayout? {
        var slicer = JSONSlicer(bytes)
        return slicer.layout(arrayKey: Array(arrayKey.utf8), member: Array(member.utf8))
    }

    /// Keys are compared as written, so text where a key is written with an
    /// escape or given twice (which a decoder would read otherwise) has no
    /// layout: such text is decoded whole, as any decoder reads it.
    mutating func layout(arrayKey: [UInt8], member: [UInt8]) -> ArrayLayout? {
        skipSpace()
        guard consume(UInt8(ascii: "{")) else { return nil }
        var layout: ArrayLayout?
        skipSpace()
        if consume(UInt8(ascii: "}")) { return nil }
        while true {
            skipSpace()
            guard let key = string(), !key.contains(UInt8(ascii: "\\")) else { return nil }
            skipSpace()
            guard consume(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            if key == arrayKey {
                guard layout == nil, let found = elements(member) else { return nil }
                layout = found
            } else {
                guard skipValue() else { return nil }
            }
            skipSpace()
            if consume(UInt8(ascii: "}")) { return layout }
            guard consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    private mutating func elements(_ member: [UInt8]) -> ArrayLayout? {
        let arrayStart = index
        guard consume(UInt8(ascii: "[")) else { return nil }
        var found: [Element] = []
        skipSpace()
        if consume(UInt8(ascii: "]")) { return ArrayLayout(array: arrayStart..<index, elements: found) }
        while true {
            skipSpace()
            let elementStart = index
            guard consume(UInt8(ascii: "{")) else { return nil }
            var value: Range<Int>?
            skipSpace()
            if !consume(UInt8(ascii: "}")) {
                while true {
                    skipSpace()
                    guard let key = string(), !key.contains(UInt8(ascii: "\\")) else { return nil }
                    skipSpace()
                    guard consume(UInt8(ascii: ":")) else { return nil }
                    skipSpace()
                    let start = index
                    guard skipValue() else { return nil }
                    if key == member {
                        guard value == nil else { return nil }
                        value = start..<index
                    }
                    skipSpace()
                    if consume(UInt8(ascii: "}")) { break }
                    guard consume(UInt8(ascii: ",")) else { return nil }
                }
            }
            found.append(Element(range: elementStart..<index, member: value))
            skipSpace()
            if consume(UInt8(ascii: "]")) { return ArrayLayout(array: arrayStart..<index, elements: found) }
            guard consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    /// Reads a string token's raw bytes (escapes left as they are).
    private mutating func string() -> [UInt8]? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""):
                defer { index += 1 }
                return Array(bytes[start..<index])
            default: index += 1
            }
        }
        return nil
    }

    private mutating func skipValue() -> Bool {
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "\""): return string() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""): guard string() != nil else { return false }; continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { index += 1; return true }
                default: break
                }
                index += 1
            }
            return false
        default:
            // Numbers, true, false, null: up to the next delimiter.
            let start = index
            while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 32, 9, 10, 13].contains(bytes[index]) {
                index += 1
            }
            return index > start
        }
    }

    private mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 32 || bytes[index] == 9 || bytes[index] == 10 || bytes[index] == 13 { index += 1 }
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }
}

extension SyncPage {
    /// Decodes a page and keeps each row's JSON as the server sent it. The
    /// changes of a large page are decoded in parts on the device's cores:
    /// decoding is most of the work of applying a pull.
    public static func decode(_ data: Data, decoder: JSONDecoder) async throws -> SyncPage {
        try await decode(data, decoder: decoder, cores: ProcessInfo.processInfo.activeProcessorCount)
    }

    static func decode(_ data: Data, decoder: JSONDecoder, cores: Int) async throws -> SyncPage {
        try Task.checkCancellation()  // a prefetch given up before it began
        let bytes = [UInt8](data)
        guard let layout = JSONSlicer.layout(of: "changes", member: "row", in: bytes) else {
            return try decoder.decode(SyncPage.self, from: data)
        }
        // The page without its changes, then the changes part by part.
        var page = try decoder.decode(SyncPage.self, from: Data(bytes[..<layout.array.lowerBound] + Array("[]".utf8)
                                                                + bytes[layout.array.upperBound...]))
        let parts = partition(layout.elements.count, cores: cores).filter { !$0.isEmpty }
        // A part is read as an array of its own: the text from its first change to its last.
        func text(of part: Range<Int>) -> Data {
            let first = layout.elements[part.lowerBound].range.lowerBound, end = layout.elements[part.upperBound - 1].range.upperBound
            return Data([UInt8(ascii: "[")] + bytes[first..<end] + [UInt8(ascii: "]")])
        }
        page.changes = try await withThrowingTaskGroup(of: (Int, [Change]).self) { group in
            for (number, part) in parts.enumerated() {
                let text = text(of: part)
                group.addTask { (number, try decoder.decode([Change].self, from: text)) }
            }
            var decoded = [[Change]](repeating: [], count: parts.count)
            for try await (number, changes) in group { decoded[number] = changes }
            return decoded.flatMap { $0 }
        }
        guard page.changes.count == layout.elements.count else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "The page's changes could not be read."))
        }
        for (index, element) in layout.elements.enumerated() {
            if let row = element.member { page.changes[index].rawRow = String(decoding: bytes[row], as: UTF8.self) }
        }
        return page
    }

    /// Contiguous parts of `count` changes: one per core, each of at least
    /// 100 changes (a part costs a task and a copy of its text).
    static func partition(_ count: Int, cores: Int) -> [Range<Int>] {
        let parts = max(1, min(cores, 8, count / 100))
        return (0..<parts).map { part in (count * part / parts)..<(count * (part + 1) / parts) }
    }
}
