import Foundation

/// Finds where values sit in JSON text without building them. Used to keep
/// each feed row exactly as the server sent it, so a client can store it
/// without encoding it again.
public struct JSONSlicer {
    let bytes: [UInt8]
    var index = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The raw text of the `key` member of each object in the array at
    /// `arrayKey` of the top-level object (nil where an element lacks it).
    public static func memberOfElements(_ data: Data, arrayKey: String, member: String) -> [String?]? {
        var slicer = JSONSlicer([UInt8](data))
        return slicer.membersOfElements(arrayKey: Array(arrayKey.utf8), member: Array(member.utf8))
    }

    mutating func membersOfElements(arrayKey: [UInt8], member: [UInt8]) -> [String?]? {
        skipSpace()
        guard consume(UInt8(ascii: "{")) else { return nil }
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard consume(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            if key == arrayKey { return elementMembers(member) }
            guard skipValue() else { return nil }
            skipSpace()
            guard consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    private mutating func elementMembers(_ member: [UInt8]) -> [String?]? {
        guard consume(UInt8(ascii: "[")) else { return nil }
        var found: [String?] = []
        skipSpace()
        if consume(UInt8(ascii: "]")) { return found }
        while true {
            skipSpace()
            guard consume(UInt8(ascii: "{")) else { return nil }
            var value: String?
            skipSpace()
            if !consume(UInt8(ascii: "}")) {
                while true {
                    skipSpace()
                    guard let key = string() else { return nil }
                    skipSpace()
                    guard consume(UInt8(ascii: ":")) else { return nil }
                    skipSpace()
                    let start = index
                    guard skipValue() else { return nil }
                    if key == member { value = String(decoding: bytes[start..<index], as: UTF8.self) }
                    skipSpace()
                    if consume(UInt8(ascii: "}")) { break }
                    guard consume(UInt8(ascii: ",")) else { return nil }
                }
            }
            found.append(value)
            skipSpace()
            if consume(UInt8(ascii: "]")) { return found }
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
    /// Decodes a page and keeps each row's JSON as the server sent it.
    public static func decode(_ data: Data, decoder: JSONDecoder) throws -> SyncPage {
        var page = try decoder.decode(SyncPage.self, from: data)
        if let rows = JSONSlicer.memberOfElements(data, arrayKey: "changes", member: "row"), rows.count == page.changes.count {
            for index in page.changes.indices { page.changes[index].rawRow = rows[index] }
        }
        return page
    }
}
