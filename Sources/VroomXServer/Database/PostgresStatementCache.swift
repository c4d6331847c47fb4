import NIOConcurrencyHelpers
import PostgresNIO

/// Named prepared statements, kept per pooled connection. PostgreSQL parses
/// and plans an unnamed statement on every call, a named one once per
/// connection: for the trip list that is 97 µs of server time per call
/// instead of 160.
///
/// A statement lives as long as its connection; the cache forgets a
/// connection when it closes. Turn it off (`VROOMX_DATABASE_PREPARED_STATEMENTS=false`)
/// behind a pooler that hands one client's statements to others' sessions,
/// such as PgBouncer in transaction mode.
final class PostgresStatementCache: Sendable {
    /// Statements kept per connection; later ones run unnamed.
    static let limitPerConnection = 256
    /// Statements with more parameters (a batch's rows, a list of keys)
    /// differ from call to call: they run unnamed.
    static let maximumParameters = 32

    private let statements = NIOLockedValueBox<[ObjectIdentifier: [String: PreparedQuery]]>([:])

    /// Whether a statement is worth preparing: one that reads or writes
    /// rows (not BEGIN, COMMIT or DDL), with few parameters.
    static func isReusable(_ text: String, parameters: Int) -> Bool {
        guard parameters <= maximumParameters else { return false }
        let head = text.prefix { $0 != " " && $0 != "\n" }.uppercased()
        return ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains(head)
    }

    func statement(_ text: String, on connection: PostgresConnection) -> PreparedQuery? {
        statements.withLockedValue { $0[ObjectIdentifier(connection)]?[text] }
    }

    /// Keeps a statement prepared on `connection`, unless the connection
    /// already holds its share.
    func keep(_ prepared: PreparedQuery, as text: String, on connection: PostgresConnection) {
        guard !connection.isClosed else { return }
        let key = ObjectIdentifier(connection)
        let isNewConnection = statements.withLockedValue { statements in
            let isNew = statements[key] == nil
            if statements[key, default: [:]].count < Self.limitPerConnection {
                statements[key, default: [:]][text] = prepared
            }
            return isNew
        }
        if isNewConnection {
            connection.closeFuture.whenComplete { [weak self] _ in self?.forget(connection: key) }
        }
    }

    func forget(connection key: ObjectIdentifier) {
        _ = statements.withLockedValue { $0.removeValue(forKey: key) }
    }

    /// Statements held for all connections (for tests).
    var count: Int { statements.withLockedValue { $0.values.reduce(0) { $0 + $1.count } } }
}
