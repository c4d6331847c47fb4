import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import VroomXModels

/// One realtime connection: sends what the caller missed since their
/// cursor, then every visible change as it commits, with heartbeats; closes
/// with a code that tells the client what to do (see `RealtimeCloseCode`).
struct RealtimeSession {
    let hub: ChangeHub
    let authenticator: Authenticator
    let identity: Identity
    let since: Int64
    let logger: Logger
    var heartbeatInterval: Duration = .seconds(25)

    private var store: Store { hub.store }

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let subscriber = Subscriber(scope: identity.scope, limit: hub.inboxLimit)
        do {
            try await hub.subscribe(subscriber)
        } catch {
            try await close(outbound, .goingAway, "try again")
            return
        }
        defer { hub.unsubscribe(subscriber) }
        let code: RealtimeCloseCode? = try await withThrowingTaskGroup(of: RealtimeCloseCode?.self) { group in
            // Reading the client side keeps control frames flowing and tells us when it leaves.
            group.addTask {
                for try await _ in inbound.messages(maxSize: 4096) {}
                return nil
            }
            group.addTask { try await send(to: outbound, from: subscriber) }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: heartbeatInterval)
                    subscriber.wake()
                }
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        if let code { try await close(outbound, code, Self.reason(code)) }
    }

    /// The sending loop. Returns the close code that ends the connection.
    private func send(to outbound: WebSocketOutboundWriter, from subscriber: Subscriber) async throws -> RealtimeCloseCode? {
        let scope = identity.scope
        var cursor = since
        do {
            cursor = try await catchUp(from: cursor, outbound)
        } catch let error as AppError where error.code == .cursorExpired {
            return .cursorExpired
        }
        try await outbound.write(.custom(.init(fin: true, opcode: .text, data: FeedJSON.message(.ready, cursor: cursor))))
        var lastHeartbeat = ContinuousClock.now
        while !Task.isCancelled {
            switch await subscriber.next() {
            case .overflowed:
                return .tooSlow
            case .batches(let batches):
                for batch in batches where batch.last > cursor {
                    if batch.first > cursor + 1 {
                        // A hole (a wake-up came late or was coalesced): read it from the database.
                        cursor = try await catchUp(from: cursor, outbound)
                        guard batch.last > cursor else { continue }
                    }
                    let fresh = batch.entries.filter { $0.seq > cursor && $0.visible(to: scope) }
                    cursor = batch.last
                    if !fresh.isEmpty { try await write(fresh, cursor: cursor, outbound) }
                }
            }
            if store.clock.now >= identity.expiresAt { return .tokenExpired }
            if ContinuousClock.now - lastHeartbeat >= heartbeatInterval {
                lastHeartbeat = ContinuousClock.now
                guard try await authenticator.sessionIsActive(identity.session) else { return .sessionRevoked }
                try await outbound.write(.custom(.init(fin: true, opcode: .text, data: FeedJSON.message(.heartbeat, cursor: cursor))))
            }
        }
        return nil
    }

    /// Sends everything visible after `cursor` from the database, page by
    /// page; returns the new cursor.
    private func catchUp(from cursor: Int64, _ outbound: WebSocketOutboundWriter) async throws -> Int64 {
        var cursor = cursor
        while true {
            let page = try await store.feed(since: cursor, limit: 500, identity.scope)
            cursor = page.cursor
            if !page.changes.isEmpty { try await write(page.changes, cursor: cursor, outbound) }
            if !page.hasMore { return cursor }
        }
    }

    private func write(_ changes: [Store.FeedEntry], cursor: Int64, _ outbound: WebSocketOutboundWriter) async throws {
        try await outbound.write(.custom(.init(fin: true, opcode: .text, data: FeedJSON.message(.changes, changes: changes, cursor: cursor))))
    }

    /// Sends a close frame with an application code. (The WebSocket library
    /// has no public API for custom codes; the library's own close frame
    /// that follows is ignored by clients, which act on the first.)
    private func close(_ outbound: WebSocketOutboundWriter, _ code: RealtimeCloseCode, _ reason: String) async throws {
        var buffer = ByteBuffer()
        buffer.writeInteger(code.rawValue)
        buffer.writeString(reason)
        try? await outbound.write(.custom(.init(fin: true, opcode: .connectionClose, data: buffer)))
    }

    static func reason(_ code: RealtimeCloseCode) -> String {
        switch code {
        case .tokenExpired: return "token_expired"
        case .sessionRevoked: return "session_revoked"
        case .tooSlow: return "too_slow"
        case .badRequest: return "bad_request"
        case .cursorExpired: return "cursor_expired"
        case .goingAway: return "going_away"
        }
    }
}

/// The request context of the WebSocket upgrade router.
struct RealtimeRequestContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
    }
}

extension Realtime {
    /// The upgrade router: only `GET /v1/realtime` with a valid token and
    /// cursor upgrades; anything else falls through to the HTTP router,
    /// which answers with the usual JSON errors.
    static func router(hub: ChangeHub, authenticator: Authenticator, heartbeat: Duration, logger: Logger) -> Router<RealtimeRequestContext> {
        let router = Router(context: RealtimeRequestContext.self)
        router.ws(RouterPath(Endpoint.realtime.routerPath)) { request, _ in
            guard (try? await authenticate(request, authenticator)) != nil, (try? since(request)) != nil else { return .dontUpgrade }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let identity = try await authenticate(context.request, authenticator)
            let session = RealtimeSession(hub: hub, authenticator: authenticator, identity: identity,
                                          since: try since(context.request), logger: logger, heartbeatInterval: heartbeat)
            try await session.run(inbound: inbound, outbound: outbound)
        }
        return router
    }

    /// The token from `Authorization: Bearer …` or, for clients that cannot
    /// set headers on a WebSocket, the `access_token` query parameter.
    static func authenticate(_ request: Request, _ authenticator: Authenticator) async throws -> Identity {
        if let token = request.text(.accessToken), request.headers[.authorization] == nil {
            return try await authenticator.authenticate(token: token)
        }
        return try await authenticator.authenticate(request)
    }

    static func since(_ request: Request) throws -> Int64 {
        guard let since = try? request.integer(.since) else {
            throw AppError(400, .invalidParameter, "Give since=<cursor> (an integer ≥ 0) from your last sync.", field: "since")
        }
        return since
    }
}

enum Realtime {}
