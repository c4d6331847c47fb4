import NIOCore

/// Refuses a request head larger than the limit. While the server waits for
/// a head it counts the bytes up to the blank line that ends one; past the
/// limit it reports `RequestHeadTooLarge` (answered 431 by
/// `MalformedRequestResponder`) and passes nothing more on. The HTTP decoder
/// bounds the request line and header fields itself (failing with the same
/// answer); this also counts what the decoder skips, such as padding.
final class HeadSizeLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let limit: Int
    private var counting = true
    private var received = 0
    private var scanner = HeadEndScanner()
    private var exceeded = false

    init(limit: Int) { self.limit = limit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !exceeded else { return }
        if counting {
            let bytes = unwrapInboundIn(data)
            if let head = scanner.scan(bytes) {
                received += head
                counting = false
            } else {
                received += bytes.readableBytes
            }
            if received > limit {
                exceeded = true
                context.fireErrorCaught(RequestHeadTooLarge())
                return
            }
        }
        context.fireChannelRead(data)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        guard let phase = event as? HTTPPhase else { return }
        counting = phase == .awaitingHead
        received = 0
        scanner.reset()
        if phase == .upgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }
}

/// More bytes than a request head may have arrived without completing one.
struct RequestHeadTooLarge: Error {}
