import Foundation
import NIOCore
import VroomXModels

/// A value as the database sees it. Both backends store the same four kinds:
/// times are epoch milliseconds, ids and calendar dates are text.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue {
    /// The cast that gives a placeholder this value's type; none for NULL,
    /// whose type PostgreSQL infers from where it stands.
    var postgresCast: String {
        switch self {
        case .null: ""
        case .integer: "::int8"
        case .real: "::float8"
        case .text: "::text"
        case .blob: "::bytea"
        }
    }
}

public enum SQLDialect: String, Sendable {
    case sqlite
    case postgres
}

/// A query with its parameters. Interpolated values become bound parameters,
/// never SQL text, so building a query from input cannot inject SQL:
///
///     let sql: SQL = "SELECT * FROM trips WHERE tenant_id = \(tenant) AND id = \(id)"
///
/// It renders as `$1`, `$2` for PostgreSQL and `?` for SQLite.
public struct SQL: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    enum Part: Sendable {
        case text(String)
        case bind(SQLValue)
    }

    private(set) var parts: [Part]

    public init(stringLiteral value: String) { parts = [.text(value)] }
    public init(stringInterpolation: StringInterpolation) { parts = stringInterpolation.parts }
    init(parts: [Part]) { self.parts = parts }

    public struct StringInterpolation: StringInterpolationProtocol {
        var parts: [Part] = []
        public init(literalCapacity: Int, interpolationCount: Int) { parts.reserveCapacity(interpolationCount * 2 + 1) }
        public mutating func appendLiteral(_ literal: String) { parts.append(.text(literal)) }
        public mutating func appendInterpolation<Value: SQLBindable>(_ value: Value) { parts.append(.bind(value.sqlValue)) }
        public mutating func appendInterpolation<Value: SQLBindable>(_ value: Value?) { parts.append(.bind(value?.sqlValue ?? .null)) }
        /// A nested fragment, parameters included.
        public mutating func appendInterpolation(_ fragment: SQL) { parts.append(contentsOf: fragment.parts) }
        /// Trusted SQL text: identifiers and keywords chosen by the code, never input.
        public mutating func appendInterpolation(unsafeRaw text: String) { parts.append(.text(text)) }
    }

    public static func + (lhs: SQL, rhs: SQL) -> SQL { SQL(parts: lhs.parts + rhs.parts) }

    /// Joins fragments with a separator, e.g. the assignments of an UPDATE.
    public static func joined(_ fragments: [SQL], separator: String) -> SQL {
        var parts: [Part] = []
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { parts.append(.text(separator)) }
            parts.append(contentsOf: fragment.parts)
        }
        return SQL(parts: parts)
    }

    /// Bound values separated by commas, for `IN (…)`.
    public static func list<Value: SQLBindable>(_ values: [Value]) -> SQL {
        joined(values.map { "\($0)" }, separator: ", ")
    }

    /// - Parameter typed: for PostgreSQL, casts each placeholder to its
    ///   value's type (`$1::int8`), so a statement prepared from the text
    ///   takes the same types a typed bind gives an unnamed one.
    public func render(_ dialect: SQLDialect, typed: Bool = false) -> (text: String, binds: [SQLValue]) {
        var text = ""
        var binds: [SQLValue] = []
        for part in parts {
            switch part {
            case .text(let literal):
                text += literal
            case .bind(let value):
                binds.append(value)
                guard dialect == .postgres else { text += "?"; continue }
                text += "$\(binds.count)"
                if typed { text += value.postgresCast }
            }
        }
        return (text, binds)
    }

    public var description: String { render(.postgres).text }
}

/// A Swift value that can be bound as a query parameter.
public protocol SQLBindable: Sendable {
    var sqlValue: SQLValue { get }
}

extension String: SQLBindable { public var sqlValue: SQLValue { .text(self) } }
extension Int: SQLBindable { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Int64: SQLBindable { public var sqlValue: SQLValue { .integer(self) } }
extension Double: SQLBindable { public var sqlValue: SQLValue { .real(self) } }
extension Bool: SQLBindable { public var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension Date: SQLBindable { public var sqlValue: SQLValue { .integer(WireTime.milliseconds(self)) } }
extension ID: SQLBindable { public var sqlValue: SQLValue { .text(rawValue) } }
extension LocalDate: SQLBindable { public var sqlValue: SQLValue { .text(description) } }
extension SQLValue: SQLBindable { public var sqlValue: SQLValue { self } }
extension RawRepresentable where Self: SQLBindable, RawValue == String {
    public var sqlValue: SQLValue { .text(rawValue) }
}
extension OrderStatus: SQLBindable {}
extension TripStatus: SQLBindable {}
extension ExpenseCategory: SQLBindable {}
extension NotificationType: SQLBindable {}
extension PayType: SQLBindable {}
extension UserRole: SQLBindable {}
extension EquipmentKind: SQLBindable {}
extension CustomerKind: SQLBindable {}
extension EquipmentStatus: SQLBindable {}
extension TrailerType: SQLBindable {}
extension InvoiceStatus: SQLBindable {}
extension PaymentTerms: SQLBindable {}
extension PaymentMethod: SQLBindable {}
extension FuelType: SQLBindable {}
extension FuelUnit: SQLBindable {}
extension EquipmentDocumentKind: SQLBindable {}
extension DevicePlatform: SQLBindable {}

/// Column names of a result, shared by all its rows.
final class SQLColumns: Sendable {
    let names: [String]
    /// Open addressing by a byte hash of the name, each slot a position + 1
    /// (0 is empty). A row is read by name, 45 names an order: `Dictionary`'s
    /// seeded hash of each cost more than reading the value.
    private let slots: [Int]

    init(_ names: [String]) {
        self.names = names
        var capacity = 8
        while capacity < names.count * 2 { capacity *= 2 }
        var slots = [Int](repeating: 0, count: capacity)
        // The first of two columns of one name answers, as before.
        for (position, name) in names.enumerated() {
            var slot = Self.hash(name) & (capacity - 1)
            while slots[slot] != 0, names[slots[slot] - 1] != name { slot = (slot + 1) & (capacity - 1) }
            if slots[slot] == 0 { slots[slot] = position + 1 }
        }
        self.slots = slots
    }

    /// The column's position; nil when the result has no such column.
    func position(of name: String) -> Int? {
        let mask = slots.count - 1
        var slot = Self.hash(name) & mask
        while slots[slot] != 0 {
            let position = slots[slot] - 1
            if names[position] == name { return position }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// The name's length and its first and last eight bytes, mixed: names are the code's own, not a
    /// client's, so no seed is needed, and the few that share both ends are told apart by comparing.
    /// A byte loop (FNV-1a) cost about 170 instructions a name, 45 names an order; stepping
    /// `String.UTF8View` about 500.
    private static func hash(_ name: String) -> Int {
        var name = name
        return name.withUTF8 { bytes in
            let raw = UnsafeRawBufferPointer(bytes)
            var hash = UInt64(raw.count) &* 0x9e37_79b9_7f4a_7c15
            if raw.count >= 8 {
                hash ^= raw.loadUnaligned(as: UInt64.self)
                hash = (hash ^ (hash >> 31)) &* 0xbf58_476d_1ce4_e5b9
                hash ^= raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self)
            } else {
                for byte in raw { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            }
            hash = (hash ^ (hash >> 29)) &* 0x94d0_49bb_1331_11eb
            return Int(truncatingIfNeeded: hash ^ (hash >> 32))
        }
    }
}

/// The stored data does not have the shape the code expects: a bug or a
/// damaged database, never the caller's fault.
public struct SQLDecodingError: Error, CustomStringConvertible {
    public let column: String
    public let expected: String
    public let found: SQLValue
    public var description: String { "column \(column): expected \(expected), found \(found)" }
}

public struct SQLRow: Sendable {
    let columns: SQLColumns
    /// This row's values start at `offset`: the rows of one result may
    /// share one array (one allocation per result, not per row).
    private let values: [SQLValue]
    private let offset: Int

    init(columns: SQLColumns, values: [SQLValue], offset: Int = 0) {
        self.columns = columns
        self.values = values
        self.offset = offset
    }

    public subscript(_ column: String) -> SQLValue {
        guard let position = columns.position(of: column) else { return .null }
        return values[offset + position]
    }

    public func optionalString(_ column: String) throws -> String? {
        switch self[column] {
        case .null: return nil
        case .text(let text): return text
        case let other: throw SQLDecodingError(column: column, expected: "text", found: other)
        }
    }

    public func string(_ column: String) throws -> String {
        guard let value = try optionalString(column) else { throw SQLDecodingError(column: column, expected: "text", found: .null) }
        return value
    }

    public func optionalInt64(_ column: String) throws -> Int64? {
        switch self[column] {
        case .null: return nil
        case .integer(let value): return value
        case .real(let value) where value.rounded() == value: return Int64(value)
        case .text(let text) where Int64(text) != nil: return Int64(text)
        case let other: throw SQLDecodingError(column: column, expected: "integer", found: other)
        }
    }

    public func int64(_ column: String) throws -> Int64 {
        guard let value = try optionalInt64(column) else { throw SQLDecodingError(column: column, expected: "integer", found: .null) }
        return value
    }

    public func optionalDouble(_ column: String) throws -> Double? {
        switch self[column] {
        case .null: return nil
        case .real(let value): return value
        case .integer(let value): return Double(value)
        case .text(let text) where Double(text) != nil: return Double(text)
        case let other: throw SQLDecodingError(column: column, expected: "number", found: other)
        }
    }

    public func double(_ column: String) throws -> Double {
        guard let value = try optionalDouble(column) else { throw SQLDecodingError(column: column, expected: "number", found: .null) }
        return value
    }

    public func int(_ column: String) throws -> Int { Int(try int64(column)) }
    public func optionalInt(_ column: String) throws -> Int? { try optionalInt64(column).map { Int($0) } }
    public func bool(_ column: String) throws -> Bool { try int64(column) != 0 }

    public func date(_ column: String) throws -> Date { WireTime.date(milliseconds: try int64(column)) }
    public func optionalDate(_ column: String) throws -> Date? { try optionalInt64(column).map(WireTime.date(milliseconds:)) }

    public func id<Entity>(_ column: String, as type: Entity.Type = Entity.self) throws -> ID<Entity> {
        guard let id = try optionalID(column, as: type) else { throw SQLDecodingError(column: column, expected: "uuid", found: .null) }
        return id
    }

    public func optionalID<Entity>(_ column: String, as type: Entity.Type = Entity.self) throws -> ID<Entity>? {
        guard let text = try optionalString(column) else { return nil }
        guard let id = ID<Entity>(text) else { throw SQLDecodingError(column: column, expected: "uuid", found: .text(text)) }
        return id
    }

    public func localDate(_ column: String) throws -> LocalDate {
        guard let date = try optionalLocalDate(column) else { throw SQLDecodingError(column: column, expected: "date", found: .null) }
        return date
    }

    public func optionalLocalDate(_ column: String) throws -> LocalDate? {
        guard let text = try optionalString(column) else { return nil }
        guard let date = LocalDate(text) else { throw SQLDecodingError(column: column, expected: "date", found: .text(text)) }
        return date
    }

    public func enumeration<Value: RawRepresentable>(_ column: String, as type: Value.Type = Value.self) throws -> Value
    where Value.RawValue == String {
        let text = try string(column)
        guard let value = Value(rawValue: text) else { throw SQLDecodingError(column: column, expected: "\(Value.self)", found: .text(text)) }
        return value
    }
}

/// Runs queries on one connection, inside a transaction when it came from
/// `write` or `snapshot`.
public protocol SQLExecutor: Sendable {
    var dialect: SQLDialect { get }
    func query(_ sql: SQL) async throws -> [SQLRow]
    /// Runs a query whose first column is a stored JSON document and copies
    /// the documents of its first `limit` rows into one buffer as they are
    /// stored, without making a String of each.
    func documents(_ sql: SQL, limit: Int) async throws -> DocumentRows
}

/// Stored documents read straight into one buffer, for a list answer.
public struct DocumentRows: Sendable {
    /// The documents, comma-separated: the inside of a JSON array.
    public var joined = ByteBuffer()
    public var count = 0
    /// The other columns of row number `limit`, the last one kept, when the
    /// query reached it: where a next page would start.
    public var last: SQLRow?
    /// Whether the query had rows beyond `limit`.
    public var hasMore = false

    /// Adds one row's document as stored (nil: SQL NULL). The first makes
    /// room for `rows` documents its size, since those of one list are alike:
    /// at most 1 MiB, so that one much larger first document does not reserve
    /// its size a hundred times over (growth covers the rest).
    mutating func append<Document: Collection<UInt8>>(_ document: Document?, expecting rows: Int) {
        if count == 0 {
            joined.reserveCapacity(min(1 << 20, min(rows, 100) * ((document?.count ?? 4) + 1)))
        } else {
            joined.writeInteger(UInt8(ascii: ","))
        }
        if let document { joined.writeBytes(document) } else { joined.writeStaticString("null") }
        count += 1
    }
}

extension SQLExecutor {
    public func execute(_ sql: SQL) async throws {
        _ = try await query(sql)
    }

    public func first(_ sql: SQL) async throws -> SQLRow? {
        try await query(sql).first
    }
}

/// A database the server can run on. Implementations: `SQLiteDatabase`
/// (embedded default) and `PostgresDatabase` (production). Failures that
/// pass (unreachable, busy, timed out, storage full) are thrown as
/// `DatabaseUnavailable`.
public protocol SQLDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Reads outside a write transaction. On PostgreSQL each statement sees
    /// its own snapshot; use `snapshot` when several reads must agree.
    func read<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T
    /// Several reads from one consistent snapshot.
    func snapshot<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T
    /// One atomic transaction: everything in `body` commits, or nothing does.
    func write<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T
    /// Whether the database answered when last needed (never waits).
    var isReachable: Bool { get }
    /// Throws unless the database answers within `timeout`.
    func ping(timeout: Duration) async throws
    func close() async
    /// Where this database's statements run, if it has threads of its own
    /// for them (SQLite): a request that reads and writes several times runs
    /// there from start to end rather than hop there and back on each call.
    var statementExecutor: (any TaskExecutor)? { get }
}

extension SQLDatabase {
    public var statementExecutor: (any TaskExecutor)? { nil }
}

/// Constraint violations, the same on both backends, so callers can turn a
/// duplicate trip number into a clear 409 rather than a 500.
public enum DatabaseConstraintError: Error, CustomStringConvertible {
    case unique(String)
    case foreignKey(String)
    case check(String)
    case notNull(String)

    public var description: String {
        switch self {
        case .unique(let message): return "unique constraint: \(message)"
        case .foreignKey(let message): return "foreign key constraint: \(message)"
        case .check(let message): return "check constraint: \(message)"
        case .notNull(let message): return "not-null constraint: \(message)"
        }
    }
}

extension SQL {
    /// SQL text that comes from the code itself (migrations), never from input.
    public init(unsafeRaw text: String) { self.init(parts: [.text(text)]) }
}
