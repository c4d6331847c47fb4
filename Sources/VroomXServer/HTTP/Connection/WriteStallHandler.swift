import NIOCore

/// Closes a connection whose client stops taking what the server sends: the
/// channel stays unwritable (the socket's buffers full, the client reading
/// nothing) for `timeout`. The response's handler then fails its next write
/// and lets go of what it held (a file, a database cursor). A slow reader
/// that keeps reading makes room now and then, and is never cut. WebSockets
/// have their own rule (`WebSocketControlHandler`), so it leaves at the upgrade.
final class WriteStallHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            cancel()
        } else if deadline == nil {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
                loopBound.value.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { cancel() }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        if event as? HTTPPhase == .upgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }

    private func cancel() {
        deadline?.cancel()
        deadline = nil
    }
}
