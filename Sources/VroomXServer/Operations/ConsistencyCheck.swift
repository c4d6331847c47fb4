import Foundation
import Logging

/// `vroomx check`: how trips, orders and the kept counts stand in a
/// server's database, and the counts repaired on request. It reads the
/// database the server uses and writes nothing else: it neither makes a
/// database nor migrates one (a wrong data folder or URL is an error, never
/// an empty database found consistent).
public enum ConsistencyCheck {
    public struct Report: Sendable {
        /// Which database: the SQLite file, or the PostgreSQL host and database.
        public let location: String
        public let carriers: Int
        public let orders: Int
        public let trips: Int
        /// Kept counts found drifted and counted again (`repairCounts`).
        public let repaired: [String]
        /// Kept counts that differ from their rows.
        public let countProblems: [String]
        /// Trips and orders that do not stand together.
        public let rowProblems: [String]
    }

    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
    }

    public static func run(_ configuration: ServerConfiguration, repairCounts: Bool, logger: Logger) async throws -> Report {
        let location: String
        if let url = configuration.databaseURL {
            let parts = URLComponents(string: url)
            location = "PostgreSQL database \(parts?.path.dropFirst() ?? "") on \(parts?.host ?? "?"):\(parts?.port ?? 5432)"
        } else {
            location = configuration.sqlitePath
            guard FileManager.default.fileExists(atPath: location) else {
                throw Refusal(description: "No database at \(location): set VROOMX_DATA_DIR to the server's data folder (or VROOMX_DATABASE_URL).")
            }
        }
        let database = try await ServerServices.openDatabase(configuration, logger: logger)
        do {
            let report = try await check(database, location: location, repairCounts: repairCounts)
            await database.close()
            return report
        } catch {
            await database.close()
            throw error
        }
    }

    private static func check(_ database: any SQLDatabase, location: String, repairCounts: Bool) async throws -> Report {
        let applied = try await Migrator.appliedVersions(database)
        guard !applied.isEmpty else { throw Refusal(description: "\(location) holds no VroomX data (no schema_migrations table).") }
        let version = applied.max() ?? 0
        guard version <= Migrator.latestVersion else {
            throw Refusal(description: "\(location) is at schema version \(version), newer than this vroomx (\(Migrator.latestVersion)): "
                          + "check it with the server's own version.")
        }
        guard version == Migrator.latestVersion else {
            throw Refusal(description: "\(location) is at schema version \(version); this vroomx checks version \(Migrator.latestVersion). "
                          + "Run `vroomx migrate` with this version first.")
        }
        let store = Store(database: database, clock: Clock.system)
        let repaired = repairCounts ? try await store.repairKeptCounts() : []
        let figures = try await database.read { db in
            try await db.first("""
                SELECT (SELECT COUNT(*) FROM tenants) AS carriers, (SELECT COUNT(*) FROM orders) AS orders, (SELECT COUNT(*) FROM trips) AS trips
                """)
        }
        return Report(location: location, carriers: try figures?.int("carriers") ?? 0, orders: try figures?.int("orders") ?? 0,
                      trips: try figures?.int("trips") ?? 0, repaired: repaired,
                      countProblems: try await store.countProblems(), rowProblems: try await store.rowProblems())
    }
}
