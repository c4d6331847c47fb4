import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// The connection pool, replaced by a fresh one when the database returns
/// after an outage. postgres-nio's pool retries a failed connection on a
/// backoff that grows to a minute (100 ms × 1.25ⁿ, not configurable) and
/// cannot be told to try now, so after a long outage the old pool would
/// keep the server waiting long after the database is back.
final class PostgresPool: Sendable {
    private struct Running: Sendable {
        let client: PostgresClient
        let task: Task<Void, Never>
    }

    private let configuration: PostgresClient.Configuration
    private let logger: Logger
    private let running: NIOLockedValueBox<Running>

    init(configuration: PostgresClient.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        running = NIOLockedValueBox(Self.start(configuration, logger: logger))
    }

    var client: PostgresClient { running.withLockedValue { $0.client } }

    /// Lets the pool's run loop start before the first lease.
    static func started() async {
        for _ in 0..<16 { await Task.yield() }
    }

    /// Swaps in a fresh pool and closes the old one (whatever it still holds
    /// dates from before the outage).
    func renew() async {
        let fresh = Self.start(configuration, logger: logger)
        await Self.started()
        let old = running.withLockedValue { running in
            defer { running = fresh }
            return running
        }
        old.task.cancel()
        await old.task.value
    }

    func close() async {
        let current = running.withLockedValue { $0 }
        current.task.cancel()
        await current.task.value
    }

    private static func start(_ configuration: PostgresClient.Configuration, logger: Logger) -> Running {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        // Detached: the pool outlives whichever task renewed it.
        return Running(client: client, task: Task.detached { await client.run() })
    }
}

/// Whether PostgreSQL answers at all: `SELECT 1` on a connection of its own
/// (the pool may be backing off), within `timeout`. A server that answers
/// with an error is there too, unless the error says it cannot serve.
enum PostgresProbe {
    static func isReachable(_ configuration: PostgresConnection.Configuration, within timeout: Duration, logger: Logger) async -> Bool {
        var configuration = configuration
        configuration.options.connectTimeout = TimeAmount(timeout)
        let loop = PostgresConnection.defaultEventLoopGroup.next()
        let reachable = loop.makePromise(of: Bool.self)
        let timer = loop.scheduleTask(in: TimeAmount(timeout)) { reachable.succeed(false) }
        PostgresConnection.connect(on: loop, configuration: configuration, id: 0, logger: logger).whenComplete { connected in
            switch connected {
            case .failure(let error):
                reachable.succeed(answered(error))
            case .success(let connection):
                // Whichever decides first, the probe's connection goes.
                reachable.futureResult.whenComplete { _ in let _: EventLoopFuture<Void> = connection.close() }
                connection.query("SELECT 1", logger: logger).whenComplete { result in
                    switch result {
                    case .success: reachable.succeed(true)
                    case .failure(let error): reachable.succeed(answered(error))
                    }
                }
            }
        }
        reachable.futureResult.whenComplete { _ in timer.cancel() }
        return (try? await reachable.futureResult.get()) ?? false
    }

    private static func answered(_ error: any Error) -> Bool {
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return PostgresExecutor.unavailability(sqlState: state) == nil || state == "53300"
    }
}
