/// The database cannot serve a call right now, for a reason that passes:
/// it is unreachable or restarting, it dropped the connection, the call hit
/// its deadline, the file is locked, or its storage is full. Both backends
/// throw this for every such failure, so the answer is decided in one place
/// (the error middleware): 503 `unavailable` with `Retry-After` (507
/// `insufficient_storage` when storage is full). Nothing of the failed call
/// was committed — except possibly a COMMIT whose answer was lost, which the
/// client's retry with the same idempotency key resolves.
public struct DatabaseUnavailable: Error, Sendable, CustomStringConvertible {
    public enum Cause: String, Sendable {
        /// No connection can be made, or the database said it cannot serve
        /// (shutting down, starting up: SQLSTATE 08xxx, 57P0x).
        case unreachable
        /// The connection was lost during the call.
        case connectionLost
        /// The call did not finish by its deadline (slow database, a lock
        /// held elsewhere, no pooled connection free).
        case timedOut
        /// SQLite: the file is locked by another connection or process.
        case busy
        /// The disk is full (SQLite `SQLITE_FULL`/`SQLITE_IOERR`, PostgreSQL 53100).
        case storageFull
    }

    public let cause: Cause
    /// What the driver said, for the log.
    public let detail: String

    public init(_ cause: Cause, _ detail: String) {
        self.cause = cause
        self.detail = detail
    }

    /// Seconds a client should wait before retrying: a restart or a
    /// failover takes seconds; freeing disk space takes a person.
    public var retryAfter: Int { cause == .storageFull ? 60 : 2 }

    public var description: String { "database unavailable (\(cause.rawValue)): \(detail)" }
}
