import Foundation
import NIOCore
import VroomXModels

/// The order of a list, for keyset paging: a page continues after the last
/// row of the previous one, so rows inserted or deleted meanwhile never
/// make a client skip or repeat a row, and a deep page costs what the
/// first one does.
struct ListOrder: Sendable {
    struct Key: Sendable {
        /// What the column holds: a cursor's value for it must be the same
        /// kind (PostgreSQL refuses to compare text with a number).
        enum Kind: Sendable { case text, integer }

        let column: String
        let kind: Kind
        let isDescending: Bool
        /// Nulls sort after every value (in both directions).
        let nullable: Bool

        static func ascending(_ column: String, _ kind: Kind) -> Key { Key(column: column, kind: kind, isDescending: false, nullable: false) }
        static func descending(_ column: String, _ kind: Kind, nullable: Bool = false) -> Key {
            Key(column: column, kind: kind, isDescending: true, nullable: nullable)
        }
    }

    /// The sort keys; the last one is unique, so the order is total.
    let keys: [Key]
    /// `ORDER BY` text (without the keywords).
    let sql: SQL
    /// The key columns, selected beside the document to build the next cursor.
    let selection: SQL

    // Orders are static: their SQL is written once, not on every request.
    init(_ keys: Key...) {
        self.keys = keys
        sql = SQL(unsafeRaw: keys.map { key in
            key.column + (key.isDescending ? " DESC" : "") + (key.nullable ? " NULLS LAST" : "")
        }.joined(separator: ", "))
        selection = SQL(unsafeRaw: keys.enumerated().map { "\($0.element.column) AS page_key_\($0.offset)" }.joined(separator: ", "))
    }

    /// The rows after the cursor's row in this order.
    func after(_ cursor: PageCursor) -> SQL {
        var alternatives: [SQL] = []
        for (index, key) in keys.enumerated() {
            var terms: [SQL] = []
            for (earlier, value) in zip(keys[..<index], cursor.values) {
                terms.append(value == .null ? "\(unsafeRaw: earlier.column) IS NULL" : "\(unsafeRaw: earlier.column) = \(value)")
            }
            let value = cursor.values[index]
            if value == .null { continue } // nothing sorts after a null but other nulls, matched by the next key
            let beyond: SQL = "\(unsafeRaw: key.column) \(unsafeRaw: key.isDescending ? "<" : ">") \(value)"
            terms.append(key.nullable ? "(\(beyond) OR \(unsafeRaw: key.column) IS NULL)" : beyond)
            alternatives.append("(" + SQL.joined(terms, separator: " AND ") + ")")
        }
        return alternatives.isEmpty ? "1 = 0" : "(" + SQL.joined(alternatives, separator: " OR ") + ")"
    }

    /// The cursor of a row read with `selection`.
    func cursor(of row: SQLRow) -> PageCursor {
        PageCursor(values: keys.indices.map { row["page_key_\($0)"] })
    }
}

/// Where the next page of a list starts: the sort-key values of the last
/// row sent, as an opaque URL-safe token (base64url of a JSON array).
struct PageCursor: Sendable, Hashable {
    let values: [SQLValue]

    init(values: [SQLValue]) { self.values = values }

    private enum Value: Codable {
        case integer(Int64)
        case text(String)
        case null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let number = try? container.decode(Int64.self) {
                self = .integer(number)
            } else {
                self = .text(try container.decode(String.self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .integer(let number): try container.encode(number)
            case .text(let text): try container.encode(text)
            case .null: try container.encodeNil()
            }
        }
    }

    var token: String {
        let values = self.values.map { value -> Value in
            switch value {
            case .integer(let number): return .integer(number)
            case .text(let text): return .text(text)
            default: return .null
            }
        }
        let data = (try? JSONEncoder().encode(values)) ?? Data("[]".utf8)
        return data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Reads a token this server handed out for a list in `order`; nil for
    /// anything else.
    init?(token: String, for order: ListOrder) {
        guard token.utf8.count <= 1024 else { return nil }
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let decoded = try? JSONDecoder().decode([Value].self, from: data),
              decoded.count == order.keys.count else { return nil }
        var values: [SQLValue] = []
        for (value, key) in zip(decoded, order.keys) {
            switch (value, key.kind) {
            case (.null, _) where key.nullable: values.append(.null)
            // No sort key holds control characters (and PostgreSQL text cannot hold a NUL).
            case (.text(let text), .text) where text.utf8.count <= 256 && !text.unicodeScalars.contains(where: { $0.value < 0x20 }):
                values.append(.text(text))
            case (.integer(let number), .integer): values.append(.integer(number))
            default: return nil
            }
        }
        self.values = values
    }
}

/// One page of a list of stored documents.
public struct DocumentPage: Sendable {
    /// The documents as stored, comma-separated: the inside of a JSON array.
    public var joined: ByteBuffer
    public var count: Int
    /// Where the next page starts; nil on the last page.
    public var nextCursor: String?

    /// The documents as a JSON array.
    public var array: String { "[" + String(buffer: joined) + "]" }
}

/// Which page of a list a client asked for.
public struct PageRequest: Sendable {
    public var limit: Int
    public var cursor: String?

    public init(limit: Int = Page.defaultLimit, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }

    /// Everything, for the server's own reads and tools (a request's
    /// `limit` is capped by its declaration in the route table).
    public static let all = PageRequest(limit: .max)
}

/// Pages of stored row documents, for the repositories' list answers.
enum DocumentPages {
    /// Reads a page of documents: `SELECT doc FROM <from> WHERE <filter>`
    /// in `order`, after the request's cursor.
    static func read(from table: SQL, where filter: SQL, order: ListOrder, _ page: PageRequest,
                     document: SQL = "doc", _ db: any SQLExecutor) async throws -> DocumentPage {
        var condition = filter
        if let token = page.cursor {
            guard let cursor = PageCursor(token: token, for: order) else {
                throw AppError(400, .invalidParameter, "cursor is not a value this server gave.", field: "cursor")
            }
            condition = condition + " AND " + order.after(cursor)
        }
        let limit: SQL = page.limit == .max ? "" : " LIMIT \(page.limit + 1)"
        let rows = try await db.documents("""
            SELECT \(document) AS doc, \(order.selection) FROM \(table) WHERE \(condition) ORDER BY \(order.sql)\(limit)
            """, limit: page.limit)
        return DocumentPage(joined: rows.joined, count: rows.count, nextCursor: rows.hasMore ? rows.last.map { order.cursor(of: $0).token } : nil)
    }
}
