import NIOCore

/// Bounds how much of an unread request body is read and passed on (for
/// Hummingbird to throw away) after the server answered early (a 401, 413
/// or 423 before the body). Past the limit the connection closes — but
/// gently: closing a socket with bytes still unread resets it, and a client
/// or proxy still sending the body then loses the answer too (nginx answers
/// 502 for a 423). So the write side closes once the answer is out, and
/// what still arrives is read and dropped — at most `lingerBytes` for at
/// most `linger`, as nginx's own lingering close does — before the
/// connection closes for good.
final class DrainLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let limit: Int
    private let linger: TimeAmount
    private let lingerBytes: Int
    private var draining = false
    private var drained = 0
    private var lingering = false
    private var lingered = 0

    /// `lingerBytes`: enough for the rest of a large upload chunk a proxy is
    /// still sending (the driver app sends 1 MiB chunks).
    init(limit: Int, linger: TimeAmount = .seconds(10), lingerBytes: Int = 16 << 20) {
        self.limit = limit
        self.linger = linger
        self.lingerBytes = lingerBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if lingering {
            lingered += unwrapInboundIn(data).readableBytes
            if lingered > lingerBytes { context.close(promise: nil) }
            return
        }
        if draining {
            drained += unwrapInboundIn(data).readableBytes
            if drained > limit {
                lingering = true
                // The answer already written goes out first; then the peer reads it and an end of stream.
                context.close(mode: .output, promise: nil)
                let channel = context.channel
                context.eventLoop.scheduleTask(in: linger) { channel.close(promise: nil) }
                context.read()
                return
            }
        }
        context.fireChannelRead(data)
    }

    /// A server stopping does not wait for a body nobody will read: the
    /// answer is out, so the connection closes at once (and the port is free
    /// for the next start).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, draining || lingering {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Once the answer is out, nothing downstream asks for the rest of the
    /// body: this handler does, until the limit, then while lingering.
    func channelReadComplete(context: ChannelHandlerContext) {
        if lingering { return context.read() }
        if draining { context.read() }
        context.fireChannelReadComplete()
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        guard let phase = event as? HTTPPhase else { return }
        draining = phase == .draining
        drained = 0
        if draining { context.read() }
        if phase == .upgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }
}
