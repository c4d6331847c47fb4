import Foundation

/// Applies the schema's migrations that a database has not seen yet, in
/// order, in one transaction. Safe to run from several server instances at
/// once: PostgreSQL serializes them on an advisory lock, SQLite on its write
/// lock.
enum Migrator {
    /// Arbitrary, fixed key for the PostgreSQL advisory lock.
    static let advisoryLockKey: Int64 = 0x76_72_6F_6F_6D_78

    /// Applies what is missing, up to `version` (all by default; tests stop
    /// earlier to check an upgrade of an older schema holding data).
    @discardableResult
    static func migrate(_ database: any SQLDatabase, now: Date, upTo version: Int = .max) async throws -> [Int] {
        // Under the maintenance deadline whoever calls: a schema change on a busy database may wait for its locks.
        try await DatabaseDeadline.allowing(DatabaseDeadline.maintenance) {
            let rebuilds = try await pending(database, upTo: version).contains { $0.rebuildsReferencedTable }
            return try await SQLiteDatabase.$foreignKeysOff.withValue(rebuilds) { try await apply(database, now: now, upTo: version) }
        }
    }

    /// The migrations not yet applied (as far as a read can tell: another
    /// instance may apply them first, which `apply` sees under its lock).
    private static func pending(_ database: any SQLDatabase, upTo version: Int) async throws -> [Migration] {
        let done = try await appliedVersions(database)
        return Schema.migrations.filter { !done.contains($0.version) && $0.version <= version }
    }

    /// The migrations a database has seen; none for one that holds no schema.
    static func appliedVersions(_ database: any SQLDatabase) async throws -> Set<Int> {
        try await database.read { db -> Set<Int> in
            let table = db.dialect == .sqlite
                ? "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
                : "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
            guard try await db.first(SQL(unsafeRaw: table))?.int("n") ?? 0 > 0 else { return [] }
            return Set(try await db.query("SELECT version FROM schema_migrations").map { try $0.int("version") })
        }
    }

    private static func apply(_ database: any SQLDatabase, now: Date, upTo version: Int) async throws -> [Int] {
        try await database.write { db in
            if db.dialect == .postgres {
                try await db.execute("SELECT pg_advisory_xact_lock(\(advisoryLockKey))")
            }
            try await db.execute("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version BIGINT PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at BIGINT NOT NULL
                )
                """)
            let done = Set(try await db.query("SELECT version FROM schema_migrations").map { try $0.int("version") })
            var applied: [Int] = []
            for migration in Schema.migrations where !done.contains(migration.version) && migration.version <= version {
                for statement in migration.statements(for: db.dialect) {
                    try await db.execute(SQL(unsafeRaw: statement))
                }
                try await db.execute("""
                    INSERT INTO schema_migrations (version, name, applied_at)
                    VALUES (\(migration.version), \(migration.name), \(now))
                    """)
                applied.append(migration.version)
            }
            return applied
        }
    }

    static var latestVersion: Int { Schema.migrations.map(\.version).max() ?? 0 }
}
