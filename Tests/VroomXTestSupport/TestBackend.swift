import Foundation
import Logging
import VroomXServer

/// The storage backends every storage-dependent test runs against. SQLite
/// always; PostgreSQL when `VROOMX_TEST_POSTGRES_URL` points at a server
/// (`.ci/run` starts one). Under CI a missing PostgreSQL is an error, never
/// a silent skip.
public enum TestBackend: String, Sendable, CustomStringConvertible, CaseIterable {
    case sqlite
    case postgres

    public var description: String { rawValue }

    public static var postgresURL: String? {
        ProcessInfo.processInfo.environment["VROOMX_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// SQLite, and PostgreSQL when configured (always under CI).
    public static var available: [TestBackend] {
        if postgresURL != nil || ProcessInfo.processInfo.environment["CI"] == "true" { return [.sqlite, .postgres] }
        return [.sqlite]
    }

    /// Only PostgreSQL (multi-instance tests); empty locally without a server.
    public static var postgresOnly: [TestBackend] { available.filter { $0 == .postgres } }

    /// A configuration pointing at a new, empty database of this backend
    /// (for PostgreSQL: `databaseURL`, else a new database on the test server).
    public func freshConfiguration(databaseURL: String? = nil) async throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.jwtSecret = "test-secret-" + String(repeating: "x", count: 32)
        configuration.logLevel = ProcessInfo.processInfo.environment["VROOMX_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
        configuration.dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("vroomx-test-\(UUID().uuidString.prefix(8))")
        configuration.databasePoolSize = 4
        configuration.auth.pinHashCost = 10 // fast scrypt in tests; production keeps the default
        // Hummingbird's live test client holds one connection and never reconnects: a slow step of a
        // test on a loaded machine must not lose it to the keep-alive deadline (tests of it set their own).
        configuration.connectionLimits.headerTimeout = .seconds(300)
        // Tests run side by side on two cores, each committing with fsync: a test that queues 40
        // writes at once can wait past the production deadline (tests of deadlines set their own).
        // A fresh-clone run on a busy machine took 383 s for the phase and lost six PostgreSQL calls at 60 s;
        // another lost the 401 arrivals of one location batch (12 s for the test alone) at 120 s.
        configuration.databaseTimeout = .seconds(300)
        if self == .postgres {
            if let databaseURL {
                configuration.databaseURL = databaseURL
            } else {
                configuration.databaseURL = try await Self.createDatabase()
            }
        }
        return configuration
    }

    /// The start of every test database's name: `scripts/test` gives each run
    /// its own (`VROOMX_TEST_DATABASE_PREFIX`) and drops the run's databases
    /// when it passes.
    static var databasePrefix: String {
        let given = ProcessInfo.processInfo.environment["VROOMX_TEST_DATABASE_PREFIX"] ?? ""
        let isIdentifier = given.first.map { $0.isLetter } == true && given.count <= 40
            && given.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }
        return isIdentifier ? given : "vroomx_test"
    }

    /// Creates a new database on the test server and returns its URL.
    public static func createDatabase() async throws -> String {
        guard let base = postgresURL else {
            throw TestSetupError("VROOMX_TEST_POSTGRES_URL is not set, but the tests must run on PostgreSQL too. Run .ci/start-postgres.sh and export the URL it prints.")
        }
        // Hundreds of tests start side by side on two cores: a connection that cannot be made within
        // the client's deadline at that moment is tried again (the test itself has not begun).
        var attempt = 1
        while true {
            do {
                return try await PostgresDatabase.createDatabase(adminURL: base, prefix: databasePrefix, logger: Logger(label: "test-admin"))
            } catch let error as DatabaseUnavailable where attempt < 5 {
                _ = error
                attempt += 1
                try await Task.sleep(for: .milliseconds(500 * attempt))
            }
        }
    }
}

public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
