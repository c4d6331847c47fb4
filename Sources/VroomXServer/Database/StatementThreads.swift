import NIOPosix

/// Threads of their own for SQLite's statements. A statement runs
/// synchronously until it finishes: on the few threads that serve every
/// request (two on a two-core machine), two slow reads would stall the whole
/// server, `/healthz` and every other carrier included. A database call runs
/// here instead (`withTaskExecutorPreference`), so a slow one holds one of
/// these threads and nothing else.
final class StatementThreads: TaskExecutor {
    /// One process-wide pool: every SQLite database of the process shares it.
    static let shared = StatementThreads(count: 8)

    private let pool: NIOThreadPool

    private init(count: Int) {
        pool = NIOThreadPool(numberOfThreads: count)
        pool.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        pool.submit { _ in job.runSynchronously(on: executor) }
    }
}
