import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A closed-loop HTTP/1.1 load generator: each connection sends a request,
/// waits for the whole response, records the latency, and sends the next,
/// until the deadline. Runs entirely on NIO event loops, so its own cost per
/// request stays small next to the server's.
struct LoadGenerator {
    struct Result {
        var latencies: [UInt64] // nanoseconds
        var errors: Int
        var seconds: Double

        var requestsPerSecond: Double { Double(latencies.count) / seconds }
        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return .nan }
            let sorted = latencies.sorted()
            let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))
            return Double(sorted[index]) / 1_000_000
        }
    }

    let host: String
    let port: Int
    let connections: Int

    /// Each connection asks until the deadline, or until it has made `requests` requests.
    func run(path: String, headers: [(String, String)], duration: Duration, requests: Int = .max) async throws -> Result {
        let deadline = NIODeadline.now() + .nanoseconds(Int64(duration.components.seconds) * 1_000_000_000
                                                        + duration.components.attoseconds / 1_000_000_000)
        let started = ContinuousClock.now
        var futures: [EventLoopFuture<(latencies: [UInt64], errors: Int)>] = []
        for _ in 0..<connections {
            let group = MultiThreadedEventLoopGroup.singleton
            let eventLoop = group.next()
            let promise = eventLoop.makePromise(of: (latencies: [UInt64], errors: Int).self)
            let handler = ClosedLoopHandler(host: host, path: path, headers: headers, deadline: deadline, requests: requests, done: promise)
            let connected = ClientBootstrap(group: eventLoop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .connect(host: host, port: port)
            connected.whenFailure { promise.fail($0) }
            futures.append(promise.futureResult)
        }
        var result = Result(latencies: [], errors: 0, seconds: 0)
        for future in futures {
            let (latencies, errors) = try await future.get()
            result.latencies += latencies
            result.errors += errors
        }
        result.seconds = Double((ContinuousClock.now - started).components.seconds)
            + Double((ContinuousClock.now - started).components.attoseconds) / 1e18
        return result
    }
}

private final class ClosedLoopHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let head: HTTPRequestHead
    let deadline: NIODeadline
    let requests: Int
    let done: EventLoopPromise<(latencies: [UInt64], errors: Int)>
    var latencies: [UInt64] = []
    var errors = 0
    var sentAt: UInt64 = 0

    init(host: String, path: String, headers: [(String, String)], deadline: NIODeadline, requests: Int,
         done: EventLoopPromise<(latencies: [UInt64], errors: Int)>) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "Host", value: host)
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        self.head = head
        self.deadline = deadline
        self.requests = requests
        self.done = done
        latencies.reserveCapacity(min(requests, 1 << 16))
    }

    func channelActive(context: ChannelHandlerContext) {
        send(context)
    }

    func send(_ context: ChannelHandlerContext) {
        sentAt = DispatchTime.now().uptimeNanoseconds
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response):
            if response.status.code >= 400 { errors += 1 }
        case .body:
            break
        case .end:
            latencies.append(DispatchTime.now().uptimeNanoseconds - sentAt)
            if latencies.count < requests, NIODeadline.now() < deadline {
                send(context)
            } else {
                done.succeed((latencies, errors))
                context.close(promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        done.succeed((latencies, errors))
    }
}
