import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import VroomXModels

/// Normal driver and dispatch traffic mixed with every abuse pattern the
/// hardening work closed, for minutes, against the real `vroomx` process:
/// reports each interval's latency of the normal requests, their errors,
/// what the abuse got, and the server's memory and open descriptors, so a
/// leak or a starvation shows as a trend.
struct SoakBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak", abstract: "Normal traffic under abuse for N minutes: latency, errors, memory and descriptors over time.")

    @Option(help: "Minutes to run.") var minutes = 2.0
    @Option(help: "Drivers making normal requests, each with a realtime socket.") var drivers = 20
    @Option(help: "Seconds per reported interval.") var interval = 10
    @Option(help: "Slowloris connections kept open (partial request heads).") var slowloris = 400
    @Option(help: "PostgreSQL URL (default: SQLite).") var postgres: String?

    func run() async throws {
        let server = try await BenchServer.start(postgres: postgres, drivers: drivers, environment: [
            // One client address sends everything here: lift the per-address connection cap above the attack's size.
            "VROOMX_MAX_CONNECTIONS_PER_CLIENT": String(slowloris + drivers * 4 + 200),
        ])
        defer { server.stop() }
        let stats = SoakStats()
        let deadline = ContinuousClock.now + .seconds(minutes * 60)
        print("soak: \(String(format: "%.1f", minutes)) min on \(postgres == nil ? "sqlite" : "postgres"), \(drivers) drivers, "
              + "\(slowloris) slowloris connections, abuse of every kind in parallel")
        print("  t(s)  normal req/s  p50 ms  p99 ms  errors | slow closed  431  body cut  ws refused  bad numbers (5xx) | RSS MiB  fds")

        let cursor = server.cursor
        let port = server.port
        let dispatcher = server.dispatcherToken
        let accounts = server.drivers
        try await withThrowingTaskGroup(of: Void.self) { group in
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(timeout: .init(connect: .seconds(5), read: .seconds(30))))
            defer { _ = client.shutdown() }
            let connected = NIOLockedValueBox(0)
            var sockets: [Task<Void, Never>] = []
            for account in accounts {
                sockets.append(BenchServer.connect(port: port, token: account.token, since: cursor, connected: connected) { _ in })
            }
            defer { sockets.forEach { $0.cancel() } }
            // Normal work: each driver reads its work and the feed; dispatch messages drivers.
            for account in accounts {
                group.addTask {
                    var round = 0
                    while ContinuousClock.now < deadline {
                        round += 1
                        let path = round % 3 == 0 ? "/v1/sync?since=\(cursor)" : round % 3 == 1 ? "/v1/trips" : "/v1/notifications?limit=20"
                        await stats.normal { try await Self.get(client, port, path, token: account.token) }
                    }
                }
            }
            group.addTask {
                var index = 0
                while ContinuousClock.now < deadline {
                    index += 1
                    let driver = accounts[index % accounts.count]
                    await stats.normal {
                        try await Self.post(client, port, "/v1/dispatch/messages", token: dispatcher,
                                            body: SendMessageRequest(driverID: driver.id, type: .dispatchMessage, title: "soak \(index)", body: "b"))
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            // Abuse.
            group.addTask { try await Abuse.slowloris(port: port, connections: slowloris, until: deadline, stats: stats) }
            group.addTask { try await Abuse.oversizedHeads(port: port, until: deadline, stats: stats) }
            group.addTask { try await Abuse.unfinishedBodies(port: port, token: dispatcher, until: deadline, stats: stats) }
            group.addTask { try await Abuse.socketFlood(port: port, token: accounts[0].token, since: cursor, until: deadline, stats: stats) }
            group.addTask { try await Abuse.badNumbers(client, port: port, token: accounts[0].token, until: deadline, stats: stats) }
            // Sampling.
            group.addTask { [server] in
                let started = ContinuousClock.now
                while ContinuousClock.now < deadline {
                    try await Task.sleep(for: .seconds(interval))
                    let sample = stats.take()
                    let elapsed = (ContinuousClock.now - started).components.seconds
                    print(String(format: "%6d %13.0f %7.2f %7.2f %7d | %11d %4d %9d %11d %9d (%d) | %7.1f %4d",
                                 elapsed, Double(sample.latencies.count) / Double(interval), sample.percentile(0.5), sample.percentile(0.99),
                                 sample.normalErrors, sample.slowClosed, sample.headRefused, sample.bodiesCut, sample.socketsRefused,
                                 sample.badNumbers, sample.badNumberServerErrors, Double(try server.residentBytes()) / 1_048_576,
                                 server.openDescriptors()))
                }
            }
            try await group.waitForAll()
        }
        let total = stats.total
        let alive = server.process.isRunning
        print(String(format: "normal requests: %d, errors %d (%.3f %%), p50 %.2f ms, p99 %.2f ms; server %@",
                     total.latencies.count, total.normalErrors, 100 * Double(total.normalErrors) / Double(max(1, total.latencies.count)),
                     total.percentile(0.5), total.percentile(0.99), alive ? "alive" : "DEAD"))
    }

    static func get(_ client: HTTPClient, _ port: Int, _ path: String, token: String) async throws -> UInt {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        let response = try await client.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 16 << 20)
        return response.status.code
    }

    static func post<Body: Encodable>(_ client: HTTPClient, _ port: Int, _ path: String, token: String, body: Body) async throws -> UInt {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try WireJSON.encoder().encode(body)))
        let response = try await client.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response.status.code
    }
}

/// What the soak saw, per interval and in total.
final class SoakStats: Sendable {
    struct Sample {
        var latencies: [UInt64] = []
        var normalErrors = 0
        var slowClosed = 0
        var headRefused = 0
        var bodiesCut = 0
        var socketsRefused = 0
        var badNumbers = 0
        var badNumberServerErrors = 0

        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return .nan }
            let sorted = latencies.sorted()
            return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
        }

        mutating func add(_ other: Sample) {
            latencies += other.latencies
            normalErrors += other.normalErrors
            slowClosed += other.slowClosed
            headRefused += other.headRefused
            bodiesCut += other.bodiesCut
            socketsRefused += other.socketsRefused
            badNumbers += other.badNumbers
            badNumberServerErrors += other.badNumberServerErrors
        }
    }

    private let current = NIOLockedValueBox(Sample())
    private let all = NIOLockedValueBox(Sample())

    func record(_ change: (inout Sample) -> Void) { current.withLockedValue { change(&$0) } }

    /// Times one normal request; anything but a 2xx answer is an error.
    func normal(_ request: () async throws -> UInt) async {
        let start = DispatchTime.now().uptimeNanoseconds
        let status = (try? await request()) ?? 0
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        record { sample in
            sample.latencies.append(elapsed)
            if !(200..<300).contains(status) { sample.normalErrors += 1 }
        }
    }

    func take() -> Sample {
        let sample = current.withLockedValue { value -> Sample in
            defer { value = Sample() }
            return value
        }
        all.withLockedValue { $0.add(sample) }
        return sample
    }

    var total: Sample {
        _ = take()
        return all.withLockedValue { $0 }
    }
}

/// The abuse patterns, each a loop until the deadline.
enum Abuse {
    /// Connections that send a request head one byte at a time, reopened when the server closes them.
    static func slowloris(port: Int, connections: Int, until deadline: ContinuousClock.Instant, stats: SoakStats) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<connections {
                group.addTask {
                    while ContinuousClock.now < deadline {
                        guard let channel = try? await RawConnection.open(port: port) else {
                            try await Task.sleep(for: .milliseconds(200))
                            continue
                        }
                        try? await channel.writeAndFlush(ByteBuffer(string: "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")).get()
                        while ContinuousClock.now < deadline, channel.isActive {
                            try await Task.sleep(for: .seconds(3))
                            try? await channel.writeAndFlush(ByteBuffer(string: "a")).get()
                        }
                        if !channel.isActive { stats.record { $0.slowClosed += 1 } }
                        try? await channel.close().get()
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Request heads of 100 KB.
    static func oversizedHeads(port: Int, until deadline: ContinuousClock.Instant, stats: SoakStats) async throws {
        let head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "b", count: 100_000) + "\r\n\r\n"
        while ContinuousClock.now < deadline {
            if let answer = try? await RawConnection.exchange(port: port, head), answer.hasPrefix("HTTP/1.1 431") {
                stats.record { $0.headRefused += 1 }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Bodies announced at 1 GB of which a kilobyte arrives.
    static func unfinishedBodies(port: Int, token: String, until deadline: ContinuousClock.Instant, stats: SoakStats) async throws {
        let request = "POST /v1/dispatch/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n" + String(repeating: " ", count: 1024)
        while ContinuousClock.now < deadline {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        guard let channel = try? await RawConnection.open(port: port) else { return }
                        try? await channel.writeAndFlush(ByteBuffer(string: request)).get()
                        // The server answers (413) or closes once the body stalls; either frees the connection.
                        for _ in 0..<60 where channel.isActive { try? await Task.sleep(for: .milliseconds(500)) }
                        if !channel.isActive { stats.record { $0.bodiesCut += 1 } }
                        try? await channel.close().get()
                    }
                }
            }
        }
    }

    /// One driver opening realtime sockets far beyond the per-user cap.
    static func socketFlood(port: Int, token: String, since: Int64, until deadline: ContinuousClock.Instant, stats: SoakStats) async throws {
        while ContinuousClock.now < deadline {
            let connected = NIOLockedValueBox(0)
            var sockets: [Task<Void, Never>] = []
            for _ in 0..<40 { sockets.append(BenchServer.connect(port: port, token: token, since: since, connected: connected) { _ in }) }
            try await Task.sleep(for: .seconds(2))
            let open = connected.withLockedValue { $0 }
            stats.record { $0.socketsRefused += max(0, 40 - open) }
            sockets.forEach { $0.cancel() }
            for socket in sockets { await socket.value }
        }
    }

    /// Numbers that overflow careless arithmetic, in every place a client can put one.
    static func badNumbers(_ client: HTTPClient, port: Int, token: String, until deadline: ContinuousClock.Instant,
                           stats: SoakStats) async throws {
        let paths = ["/v1/sync?since=9223372036854775807", "/v1/sync?since=-1&limit=18446744073709551616", "/v1/trips?limit=1e3",
                     "/v1/notifications?limit=0x10", "/v1/dispatch/orders?cursor=" + String(repeating: "A", count: 5000),
                     "/v1/trips/9223372036854775807", "/v1/uploads/2147483648"]
        var index = 0
        while ContinuousClock.now < deadline {
            let path = paths[index % paths.count]
            index += 1
            let status = (try? await SoakBench.get(client, port, path, token: token)) ?? 0
            stats.record { sample in
                sample.badNumbers += 1
                if status >= 500 || status == 0 { sample.badNumberServerErrors += 1 }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// A bare TCP connection for requests no HTTP client would send.
enum RawConnection {
    static func open(port: Int) async throws -> any Channel {
        try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Discard()) } }
            .connect(host: "127.0.0.1", port: port).get()
    }

    /// Sends text and returns the first bytes of the answer (or "" if the server closed without one).
    static func exchange(port: Int, _ text: String) async throws -> String {
        let answer = EventLoopPromiseBox()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(FirstBytes(answer: answer)) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        try? await channel.writeAndFlush(ByteBuffer(string: text)).get()
        let deadline = ContinuousClock.now + .seconds(10)
        while answer.text == nil, channel.isActive, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try? await channel.close().get()
        return answer.text ?? ""
    }

    final class EventLoopPromiseBox: Sendable {
        private let value = NIOLockedValueBox<String?>(nil)
        var text: String? { value.withLockedValue { $0 } }
        func set(_ text: String) { value.withLockedValue { if $0 == nil { $0 = text } } }
    }

    final class FirstBytes: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let answer: EventLoopPromiseBox
        init(answer: EventLoopPromiseBox) { self.answer = answer }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            answer.set(String(buffer: unwrapInboundIn(data)))
        }
    }

    final class Discard: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }
}
