import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import VroomXModels
import VroomXServer
import WSClient

/// Commit-to-delivery latency with many connected driver sockets, and the
/// server's memory per idle socket. The server is the real `vroomx` binary
/// in its own process (built beside this one), so its memory is its own.
struct RealtimeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "realtime", abstract: "Realtime latency with N sockets and memory per idle socket.")

    @Option(help: "Driver sockets connected while measuring latency.") var sockets = 1000
    @Option(help: "Messages to time (each to one random driver).") var messages = 2000
    @Option(help: "Idle sockets for the memory measurement.") var idleSockets = 10_000
    @Option(help: "Idle sockets held during the latency run besides the active ones: one more driver of the carrier, sent nothing.")
    var idleDuring = 10_000
    @Option(help: "PostgreSQL URL (default: SQLite).") var postgres: String?

    func run() async throws {
        print("realtime on \(postgres == nil ? "sqlite" : "postgres")")
        // Memory on a fresh server process, before anything else has grown its heap.
        let fresh = try await BenchServer.start(postgres: postgres, drivers: 1)
        do {
            try await measureMemory(fresh)
            fresh.stop()
        } catch {
            fresh.stop()
            throw error
        }
        let server = try await BenchServer.start(postgres: postgres, drivers: sockets + 1)
        defer { server.stop() }
        try await measureLatency(server)
    }

    func measureLatency(_ server: BenchServer) async throws {
        let arrivals = NIOLockedValueBox<[String: UInt64]>([:])
        let connected = NIOLockedValueBox(0)
        var sockets: [Task<Void, Never>] = []
        // The last driver's phones are the idle ones: connected through the run, sent nothing.
        let (active, idle) = (server.drivers.dropLast(), server.drivers[server.drivers.count - 1])
        let idleConnected = NIOLockedValueBox(0)
        for _ in 0..<idleDuring {
            let opened = sockets.count
            try await BenchServer.wait("handshakes") { opened - idleConnected.withLockedValue { $0 } < BenchServer.handshakesInFlight }
            sockets.append(BenchServer.connect(port: server.port, token: idle.token, since: server.cursor, connected: idleConnected,
                                               retryUntilReady: true) { _ in })
        }
        try await BenchServer.wait("\(idleDuring) idle sockets", timeout: .seconds(300)) { idleConnected.withLockedValue { $0 } >= idleDuring }
        let idleSockets = sockets
        sockets = []
        for driver in active {
            let opened = sockets.count
            try await BenchServer.wait("handshakes") { opened - connected.withLockedValue { $0 } < BenchServer.handshakesInFlight }
            sockets.append(BenchServer.connect(port: server.port, token: driver.token, since: server.cursor, connected: connected,
                                               retryUntilReady: true) { text in
                // Titles are "bench-<n>"; record when each first arrives.
                guard let range = text.range(of: #"bench-\d+"#, options: .regularExpression) else { return }
                let now = DispatchTime.now().uptimeNanoseconds
                arrivals.withLockedValue { if $0[String(text[range])] == nil { $0[String(text[range])] = now } }
            })
        }
        try await BenchServer.wait("\(self.sockets) sockets ready") { connected.withLockedValue { $0 } >= self.sockets }
        var sent: [String: UInt64] = [:]
        for index in 0..<messages {
            let driver = active.randomElement()!
            let title = "bench-\(index)"
            sent[title] = DispatchTime.now().uptimeNanoseconds
            try await server.post(.dispatchSendMessage, SendMessageRequest(driverID: driver.id, type: .dispatchMessage, title: title, body: "b"))
        }
        try await BenchServer.wait("all deliveries") { arrivals.withLockedValue { $0.count } >= messages }
        let latencies = sent.compactMap { title, start in arrivals.withLockedValue { $0[title] }.map { Double($0 - start) / 1e6 } }.sorted()
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print(String(format: "write-request-to-socket latency with %d driver sockets and %d idle: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d deliveries)",
                     self.sockets, idleDuring, percentile(0.5), percentile(0.99), latencies.last ?? 0, latencies.count))
        (sockets + idleSockets).forEach { $0.cancel() }
        for socket in sockets + idleSockets { await socket.value }
    }

    func measureMemory(_ server: BenchServer) async throws {
        try await Task.sleep(for: .seconds(2))
        let before = try server.residentBytes()
        let connected = NIOLockedValueBox(0)
        let token = server.drivers[0].token
        var sockets: [Task<Void, Never>] = []
        for _ in 0..<idleSockets {
            let opened = sockets.count
            try await BenchServer.wait("handshakes") { opened - connected.withLockedValue { $0 } < BenchServer.handshakesInFlight }
            sockets.append(BenchServer.connect(port: server.port, token: token, since: server.cursor, connected: connected,
                                               retryUntilReady: true) { _ in })
        }
        try await BenchServer.wait("\(idleSockets) idle sockets", timeout: .seconds(300)) { connected.withLockedValue { $0 } >= idleSockets }
        try await Task.sleep(for: .seconds(3))
        let after = try server.residentBytes()
        print(String(format: "server memory: %.1f MiB before, %.1f MiB with %d idle sockets: %.1f KB per socket",
                     Double(before) / 1_048_576, Double(after) / 1_048_576, idleSockets, Double(after - before) / Double(idleSockets) / 1024))
        // Once every socket has had a heartbeat (and its session checked) and a ping, as idle sockets live.
        try await Task.sleep(for: .seconds(30))
        let settled = try server.residentBytes()
        print(String(format: "server memory after a heartbeat round: %.1f MiB: %.1f KB per socket",
                     Double(settled) / 1_048_576, Double(settled - before) / Double(idleSockets) / 1024))
        sockets.forEach { $0.cancel() }
        for socket in sockets { await socket.value }
    }
}

/// A seeded database and the `vroomx` server process running on it.
struct BenchServer {
    struct Account { let id: ID<Driver>; let token: String }

    let process: Process
    let port: Int
    let dispatcherToken: String
    let drivers: [Account]
    let cursor: Int64

    static func start(postgres: String?, drivers count: Int, environment extra: [String: String] = [:],
                      seed: (ServerServices, ID<Tenant>, [Account]) async throws -> Void = { _, _, _ in }) async throws -> BenchServer {
        let secret = "bench-secret-" + String(repeating: "k", count: 32)
        var configuration = try await BenchScratch.configuration(postgres: postgres)
        configuration.jwtSecret = secret
        let services = try await ServerServices.make(configuration)
        let (tenant, dispatcher) = try await services.store.people.createTenant(name: "Bench", dispatcherEmail: "dispatch@bench.example")
        var accounts: [Account] = []
        for index in 0..<count {
            let driver = try await services.store.people.createDriver(tenant: tenant.id, .init(
                email: "driver\(index)@bench.example", name: "Driver \(index)", payType: .perTrip, payRate: 1))
            accounts.append(Account(id: driver.id, token: try await services.signIn(email: driver.email).accessToken))
        }
        try await seed(services, tenant.id, accounts)
        let dispatcherToken = try await services.signIn(email: dispatcher.email).accessToken
        let cursor = try await services.store.database.read { try await $0.first("SELECT change_seq FROM tenants WHERE id = \(tenant.id)")!.int64("change_seq") }
        await services.database.close()

        // Below Linux's ephemeral ports (32768 and up): the bench's own 11,000 client sockets, and those a run before
        // left in TIME_WAIT, take ports there, and the server's `bind` then failed now and then.
        let port = Int.random(in: 20_000...32_000)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("vroomx")
        process.arguments = ["serve", "--port", String(port)]
        var environment = ProcessInfo.processInfo.environment
        environment["VROOMX_DATA_DIR"] = configuration.dataDirectory.path
        environment["VROOMX_JWT_SECRET"] = secret
        environment["VROOMX_LOG_LEVEL"] = "error"
        environment["VROOMX_DEV_MAILBOX"] = "true"  // the bench signs in without mail
        // Every bench socket comes from one address, and the memory run opens 10,000 for one driver.
        environment["VROOMX_MAX_CONNECTIONS_PER_CLIENT"] = "1000000"
        environment["VROOMX_MAX_SOCKETS_PER_USER"] = "10000"
        environment["VROOMX_MAX_SOCKETS_PER_CARRIER"] = "1000000"
        if let url = configuration.databaseURL { environment["VROOMX_DATABASE_URL"] = url }
        environment.merge(extra) { $1 }
        process.environment = environment
        try process.run()
        let server = BenchServer(process: process, port: port, dispatcherToken: dispatcherToken, drivers: accounts, cursor: cursor)
        do {
            try await wait("server") { (try? await server.get("/healthz")) == 200 }
        } catch {
            server.stop()
            throw error
        }
        return server
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        // Foundation's `isRunning` has been seen to stay true after the server exited and was reaped: ask the kernel too.
        while process.isRunning, kill(process.processIdentifier, 0) == 0 { usleep(10_000) }
    }

    /// Descriptors the server process has open.
    func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? 0
    }

    func residentBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) else { return 0 }
        return kilobytes * 1024
    }

    func get(_ path: String) async throws -> UInt {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: .seconds(5))
        return response.status.code
    }

    func post<Body: Encodable>(_ endpoint: Endpoint, _ body: Body) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(endpoint.path())")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(dispatcherToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try WireJSON.encoder().encode(body)))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        guard response.status.code < 300 else { throw ValidationError("POST \(endpoint) answered \(response.status.code)") }
        _ = try await response.body.collect(upTo: 1 << 20)
    }

    /// Sockets opened and not yet ready, at most: a larger burst overflows the
    /// server's listen queue, and the kernel's SYN cookies then leave
    /// connections retransmitting for minutes.
    static let handshakesInFlight = 256

    /// A socket reading text frames until cancelled; counted in `connected`
    /// once the server says it is ready.
    /// - Parameter retryUntilReady: connect again (after 100 ms) while the
    ///   socket fails before it is ready.
    static func connect(port: Int, token: String, since: Int64, connected: NIOLockedValueBox<Int>, retryUntilReady: Bool = false,
                        onText: @escaping @Sendable (String) -> Void) -> Task<Void, Never> {
        Task {
            var configuration = WebSocketClientConfiguration()
            configuration.additionalHeaders[.authorization] = "Bearer \(token)"
            configuration.autoPing = .disabled
            let counted = NIOLockedValueBox(false)
            while true {
                _ = try? await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/v1/realtime?since=\(since)", configuration: configuration,
                                                       logger: Logger(label: "bench-ws")) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message else { continue }
                        if text.contains("\"ready\""), !counted.withLockedValue({ $0 }) {
                            counted.withLockedValue { $0 = true }
                            connected.withLockedValue { $0 += 1 }
                        }
                        onText(text)
                    }
                }
                guard retryUntilReady, !counted.withLockedValue({ $0 }), (try? await Task.sleep(for: .milliseconds(100))) != nil else { break }
            }
        }
    }

    static func wait(_ what: String, timeout: Duration = .seconds(120), _ condition: @Sendable () async -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !(await condition()) {
            guard ContinuousClock.now < deadline else { throw ValidationError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
