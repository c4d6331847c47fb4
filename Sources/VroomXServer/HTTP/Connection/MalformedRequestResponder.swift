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
/// towards the end of the pipeline. An error in the middle of a request
/// goes on to that request's handler, as Hummingbird expects.
final class MalformedRequestResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let linger: TimeAmount
    /// No request is in flight, so an answer cannot interleave with another.
    private var betweenRequests = true
    private var answered = false

    init(linger: TimeAmount) { self.linger = linger }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case is ByteToMessageDecoderError:
            break  // the decoder repeats its first error for every later read
        case _ where !betweenRequests:
            context.fireErrorCaught(error)
        case HTTPParserError.invalidEOFState:
            context.close(promise: nil)  // the client left halfway through a head: nobody to answer
        default:
            guard let refusal = Self.refusal(for: error) else {
                context.fireErrorCaught(error)
                return
            }
            if !answered { answer(refusal, context) }
        }
    }

    private func answer(_ refusal: AppError, _ context: ChannelHandlerContext) {
        answered = true
        let body = Self.body(refusal)
        var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: refusal.status))
        head.headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        head.headers.add(name: "Content-Length", value: String(body.readableBytes))
        head.headers.add(name: "Connection", value: "close")
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            loopBound.value.close(mode: .output, promise: nil)
        }
        context.eventLoop.assumeIsolated().scheduleTask(in: linger) { loopBound.value.close(promise: nil) }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        context.triggerUserOutboundEvent(event, promise: promise)
        guard let phase = event as? HTTPPhase else { return }
        betweenRequests = phase == .awaitingHead
        if phase == .upgraded { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }

    static func refusal(for error: any Error) -> AppError? {
        switch error {
        case is RequestHeadTooLarge: return headTooLarge
        case let error as HTTPParserError: return refusal(parsing: error)
        default: return nil
        }
    }

    static func refusal(parsing error: HTTPParserError) -> AppError {
        error == .headerOverflow ? headTooLarge : AppError(400, .malformedRequest, "This is not an HTTP/1.1 request the server can read.")
    }

    static let headTooLarge = AppError(431, .requestHeaderFieldsTooLarge, "The request line and headers are too large.")

    static func body(_ refusal: AppError) -> ByteBuffer {
        // Encoding this plain struct cannot fail.
        let json = (try? JSONBody.encoder.encode(APIErrorResponse(refusal.body))) ?? Data()
        return ByteBuffer(bytes: json)
    }
}
