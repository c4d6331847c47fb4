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
///
/// An idle socket costs one suspended task: the connection's own, waiting
/// on its subscriber a few calls below the server channel (the WebSocket
/// library's handler is not in between: see `UpgradeDecisions`). The hub
/// wakes it for changes and heartbeats, the channel's close ends it, and the
/// frames the client sends (pings, pongs, its close) are answered on the
/// event loop by `WebSocketControlHandler`.
struct RealtimeSession {
    let hub: ChangeHub
    let authenticator: Authenticator
    let identity: Identity
    let since: Int64
    /// Its place among the user's sockets; evicted for a newer one → 4029.
    let ticket: RealtimeTicket
    let logger: Logger

    private var store: Store { hub.store }

    /// Serves the socket until it ends; its own close frame goes out last
    /// (none when the client left).
    func run(outbound: Outbound, channel: any Channel) async {
        let subscriber = hub.makeSubscriber(scope: identity.scope, session: identity.session)
        ticket.onEvict { subscriber.end() }
        channel.closeFuture.whenComplete { _ in subscriber.end() }
        let listeningFrom: Int64
        do {
            listeningFrom = try await hub.subscribe(subscriber)
        } catch {
            logger.warning("realtime: subscribing failed", metadata: ["error": "\(error)"])
            await close(outbound, .tryAgainLater)
            return
        }
        defer { hub.unsubscribe(subscriber) }
        let code: RealtimeCloseCode?
        do {
            code = try await send(to: outbound, from: subscriber, listeningFrom: listeningFrom)
        } catch is ChannelError, is NIOAsyncWriterError {
            code = nil  // the client left while a message was on its way
        } catch {
            logger.warning("realtime: serving the socket failed", metadata: ["error": "\(error)"])
            code = .tryAgainLater
        }
        if let code { await close(outbound, code) }
    }

    typealias Outbound = NIOAsyncChannelOutboundWriter<WebSocketFrame>

    /// The sending loop. Returns the close code that ends the connection (nil
    /// when the client left). The hub hands this socket every batch after
    /// `listeningFrom` that holds something it may see: entries it was not
    /// given were not for it.
    private func send(to outbound: Outbound, from subscriber: Subscriber,
                      listeningFrom: Int64) async throws -> RealtimeCloseCode? {
        let scope = identity.scope
        var cursor = since
        // The upgrade was admitted on the cached session state; a socket lives long, so it asks
        // the database unless the upgrade itself just did.
        guard try await authenticator.sessionIsActive(identity.session, maxAge: Self.upgradeCheckAge) else { return .sessionRevoked }
        do {
            // A cursor at the hub's own position has nothing to catch up (a device reconnecting
            // right after its sync, to a carrier others already listen to).
            if cursor != listeningFrom { cursor = try await catchUp(from: cursor, outbound) }
        } catch let error as AppError where error.code == .cursorExpired {
            return .cursorExpired
        } catch is SessionEnded {
            return .sessionRevoked
        }
        try await outbound.write(.text(FeedJSON.message(.ready, cursor: cursor)))
        while !Task.isCancelled {
            let next = await subscriber.next()
            if ticket.isEvicted { return .tooManyConnections }
            switch next {
            case .ended:
                return nil
            case .overflowed:
                return .tooSlow
            case .batches(let batches, let heartbeatDue):
                // Signed out (here, or on another instance that told this one): nothing more goes to the socket.
                if store.endedSessions.contains(identity.session) { return .sessionRevoked }
                for batch in batches where batch.last > cursor {
                    do {
                        if batch.previous > cursor && cursor < listeningFrom {
                            // A hole from before the hub listened for this socket: read it from the database.
                            cursor = try await catchUp(from: cursor, outbound)
                            guard batch.last > cursor else { continue }
                        }
                        let fresh = batch.entries.filter { $0.seq > cursor && $0.visible(to: scope) }
                        cursor = batch.last
                        if !fresh.isEmpty { try await write(fresh, cursor: cursor, outbound) }
                    } catch is SessionEnded {
                        return .sessionRevoked
                    }
                }
                if store.clock.now >= identity.expiresAt { return .tokenExpired }
                if heartbeatDue {
                    guard try await authenticator.sessionIsActive(identity.session) else { return .sessionRevoked }
                    try await outbound.write(.text(FeedJSON.message(.heartbeat, cursor: cursor)))
                }
            }
        }
        return nil
    }

    /// Sends everything visible after `cursor` from the database, page by
    /// page; returns the new cursor.
    private func catchUp(from cursor: Int64, _ outbound: Outbound) async throws -> Int64 {
        var cursor = cursor
        while true {
            let page = try await store.feed(since: cursor, limit: 500, identity.scope)
            cursor = page.cursor
            if !page.changes.isEmpty { try await write(page.changes, cursor: cursor, outbound) }
            if !page.hasMore { return cursor }
        }
    }

    /// Sends changes; throws `SessionEnded` after them when the driver's own
    /// record was among them (a deactivation, say) and their session is over.
    private func write(_ changes: [Store.FeedEntry], cursor: Int64, _ outbound: Outbound) async throws {
        try await outbound.write(.text(FeedJSON.message(.changes, changes: changes, cursor: cursor)))
        if let driver = identity.driver, changes.contains(where: { $0.entity == .driver && $0.id == driver.rawValue }),
           try await !authenticator.sessionIsActive(identity.session, maxAge: 0) {
            throw SessionEnded()
        }
    }

    private struct SessionEnded: Error {}

    /// How recent the session check of the upgrade must be for the socket to trust it.
    static let upgradeCheckAge: TimeInterval = 2

    /// Sends a close frame with an application code; `WebSocketControlHandler`
    /// completes the closing handshake.
    private func close(_ outbound: Outbound, _ code: RealtimeCloseCode) async {
        try? await outbound.write(.close(code))
    }
}

/// The request context of the WebSocket upgrade router.
struct RealtimeRequestContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Kept beside the context, not in it: the WebSocket router stores the
    /// context in this reference, so a context holding it would hold itself,
    /// and its connection, forever. Dropped when the connection closes.
    var webSocket: WebSocketHandlerReference<Self> { Self.references.value(for: channel) { .init() } }

    private static let references = PerConnection<WebSocketHandlerReference<RealtimeRequestContext>>()
}

extension Realtime {
    /// The upgrade router: only `GET /v1/realtime` with a valid token and
    /// cursor, and room under the caps, upgrades. The decision is recorded for
    /// the connection to act on (see `UpgradeDecisions`): the admitted socket
    /// to serve, or the reason for refusing.
    static func router(hub: ChangeHub, authenticator: Authenticator, capacity: RealtimeCapacity, decisions: UpgradeDecisions,
                       minimumAppVersion: AppVersion? = nil, logger: Logger) -> Router<RealtimeRequestContext> {
        let router = Router(context: RealtimeRequestContext.self)
        router.ws(RouterPath(Endpoint.realtime.routerPath)) { request, context in
            do {
                // An app too old for this server is told so here as on every API call (426).
                if let minimumAppVersion { try AppVersionMiddleware.check(request.headers, minimum: minimumAppVersion) }
                let identity = try await authenticator.authenticate(request, queryTokenAllowed: true)
                let since = try since(request)
                let ticket = RealtimeTicket()
                guard capacity.admit(ticket, for: identity, closingWith: context.channel) else {
                    throw AppError(429, .tooManyConnections, "This server holds as many realtime connections as it may; try again later.",
                                   retryAfter: 30)
                }
                let session = RealtimeSession(hub: hub, authenticator: authenticator, identity: identity, since: since,
                                              ticket: ticket, logger: logger)
                let channel = context.channel
                decisions.admit(for: channel) { outbound in await session.run(outbound: outbound, channel: channel) }
                return .upgrade([:])
            } catch {
                decisions.refuse(error as? AppError ?? unavailable, for: context.channel)
                return .dontUpgrade
            }
        } onUpgrade: { _, _, _ in
            // Not reached: the server channel serves an admitted socket itself (`GuardedServerChannel`).
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

    static let unavailable = AppError(503, .unavailable, "Realtime is not available right now; try again shortly.", retryAfter: 5)

    /// What a refused upgrade is told when the router never saw it: another
    /// path, or WebSocket headers NIO would not accept.
    static let notAnUpgrade = AppError(400, .invalidParameter,
                                       "Only GET /v1/realtime upgrades to a WebSocket (version 13, with Sec-WebSocket-Key).")

    static func since(_ request: Request) throws -> Int64 {
        guard let since = try? request.integer(.since) else {
            throw AppError(400, .invalidParameter, "Give since=<cursor> (an integer ≥ 0) from your last sync.", field: "since")
        }
        return since
    }
}

enum Realtime {}
