import Foundation
import Logging
import NIOCore
import PostgresNIO

/// Runs the queries of one database call on its leased connection, each
/// answered by the call's deadline.
///
/// postgres-nio waits for a query's answer without a time limit, and a
/// query written to a connection the server has just closed may never be
/// answered at all. So a query is only sent on an open connection, and one
/// still unanswered at the deadline fails with `DatabaseUnavailable` and
/// closes its connection: nothing can linger on it, and the pool replaces it.
struct PostgresExecutor: SQLExecutor {
    let dialect = SQLDialect.postgres
    let connection: PostgresConnection
    let deadline: NIODeadline
    let logger: Logger

    /// Named statements of this connection; nil to run every statement unnamed.
    let statements: PostgresStatementCache?

    func query(_ sql: SQL) async throws -> [SQLRow] {
        let (rows, binaryCells) = try await fetch(sql)
        var converted: [SQLRow] = []
        converted.reserveCapacity(rows.count)
        var columns: SQLColumns?
        for row in rows {
            let names = columns ?? SQLColumns(row.map(\.columnName))
            columns = names
            converted.append(SQLRow(columns: names, values: try row.map { try Self.value(of: $0, binary: binaryCells) }))
        }
        return converted
    }

    func documents(_ sql: SQL, limit: Int) async throws -> DocumentRows {
        let (rows, binaryCells) = try await fetch(sql)
        var result = DocumentRows()
        for row in rows {
            guard result.count < limit else {
                result.hasMore = true
                break
            }
            var cells = row.makeIterator()
            guard let document = cells.next() else { break }
            // Text arrives as its UTF-8 bytes in either format.
            result.append(document.bytes?.readableBytesView, expecting: min(limit, rows.count))
            if result.count == limit {
                // Where a next page would start; the document itself is already in `joined`.
                let keys = [SQLValue.null] + (try row.dropFirst().map { try Self.value(of: $0, binary: binaryCells) })
                result.last = SQLRow(columns: SQLColumns(row.map(\.columnName)), values: keys)
            }
        }
        return result
    }

    /// Runs the statement, with its cells and whether they are in binary format.
    private func fetch(_ sql: SQL) async throws -> (rows: [PostgresRow], binaryCells: Bool) {
        // Typed placeholders for a statement that may be prepared; harmless for an unnamed one.
        let (text, values) = sql.render(.postgres, typed: statements != nil)
        do {
            if let statements {
                // postgres-nio's prepared statements always ask for binary results, but
                // describe their columns as text: read their cells as what they are.
                return (try await prepared(text, values, statements), true)
            } else {
                return (try await unnamed(text, values), false)
            }
        } catch let error as PSQLError {
            throw Self.translate(error)
        } catch let error as PostgresError {
            throw Self.translate(error)
        } catch let error as ChannelError {
            throw DatabaseUnavailable(.connectionLost, "\(error)")
        } catch let error as IOError {
            throw DatabaseUnavailable(.connectionLost, "\(error)")
        }
    }

    private func unnamed(_ text: String, _ values: [SQLValue]) async throws -> [PostgresRow] {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .null: bindings.appendNull()
            case .integer(let number): bindings.append(number)
            case .real(let number): bindings.append(number)
            case .text(let string): bindings.append(string)
            case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            }
        }
        let query = PostgresQuery(unsafeSQL: text, binds: bindings)
        let logger = self.logger
        return try await answer { connection in connection.query(query, logger: logger).map(\.rows) }.get()
    }

    /// Runs the statement as the cache plans it: prepared, prepared first,
    /// or unnamed. When the server no longer knows a statement, or a table
    /// changed under it (another instance migrated), the connection's
    /// statements are forgotten and prepared anew on their next call; this
    /// call fails as unavailable, since its transaction may be aborted.
    private func prepared(_ text: String, _ values: [SQLValue], _ statements: PostgresStatementCache) async throws -> [PostgresRow] {
        let binds = values.map { value -> PostgresData in
            switch value {
            case .null: PostgresData.null
            case .integer(let number): PostgresData(int64: number)
            case .real(let number): PostgresData(double: number)
            case .text(let string): PostgresData(string: string)
            case .blob(let bytes): PostgresData(bytes: bytes)
            }
        }
        let plan = statements.plan(text, parameters: values.count, on: connection)
        do {
            switch plan {
            case .unnamed:
                return try await unnamed(text, values)
            case .run(let statement):
                return try await answer { _ in statement.execute(binds) }.get()
            case .prepare:
                return try await answer { connection in
                    connection.prepare(query: text).flatMap { statement in
                        statements.keep(statement, as: text, on: connection)
                        return statement.execute(binds)
                    }
                }.get()
            }
        } catch PostgresError.server(let error) where Self.invalidatesStatements(error) {
            if case .prepare = plan, error.fields[.sqlState] == "26000" {
                statements.turnOff(because: error.fields[.message] ?? "26000")
            } else {
                statements.forgetStatements(on: connection)
            }
            throw DatabaseUnavailable(.connectionLost, "PostgreSQL: \(error.fields[.message] ?? "a prepared statement is no longer valid")")
        }
    }

    /// "prepared statement does not exist" (26000), or "cached plan must
    /// not change result type" (0A000 from RevalidateCachedQuery, whose
    /// message may be translated) after a table changed.
    static func invalidatesStatements(_ error: PostgresMessage.Error) -> Bool {
        let state = error.fields[.sqlState]
        return state == "26000" || (state == "0A000" && error.fields[.routine] == "RevalidateCachedQuery")
    }

    /// The answer sent on the connection, or a failure by the deadline at the latest.
    private func answer<T: Sendable>(_ send: @escaping @Sendable (PostgresConnection) -> EventLoopFuture<T>) -> EventLoopFuture<T> {
        let connection = self.connection
        let loop = connection.eventLoop
        let answer = loop.makePromise(of: T.self)
        // Checked and written in one turn of the connection's event loop, so
        // the connection cannot close in between (a write runs there: `ConnectionLoopExecutor`).
        let write = {
            guard !connection.isClosed else {
                return answer.fail(DatabaseUnavailable(.connectionLost, "the connection was closed before the query was sent"))
            }
            send(connection).cascade(to: answer)
        }
        if loop.inEventLoop { write() } else { loop.execute(write) }
        let timeout = loop.scheduleTask(deadline: deadline) {
            answer.fail(DatabaseUnavailable(.timedOut, "no answer from PostgreSQL before the deadline"))
            let _: EventLoopFuture<Void> = connection.close()
        }
        answer.futureResult.whenComplete { _ in timeout.cancel() }
        return answer.futureResult
    }

    static func value(of cell: PostgresCell, binary: Bool) throws -> SQLValue {
        var cell = cell
        if binary { cell.format = .binary }
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int8, .int4, .int2: return .integer(try cell.decode(Int64.self))
        case .float8, .float4: return .real(try cell.decode(Double.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .bytea: return .blob(Array(try cell.decode(ByteBuffer.self).readableBytesView))  // [UInt8] would mean an int array
        case .numeric:
            let decimal = try cell.decode(Decimal.self)
            let number = NSDecimalNumber(decimal: decimal)
            return decimal == Decimal(number.int64Value) ? .integer(number.int64Value) : .real(number.doubleValue)
        default: return .text(try cell.decode(String.self))
        }
    }

    /// Constraint violations become `DatabaseConstraintError`; everything
    /// that says the database cannot serve right now, `DatabaseUnavailable`.
    static func translate(_ error: PSQLError) -> any Error {
        guard let info = error.serverInfo, let state = info[.sqlState] else {
            switch error.code {
            case .connectionError, .poolClosed:
                return DatabaseUnavailable(.unreachable, "\(error)")
            case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
                return DatabaseUnavailable(.connectionLost, "\(error)")
            default:
                return error
            }
        }
        return translate(sqlState: state, message: info[.message] ?? "\(error)")
    }

    /// The same for the errors of prepared statements (postgres-nio's older interface).
    static func translate(_ error: PostgresError) -> any Error {
        switch error {
        case .server(let info):
            guard let state = info.fields[.sqlState] else { return error }
            return translate(sqlState: state, message: info.fields[.message] ?? "\(error)")
        case .connectionClosed, .protocol("Unexpected connection close"):
            return DatabaseUnavailable(.connectionLost, "\(error)")
        case .protocol:
            return error
        }
    }

    static func translate(sqlState state: String, message: String) -> any Error {
        switch state {
        case "23505": return DatabaseConstraintError.unique(message)
        case "23503": return DatabaseConstraintError.foreignKey(message)
        case "23514": return DatabaseConstraintError.check(message)
        case "23502": return DatabaseConstraintError.notNull(message)
        case "53100": return DatabaseUnavailable(.storageFull, "PostgreSQL \(state): \(message)")
        // statement_timeout: the server stopped the statement at the call's deadline.
        case "57014": return DatabaseUnavailable(.timedOut, "PostgreSQL \(state): \(message)")
        default:
            guard let cause = unavailability(sqlState: state) else { return PostgresServerError(sqlState: state, message: message) }
            return DatabaseUnavailable(cause, "PostgreSQL \(state): \(message)")
        }
    }

    /// SQLSTATEs that say the server cannot serve right now: connection
    /// exceptions (08xxx), shutdown and startup (57P01 admin, 57P02 crash,
    /// 57P03 cannot connect now), too many connections (53300).
    static func unavailability(sqlState state: String) -> DatabaseUnavailable.Cause? {
        if state == "57P01" || state == "57P02" { return .connectionLost }
        if state.hasPrefix("08") || state.hasPrefix("57P0") || state == "53300" { return .unreachable }
        return nil
    }
}

/// A server-side error with its SQLSTATE.
struct PostgresServerError: Error, CustomStringConvertible {
    let sqlState: String
    let message: String
    var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    var description: String { "PostgreSQL \(sqlState): \(message)" }
}
