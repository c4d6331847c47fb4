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

    func query(_ sql: SQL) async throws -> [SQLRow] {
        let (text, values) = sql.render(.postgres)
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
        let result: PostgresQueryResult
        do {
            result = try await answer(PostgresQuery(unsafeSQL: text, binds: bindings)).get()
        } catch let error as PSQLError {
            throw Self.translate(error)
        } catch let error as ChannelError {
            throw DatabaseUnavailable(.connectionLost, "\(error)")
        } catch let error as IOError {
            throw DatabaseUnavailable(.connectionLost, "\(error)")
        }
        var rows: [SQLRow] = []
        rows.reserveCapacity(result.rows.count)
        var columns: SQLColumns?
        for row in result.rows {
            let names = columns ?? SQLColumns(row.map(\.columnName))
            columns = names
            rows.append(SQLRow(columns: names, values: try row.map(Self.value(of:))))
        }
        return rows
    }

    /// The query's result, or a failure by the deadline at the latest.
    private func answer(_ query: PostgresQuery) -> EventLoopFuture<PostgresQueryResult> {
        let connection = self.connection
        let logger = self.logger
        let loop = connection.eventLoop
        let answer = loop.makePromise(of: PostgresQueryResult.self)
        // Checked and written in one turn of the connection's event loop, so
        // the connection cannot close in between.
        loop.execute {
            guard !connection.isClosed else {
                return answer.fail(DatabaseUnavailable(.connectionLost, "the connection was closed before the query was sent"))
            }
            connection.query(query, logger: logger).cascade(to: answer)
        }
        let timeout = loop.scheduleTask(deadline: deadline) {
            answer.fail(DatabaseUnavailable(.timedOut, "no answer from PostgreSQL before the deadline"))
            let _: EventLoopFuture<Void> = connection.close()
        }
        answer.futureResult.whenComplete { _ in timeout.cancel() }
        return answer.futureResult
    }

    static func value(of cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int8, .int4, .int2: return .integer(try cell.decode(Int64.self))
        case .float8, .float4: return .real(try cell.decode(Double.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .bytea: return .blob(try cell.decode([UInt8].self))
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
        let message = info[.message] ?? "\(error)"
        switch state {
        case "23505": return DatabaseConstraintError.unique(message)
        case "23503": return DatabaseConstraintError.foreignKey(message)
        case "23514": return DatabaseConstraintError.check(message)
        case "23502": return DatabaseConstraintError.notNull(message)
        case "53100": return DatabaseUnavailable(.storageFull, "PostgreSQL \(state): \(message)")
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
