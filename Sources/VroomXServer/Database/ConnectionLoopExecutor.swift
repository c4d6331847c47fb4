import NIOCore

/// Runs a PostgreSQL write's code on the event loop of the connection it
/// leased (`withTaskExecutorPreference`), so each of its queries is written
/// and answered on that loop: code on the shared pool would hop to the loop
/// to send each query and back to the pool for each answer, a thread
/// wake-up both ways, for every round trip. When the call returns, its
/// caller goes on on the shared pool.
final class ConnectionLoopExecutor: TaskExecutor {
    let loop: any EventLoop

    init(loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}
