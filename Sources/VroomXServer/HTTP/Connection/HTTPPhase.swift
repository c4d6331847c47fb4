import NIOCore
import NIOHTTP1

/// Where an HTTP/1.1 connection is in its request/response cycle. The
/// connection guards each act in one phase: the head deadline and size cap
/// while awaiting a head, the body rate while a body arrives, the drain cap
/// while an unread body is discarded.
enum HTTPPhase: Sendable, Equatable {
    /// Waiting for the client's next request head; no response is owed.
    case awaitingHead
    /// A request body is arriving and its response is still owed.
    case receivingBody
    /// The request has arrived; the server is working on the answer.
    case processing
    /// The response went out before the request body was read: the rest of
    /// it is being read and thrown away.
    case draining
    /// The connection became a WebSocket: HTTP limits no longer apply.
    case upgraded

    var isReceivingBody: Bool { self == .receivingBody || self == .draining }
}

/// Follows requests and responses and announces each change of phase to the
/// handlers in front of it, as an outbound user event (which travels towards
/// the socket). It sits after the HTTP decoder and the upgrade handler, so it
/// sees whole request parts, and before Hummingbird's handlers, so it sees
/// every response part. After a WebSocket upgrade it announces `upgraded`
/// and leaves the pipeline before any WebSocket bytes flow.
final class HTTPPhaseObserver: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Request heads seen minus responses ended (more than one when pipelined).
    private var responsesOwed = 0
    /// The latest request's body has not ended yet.
    private var bodyOpen = false
    private var phase = HTTPPhase.awaitingHead

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            responsesOwed += 1
            bodyOpen = true
        case .body:
            break
        case .end:
            bodyOpen = false
        }
        announce(context)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let isEnd: Bool
        if case .end = unwrapOutboundIn(data) { isEnd = true } else { isEnd = false }
        context.write(data, promise: promise)
        if isEnd {
            responsesOwed = max(responsesOwed - 1, 0)
            announce(context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case .upgradeComplete = event as? HTTPServerUpgradeEvents else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        phase = .upgraded
        context.triggerUserOutboundEvent(HTTPPhase.upgraded, promise: nil)
        context.fireUserInboundEventTriggered(event)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func announce(_ context: ChannelHandlerContext) {
        let next: HTTPPhase
        switch (bodyOpen, responsesOwed > 0) {
        case (true, true): next = .receivingBody
        case (true, false): next = .draining
        case (false, true): next = .processing
        case (false, false): next = .awaitingHead
        }
        guard next != phase else { return }
        phase = next
        context.triggerUserOutboundEvent(next, promise: nil)
    }
}
