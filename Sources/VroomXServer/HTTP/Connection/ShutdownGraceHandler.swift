import NIOCore

/// Bounds how long a connection may outlive the start of a shutdown (the
/// quiesce event): one between requests closes at once, any other — a
/// trickled upload, a WebSocket whose client never answers the close — after
/// the grace period, so no connection can keep the process alive.
final class ShutdownGraceHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let grace: TimeAmount
    private var betweenRequests = true
    private var forcedClose: Scheduled<Void>?

    init(grace: TimeAmount) { self.grace = grace }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, forcedClose == nil {
            if betweenRequests {
                context.close(promise: nil)
            } else {
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                forcedClose = context.eventLoop.assumeIsolated().scheduleTask(in: grace) {
                    loopBound.value.close(promise: nil)
                }
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if let phase = event as? HTTPPhase { betweenRequests = phase == .awaitingHead }
        context.triggerUserOutboundEvent(event, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        forcedClose?.cancel()
        forcedClose = nil
    }
}
