import Foundation
import VroomXModels

/// What can go wrong talking to the server.
public enum APIError: Error, Sendable, CustomStringConvertible {
    /// No answer: offline, or the server is unreachable. Retry later.
    case unreachable(String)
    /// No connection could be made at all: the request never left the
    /// device (so nothing of it can have been applied).
    case notConnected(String)
    /// The server was reached but answered too late: it is slow, and the
    /// device is online. Retried like no answer (the request may have been
    /// applied), but never shown as "offline".
    case slow(String)
    /// The server answered with an error.
    case server(status: Int, body: APIErrorBody)
    /// The answer could not be read.
    case unreadable(String)
    /// There is no signed-in session to make the call with.
    case notSignedIn

    public var code: ErrorCode? {
        if case .server(_, let body) = self { return body.code }
        return nil
    }

    public var status: Int? {
        if case .server(let status, _) = self { return status }
        return nil
    }

    /// No answer at all: the server was not reached (no route, refused,
    /// timed out before answering).
    public var isUnreachable: Bool {
        switch self {
        case .unreachable, .notConnected, .slow: return true
        case .server, .unreadable, .notSignedIn: return false
        }
    }

    /// Certainly never reached the server.
    public var neverSent: Bool {
        if case .notConnected = self { return true }
        return false
    }

    /// When the server said to come back (`Retry-After`), in seconds.
    public var retryAfter: Int? {
        if case .server(_, let body) = self { return body.retryAfter }
        return nil
    }

    /// Worth retrying as is: no answer, rate limited, or a server failure.
    public var isTransient: Bool {
        switch self {
        case .unreachable, .notConnected, .slow: return true
        case .server(let status, _): return status >= 500 || status == 429
        case .unreadable, .notSignedIn: return false
        }
    }

    /// The server refused the session itself: only this signs a driver out.
    public var endsSession: Bool {
        guard case .server(401, let body) = self else { return false }
        return [.invalidRefreshToken, .refreshTokenReused, .sessionRevoked, .invalidToken].contains(body.code)
    }

    public var description: String {
        switch self {
        case .unreachable, .notConnected: return "You're offline — the server can't be reached."
        case .slow: return "The server is slow to answer; retrying."
        case .server(_, let body): return body.message
        case .unreadable(let detail): return "Unexpected answer from the server (\(detail))."
        case .notSignedIn: return "You are signed out."
        }
    }
}
