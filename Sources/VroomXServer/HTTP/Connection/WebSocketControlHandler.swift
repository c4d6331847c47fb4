import NIOCore
import NIOWebSocket

/// The WebSocket protocol's control side of a realtime socket, on the event
/// loop, so that no task has to wait on a socket that has nothing to say:
///
/// - pings from the client are answered with pongs, while the client reads
///   what it is sent (else only its latest ping is answered, when it does:
///   a client that floods pings and reads nothing cannot grow the server's
///   pending writes);
/// - a ping with a random payload goes out every `pingInterval`; a client
///   that has not answered the previous one with its payload is gone (or
///   reads nothing), and the channel closes;
/// - a close frame from the client completes the closing handshake: it is
///   answered (unless the server's close went first) and the channel closes,
///   as it does when the client shuts its side without one; a close that is
///   not complete by the next ping closes the channel;
/// - data frames are dropped: clients have nothing to say on this socket;
/// - only the first close frame goes out, and nothing after it (RFC 6455
///   §5.5.1): the realtime session's close code, or the server's 1001 at
///   shutdown, whichever comes first.
///
/// No frame reaches the channel's inbound stream, which nobody reads.
final class WebSocketControlHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let pingInterval: TimeAmount
    private var pinging: RepeatedTask?
    /// The payload of the ping waiting for its pong; nil when answered.
    private var unansweredPing: UInt64?
    /// The latest ping of the client's, held while the channel cannot take writes.
    private var heldPong: ByteBuffer?
    private var closeSent = false

    init(pingInterval: TimeAmount) {
        self.pingInterval = pingInterval
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        pinging = context.eventLoop.scheduleRepeatedTask(initialDelay: pingInterval, delay: pingInterval) { _ in
            let (handler, context) = handler.value
            handler.ping(context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) { stopPinging() }

    func channelInactive(context: ChannelHandlerContext) {
        stopPinging()
        context.fireChannelInactive()
    }

    private func stopPinging() {
        pinging?.cancel()
        pinging = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .ping where !closeSent:
            // The decoder has checked that control frames are whole and at most 125 bytes.
            if context.channel.isWritable {
                send(.pong, frame.unmaskedData, context)
            } else {
                heldPong = frame.unmaskedData  // RFC 6455 §5.5.3: answering the latest ping is enough
            }
        case .pong:
            var payload = frame.unmaskedData
            if let expected = unansweredPing, payload.readInteger(as: UInt64.self) == expected { unansweredPing = nil }
        case .connectionClose where closeSent:
            context.close(promise: nil)  // the answer to ours: the handshake is complete
        case .connectionClose:
            sendClose(.normalClosure, context).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        default:
            break
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let pong = heldPong, !closeSent {
            heldPong = nil
            send(.pong, pong, context)
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.fireUserInboundEventTriggered(event)
        // The client shut its side without a close frame: it will not send a pong again, so it has left.
        if case .inputClosed? = event as? ChannelEvent { context.close(promise: nil) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !closeSent else {
            promise?.succeed()
            return
        }
        if unwrapOutboundIn(data).opcode == .connectionClose { closeSent = true }
        context.write(data, promise: promise)
    }

    private func ping(_ context: ChannelHandlerContext) {
        guard !closeSent else {
            context.close(promise: nil)  // a whole interval after the close began: the client never finished it
            return
        }
        guard unansweredPing == nil else {
            // No answer for a whole interval: the phone lost its network, its app was killed without a goodbye, or it reads nothing.
            _ = sendClose(.goingAway, context)
            context.close(promise: nil)
            return
        }
        // Random, so only a client that read this ping can answer it.
        let payload = UInt64.random(in: .min ... .max)
        unansweredPing = payload
        var data = context.channel.allocator.buffer(capacity: 8)
        data.writeInteger(payload)
        send(.ping, data, context)
    }

    @discardableResult
    private func send(_ opcode: WebSocketOpcode, _ data: ByteBuffer, _ context: ChannelHandlerContext) -> EventLoopFuture<Void> {
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: opcode, data: data)))
    }

    /// Our close frame; nothing goes out after it.
    private func sendClose(_ code: WebSocketErrorCode, _ context: ChannelHandlerContext) -> EventLoopFuture<Void> {
        closeSent = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        return send(.connectionClose, data, context)
    }
}
