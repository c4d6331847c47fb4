import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// Production storage: PostgreSQL through a connection pool. Several server
/// instances can share one database; it is their single source of truth.
///
/// Every call has a deadline (`Options.timeout`), the wait for a pooled
/// connection included, and fails at once while the database is known to be
/// unreachable; such failures are `DatabaseUnavailable` (503, retried by
/// the client).
public final class PostgresDatabase: SQLDatabase {
    public let dialect = SQLDialect.postgres
    /// For connections of their own, outside the pool (LISTEN, probes).
    let connectionConfiguration: PostgresConnection.Configuration
    let logger: Logger
    let options: Options
    private let pool: PostgresPool
    private let reachability: DatabaseReachability
    let statements: PostgresStatementCache?

    public struct Options: Sendable {
        /// The deadline of each call (see `DatabaseDeadline`).
        public var timeout: Duration
        /// How often an unreachable database is tried again; also how long
        /// a wait for a pooled connection lasts before the database is checked.
        public var probeInterval: Duration
        /// Whether statements are prepared once per connection (see `PostgresStatementCache`).
        public var preparedStatements: Bool
        /// Runs of a statement before it is prepared.
        public var prepareThreshold: Int

        public init(timeout: Duration = .seconds(10), probeInterval: Duration = .milliseconds(500), preparedStatements: Bool = true,
                    prepareThreshold: Int = 5) {
            self.timeout = timeout
            self.probeInterval = probeInterval
            self.preparedStatements = preparedStatements
            self.prepareThreshold = max(1, prepareThreshold)
        }
    }

    /// Connects a pool; returns once its background task is running.
    /// A database or role PostgreSQL says does not exist, or a password it
    /// refuses, is a configuration error at once: the pool would only retry
    /// it until a call's deadline and say no connection was free.
    public static func open(url: String, maxConnections: Int = 20, options: Options = .init(), logger: Logger) async throws -> PostgresDatabase {
        let database = try PostgresDatabase(url: url, maxConnections: maxConnections, options: options, logger: logger)
        if let refusal = await refusal(database.connectionConfiguration, within: min(options.timeout, .seconds(5)), logger: logger) {
            await database.close()
            throw ConfigurationError("PostgreSQL refused VROOMX_DATABASE_URL: \(refusal)")
        }
        await PostgresPool.started()
        return database
    }

    /// What PostgreSQL answers a new connection with, if it is a refusal no
    /// retry can change (no such database, no such role, a wrong password).
    /// Nil when it connects, or cannot be reached now (that passes).
    private static func refusal(_ configuration: PostgresConnection.Configuration, within timeout: Duration, logger: Logger) async -> String? {
        var configuration = configuration
        configuration.options.connectTimeout = TimeAmount(timeout)
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
            return nil
        } catch let error as PSQLError {
            guard let info = error.serverInfo, let state = info[.sqlState], ["3D000", "28000", "28P01"].contains(state) else { return nil }
            return "\(info[.message] ?? "refused") (SQLSTATE \(state))"
        } catch {
            return nil
        }
    }

    init(url: String, maxConnections: Int, options: Options, logger: Logger) throws {
        var configuration = try Self.configuration(from: url, maxConnections: maxConnections)
        // The server stops a statement at the call's deadline (the client's stopping to wait alone leaves it
        // running, holding a backend and its locks). A call allowed longer or shorter sets its own (`limitStatements`).
        configuration.options.additionalStartupParameters = [("statement_timeout", Self.milliseconds(options.timeout))]
        let connectionConfiguration = try Self.connectionConfiguration(configuration, sslMode: Self.sslMode(of: url))
        let pool = PostgresPool(configuration: configuration, logger: logger)
        // A probe never takes longer than a call may. A stopped database refuses at once; a probe that is only slow
        // (a busy machine: at 1 s, a 2-core machine running the test suites flipped every pool to "unreachable",
        // and the recovery's new pool cut the queries in flight) is given 5 s before the database counts as down.
        let probeTimeout = min(options.timeout, max(options.probeInterval * 2, .seconds(5)))
        reachability = DatabaseReachability(interval: options.probeInterval, logger: logger) {
            await PostgresProbe.isReachable(connectionConfiguration, within: probeTimeout, logger: logger)
        } onRecovery: {
            await pool.renew()
        }
        self.connectionConfiguration = connectionConfiguration
        self.options = options
        self.logger = logger
        self.pool = pool
        statements = options.preparedStatements ? PostgresStatementCache(threshold: options.prepareThreshold, logger: logger) : nil
    }

    /// The URL's `sslmode` (`prefer` when it names none).
    static func sslMode(of url: String) -> String {
        URLComponents(string: url)?.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
    }

    /// Parses `postgres://user:password@host:port/database?sslmode=disable|prefer|require`.
    static func configuration(from url: String, maxConnections: Int) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
              components.scheme == "postgres" || components.scheme == "postgresql",
              let host = components.host, !host.isEmpty else {
            throw ConfigurationError("VROOMX_DATABASE_URL must look like postgres://user:password@host:5432/database")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let tls: PostgresClient.Configuration.TLS
        switch sslMode(of: url) {
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
        try await runAdministrative("CREATE DATABASE \(name)", adminURL: adminURL, logger: logger)
        components.path = "/" + name
        return components.string!
    }

    /// Drops a database made by `createDatabase`, closing any connection
    /// still open to it.
    public static func dropDatabase(_ url: String, adminURL: String, logger: Logger) async throws {
        guard let name = URLComponents(string: url)?.path.dropFirst(), !name.isEmpty,
              name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
            throw ConfigurationError("not a database made by createDatabase: \(url)")
        }
        try await runAdministrative("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", adminURL: adminURL, logger: logger)
    }

    /// One statement on a connection of its own to the server of `adminURL`,
    /// answered within `administrativeTimeout`. A bare connection, not a pool:
    /// a pool closed while it is still connecting (a statement that timed out
    /// on a busy machine) has nothing to gain, and a connection has no state
    /// machine to close under it.
    private static func runAdministrative(_ statement: String, adminURL: String, logger: Logger) async throws {
        var configuration = try connectionConfiguration(Self.configuration(from: adminURL, maxConnections: 1), sslMode: sslMode(of: adminURL))
        configuration.options.connectTimeout = TimeAmount(administrativeTimeout)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        } catch let error as PSQLError {
            throw PostgresExecutor.translate(error)
        }
        // Outside any transaction: CREATE and DROP DATABASE refuse to run in one.
        let executor = PostgresExecutor(connection: connection, deadline: .now() + TimeAmount(administrativeTimeout), logger: logger, statements: nil)
        do {
            try await executor.execute(SQL(unsafeRaw: statement))
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
    }

    /// Copying a template database takes a while on a busy machine.
    static let administrativeTimeout = Duration.seconds(60)

    public func read<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        guard let limit = statementLimit else { return try await withConnection { executor in try await body(executor) } }
        // SET LOCAL lasts for a transaction: a read with a deadline of its own gets one.
        return try await withConnection { executor in try await Self.transaction(executor, begin: "BEGIN READ ONLY", limit: limit, body) }
    }

    public func snapshot<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        let limit = statementLimit
        return try await withConnection { executor in
            try await Self.transaction(executor, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", limit: limit, body)
        }
    }

    /// `SET LOCAL statement_timeout` for a call allowed another time than
    /// the connection's (`DatabaseDeadline`); nil for the default.
    private var statementLimit: SQL? {
        guard let allowed = DatabaseDeadline.override, allowed != options.timeout else { return nil }
        return SQL(unsafeRaw: "SET LOCAL statement_timeout = \(Self.milliseconds(allowed))")
    }

    /// A duration as PostgreSQL's milliseconds setting (at least 1: 0 would mean no limit).
    private static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds.multipliedReportingOverflow(by: 1000)
        guard !milliseconds.overflow else { return "\(Int32.max)" }
        return "\(min(Int64(Int32.max), max(1, milliseconds.partialValue + attoseconds / 1_000_000_000_000_000)))"
    }

    /// A transaction under READ COMMITTED. A deadlock or serialization
    /// failure rolls back and runs the body again (at most three times).
    public func write<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                let limit = statementLimit
                return try await withConnection(onItsLoop: true) { executor in
                    try await Self.transaction(executor, begin: "BEGIN", limit: limit, body)
                }
            } catch let error as PostgresServerError where error.isRetryable && attempt < 3 {
                attempt += 1
            }
        }
    }

    /// `begin`, the body, then COMMIT — or ROLLBACK when the body throws.
    private static func transaction<T>(_ executor: PostgresExecutor, begin: String, limit: SQL?,
                                       _ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await executor.execute(SQL(stringLiteral: begin))
        do {
            if let limit { try await executor.execute(limit) }
            let result = try await body(executor)
            try await executor.execute("COMMIT")
            return result
        } catch {
            try? await executor.execute("ROLLBACK")
            throw error
        }
    }

    public var isReachable: Bool { !reachability.isDown }

    public func ping(timeout: Duration) async throws {
        try await withConnection(timeout: timeout) { try await $0.execute("SELECT 1") }
    }

    /// One call: a pooled connection and the body, both before one deadline.
    /// A failure to reach the database makes `reachability` check it.
    ///
    /// `onItsLoop`: the body runs on the connection's event loop
    /// (`ConnectionLoopExecutor`), for a write: its round trips follow one
    /// another while it holds rows locked. A read runs on the shared pool: it
    /// may decode thousands of rows in one stretch (an invoice list, an
    /// export), which on a loop would hold up every socket the loop serves.
    private func withConnection<T>(timeout: Duration? = nil, onItsLoop: Bool = false,
                                   _ body: (PostgresExecutor) async throws -> T) async throws -> T {
        try reachability.failIfDown()
        let allowed = DatabaseDeadline.override ?? options.timeout
        let deadline = NIODeadline.now() + TimeAmount(timeout.map { min($0, allowed) } ?? allowed)
        do {
            let lease = try await ConnectionLease.acquire(from: pool.client, until: deadline, checkAfter: TimeAmount(options.probeInterval),
                                                          reachability: reachability)
            defer { lease.release() }
            let executor = PostgresExecutor(connection: lease.connection, deadline: deadline, logger: logger, statements: statements)
            let result = try await withTaskExecutorPreference(onItsLoop ? ConnectionLoopExecutor(loop: lease.connection.eventLoop) : nil) {
                try await body(executor)
            }
            reachability.answered()
            return result
        } catch let error as DatabaseUnavailable {
            if error.cause != .storageFull { reachability.check() }
            throw error
        }
    }

    /// A connection outside the pool, for LISTEN (it stays busy for as long
    /// as it listens).
    func makeListenConnection(id: Int) async throws -> PostgresConnection {
        try await PostgresConnection.connect(configuration: connectionConfiguration, id: id, logger: logger)
    }

    /// The pool's settings for a single connection of its own.
    static func connectionConfiguration(_ configuration: PostgresClient.Configuration, sslMode: String) throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "require", "verify-full": tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        return PostgresConnection.Configuration(
            host: configuration.host ?? "localhost", port: configuration.port ?? 5432, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: tls)
    }

    public func close() async {
        await reachability.close()
        await pool.close()
    }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
