import NIOCore
import NIOWebSocket

/// What the upgrade router decided for a connection's WebSocket upgrade,
/// kept until the server channel acts on it:
///
/// - a refusal, answered with its JSON error (NIO does not hand a refused
///   upgrade request on to the HTTP handlers, so the router cannot answer it);
/// - an admitted socket, which the server channel serves itself once the
///   upgrade is done, in the connection's own task and without the WebSocket
///   library's handler: its task group, state machine and call depth would
///   stay with every idle socket (`WebSocketControlHandler` already speaks
///   the protocol's control side).
final class UpgradeDecisions: Sendable {
    /// Serves an admitted socket: writes frames until it is done, its own
    /// close frame last (or none when the client left).
    typealias Socket = @Sendable (NIOAsyncChannelOutboundWriter<WebSocketFrame>) async -> Void

    private enum Decision: Sendable {
        case refused(AppError)
        case admitted(Socket)
    }

    private let decisions = PerConnection<Decision>()

    func refuse(_ refusal: AppError, for channel: any Channel) {
        decisions.set(.refused(refusal), for: channel)
    }

    func admit(for channel: any Channel, _ socket: @escaping Socket) {
        decisions.set(.admitted(socket), for: channel)
    }

    /// The refusal recorded for the connection, taken.
    func refusal(for channel: any Channel) -> AppError? {
        guard case .refused(let refusal)? = decisions.take(for: channel) else { return nil }
        return refusal
    }

    /// The admitted socket recorded for the connection, taken.
    func admitted(for channel: any Channel) -> Socket? {
        guard case .admitted(let socket)? = decisions.take(for: channel) else { return nil }
        return socket
    }
}
