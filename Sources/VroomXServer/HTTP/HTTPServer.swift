import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore

/// HTTP/1.1 with the realtime WebSocket upgrade. Keep-alive connections
/// close after 75 s idle, connections that never send a request after 30 s
/// or at shutdown, and sockets are pinged every 25 s.
func guardedHTTP1WebSocketServer<Responder: HTTPResponder>(_ webSocketResponder: Responder) -> HTTPServerBuilder
where Responder.Context: WebSocketRequestContext {
    let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
        http1: .init(idleTimeout: .seconds(75)),
        ws: .init(autoPing: .enabled(timePeriod: .seconds(25))))
    return HTTPServerBuilder { responder in
        SilentConnectionGuard(
            inner: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: configuration),
            firstByteTimeout: .seconds(30))
    }
}

/// Wraps the server's child channel so that a connection which never sends
/// a byte cannot hold the server. The HTTP/WebSocket pipeline only learns to
/// close idle connections once a first request has arrived, so a client's
/// pooled-but-unused connection would otherwise delay a graceful shutdown
/// until the client gives up on it, and a silent client could keep sockets
/// open forever.
struct SilentConnectionGuard<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    /// How long a new connection may stay silent before it is closed.
    let firstByteTimeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(SilentConnectionHandler(timeout: firstByteTimeout), position: .first)
        }.flatMap {
            inner.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Closes the connection on shutdown or after `timeout` unless a byte
/// arrives first; then steps out of the pipeline for good.
final class SilentConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            loopBound.value.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
        deadline?.cancel()
        deadline = nil
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
