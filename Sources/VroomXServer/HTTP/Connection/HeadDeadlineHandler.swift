import NIOCore

/// Closes a connection whose client has not sent a complete request head in
/// time: counted from the connection's start and again from each response,
/// until the blank line that ends a head arrives. A slow-loris client holds
/// a connection by sending a head a byte at a time; this bounds how long it
/// can, whatever it sends.
final class HeadDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var scanner = HeadEndScanner()

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    func handlerRemoved(context: ChannelHandlerContext) { disarm() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if deadline != nil, scanner.scan(unwrapInboundIn(data)) != nil { disarm() }
        context.fireChannelRead(data)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        switch event as? HTTPPhase {
        case .awaitingHead?: arm(context)
        case .upgraded?: context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        case nil: break
        default: disarm()
        }
    }

    private func arm(_ context: ChannelHandlerContext) {
        disarm()
        scanner.reset()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            loopBound.value.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}
