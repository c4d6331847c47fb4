import Foundation
import NIOCore
import NIOHTTP1
import VroomXModels

/// Answers a request the server cannot parse — bytes that are not HTTP/1.1,
/// or a head over the limits — with the JSON error (400 `malformed_request`,
/// 431 `request_header_fields_too_large`) and closes the connection: its
/// output at once, its input after a short linger, so the client reads the
/// answer rather than a reset. Without it a decoder error before the first
/// request ends in silence on an open connection, and a later one in an
/// empty 400. It sits after the HTTP decoder, which reports its errors
/// towards the end of the pipeline.
final class MalformedRequestResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let linger: TimeAmount
    /// No response is owed, so an answer cannot interleave with one.
    private var betweenRequests = true
    private var answered = false

    init(linger: TimeAmount) { self.linger = linger }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let refusal = Self.refusal(for: error) else {
            // The decoder reports every later read as received in its error state.
            if !(error is ByteToMessageDecoderError) { context.fireErrorCaught(error) }
            return
        }
        guard !answered else { return }
        answered = true
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.assumeIsolated().scheduleTask(in: linger) { loopBound.value.close(promise: nil) }
        guard betweenRequests else {
            context.close(promise: nil)
            return
        }
        let body = Self.body(refusal)
        var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: refusal.status))
        head.headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        head.headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            loopBound.value.close(mode: .output, promise: nil)
        }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        guard let phase = event as? HTTPPhase else { return }
        betweenRequests = phase == .awaitingHead
        if phase == .upgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }

    static func refusal(for error: any Error) -> AppError? {
        switch error {
        case is RequestHeadTooLarge, HTTPParserError.headerOverflow:
            return AppError(431, .requestHeaderFieldsTooLarge, "The request line and headers are too large.")
        case is HTTPParserError:
            return AppError(400, .malformedRequest, "This is not an HTTP/1.1 request the server can read.")
        default:
            return nil
        }
    }

    static func body(_ refusal: AppError) -> ByteBuffer {
        // Encoding this plain struct cannot fail.
        let json = (try? JSONBody.encoder.encode(APIErrorResponse(refusal.body))) ?? Data()
        return ByteBuffer(bytes: json)
    }
}
