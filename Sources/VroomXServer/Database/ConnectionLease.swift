import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// A pooled connection, waited for with a deadline.
///
/// `PostgresClient` lends a connection only to a closure, and waits for one
/// as long as it takes (with PostgreSQL down, until its own breaker trips
/// after 15 s). Here a helper task borrows it and holds it until `release()`,
/// so the caller can stop waiting at its deadline, or as soon as the
/// database is found down; a connection granted after that goes straight back.
final class ConnectionLease: Sendable {
    let connection: PostgresConnection
    private let released: EventLoopPromise<Void>

    private init(_ connection: PostgresConnection) {
        self.connection = connection
        released = connection.eventLoop.makePromise()
    }

    func release() { released.succeed() }

    /// - Parameter checkAfter: a wait this long makes `reachability` check
    ///   the database; if it is down, the wait ends with `DatabaseUnavailable`.
    static func acquire(from client: PostgresClient, until deadline: NIODeadline, checkAfter: TimeAmount,
                        reachability: DatabaseReachability) async throws -> ConnectionLease {
        let asked = ContinuousClock.now
        let loop = PostgresClient.defaultEventLoopGroup.next()
        let granted = loop.makePromise(of: ConnectionLease.self)
        let borrower = Task {
            do {
                try await client.withConnection { connection in
                    let lease = ConnectionLease(connection)
                    granted.succeed(lease)
                    if (try? await granted.futureResult.get()) !== lease { lease.release() }
                    try await lease.released.futureResult.get()
                }
            } catch {
                granted.fail(DatabaseUnavailable(.unreachable, "no connection from the pool: \(error)"))
            }
        }
        let timeout = loop.scheduleTask(deadline: deadline) {
            granted.fail(DatabaseUnavailable(.timedOut, "no pooled connection was free before the deadline"))
        }
        let watcher = NIOLockedValueBox<Int?>(nil)
        let slow = loop.scheduleTask(in: checkAfter) {
            reachability.check()
            watcher.withLockedValue {
                $0 = reachability.watch { granted.fail(DatabaseUnavailable(.unreachable, "the database is unreachable")) }
            }
        }
        defer {
            // On the loop that runs `slow`, so that it either never runs or is unwatched here.
            loop.execute {
                timeout.cancel()
                slow.cancel()
                if let id = watcher.withLockedValue({ $0 }) { reachability.unwatch(id) }
            }
        }
        do {
            let lease = try await granted.futureResult.get()
            ServerMetrics.leased(.postgres, waitingSince: asked)
            lease.released.futureResult.whenComplete { _ in ServerMetrics.returned(.postgres) }
            return lease
        } catch {
            borrower.cancel()
            throw error
        }
    }
}
