import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// Named prepared statements, kept per pooled connection. PostgreSQL parses
/// and plans an unnamed statement on every call, a named one once per
/// connection: for the trip list that is 97 µs of server time per call
/// instead of 160.
///
/// Only a statement run `threshold` times is prepared (preparing costs a
/// round trip, wasted on one that runs once, like a migration's), at most
/// `limitPerConnection` per connection; the rest run unnamed. A statement
/// lives as long as its connection; the cache forgets a connection when it
/// closes. Turn it off (`VROOMX_DATABASE_PREPARED_STATEMENTS=false`) behind
/// a pooler that moves a client between sessions, such as PgBouncer in
/// transaction mode before 1.21; if the server loses a statement just
/// prepared, the cache turns itself off and says so in the log.
final class PostgresStatementCache: Sendable {
    /// Statements with more parameters (a batch's rows, a list of keys)
    /// differ from call to call: they run unnamed.
    static let maximumParameters = 32
    let limitPerConnection: Int
    let threshold: Int

    private struct Session {
        var statements: [String: PreparedQuery] = [:]
    }

    private struct State {
        var sessions: [ObjectIdentifier: Session] = [:]
        /// Runs of each statement text so far, up to the threshold.
        var uses: [String: Int] = [:]
        var isOff = false
    }

    private let state = NIOLockedValueBox(State())
    private let logger: Logger

    init(threshold: Int = 5, limitPerConnection: Int = 256, logger: Logger) {
        self.threshold = threshold
        self.limitPerConnection = limitPerConnection
        self.logger = logger
    }

    /// What to do with a statement on a connection: run it as prepared,
    /// prepare it first, or run it unnamed.
    enum Plan {
        case run(PreparedQuery)
        case prepare
        case unnamed
    }

    func plan(_ text: String, parameters: Int, on connection: PostgresConnection) -> Plan {
        guard parameters <= Self.maximumParameters else { return .unnamed }
        return state.withLockedValue { state in
            guard !state.isOff else { return .unnamed }
            let key = ObjectIdentifier(connection)
            if let prepared = state.sessions[key]?.statements[text] { return .run(prepared) }
            guard Self.isDataStatement(text) else { return .unnamed }
            let uses = (state.uses[text] ?? 0) + 1
            // Texts are finite (the code writes them); the bound keeps a surprise from growing the map.
            if uses <= threshold, state.uses.count < 100_000 || state.uses[text] != nil { state.uses[text] = uses }
            guard uses >= threshold, state.sessions[key, default: Session()].statements.count < limitPerConnection else { return .unnamed }
            return .prepare
        }
    }

    /// Whether a statement reads or writes rows (not BEGIN, COMMIT or DDL).
    static func isDataStatement(_ text: String) -> Bool {
        let head = text.prefix { $0 != " " && $0 != "\n" }.uppercased()
        return ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"].contains(head)
    }

    /// Keeps a statement just prepared on `connection`.
    func keep(_ prepared: PreparedQuery, as text: String, on connection: PostgresConnection) {
        guard !connection.isClosed else { return }
        let key = ObjectIdentifier(connection)
        let isNewConnection = state.withLockedValue { state in
            let isNew = state.sessions[key] == nil
            state.sessions[key, default: Session()].statements[text] = prepared
            return isNew
        }
        if isNewConnection {
            connection.closeFuture.whenComplete { [weak self] _ in
                _ = self?.state.withLockedValue { $0.sessions.removeValue(forKey: key) }
            }
        }
    }

    /// Forgets the connection's statements after the server refused one:
    /// they are prepared anew under new names.
    func forgetStatements(on connection: PostgresConnection) {
        state.withLockedValue { $0.sessions[ObjectIdentifier(connection)]?.statements = [:] }
    }

    /// Stops preparing statements: the server lost one right after it was
    /// prepared, so something between moves this client between sessions.
    func turnOff(because reason: String) {
        let wasOn = state.withLockedValue { state in
            defer { state.isOff = true; state.sessions = [:] }
            return !state.isOff
        }
        if wasOn {
            logger.error("PostgreSQL lost a statement just prepared (\(reason)): is a pooler such as PgBouncer in transaction mode in between? Statements are no longer prepared; set VROOMX_DATABASE_PREPARED_STATEMENTS=false to say so at start-up.")
        }
    }
}
