import Foundation
import Hummingbird
import NIOCore
import VroomXModels

/// Who is calling, from a verified access token.
public struct Identity: Sendable, Hashable {
    public let user: ID<User>
    public let tenant: ID<Tenant>
    public let role: UserRole
    public let session: ID<Session>
    /// The driver record linked to the user, for drivers.
    public let driver: ID<Driver>?
    /// When the access token stops being valid.
    public let expiresAt: Date

    /// What this caller's queries are limited to.
    public var scope: Scope {
        if role == .driver, let driver { return .driver(tenant: tenant, driver: driver) }
        return .dispatch(tenant: tenant)
    }
}

/// The request context: the identity is a typed field, filled in by the
/// route wrapper for endpoints that require sign-in.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: Identity?
    /// The peer's IP address, for per-client rate limits.
    public let peerAddress: String?
    /// The connection the request came on (a long-lived stream watches it).
    let connection: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
        connection = source.channel
    }

    /// The identity of a signed-in caller. Only endpoints declared with an
    /// access level other than `anyone` reach their handler, so a missing
    /// identity here is a programming error reported as 401.
    public func caller() throws -> Identity {
        guard let identity else { throw AppError(401, .missingToken, "Sign in first.") }
        return identity
    }
}
