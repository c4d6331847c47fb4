/// What the realtime socket (`GET /v1/realtime?since=N`) sends, one JSON
/// text frame each:
///
/// - `{"type":"changes","changes":[…],"cursor":N}` — changes the caller may
///   see, in order; store `cursor` once they are applied.
/// - `{"type":"ready","cursor":N}` — everything missed since `since` has
///   been sent; from now on changes arrive as they commit.
/// - `{"type":"heartbeat","cursor":N}` — about every 25 s, so idle mobile
///   connections stay open (protocol pings are sent as well).
public struct RealtimeMessage: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case changes
        case ready
        case heartbeat
    }

    public var type: Kind
    public var changes: [Change]?
    public var cursor: Int64

    public init(type: Kind, changes: [Change]? = nil, cursor: Int64) {
        self.type = type
        self.changes = changes
        self.cursor = cursor
    }
}

/// Close codes of the realtime socket, and what a client does about each.
public enum RealtimeCloseCode: UInt16, Sendable, CaseIterable {
    /// Refresh the access token, then reconnect with the same cursor.
    case tokenExpired = 4001
    /// The session ended (logout elsewhere, revoked): sign in again.
    case sessionRevoked = 4003
    /// The socket could not keep up; reconnect from the last cursor.
    case tooSlow = 4008
    /// The user opened more sockets than the server allows; this one (the
    /// oldest) gave way to a newer one. Reconnect only after a backoff.
    case tooManyConnections = 4029
    /// The request was malformed (e.g. `since` is not a number).
    case badRequest = 4400
    /// The cursor is older than the history the server keeps: re-snapshot
    /// with `GET /v1/sync?since=0`.
    case cursorExpired = 4410
    /// The server is shutting down; reconnect (to another instance).
    case goingAway = 1001
    /// The server cannot serve the socket right now (its database failed):
    /// reconnect after a backoff.
    case tryAgainLater = 1013

    /// The reason sent with the code, for people reading logs.
    public var reason: String {
        switch self {
        case .tokenExpired: return "token_expired"
        case .sessionRevoked: return "session_revoked"
        case .tooSlow: return "too_slow"
        case .tooManyConnections: return "too_many_connections"
        case .badRequest: return "bad_request"
        case .cursorExpired: return "cursor_expired"
        case .goingAway: return "going_away"
        case .tryAgainLater: return "try_again_later"
        }
    }
}
