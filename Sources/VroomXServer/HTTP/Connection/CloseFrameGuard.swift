import NIOCore
import NIOWebSocket

/// Lets only the first close frame of a WebSocket out, and nothing after it
/// (RFC 6455 §5.5.1). The realtime session closes with its own codes (and
/// the server with 1001 at shutdown) before the WebSocket library sends its
/// generic close, which this drops.
final class CloseFrameGuard: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var closeSent = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !closeSent else {
            promise?.succeed()
            return
        }
        if unwrapOutboundIn(data).opcode == .connectionClose { closeSent = true }
        context.write(data, promise: promise)
    }
}
