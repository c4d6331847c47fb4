import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// Production storage: PostgreSQL through a connection pool. Several server
/// instances can share one database; it is their single source of truth.
public final class PostgresDatabase: SQLDatabase {
    public let dialect = SQLDialect.postgres
    let client: PostgresClient
    let configuration: PostgresClient.Configuration
    let sslMode: String
    let logger: Logger
    private let runTask: Task<Void, Never>

    /// Connects a pool; returns once its background task is running.
    public static func open(url: String, maxConnections: Int = 20, logger: Logger) async throws -> PostgresDatabase {
        let database = try PostgresDatabase(url: url, maxConnections: maxConnections, logger: logger)
        // Let the pool's run loop start before the first lease.
        for _ in 0..<16 { await Task.yield() }
        return database
    }

    init(url: String, maxConnections: Int, logger: Logger) throws {
        configuration = try Self.configuration(from: url, maxConnections: maxConnections)
        sslMode = URLComponents(string: url)?.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
        let client = self.client
        runTask = Task { await client.run() }
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=disable|prefer|require`.
    static func configuration(from url: String, maxConnections: Int) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
              components.scheme == "postgres" || components.scheme == "postgresql",
              let host = components.host, !host.isEmpty else {
            throw ConfigurationError("VROOMX_DATABASE_URL must look like postgres://user:password@host:5432/database")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-full": tls = .require(.makeClientConfiguration())
        default: throw ConfigurationError("sslmode must be disable, prefer or require")
        }
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? "postgres",
            password: components.percentEncodedPassword.flatMap { $0.removingPercentEncoding },
            database: database.isEmpty ? nil : database,
            tls: tls
        )
        configuration.options.maximumConnections = maxConnections
        return configuration
    }

    /// Creates a new, empty database on the server of `adminURL` and returns
    /// its URL (tests and benchmarks each work in a database of their own).
    public static func createDatabase(adminURL: String, prefix: String, logger: Logger) async throws -> String {
        guard var components = URLComponents(string: adminURL) else { throw ConfigurationError("not a PostgreSQL URL: \(adminURL)") }
        let name = prefix + "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let admin = try await open(url: adminURL, maxConnections: 1, logger: logger)
        do {
            try await admin.read { try await $0.execute(SQL(unsafeRaw: "CREATE DATABASE \(name)")) }
        } catch {
            await admin.close()
            throw error
        }
        await admin.close()
        components.path = "/" + name
        return components.string!
    }

    public func read<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            try await body(PostgresExecutor(connection: connection, logger: logger))
        }
    }

    public func snapshot<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            let executor = PostgresExecutor(connection: connection, logger: logger)
            try await executor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            do {
                let result = try await body(executor)
                try await executor.execute("COMMIT")
                return result
            } catch {
                try? await executor.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// A transaction under READ COMMITTED. A deadlock or serialization
    /// failure rolls back and runs the body again (at most three times).
    public func write<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await client.withConnection { connection in
                    let executor = PostgresExecutor(connection: connection, logger: logger)
                    try await executor.execute("BEGIN")
                    do {
                        let result = try await body(executor)
                        try await executor.execute("COMMIT")
                        return result
                    } catch {
                        try? await executor.execute("ROLLBACK")
                        throw error
                    }
                }
            } catch let error as PostgresServerError where error.isRetryable && attempt < 3 {
                attempt += 1
            }
        }
    }

    /// A connection outside the pool, for LISTEN (it stays busy for as long
    /// as it listens).
    func makeListenConnection(id: Int) async throws -> PostgresConnection {
        let tls: PostgresConnection.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "require", "verify-full": tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        let connection = PostgresConnection.Configuration(
            host: configuration.host ?? "localhost", port: configuration.port ?? 5432, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: tls)
        return try await PostgresConnection.connect(configuration: connection, id: id, logger: logger)
    }

    public func close() async {
        runTask.cancel()
        _ = await runTask.value
    }
}

/// A server-side error with its SQLSTATE.
struct PostgresServerError: Error, CustomStringConvertible {
    let sqlState: String
    let message: String
    var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    var description: String { "PostgreSQL \(sqlState): \(message)" }
}

struct PostgresExecutor: SQLExecutor {
    let dialect = SQLDialect.postgres
    let connection: PostgresConnection
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
        do {
            let stream = try await connection.query(PostgresQuery(unsafeSQL: text, binds: bindings), logger: logger)
            var rows: [SQLRow] = []
            var columns: SQLColumns?
            for try await row in stream {
                let names = columns ?? SQLColumns(row.map(\.columnName))
                columns = names
                rows.append(SQLRow(columns: names, values: try row.map(Self.value(of:))))
            }
            return rows
        } catch let error as PSQLError {
            throw Self.translate(error)
        }
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

    static func translate(_ error: PSQLError) -> any Error {
        guard let info = error.serverInfo, let state = info[.sqlState] else { return error }
        let message = info[.message] ?? "\(error)"
        switch state {
        case "23505": return DatabaseConstraintError.unique(message)
        case "23503": return DatabaseConstraintError.foreignKey(message)
        case "23514": return DatabaseConstraintError.check(message)
        case "23502": return DatabaseConstraintError.notNull(message)
        default: return PostgresServerError(sqlState: state, message: message)
        }
    }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
