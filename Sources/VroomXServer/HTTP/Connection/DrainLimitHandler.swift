import NIOCore

/// Bounds how much of an unread request body is read and thrown away after
/// the server answered early (a 401 or 413 before the body): past the limit
/// the connection closes instead, so no client can make the server read an
/// endless body. Hummingbird itself would read it all to keep the
/// connection alive.
final class DrainLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let limit: Int
    private var draining = false
    private var drained = 0

    init(limit: Int) { self.limit = limit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if draining {
            drained += unwrapInboundIn(data).readableBytes
            if drained > limit {
                context.close(promise: nil)
                return
            }
        }
        context.fireChannelRead(data)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        guard let phase = event as? HTTPPhase else { return }
        draining = phase == .draining
        drained = 0
        if phase == .upgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }
}
