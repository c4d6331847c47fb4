import NIOCore

/// Closes a connection whose request body arrives slower than
/// `minimumBytes` per `window`. Only time during which the server asked for
/// more bytes counts, so a server that is slow to consume a body (and stops
/// reading) never blames the client for it.
final class BodyRateHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let window: TimeAmount
    private let minimumBytes: Int

    /// A read was asked for and no bytes have answered it yet.
    private var readPending = false
    private var measuring = false
    private var bytesInWindow = 0
    /// Time in this window spent waiting for the client.
    private var waited = TimeAmount.zero
    private var waitingSince: NIODeadline?
    private var check: Scheduled<Void>?

    init(window: TimeAmount, minimumBytes: Int) {
        self.window = window
        self.minimumBytes = minimumBytes
    }

    func read(context: ChannelHandlerContext) {
        readPending = true
        if measuring, waitingSince == nil { waitingSince = .now() }
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readPending = false
        if measuring {
            bytesInWindow += unwrapInboundIn(data).readableBytes
            stopWaiting(at: .now())
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        guard let phase = event as? HTTPPhase else { return }
        if phase.isReceivingBody {
            if !measuring { start(context) }
        } else {
            stop()
            if phase == .upgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
        }
    }

    private func start(_ context: ChannelHandlerContext) {
        measuring = true
        bytesInWindow = 0
        waited = .zero
        waitingSince = readPending ? .now() : nil
        schedule(context, in: window)
    }

    private func stop() {
        measuring = false
        waitingSince = nil
        check?.cancel()
        check = nil
    }

    private func stopWaiting(at now: NIODeadline) {
        if let since = waitingSince { waited = waited + (now - since) }
        waitingSince = nil
    }

    private func schedule(_ context: ChannelHandlerContext, in delay: TimeAmount) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        check = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            self.windowCheck(loopBound.value)
        }
    }

    private func windowCheck(_ context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        if waitingSince != nil {
            stopWaiting(at: now)
            waitingSince = now
        }
        if waited >= window {
            guard bytesInWindow >= minimumBytes else {
                context.close(promise: nil)
                return
            }
            bytesInWindow = 0
            waited = .zero
        }
        schedule(context, in: window - waited)
    }
}
