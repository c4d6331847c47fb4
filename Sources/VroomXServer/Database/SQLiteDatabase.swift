import Foundation
import GRDBSQLite
import NIOCore
import NIOConcurrencyHelpers

/// The embedded default: one SQLite file in WAL mode. Writes go through a
/// single connection guarded by an async lock (SQLite allows one writer);
/// reads use a small pool of read-only connections and run concurrently
/// with the writer. Every read and write is a transaction, so the queries
/// inside one call always see one consistent snapshot.
///
/// Statements run synchronously on the calling task: a page-cache hit costs
/// microseconds, far less than a hop to a thread pool would.
public final class SQLiteDatabase: SQLDatabase {
    public let dialect = SQLDialect.sqlite
    public let path: String
    private let writer: SQLiteConnection
    private let checkpointer: WALCheckpointer
    private let writeLock = AsyncSemaphore(permits: 1)
    private let readPermits: AsyncSemaphore
    private let idleReaders = NIOLockedValueBox<[SQLiteConnection]>([])
    private let timeout: Duration
    private let memoryMapBytes: Int64
    /// How long a group of writes stays open at most: a write done early
    /// waits for the ones behind it, so a group closes once it is this old.
    private let maxGroupAge: Duration

    /// - Parameter timeout: how long a call waits for this process's reader
    ///   or writer, and a statement for a lock held by another process (a
    ///   second `vroomx` command), before it fails as `DatabaseUnavailable`.
    /// - Parameter memoryMapBytes: how much of the file each connection
    ///   reads through a memory map (0: none, pages are copied). A reader
    ///   drops its whole map when it starts reading after another
    ///   connection's commit (SQLite's design in WAL mode), so writes cost
    ///   remaps; measured, the map still ingests locations faster than
    ///   copies (docs/benchmarks.md, "SQLite's memory map").
    public init(path: String, maxReaders: Int = 8, timeout: Duration = .seconds(10), memoryMapBytes: Int64 = 256 << 20,
                maxGroupAge: Duration = .milliseconds(25)) throws {
        self.path = path
        self.maxGroupAge = maxGroupAge
        self.timeout = timeout
        self.memoryMapBytes = memoryMapBytes
        writer = try SQLiteConnection(path: path, readOnly: false, busyTimeout: timeout, memoryMapBytes: memoryMapBytes)
        try writer.executeScript("""
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            PRAGMA foreign_keys = ON;
            PRAGMA temp_store = MEMORY;
            """)
        // The writer's temporary storage (a write's savepoint journal, its sorts) is in memory: in files, each
        // write transaction opened and wrote a file in /var/tmp, 73 % of the server's writes under location ingest.
        // Readers keep SQLite's default, so a large sort spills to a file; maintenance writes switch to it too.
        checkpointer = try WALCheckpointer(path: path, busyTimeout: timeout)
        writer.handCheckpoints(to: checkpointer)
        readPermits = AsyncSemaphore(permits: maxReaders)
    }

    public func read<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        let allowed = deadline
        let until = ContinuousClock.now + allowed
        let timedOut = DatabaseUnavailable(.timedOut, "no SQLite reader was free before the deadline")
        return try await withTaskExecutorPreference(StatementThreads.shared) {
            try await readPermits.withPermit(timeout: allowed, orThrow: timedOut) {
                ServerMetrics.leased(.sqlite, waitingSince: until - allowed)
                defer { ServerMetrics.returned(.sqlite) }
                let connection = try idleReaders.withLockedValue { $0.popLast() }
                    ?? SQLiteConnection(path: path, readOnly: true, busyTimeout: timeout, memoryMapBytes: memoryMapBytes)
                defer {
                    connection.stop(at: nil)
                    idleReaders.withLockedValue { $0.append(connection) }
                }
                connection.stop(at: until)
                _ = try connection.run("BEGIN")
                do {
                    let result = try await body(connection)
                    _ = try connection.run("COMMIT")
                    return result
                } catch {
                    _ = try? connection.run("ROLLBACK")
                    throw error
                }
            }
        }
    }

    public func snapshot<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        try await read(body)
    }

    /// How long a call waits for this process's reader or writer.
    private var deadline: Duration { DatabaseDeadline.override ?? timeout }

    /// A file: there when it opens.
    public var isReachable: Bool { true }

    public func ping(timeout: Duration) async throws {
        try await DatabaseDeadline.allowing(min(timeout, deadline)) {
            try await read { try await $0.execute("SELECT 1") }
        }
    }

    public var statementExecutor: (any TaskExecutor)? { StatementThreads.shared }

    /// Writes waiting for the writer.
    var writesWaiting: Int { writeLock.waiting }

    /// Pages in the WAL after the last commit.
    var walPages: Int { Int(checkpointer.walPages.withLockedValue { $0 }) }

    /// How many statements the writer keeps prepared.
    var writerStatementCount: Int { writer.cachedStatementCount }

    /// Set while a task holds the writer, to catch a nested write (which
    /// would wait forever for the lock it holds) as an error.
    @TaskLocal static var holdsWriter = false

    /// Set by the migrator while a migration rebuilds a table other tables
    /// point at: the write runs with foreign keys off (which SQLite changes
    /// only outside a transaction) and commits only if every reference
    /// still finds its row.
    @TaskLocal static var foreignKeysOff = false

    /// Writes committed together at most (group commit, `write`).
    static let maxGroup = 32

    /// A write runs in a savepoint of the transaction open on the writer
    /// (group commit). When it is done and other writes wait for the writer,
    /// it hands the writer on and waits for the commit: the writes queued
    /// behind it run in the same transaction, which the last of them (or a
    /// flush queued behind them) commits. Each commit writes its pages to the
    /// WAL once, and every reader drops its cache once, for the whole group,
    /// not once per write. A write returns only after its commit, so what it
    /// wrote is visible to every read that follows. A write that fails rolls
    /// back to its savepoint and leaves the others be; if SQLite rolls back
    /// the whole transaction (an interrupt, a full disk), every write waiting
    /// for it fails as unavailable (nothing of them was committed). So a
    /// write that may run long or touch much (maintenance and imports, which
    /// run under a deadline of their own) or that has under a second left
    /// (a quarter of its allowance, if less: an interrupt at its deadline
    /// would end the whole transaction) runs alone, after the group before
    /// it committed.
    public func write<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        guard !Self.holdsWriter else { throw SQLiteError(code: SQLITE_MISUSE, message: "nested write transaction") }
        let allowed = deadline
        let until = ContinuousClock.now + allowed
        let timedOut = DatabaseUnavailable(.timedOut, "the SQLite writer stayed busy past the deadline")
        return try await withTaskExecutorPreference(StatementThreads.shared) {
            guard await writeLock.wait(timeout: allowed) else { throw timedOut }
            ServerMetrics.leased(.sqlite, waitingSince: until - allowed)
            var holding = true
            func release() {
                guard holding else { return }
                holding = false
                ServerMetrics.returned(.sqlite)
                writeLock.signal()
            }
            defer { release() }
            let maintenance = DatabaseDeadline.override != nil
            if Self.foreignKeysOff || maintenance || ContinuousClock.now.duration(to: until) < min(.seconds(1), allowed / 4) {
                try commitGroup()
                return try await writeAlone(body, until: until, foreignKeysOff: Self.foreignKeysOff, temporaryFiles: maintenance)
            }
            let outcome: Result<T, any Error>
            do { outcome = .success(try await runInGroup(body, until: until)) } catch { outcome = .failure(error) }
            let (waiting, flushQueued, begun) = group.withLockedValue { ($0.waiting.count, $0.flushQueued, $0.begun) }
            switch outcome {
            case .success(let value) where writeLock.hasWaiters && waiting + 1 < Self.maxGroup && begun.duration(to: .now) < maxGroupAge:
                // Hand the writer on; the commit comes with the writes behind.
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let queueFlush = group.withLockedValue { group -> Bool in
                        group.waiting.append(continuation)
                        defer { group.flushQueued = true }
                        return !group.flushQueued
                    }
                    if queueFlush { self.queueFlush() }
                    release()
                }
                return value
            case .success(let value):
                try commitGroup(withOwnWrite: true)
                return value
            case .failure(let error):
                // The writes before it wait for the flush queued for them; a group of none is rolled back.
                if !flushQueued { abandonGroup(error) }
                throw error
            }
        }
    }

    /// The group transaction open on the writer, and the writes in it waiting for its commit.
    private struct WriteGroup {
        var open = false
        var begun = ContinuousClock.now
        var waiting: [CheckedContinuation<Void, any Error>] = []
        /// A flush waits for the writer behind the writes queued.
        var flushQueued = false
    }
    private let group = NIOLockedValueBox(WriteGroup())
    /// Writes and commits so far: how well writes group (`/metrics` has both).
    let groupCounts = NIOLockedValueBox((writes: 0, commits: 0))

    /// Runs `body` in a savepoint of the group transaction (begun if none is
    /// open), holding the writer. Does not commit.
    private func runInGroup<T: Sendable>(_ body: (any SQLExecutor) async throws -> T, until: ContinuousClock.Instant) async throws -> T {
        if !group.withLockedValue({ $0.open }) {
            _ = try writer.run("BEGIN IMMEDIATE")
            group.withLockedValue { ($0.open, $0.begun) = (true, .now) }
            writer.inTransaction = true
        }
        _ = try writer.run("SAVEPOINT write")
        writer.stop(at: until)
        do {
            let result = try await Self.$holdsWriter.withValue(true) { try await body(writer) }
            writer.stop(at: nil)
            _ = try writer.run("RELEASE write")
            return result
        } catch {
            writer.stop(at: nil)
            if !writer.transactionIsOpen {
                abandonGroup(DatabaseUnavailable(.connectionLost, "SQLite rolled back a transaction of several writes: \(error)"))
            } else {
                do {
                    _ = try writer.run("ROLLBACK TO write")
                    _ = try writer.run("RELEASE write")
                } catch {
                    abandonGroup(DatabaseUnavailable(.connectionLost, "a write could not be rolled back alone: \(error)"))
                }
            }
            throw error
        }
    }

    /// Commits the group transaction, if one is open, and tells the writes
    /// waiting for it. Called holding the writer, by a write of the group
    /// (`withOwnWrite`) or on behalf of the writes waiting.
    private func commitGroup(withOwnWrite: Bool = false) throws {
        let (wasOpen, waiting) = group.withLockedValue { group in
            defer { (group.open, group.waiting) = (false, []) }
            return (group.open, group.waiting)
        }
        guard wasOpen else {
            assert(waiting.isEmpty, "writes wait for a group that is not open")
            return
        }
        writer.inTransaction = false
        do {
            _ = try writer.run("COMMIT")
            countCommit(writes: waiting.count + (withOwnWrite ? 1 : 0))
        } catch {
            _ = try? writer.run("ROLLBACK")
            for write in waiting { write.resume(throwing: error) }
            throw error
        }
        for write in waiting { write.resume() }
    }

    /// Counts a commit and the writes it made durable.
    private func countCommit(writes: Int) {
        groupCounts.withLockedValue { $0.writes += writes; $0.commits += 1 }
        ServerMetrics.sqliteWrites.increment(by: writes)
        ServerMetrics.sqliteCommits.increment()
    }

    /// Rolls back what is left of the group transaction: the writes waiting
    /// for it fail with `error`.
    private func abandonGroup(_ error: any Error) {
        let waiting = group.withLockedValue { group in
            defer { (group.open, group.waiting) = (false, []) }
            return group.waiting
        }
        writer.inTransaction = false
        if writer.transactionIsOpen { _ = try? writer.run("ROLLBACK") }
        for write in waiting { write.resume(throwing: error) }
    }

    /// Queues a commit of the group behind the writes waiting for the
    /// writer: whichever of them runs last, the group commits.
    private func queueFlush() {
        Task(executorPreference: StatementThreads.shared) { [self] in
            _ = await writeLock.wait()
            defer { writeLock.signal() }
            group.withLockedValue { $0.flushQueued = false }
            try? commitGroup()
        }
    }

    /// A write in a transaction of its own, without a savepoint. With
    /// foreign keys off (the migrator's rebuilds), it commits only if every
    /// reference still finds its row; with `temporaryFiles`, its sorts and
    /// temporary tables may spill to files (a maintenance write over the
    /// whole database). Called holding the writer, no group open.
    private func writeAlone<T: Sendable>(_ body: (any SQLExecutor) async throws -> T, until: ContinuousClock.Instant,
                                         foreignKeysOff: Bool, temporaryFiles: Bool) async throws -> T {
        writer.stop(at: until)
        defer { writer.stop(at: nil) }
        if foreignKeysOff { _ = try writer.run("PRAGMA foreign_keys = OFF") }
        defer { if foreignKeysOff { _ = try? writer.run("PRAGMA foreign_keys = ON") } }
        if temporaryFiles { _ = try writer.run("PRAGMA temp_store = FILE") }
        defer { if temporaryFiles { _ = try? writer.run("PRAGMA temp_store = MEMORY") } }
        _ = try writer.run("BEGIN IMMEDIATE")
        do {
            writer.inTransaction = true
            let result = try await Self.$holdsWriter.withValue(true) { try await body(writer) }
            if foreignKeysOff, let broken = try writer.run("PRAGMA foreign_key_check").first {
                throw SQLiteError(code: SQLITE_CONSTRAINT, message: "after a rebuilt table, a row of \((try? broken.string("table")) ?? "a table") refers to no row of \((try? broken.string("parent")) ?? "its parent")")
            }
            writer.inTransaction = false
            // The work is done: its commit is not cut short.
            writer.stop(at: nil)
            _ = try writer.run("COMMIT")
            countCommit(writes: 1)
            return result
        } catch {
            writer.inTransaction = false
            writer.stop(at: nil)
            _ = try? writer.run("ROLLBACK")
            throw error
        }
    }

    /// Runs statements that are not part of a transaction helper (migrations
    /// manage their own transaction).
    func withWriter<T>(_ body: (SQLiteConnection) async throws -> T) async throws -> T {
        try await writeLock.withPermit {
            try commitGroup()
            return try await body(writer)
        }
    }

    /// Closes the readers, then the writer: SQLite copies the WAL into the
    /// file and deletes it only when the last connection to close can write,
    /// so a stopped server leaves one file whole.
    public func close() async {
        await checkpointer.stop()
        await writeLock.withPermit {
            try? commitGroup()
            idleReaders.withLockedValue { readers in
                readers.forEach { $0.close() }
                readers.removeAll()
            }
            writer.close()
        }
    }
}

public struct SQLiteError: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public var description: String { "SQLite error \(code): \(message)" }
}

/// One sqlite3 handle with a cache of prepared statements. Used by one task
/// at a time: the database hands it out under a lock or from its pool.
final class SQLiteConnection: SQLExecutor, @unchecked Sendable {
    let dialect = SQLDialect.sqlite
    private var handle: OpaquePointer?
    /// Prepared statements by text in two generations: those used since the
    /// last turnover, and those used only before it (`prepared`).
    private var statements: [String: (statement: OpaquePointer, columns: SQLColumns)] = [:]
    private var olderStatements: [String: (statement: OpaquePointer, columns: SQLColumns)] = [:]
    /// Set by the database while a write transaction it began is open.
    var inTransaction = false
    /// Whether a transaction is open on the connection (SQLite ends one
    /// itself on an interrupt or a full disk).
    var transactionIsOpen: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }
    /// When the statement running must stop, in `monotonicNanoseconds`
    /// (0: never). SQLite's progress handler reads it every few thousand
    /// steps and interrupts the statement once it passed: a call past its
    /// deadline stops working, rather than finishing for nobody.
    private let stopAt = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)

    init(path: String, readOnly: Bool, busyTimeout: Duration, memoryMapBytes: Int64) throws {
        let flags = readOnly
            ? SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
            : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            throw SQLiteError(code: status, message: "\(message) (\(path))")
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
        // Another process (a second `vroomx` command) may hold the write lock briefly.
        let (seconds, attoseconds) = busyTimeout.components
        sqlite3_busy_timeout(handle, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        try executeScript("PRAGMA foreign_keys = ON; PRAGMA mmap_size = \(max(0, memoryMapBytes))")
        stopAt.initialize(to: 0)
        sqlite3_progress_handler(handle, 4000, { context in
            guard let stop = context?.load(as: UInt64.self), stop != 0 else { return 0 }
            return monotonicNanoseconds() >= stop ? 1 : 0
        }, stopAt)
    }

    deinit {
        close()
        stopAt.deallocate()
    }

    /// Statements from now on stop at `instant` (nil: run to the end).
    func stop(at instant: ContinuousClock.Instant?) {
        guard let instant else { return stopAt.pointee = 0 }
        let remaining = ContinuousClock.now.duration(to: instant)
        let (seconds, attoseconds) = remaining.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds / 1_000_000_000)
        stopAt.pointee = monotonicNanoseconds() &+ UInt64(clamping: nanoseconds) | 1
    }

    /// After each commit SQLite tells the hook how many pages the WAL holds,
    /// and `checkpointer` says whether this connection copies what is left
    /// itself (a few pages, or all of them past the backstop). This replaces
    /// SQLite's automatic checkpoint here; `checkpointer` must outlive it.
    func handCheckpoints(to checkpointer: WALCheckpointer) {
        sqlite3_wal_hook(handle, { context, db, name, pages in
            guard let context else { return SQLITE_OK }
            let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
            if pages >= WALCheckpointer.backstop || checkpointer.writerFinishes(walPages: pages) {
                sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(checkpointer).toOpaque())
    }

    func close() {
        if let handle { sqlite3_wal_hook(handle, nil, nil) }
        for entry in statements.values { sqlite3_finalize(entry.statement) }
        for entry in olderStatements.values { sqlite3_finalize(entry.statement) }
        statements.removeAll()
        olderStatements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs one or more statements without parameters or results.
    func executeScript(_ script: String) throws {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, script, nil, nil, &errorMessage)
        if status != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(errorMessage)
            throw mapError(status, message)
        }
    }

    func query(_ sql: SQL) async throws -> [SQLRow] {
        try run(sql)
    }

    func run(_ sql: SQL) throws -> [SQLRow] {
        try withStatement(sql) { statement, columns in
            // Every row's values in one array, in row order.
            var values: [SQLValue] = []
            var rowCount = 0
            while try step(statement) {
                rowCount += 1
                for column in columns.names.indices { values.append(value(statement, column)) }
            }
            return (0..<rowCount).map { SQLRow(columns: columns, values: values, offset: $0 * columns.names.count) }
        }
    }

    func documents(_ sql: SQL, limit: Int) async throws -> DocumentRows {
        try withStatement(sql) { statement, columns in
            var rows = DocumentRows()
            while try step(statement) {
                guard rows.count < limit else {
                    rows.hasMore = true
                    break
                }
                let text = sqlite3_column_text(statement, 0).map {
                    UnsafeRawBufferPointer(start: $0, count: Int(sqlite3_column_bytes(statement, 0)))
                }
                rows.append(text, expecting: limit)
                if rows.count == limit {
                    // Where a next page would start; the document itself is already in `joined`.
                    let keys = [SQLValue.null] + (1..<columns.names.count).map { value(statement, $0) }
                    rows.last = SQLRow(columns: columns, values: keys)
                }
            }
            return rows
        }
    }

    /// Prepares (or reuses) the statement, binds its values, and hands it to
    /// `body`, which steps through its rows.
    private func withStatement<T>(_ sql: SQL, _ body: (OpaquePointer, SQLColumns) throws -> T) throws -> T {
        let (text, binds) = sql.render(.sqlite)
        if inTransaction, let handle, sqlite3_get_autocommit(handle) != 0 {
            // SQLite rolled the transaction back itself (an interrupt, a full disk); a statement now would commit on its own.
            throw DatabaseUnavailable(.connectionLost, "SQLite ended the transaction")
        }
        // Statements of many rows (a batch's keys, a transaction's changes) vary in length: prepared for one use only.
        let reusable = binds.count <= Self.maxCachedBinds
        let (statement, columns) = try prepared(text, keep: reusable)
        defer {
            if reusable {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            } else {
                sqlite3_finalize(statement)
            }
        }
        for (offset, value) in binds.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(statement, index)
            case .integer(let number): status = sqlite3_bind_int64(statement, index, number)
            case .real(let number): status = sqlite3_bind_double(statement, index, number)
            case .text(let string): status = sqlite3_bind_text(statement, index, string, -1, SQLITE_TRANSIENT)
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT) }
            }
            guard status == SQLITE_OK else { throw mapError(status, lastMessage) }
        }
        return try body(statement, columns)
    }

    /// Moves to the next row: false when there are no more.
    private func step(_ statement: OpaquePointer) throws -> Bool {
        let status = sqlite3_step(statement)
        if status == SQLITE_DONE { return false }
        guard status == SQLITE_ROW else { throw mapError(status, lastMessage) }
        return true
    }

    private func value(_ statement: OpaquePointer, _ column: Int) -> SQLValue {
        let column = Int32(column)
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            // The byte count is known: no strlen over long documents.
            let length = Int(sqlite3_column_bytes(statement, column))
            let text = UnsafeBufferPointer(start: sqlite3_column_text(statement, column), count: length)
            return .text(String(decoding: text, as: UTF8.self))
        case SQLITE_BLOB:
            let length = Int(sqlite3_column_bytes(statement, column))
            guard let bytes = sqlite3_column_blob(statement, column) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: length)))
        default: return .null
        }
    }

    /// Statements with more parameters than this are not kept prepared.
    static let maxCachedBinds = 64
    /// Statements kept prepared per connection, at most (a statement whose
    /// text varies, as an `IN` list of each length does, must not grow the
    /// cache without end).
    static let maxCachedStatements = 256

    /// How many statements this connection keeps prepared.
    var cachedStatementCount: Int { statements.count + olderStatements.count }
    /// How many times this connection prepared a statement (the cache's misses).
    private(set) var preparations = 0

    /// When the newer generation holds half the cache, the older one is
    /// finalized and the newer becomes it; a statement of the older one used
    /// again moves back to the newer. The statements in use keep prepared
    /// (starting the whole cache over once made a full bench run prepare
    /// every page's statements again, 4.7 M instructions a trips page).
    private func prepared(_ text: String, keep: Bool) throws -> (OpaquePointer, SQLColumns) {
        if let cached = statements[text] { return cached }
        if let cached = olderStatements.removeValue(forKey: text) {
            keepPrepared(text, cached)
            return cached
        }
        var statement: OpaquePointer?
        preparations += 1
        let status = sqlite3_prepare_v3(handle, text, -1, keep ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw mapError(status, "\(lastMessage) in: \(text)") }
        let names = (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
        let entry = (statement, SQLColumns(names))
        if keep { keepPrepared(text, entry) }
        return entry
    }

    private func keepPrepared(_ text: String, _ entry: (statement: OpaquePointer, columns: SQLColumns)) {
        if statements.count >= Self.maxCachedStatements / 2 {
            // Only `withStatement` uses a statement, one at a time: none of the older ones is in use.
            for cached in olderStatements.values { sqlite3_finalize(cached.statement) }
            olderStatements = statements
            statements = [:]
        }
        statements[text] = entry
    }

    private var lastMessage: String { handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed" }

    private func mapError(_ status: Int32, _ message: String) -> any Error {
        switch status {
        case SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY: return DatabaseConstraintError.unique(message)
        case SQLITE_CONSTRAINT_FOREIGNKEY: return DatabaseConstraintError.foreignKey(message)
        case SQLITE_CONSTRAINT_CHECK: return DatabaseConstraintError.check(message)
        case SQLITE_CONSTRAINT_NOTNULL: return DatabaseConstraintError.notNull(message)
        default:
            // Extended result codes carry the primary code in the low byte.
            switch status & 0xFF {
            case SQLITE_INTERRUPT: return DatabaseUnavailable(.timedOut, "SQLite stopped a statement at its deadline")
            case SQLITE_BUSY, SQLITE_LOCKED: return DatabaseUnavailable(.busy, "SQLite \(status): \(message)")
            case SQLITE_FULL, SQLITE_IOERR: return DatabaseUnavailable(.storageFull, "SQLite \(status): \(message)")
            default: return SQLiteError(code: status, message: message)
            }
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds: cheap enough for SQLite's progress handler.
private func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

// C macros Swift cannot import: the destructor that makes SQLite copy bound
// text, and the extended result codes of constraint violations.
private let SQLITE_CONSTRAINT_CHECK: Int32 = SQLITE_CONSTRAINT | (1 << 8)
private let SQLITE_CONSTRAINT_FOREIGNKEY: Int32 = SQLITE_CONSTRAINT | (3 << 8)
private let SQLITE_CONSTRAINT_NOTNULL: Int32 = SQLITE_CONSTRAINT | (5 << 8)
private let SQLITE_CONSTRAINT_PRIMARYKEY: Int32 = SQLITE_CONSTRAINT | (6 << 8)
private let SQLITE_CONSTRAINT_UNIQUE: Int32 = SQLITE_CONSTRAINT | (8 << 8)
private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
