import Foundation
import NIOConcurrencyHelpers
import Testing
@testable import VroomXServer

/// SQLite's writer: writes queued behind it run in the transaction open on
/// it, each in a savepoint, and return only once their group committed; the
/// WAL is copied back into the database file off the writer's path.
@Suite("SQLite's writer")
struct SQLiteWriterTests {
    struct Refused: Error {}

    /// A database with a table `t`. By default its groups may stay open long: the tests' slow first write does not
    /// close its group.
    static func database(timeout: Duration = .seconds(10), maxGroupAge: Duration = .seconds(30)) async throws -> (SQLiteDatabase, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-group-\(UUID().uuidString).sqlite").path
        let database = try SQLiteDatabase(path: path, timeout: timeout, maxGroupAge: maxGroupAge)
        try await database.write { try await $0.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, note TEXT NOT NULL)") }
        return (database, path)
    }

    /// Starts a write of row `id` that holds the writer until `queued` writes wait behind it, then `pause` more, and
    /// returns once it holds the writer.
    static func holdWriter(_ database: SQLiteDatabase, id: Int, until queued: Int, pause: Duration = .zero) async throws -> Task<Void, any Error> {
        let holding = NIOLockedValueBox(false)
        let write = Task {
            try await database.write { db in
                try await db.execute("INSERT INTO t (id, note) VALUES (\(id), 'first')")
                holding.withLockedValue { $0 = true }
                try await waitForQueue(database, queued)
                try await Task.sleep(for: pause)
            }
        }
        while !holding.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        return write
    }

    static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// Waits until `count` writes wait for the writer (they queue in that order).
    static func waitForQueue(_ database: SQLiteDatabase, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while database.writesWaiting < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    }

    static func ids(_ database: SQLiteDatabase) async throws -> Set<Int> {
        Set(try await database.read { try await $0.query("SELECT id FROM t") }.map { try $0.int("id") })
    }

    @Test("writes queued behind a slow one commit together; each is visible once it returns; one that fails leaves the others")
    func queuedWritesCommitTogether() async throws {
        let (database, path) = try await Self.database()
        defer { Self.remove(path) }
        let before = database.groupCounts.withLockedValue { $0 }
        // The first write holds the writer while 40 more queue behind it.
        let first = try await Self.holdWriter(database, id: 0, until: 40)
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { tasks in
            tasks.addTask {
                try await first.value
                return (0, try await Self.ids(database).contains(0))
            }
            for id in 1...40 {
                tasks.addTask {
                    do {
                        try await database.write { db in
                            try await db.execute("INSERT INTO t (id, note) VALUES (\(id), 'queued')")
                            // Every fifth write fails after its insert: only its own row goes.
                            if id % 5 == 0 { throw Refused() }
                        }
                    } catch is Refused {
                        return (id, false)
                    }
                    // Committed before it returned: another connection reads it at once.
                    return (id, try await Self.ids(database).contains(id))
                }
            }
            return try await tasks.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        let succeeded = Set(outcomes.filter(\.value).keys)
        #expect(succeeded == Set((0...40).filter { $0 % 5 != 0 || $0 == 0 }), "every write that returned was visible on its return")
        #expect(try await Self.ids(database) == succeeded, "the failed writes' rows are not there; the others' are")
        let after = database.groupCounts.withLockedValue { $0 }
        let (writes, commits) = (after.writes - before.writes, after.commits - before.commits)
        #expect(writes == 33)
        #expect(commits >= 1 && commits <= 8, "41 writes, 33 succeeded, in \(commits) commits")
        await database.close()
    }

    @Test("a write done early does not wait long for slow ones behind it: its group closes at 25 ms")
    func groupsCloseWhenOld() async throws {
        let (database, path) = try await Self.database(maxGroupAge: .milliseconds(25))
        defer { Self.remove(path) }
        let finished = NIOLockedValueBox<[Int: ContinuousClock.Instant]>([:])
        let first = try await Self.holdWriter(database, id: 0, until: 4, pause: .milliseconds(50))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                try await first.value
                finished.withLockedValue { $0[0] = .now }
            }
            for id in 1...4 {
                tasks.addTask {
                    try await database.write { db in
                        try await db.execute("INSERT INTO t (id, note) VALUES (\(id), 'slow')")
                        try await Task.sleep(for: .milliseconds(150))
                    }
                    finished.withLockedValue { $0[id] = .now }
                }
            }
            try await tasks.waitForAll()
        }
        // In one group the first would have returned with the last, 600 ms after its own work was done.
        let times = finished.withLockedValue { $0 }
        let firstDone = try #require(times[0]), lastDone = try #require(times.values.max())
        #expect(firstDone.duration(to: lastDone) > .milliseconds(300), "the first returned \(firstDone.duration(to: lastDone)) before the last")
        #expect(try await Self.ids(database) == [0, 1, 2, 3, 4])
        await database.close()
    }

    @Test("a write with little time left (a quarter of its allowance, at most a second) runs alone: when its deadline interrupts it, the writes before it are committed")
    func shortDeadlineRunsAlone() async throws {
        // Every call is allowed 2 s: one with under 500 ms left runs alone.
        let (database, path) = try await Self.database(timeout: .seconds(2))
        defer { Self.remove(path) }
        let first = try await Self.holdWriter(database, id: 1, until: 1, pause: .milliseconds(1_700))
        // It waits 1.7 s for the writer, while the first write's group is open; then, alone, it inserts rows without
        // end until its deadline stops it.
        let endless = Task {
            try await database.write { try await $0.execute("""
                INSERT INTO t (id, note) WITH RECURSIVE n(x) AS (SELECT 100 UNION ALL SELECT x + 1 FROM n) SELECT x, 'endless' FROM n
                """) }
        }
        try await first.value
        await #expect(throws: DatabaseUnavailable.self) { try await endless.value }
        #expect(try await Self.ids(database) == [1], "the first write committed; nothing of the interrupted one")
        await database.close()
    }

    @Test("when SQLite ends the transaction itself, the writes waiting for its commit fail as unavailable, and the next write goes on")
    func transactionEndedBySQLite() async throws {
        let (database, path) = try await Self.database()
        defer { Self.remove(path) }
        // A holds the writer while B and C queue; A's write is done and waits for the commit when B ends the transaction.
        let first = try await Self.holdWriter(database, id: 1, until: 2)
        let second = Task { try await database.write { try await $0.execute("ROLLBACK") } }
        try await Self.waitForQueue(database, 1)
        let third = Task { try await database.write { try await $0.execute("INSERT INTO t (id, note) VALUES (3, 'C')") } }
        await #expect(throws: DatabaseUnavailable.self) { try await first.value }
        await #expect(throws: (any Error).self) { try await second.value }
        try await third.value
        #expect(try await Self.ids(database) == [3])
        // The writer is whole: a write after them commits.
        try await database.write { try await $0.execute("INSERT INTO t (id, note) VALUES (4, 'D')") }
        #expect(try await Self.ids(database) == [3, 4])
        await database.close()
    }

    @Test("the WAL is copied into the file beside the writer, then starts over; a clean close leaves the file alone, whole")
    func walStartsOver() async throws {
        let (database, path) = try await Self.database()
        defer { Self.remove(path) }
        func size(_ file: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int) ?? 0 }
        let note = String(repeating: "x", count: 100_000)
        // Rows of 100 KB (25 pages each) until the file holds 4 MB and the WAL has started over, at most 350 of them:
        // 8,750 pages, under the writer's backstop of 10,000, so only the checkpointer copies them in bulk (the writer
        // copies the last few pages once the checkpointer has copied the rest, which lets the WAL start over).
        let deadline = ContinuousClock.now + .seconds(60)
        var (id, previous, restarted) = (0, 0, false)
        while id < 350, !(size(path) >= 4_000_000 && restarted), ContinuousClock.now < deadline {
            id += 1
            try await database.write { try await $0.execute("INSERT INTO t (id, note) VALUES (\(id), \(note))") }
            if database.walPages < previous { restarted = true }
            previous = database.walPages
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(size(path) >= 4_000_000, "the pages were copied into the database file beside the writer (\(id) rows)")
        #expect(restarted, "the WAL started over (\(id) rows, \(database.walPages) pages in it)")
        #expect(try await database.read { try await $0.first("SELECT COUNT(*) AS n FROM t")?.int("n") } == id)
        await database.close()
        // Closed, the file alone holds everything (the readers close first, the writer last copies the WAL in).
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "the WAL is gone at a clean close")
        let reopened = try SQLiteDatabase(path: path)
        #expect(try await reopened.read { try await $0.first("SELECT COUNT(*) AS n FROM t")?.int("n") } == id)
        await reopened.close()
    }
}
