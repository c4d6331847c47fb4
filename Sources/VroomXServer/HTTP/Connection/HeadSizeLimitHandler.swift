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
    /// Progress through the blank line that ends a head: LF, optional CR, LF.
    private var endMatch = EndOfHead.none
    private var exceeded = false

    private enum EndOfHead { case none, lineFeed, lineFeedReturn }

    init(limit: Int) { self.limit = limit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !exceeded else { return }
        if counting {
            count(unwrapInboundIn(data).readableBytesView)
            if received > limit {
                exceeded = true
                context.fireErrorCaught(RequestHeadTooLarge())
                return
            }
        }
        context.fireChannelRead(data)
    }

    private func count(_ bytes: ByteBufferView) {
        for byte in bytes {
            received += 1
            switch (endMatch, byte) {
            case (.lineFeed, UInt8(ascii: "\r")): endMatch = .lineFeedReturn
            case (.lineFeed, UInt8(ascii: "\n")), (.lineFeedReturn, UInt8(ascii: "\n")):
                counting = false
                return
            case (_, UInt8(ascii: "\n")): endMatch = .lineFeed
            default: endMatch = .none
            }
            if received > limit { return }
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        guard let phase = event as? HTTPPhase else { return }
        counting = phase == .awaitingHead
        received = 0
        endMatch = .none
        if phase == .upgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }
}

/// More bytes than a request head may have arrived without completing one.
struct RequestHeadTooLarge: Error {}
