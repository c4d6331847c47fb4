import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
import VroomXModels

/// Live updates for open console pages: a server-sent event stream of what
/// changed in the carrier, fed by the same change hub as the drivers'
/// realtime sockets (so on PostgreSQL a change made through another
/// instance arrives too). The page refreshes the parts that show it. The
/// session is checked again at every heartbeat: a stream ends with it.
struct ConsoleLive {
    let console: ConsoleController

    static let heartbeat: Duration = .seconds(20)

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/live") { request in
            var headers = ConsolePages.securityHeaders
            headers[.contentType] = "text/event-stream"
            headers[.cacheControl] = "no-store"
            headers[.init("X-Accel-Buffering")!] = "no"  // nginx: pass events through at once
            // HEAD: what a stream would say, without opening one.
            if request.request.method == .head { return Response(status: .ok, headers: headers) }
            let identity = request.session.identity
            guard console.live.admitStream(for: identity) else {
                throw AppError(429, .tooManyConnections, "Too many open console pages; live updates resume shortly.", retryAfter: 30)
            }
            let subscriber = Subscriber(scope: request.scope, limit: 2_000)
            // A closed page lets go at once, not at the next heartbeat's failed write: on this long-lived
            // stream the browser closing its side means the page has gone, so the connection closes too.
            let connection = request.context.connection
            connection.setOption(ChannelOptions.allowRemoteHalfClosure, value: false).whenComplete { _ in }
            connection.closeFuture.whenComplete { _ in subscriber.end() }
            do {
                try await console.hub.subscribe(subscriber)
            } catch {
                console.live.releaseStream(for: identity)
                throw error
            }
            let claim = LiveClaim(subscriber: subscriber, hub: console.hub, live: console.live, identity: identity)
            let store = console.store
            let session = request.session.identity.session
            let body = ResponseBody { writer in
                let beat = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: Self.heartbeat)
                        subscriber.wake()
                    }
                }
                defer {
                    beat.cancel()
                    claim.end()
                }
                // Tells the browser how soon to come back after a cut.
                try await writer.write(ByteBuffer(string: "retry: 3000\n\n"))
                while true {
                    // At shutdown the page is told to refresh everything; it reconnects (to another instance, or when this one is back).
                    let next = await withGracefulShutdownHandler { await subscriber.next() } onGracefulShutdown: { subscriber.end() }
                    switch next {
                    case .overflowed, .ended:
                        // Too far behind, or the server is stopping: one last "everything changed" and the browser reconnects.
                        // (When the page has gone, there is no one to tell.)
                        try? await writer.write(ByteBuffer(string: "event: change\ndata: {\"entities\":[\"all\"]}\n\n"))
                        try? await writer.finish(nil)
                        return
                    case .batches(let batches, _) where batches.isEmpty:
                        // Signed out (or revoked, or expired) elsewhere: the stream ends with the session.
                        guard (try? await store.sessionIsActive(session)) != false else {
                            try await writer.write(ByteBuffer(string: "event: signed-out\ndata: {}\n\n"))
                            try await writer.finish(nil)
                            return
                        }
                        try await writer.write(ByteBuffer(string: ": ping\n\n"))
                    case .batches(let batches, _):
                        let entities = Set(batches.flatMap(\.entries).filter { $0.visible(to: subscriber.scope) }.map(\.entity.rawValue))
                        guard !entities.isEmpty else { continue }
                        let list = entities.sorted().map { "\"\($0)\"" }.joined(separator: ",")
                        try await writer.write(ByteBuffer(string: "event: change\ndata: {\"entities\":[\(list)]}\n\n"))
                    }
                }
            }
            return Response(status: .ok, headers: headers, body: body)
        }
    }
}

/// One stream's place in the hub and under the limit, given back once: when
/// the stream ends, or when its body is dropped without ever being written
/// (a client gone before the headers went out).
final class LiveClaim: Sendable {
    private let subscriber: Subscriber
    private let hub: ChangeHub
    private let live: RealtimeCapacity
    private let identity: Identity
    private let held = NIOLockedValueBox(true)

    init(subscriber: Subscriber, hub: ChangeHub, live: RealtimeCapacity, identity: Identity) {
        (self.subscriber, self.hub, self.live, self.identity) = (subscriber, hub, live, identity)
    }

    func end() {
        guard held.withLockedValue({ held in defer { held = false }; return held }) else { return }
        hub.unsubscribe(subscriber)
        live.releaseStream(for: identity)
    }

    deinit { end() }
}
