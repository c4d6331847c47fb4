import Logging
import NIOCore

/// Closes a connection whose client stops taking what the server sends: the
/// channel stays unwritable (the socket's buffers full) and, over `timeout`,
/// the client acknowledged less than `minimumBytes`. The response's handler
/// then fails its next write and lets go of what it held (a file, a
/// database cursor).
///
/// Progress is what the client's TCP acknowledged, not the channel turning
/// writable again: the kernel reports room only once about a third of a send
/// buffer (which grows to megabytes) is free, which a slow but steady phone
/// may take longer than `timeout` to read. Where the kernel cannot say
/// (not a TCP socket), the channel staying unwritable for `timeout` is the
/// stall. WebSockets have their own rule (`WebSocketControlHandler`), so it
/// leaves at the upgrade.
final class WriteStallHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let timeout: TimeAmount
    private let minimumBytes: UInt64
    private let logger: Logger
    private var deadline: Scheduled<Void>?
    /// What the client had acknowledged when this window began.
    private var ackedAtStart: UInt64?

    init(timeout: TimeAmount, minimumBytes: UInt64 = 1024, logger: Logger) {
        self.timeout = timeout
        self.minimumBytes = minimumBytes
        self.logger = logger
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            cancel()
        } else if deadline == nil {
            ackedAtStart = Self.bytesAcked(context.channel)
            schedule(context)
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

    private func schedule(_ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            handler.windowEnded(context)
        }
    }

    private func windowEnded(_ context: ChannelHandlerContext) {
        deadline = nil
        guard !context.channel.isWritable else { return }
        let acked = Self.bytesAcked(context.channel)
        if let acked, let start = ackedAtStart, acked >= start &+ minimumBytes {
            ackedAtStart = acked  // still taking the answer, slowly: another window
            schedule(context)
        } else {
            logger.notice("closing a connection whose client stopped taking its answer", metadata: [
                "acked_bytes_in_window": "\(acked.map { $0 &- (ackedAtStart ?? $0) }.map(String.init) ?? "unknown")",
                "window_seconds": "\(timeout.nanoseconds / 1_000_000_000)",
            ])
            context.close(promise: nil)
        }
    }

    private func cancel() {
        deadline?.cancel()
        deadline = nil
        ackedAtStart = nil
    }

    /// The bytes the peer's TCP acknowledged (`tcpi_bytes_acked`, Linux 4.1+);
    /// nil where the channel cannot say. Read on the channel's event loop,
    /// where the answer is immediate.
    static func bytesAcked(_ channel: any Channel) -> UInt64? {
        #if os(Linux)
        guard let socket = channel as? any SocketOptionProvider else { return nil }
        let info: EventLoopFuture<TCPInfoHead> = socket.unsafeGetSocketOption(level: .tcp, name: .tcp_info)
        var acked: UInt64?
        // Already complete on this loop, so the callback runs before `whenSuccess` returns.
        info.assumeIsolated().whenSuccess { acked = $0.bytesAcked }
        return acked == 0 ? nil : acked
        #else
        return nil
        #endif
    }
}

#if os(Linux)
/// The first 136 bytes of Linux's `struct tcp_info`, as far as
/// `tcpi_bytes_received` (Glibc's declaration stops before `tcpi_bytes_acked`).
/// A kernel that fills less leaves the rest zero.
struct TCPInfoHead: Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// `tcpi_bytes_acked`, at byte 120.
    var bytesAcked: UInt64 { words.15 }
}
#endif
