import GRDBSQLite
import NIOConcurrencyHelpers

/// Copies the pages commits appended to an SQLite database's WAL back into
/// the database file (a checkpoint), on a connection of its own. SQLite's
/// automatic checkpoint runs inside the commit that brings the WAL to 1,000
/// pages: that commit, and with it every write of its group, waited for the
/// pages to be written and the file synced twice. The writer's WAL hook
/// (`SQLiteConnection.handCheckpoints(to:)`) wakes this instead. SQLite
/// starts the WAL over only once every page in it was copied; the writer
/// keeps appending while this copies, so when this has copied all but a few
/// pages the writer copies those itself, at its next commit. Only if this
/// falls far behind does the writer checkpoint the whole WAL itself.
final class WALCheckpointer: Sendable {
    /// WAL pages after a commit that wake the checkpointer (SQLite's own default).
    static let threshold: Int32 = 1000
    /// WAL pages after which the writer checkpoints itself: the checkpointer fell behind.
    static let backstop: Int32 = 10_000
    /// Pages left after a checkpoint here that the writer copies itself.
    static let leftForWriter = 64

    private let wakeUp: AsyncStream<Void>.Continuation
    private let loop: Task<Void, Never>
    /// Set when a checkpoint here left at most `leftForWriter` pages.
    private let nearlyDone: NIOLockedValueBox<Bool>
    /// Pages in the WAL after the last commit.
    let walPages = NIOLockedValueBox<Int32>(0)

    init(path: String, busyTimeout: Duration) throws {
        let connection = try SQLiteConnection(path: path, readOnly: false, busyTimeout: busyTimeout, memoryMapBytes: 0)
        let (wakes, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let nearlyDone = NIOLockedValueBox(false)
        (self.wakeUp, self.nearlyDone) = (wakeUp, nearlyDone)
        loop = Task(executorPreference: StatementThreads.shared) {
            for await _ in wakes {
                // PASSIVE: copies what no reader still needs, never waits for the writer or a reader.
                // Busy (another checkpoint under way) says nothing of the pages left (-1 and -1).
                guard let result = try? connection.run("PRAGMA wal_checkpoint(PASSIVE)").first, (try? result.int("busy")) == 0,
                      let pages = try? result.int("log"), let copied = try? result.int("checkpointed") else { continue }
                if pages - copied <= Self.leftForWriter { nearlyDone.withLockedValue { $0 = true } }
            }
            connection.close()
        }
    }

    deinit { wakeUp.finish() }

    /// Called from the writer's WAL hook after a commit left `pages` in the
    /// WAL, on the thread committing: true when the writer should copy the
    /// few pages left itself; otherwise wakes the checkpointer if the WAL
    /// is long enough, without waiting.
    func writerFinishes(walPages pages: Int32) -> Bool {
        walPages.withLockedValue { $0 = pages }
        guard pages >= Self.threshold else { return false }
        if nearlyDone.withLockedValue({ done in defer { done = false }; return done }) { return true }
        wakeUp.yield()
        return false
    }

    /// Stops checkpointing once the checkpoint under way (if any) is done.
    func stop() async {
        wakeUp.finish()
        await loop.value
    }
}
