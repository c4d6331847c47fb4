import Foundation
import Logging
import NIOPosix
import Testing
@testable import VroomXServer
import VroomXTestSupport

/// Statements prepared once per PostgreSQL connection: they give the same
/// answers as unnamed ones, the server really keeps them, they can be turned
/// off, and a table changed under them costs one call, not the connection.
@Suite("PostgreSQL prepared statements")
struct PostgresStatementTests {
    /// A database of its own with a one-connection pool, so every call meets the same session.
    func openDatabase(url given: String? = nil, preparedStatements: Bool = true) async throws -> (PostgresDatabase, url: String) {
        var chosen = given
        if chosen == nil { chosen = try await TestBackend.postgres.freshConfiguration().databaseURL }
        let url = try #require(chosen)
        // Prepared from the first run, so a test need not repeat each call five times.
        // The suite's deadline (`TestBackend`): hundreds of tests share two cores, and these do not test deadlines.
        let options = PostgresDatabase.Options(timeout: .seconds(120), preparedStatements: preparedStatements, prepareThreshold: 1)
        let database = try await PostgresDatabase.open(url: url, maxConnections: 1, options: options, logger: Logger(label: "test"))
        return (database, url)
    }

    /// The statements this session holds, by their text.
    func preparedTexts(_ database: PostgresDatabase) async throws -> [String] {
        try await database.read { try await $0.query("SELECT statement FROM pg_prepared_statements") }.map { try $0.string("statement") }
    }

    @Test("every kind of value round-trips, prepared (the first time and again) or not", arguments: TestBackend.postgresOnly, [true, false])
    func valuesRoundTrip(_ backend: TestBackend, prepared: Bool) async throws {
        let (database, _) = try await openDatabase(preparedStatements: prepared)
        let bytes: [UInt8] = [0, 1, 2, 254, 255]
        for _ in 0..<3 {
            let row = try await database.read { db in
                try await db.first("""
                    SELECT \("ünïcødé 🚚") AS text, \(Int64.min) AS small, \(2.5) AS real, \(Optional<Int>.none) AS missing,
                           decode('000102feff', 'hex') AS blob, 7::int4 AS four, true AS yes, 12.50::numeric AS amount
                    """)
            }
            #expect(try row?.string("text") == "ünïcødé 🚚")
            #expect(try row?.int64("small") == Int64.min)
            #expect(row?["real"] == .real(2.5))
            #expect(row?["missing"] == .null)
            #expect(row?["blob"] == .blob(bytes))
            #expect(row?["four"] == .integer(7))
            #expect(row?["yes"] == .integer(1))
            #expect(row?["amount"] == .real(12.5))
        }
        // The text went as a parameter, not into the statement.
        #expect(try await preparedTexts(database).contains { !$0.contains("ünïcødé") && $0.contains("AS blob") } == prepared)
        await database.close()
    }

    @Test("a statement is prepared once per connection; BEGIN, COMMIT and long key lists are not", arguments: TestBackend.postgresOnly)
    func preparedOnce(_ backend: TestBackend) async throws {
        let (database, _) = try await openDatabase()
        try await database.write { db in
            try await db.execute("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL)")
            for id in 1...5 { try await db.execute("INSERT INTO notes (id, body) VALUES (\(id), \("note \(id)"))") }
        }
        for id in 1...5 {
            let body = try await database.read { try await $0.first("SELECT body FROM notes WHERE id = \(id)")?.string("body") }
            #expect(body == "note \(id)")
        }
        let keys = SQL.list((1...40).map { Int64($0) })
        let many = try await database.read { try await $0.query("SELECT id FROM notes WHERE id IN (\(keys))") }
        #expect(many.count == 5)
        let texts = try await preparedTexts(database)
        #expect(texts.filter { $0.hasPrefix("SELECT body FROM notes") }.count == 1)
        #expect(texts.filter { $0.hasPrefix("INSERT INTO notes") }.count == 1)
        #expect(!texts.contains { $0.contains("IN (") || $0.hasPrefix("BEGIN") || $0.hasPrefix("COMMIT") || $0.hasPrefix("CREATE") })
        await database.close()
    }

    @Test("by default a statement is prepared on its fifth run; a connection keeps at most 256", arguments: TestBackend.postgresOnly)
    func thresholdAndLimit(_ backend: TestBackend) async throws {
        let url = try #require(try await TestBackend.postgres.freshConfiguration().databaseURL)
        let database = try await PostgresDatabase.open(url: url, maxConnections: 1, options: .init(timeout: .seconds(120)), logger: Logger(label: "test"))
        let counting: SQL = "SELECT count(*) AS held FROM pg_prepared_statements WHERE statement LIKE \("SELECT 'counted'%")"
        for run in 1...5 {
            let held = try await database.read { try await $0.first("SELECT 'counted' AS label, \(run) AS run") }
            #expect(try held?.int("run") == run)
            let prepared = try await database.read { try await $0.first(counting)?.int("held") }
            #expect(prepared == (run < 5 ? 0 : 1), "after run \(run)")
        }
        for text in 0..<300 {
            for _ in 0..<5 { _ = try await database.read { try await $0.first("SELECT \(unsafeRaw: String(text)) AS n") } }
        }
        let all = try await database.read { try await $0.first("SELECT count(*) AS held FROM pg_prepared_statements")?.int("held") }
        #expect(all == 256)
        await database.close()
    }

    @Test("a statement the server lost fails one call as unavailable and is prepared anew", arguments: TestBackend.postgresOnly)
    func statementLost(_ backend: TestBackend) async throws {
        let (database, _) = try await openDatabase()
        let select: SQL = "SELECT \(20) + 1 AS value"
        #expect(try await database.read { try await $0.first(select)?.int("value") } == 21)
        try await database.read { try await $0.execute("DEALLOCATE ALL") }
        await #expect(throws: DatabaseUnavailable.self) { try await database.read { try await $0.first(select) } }
        #expect(try await database.read { try await $0.first(select)?.int("value") } == 21)
        #expect(try await preparedTexts(database).contains { $0.contains("+ 1 AS value") })
        await database.close()
    }

    @Test("turned off, nothing is prepared and answers are the same", arguments: TestBackend.postgresOnly)
    func turnedOff(_ backend: TestBackend) async throws {
        let (database, _) = try await openDatabase(preparedStatements: false)
        for _ in 0..<3 {
            let value = try await database.read { try await $0.first("SELECT \(41) + 1 AS answer")?.int("answer") }
            #expect(value == 42)
        }
        #expect(try await preparedTexts(database).isEmpty)
        await database.close()
    }

    @Test("a table changed under a prepared statement fails one call as unavailable; the next call answers", arguments: TestBackend.postgresOnly)
    func tableChangedUnderneath(_ backend: TestBackend) async throws {
        let (database, url) = try await openDatabase()
        try await database.write { db in
            try await db.execute("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL)")
            try await db.execute("INSERT INTO notes (id, body) VALUES (1, 'first')")
        }
        let select: SQL = "SELECT * FROM notes WHERE id = \(1)"
        #expect(try await database.read { try await $0.first(select) }?.string("body") == "first")
        // Another instance migrates: the result of `SELECT *` gains a column.
        let (other, _) = try await openDatabase(url: url, preparedStatements: false)
        try await other.write { try await $0.execute("ALTER TABLE notes ADD COLUMN pinned BIGINT NOT NULL DEFAULT 0") }
        await other.close()

        await #expect(throws: DatabaseUnavailable.self) { try await database.read { try await $0.first(select) } }
        let row = try await database.read { try await $0.first(select) }
        #expect(try row?.string("body") == "first")
        #expect(try row?.int("pinned") == 0)
        await database.close()
    }

    @Test("a write runs on its connection's event loop, from its first statement to its last; a read and the write's caller do not",
          arguments: TestBackend.postgresOnly)
    func writesOnTheirLoop(_ backend: TestBackend) async throws {
        let (database, _) = try await openDatabase()
        // Where the code runs before, between and after the statements of a write.
        let loops = try await database.write { db in
            var loops = [MultiThreadedEventLoopGroup.currentEventLoop.map(ObjectIdentifier.init)]
            for _ in 0..<3 {
                _ = try await db.first("SELECT 1 AS one")
                loops.append(MultiThreadedEventLoopGroup.currentEventLoop.map(ObjectIdentifier.init))
            }
            return loops
        }
        #expect(loops.count == 4 && loops.allSatisfy { $0 != nil && $0 == loops[0] }, "\(loops)")
        // The write's caller goes on on the shared pool: what it does next (a PDF, a page) holds up no socket.
        #expect(MultiThreadedEventLoopGroup.currentEventLoop == nil)
        // A read may decode thousands of rows in one stretch: it stays on the pool.
        let reading = try await database.read { db in
            _ = try await db.first("SELECT 1 AS one")
            return MultiThreadedEventLoopGroup.currentEventLoop == nil
        }
        #expect(reading)
        await database.close()
    }
}
