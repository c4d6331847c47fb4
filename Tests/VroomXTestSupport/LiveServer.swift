import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import VroomXServer

/// The real server application listening on a fixed loopback port, which a
/// test can stop (the driver's phone loses the server) and start again on
/// the same database.
public final class LiveServer: Sendable {
    private let settings: NIOLockedValueBox<ServerConfiguration>
    public var configuration: ServerConfiguration { settings.withLockedValue { $0 } }
    public let port: Int
    private struct Running {
        let task: Task<Void, any Error>
        let group: ServiceGroup
        let services: ServerServices
    }

    private let running = NIOLockedValueBox<Running?>(nil)

    /// Starts on a free port with the test server's database and clock.
    /// Another test may take the port between choosing and binding it: then
    /// another port is tried.
    public init(_ server: TestServer) async throws {
        var configuration = server.services.configuration
        var attempt = 0
        while true {
            configuration.port = try ChildProcess.freePort()
            do {
                let started = try await Self.launch(configuration)
                running.withLockedValue { $0 = started }
                break
            } catch {
                attempt += 1
                if attempt >= 5 { throw error }
            }
        }
        settings = NIOLockedValueBox(configuration)
        port = configuration.port
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var isRunning: Bool { running.withLockedValue { $0 != nil } }

    /// The services of the running instance (a new set after each restart).
    public var services: ServerServices? { running.withLockedValue { $0?.services } }

    /// Starts again on the same port (the phone keeps its server address).
    public func start() async throws {
        try await start { _ in }
    }

    /// Starts again on the same port and database with settings changed
    /// (an operator's restart with a new environment).
    public func start(changing change: @Sendable (inout ServerConfiguration) -> Void) async throws {
        guard !isRunning else { return }
        settings.withLockedValue { change(&$0) }
        let started = try await Self.launch(configuration)
        running.withLockedValue { $0 = started }
    }

    /// Runs the application; returns once it listens, or throws why it could
    /// not (a port taken meanwhile) instead of waiting forever.
    private static func launch(_ configuration: ServerConfiguration) async throws -> Running {
        let services = try await ServerServices.make(configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(services) { continuation.yield($0) }
        let group = ServiceGroup(configuration: .init(services: [app], logger: Logger(label: "live-server")))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        for await _ in ports {
            return Running(task: task, group: group, services: services)
        }
        // The group ended before listening.
        if case .failure(let error) = await task.result { throw error }
        throw TestSetupError("the server on port \(configuration.port) stopped before it listened")
    }

    /// Stops as `stop()`, but gives up waiting after `timeout` (the shutdown
    /// goes on in the background): false when it did not finish in time.
    public func stop(within timeout: Duration) async -> Bool {
        let stopping = Task { await stop() }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await stopping.value; return true }
            group.addTask { try? await Task.sleep(for: timeout); return false }
            let finished = await group.next() ?? false
            group.cancelAll()
            return finished
        }
    }

    /// Shuts down gracefully: in-flight requests finish, connections close.
    public func stop() async {
        guard let current = running.withLockedValue({ value -> Running? in
            defer { value = nil }
            return value
        }) else { return }
        await current.group.triggerGracefulShutdown()
        _ = await current.task.result
    }
}
