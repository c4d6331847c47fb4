import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOWebSocket
import ServiceLifecycle
import VroomXModels

/// HTTP/1.1 with the realtime WebSocket upgrade, behind the connection
/// guards of `ConnectionLimits`.
func guardedHTTP1WebSocketServer<Responder: HTTPResponder>(
    _ webSocketResponder: Responder, upgrades: UpgradeDecisions, limits: ConnectionLimits, clients: ClientConnectionLimiter?
) -> HTTPServerBuilder where Responder.Context: WebSocketRequestContext {
    let decoderLimits = HTTP1Channel.Configuration.DecoderConfiguration(
        maxHeaderFieldSize: limits.maxHeadBytes, maxHeaderListSize: limits.maxHeadBytes, maxHeaderFieldCount: limits.maxHeaderFields)
    // Our handlers own every connection deadline, so Hummingbird's idle timeout stays off.
    let http1 = HTTP1Channel.Configuration(idleTimeout: nil, httpDecoderConfiguration: decoderLimits)
    // Admitted sockets are served by `GuardedServerChannel.serve` and pinged by `WebSocketControlHandler`, on
    // the event loop; the library's handler (and its pinger, a task per socket) is not used.
    let configuration = HTTP1WebSocketUpgradeChannel.Configuration(http1: http1, ws: .init(autoPing: .disabled))
    return HTTPServerBuilder { responder in
        GuardedServerChannel(
            upgrading: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
            upgrades: upgrades, limits: limits, clients: clients)
    }
}

/// The server's child channel: HTTP/1.1 and WebSocket upgrades (through
/// Hummingbird's upgrade channel), with
///
/// - a cap on connections per client address, applied as they are accepted;
/// - small handlers in front of the HTTP decoder, each with one job: the
///   head deadline, the head size cap, the minimum body rate, the drain cap,
///   the response stall deadline and the shutdown grace period; they follow
///   the request cycle through the phases `HTTPPhaseObserver` announces from
///   behind the decoder;
/// - JSON answers for requests that cannot be parsed;
/// - refused WebSocket upgrades answered with the JSON error of the reason
///   (as the HTTP API would) rather than with an empty 400;
/// - admitted WebSockets served in the connection's task, and told 1001
///   when the server shuts down;
/// - WebSocket control frames answered by `WebSocketControlHandler`.
struct GuardedServerChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value
    let upgrading: HTTP1WebSocketUpgradeChannel
    let upgrades: UpgradeDecisions
    let limits: ConnectionLimits
    /// Nil behind a trusted proxy, where every connection comes from the proxy.
    let clients: ClientConnectionLimiter?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        if let clients, !clients.admit(channel) {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(TooManyConnectionsFromClient())
        }
        let limits = self.limits
        return upgrading.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandlers([
                ShutdownGraceHandler(grace: TimeAmount(limits.shutdownGrace)),
                WriteStallHandler(timeout: TimeAmount(limits.responseStallTimeout), logger: logger),
                HeadDeadlineHandler(timeout: TimeAmount(limits.headerTimeout)),
                HeadSizeLimitHandler(limit: limits.maxHeadBytes),
                BodyRateHandler(window: TimeAmount(limits.bodyRateWindow), minimumBytes: limits.bodyRateMinimumBytes),
                DrainLimitHandler(limit: limits.drainLimitBytes),
            ], position: .first)
            try pipeline.addHandlers([MalformedRequestResponder(linger: TimeAmount(limits.lingerAfterError)), HTTPPhaseObserver()])
            // Installed the moment an upgrade completes, before the frames that came with it are read.
            Self.upgradeResult(of: value)?.assumeIsolated().whenSuccess { result in
                guard case .websocket = result else { return }
                let pipeline = channel.pipeline.syncOperations
                let control = WebSocketControlHandler(pingInterval: TimeAmount(limits.webSocketPingInterval))
                do {
                    try pipeline.addHandler(control, position: .after(try pipeline.handler(type: ByteToMessageHandler<WebSocketFrameDecoder>.self)))
                } catch {
                    channel.close(promise: nil)  // without it no one would answer the client's frames
                }
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        if Task.isShuttingDownGracefully {
            // The shutdown began while this connection was being set up: its quiesce event may have come before our handlers.
            value.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        guard let negotiation = Self.upgradeResult(of: value) else {
            await upgrading.handle(value: value, logger: logger)
            return
        }
        let result: HTTP1WebSocketUpgradeChannel.UpgradeResult
        do {
            result = try await negotiation.get()
        } catch {
            // Closed before a whole request head arrived (by the client or a guard), or a request NIO
            // would not upgrade (an upgrade request with a body): nothing more will be read, so it closes.
            logger.trace("connection ended before a request was handled", metadata: ["error": "\(error)"])
            try? await value.channel.close()
            return
        }
        switch result {
        case .notUpgraded(let http1):
            await upgrading.handleHTTP(asyncChannel: http1, logger: logger)
        case .failedUpgrade(let http1, let logger):
            await answer(http1, upgrades.refusal(for: http1.channel) ?? Realtime.notAnUpgrade, logger)
        case .websocket(let webSocket, _, let logger):
            // The router upgrades only once it has recorded the admitted socket.
            guard let socket = upgrades.admitted(for: webSocket.channel) else {
                // The client left right after the 101 (its connection's close dropped the decision); anything else is a bug.
                if webSocket.channel.isActive { logger.error("a WebSocket upgrade without an admitted socket") }
                try? await webSocket.channel.close()
                return
            }
            await serve(webSocket, socket, logger)
        }
    }

    /// Answers a refused upgrade and closes. (NIO keeps an upgrade request
    /// to itself, so the HTTP router never sees it.)
    func answer(_ http1: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, _ refusal: AppError, _ logger: Logger) async {
        logger.debug("WebSocket upgrade refused", metadata: ["error": "\(refusal)"])
        do {
            let reply = try ErrorMiddleware.reply(for: refusal)
            let body = reply.body ?? ByteBuffer()
            var head = HTTPResponse(status: reply.status, headerFields: reply.headers)
            head.headerFields[.contentType] = "application/json; charset=utf-8"
            head.headerFields[.contentLength] = String(body.readableBytes)
            head.headerFields[.connection] = "close"
            try await http1.executeThenClose { _, outbound in
                try await outbound.write(contentsOf: [.head(head), .body(body), .end(nil)])
            }
        } catch {
            logger.trace("could not answer a refused upgrade", metadata: ["error": "\(error)"])
        }
    }

    /// Serves an admitted WebSocket: the socket writes until it is done, then
    /// the closing handshake has until the control handler's next ping to
    /// finish (it closes the channel when the client answers, or then).
    /// At shutdown the client is told 1001, and the socket ends when the
    /// handshake closes the channel.
    func serve(_ webSocket: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, _ socket: UpgradeDecisions.Socket, _ logger: Logger) async {
        let channel = webSocket.channel
        do {
            try await webSocket.executeThenClose { _, outbound in
                await withGracefulShutdownHandler {
                    await socket(outbound)
                } onGracefulShutdown: {
                    channel.writeAndFlush(WebSocketFrame.close(.goingAway), promise: nil)
                }
                if !Task.isCancelled { try? await channel.closeFuture.get() }
            }
        } catch {
            logger.trace("realtime socket ended", metadata: ["error": "\(error)"])
        }
    }

    /// Hummingbird's upgrade channel keeps the negotiation result internal
    /// and answers a refused upgrade with an empty 400; reading the result
    /// lets the server answer with the reason and guard its WebSockets. If a
    /// later version renames the field, this is nil and the library's own
    /// handling runs (the realtime limit tests then fail).
    static func upgradeResult(of value: Value) -> EventLoopFuture<HTTP1WebSocketUpgradeChannel.UpgradeResult>? {
        Mirror(reflecting: value).descendant("upgradeResult") as? EventLoopFuture<HTTP1WebSocketUpgradeChannel.UpgradeResult>
    }
}

/// A client address already holds as many connections as it may.
struct TooManyConnectionsFromClient: Error {}

extension WebSocketFrame {
    /// A whole text frame.
    static func text(_ data: ByteBuffer) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: data)
    }

    /// A close frame with a realtime close code and its reason.
    static func close(_ code: RealtimeCloseCode) -> WebSocketFrame {
        var data = ByteBuffer()
        data.writeInteger(code.rawValue)
        data.writeString(code.reason)
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }
}
