import Foundation
import JWTKit
import NIOConcurrencyHelpers
import VroomXModels

/// Issues and verifies access tokens: HS256 JWTs that carry who the caller
/// is, valid for an hour. The signing key comes from `VROOMX_JWT_SECRET` or
/// a key file kept in the data directory.
struct TokenService: Sendable {
    let keys: JWTKeyCollection
    let lifetime: TimeInterval
    let clock: Clock
    static let issuer = "vroomx"
    /// Tokens already verified, keyed by the whole signed token: a client
    /// sends the same token for an hour, and parsing and checking it again
    /// on every request was a fifth of a list request's cost. Expiry is
    /// still checked on every use.
    private let verified = NIOLockedValueBox<[String: (identity: Identity, expiresAt: Date)]>([:])
    private let verifiedLimit = 20_000

    init(secret: [UInt8], lifetime: TimeInterval, clock: Clock) async {
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(key: .init(data: secret)), digestAlgorithm: .sha256)
        self.lifetime = lifetime
        self.clock = clock
    }

    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        var tid: String
        var role: String
        var sid: String
        var did: String?

        // Expiry is checked against the server's clock in `verify(_:)`.
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    func issue(user: User, driver: ID<Driver>?, session: ID<Session>) async throws -> (token: String, expiresAt: Date) {
        let now = clock.now
        let expiresAt = now.addingTimeInterval(lifetime)
        let claims = Claims(sub: .init(value: user.id.rawValue), iss: .init(value: Self.issuer), iat: .init(value: now),
                            exp: .init(value: expiresAt), tid: user.tenantID.rawValue, role: user.role.rawValue,
                            sid: session.rawValue, did: driver?.rawValue)
        return (try await keys.sign(claims), expiresAt)
    }

    func verify(_ token: String) async throws -> Identity {
        if let cached = verified.withLockedValue({ $0[token] }) {
            guard cached.expiresAt > clock.now else {
                throw AppError(401, .tokenExpired, "The access token has expired; refresh it.")
            }
            return cached.identity
        }
        let claims: Claims
        do {
            claims = try await keys.verify(token, as: Claims.self)
        } catch {
            throw AppError(401, .invalidToken, "The access token is not valid.")
        }
        // A driver's token always names the driver record: without it, nothing could scope the driver's queries.
        guard claims.iss.value == Self.issuer, let user = ID<User>(claims.sub.value), let tenant = ID<Tenant>(claims.tid),
              let role = UserRole(rawValue: claims.role), let session = ID<Session>(claims.sid),
              role != .driver || claims.did.flatMap(ID<Driver>.init) != nil else {
            throw AppError(401, .invalidToken, "The access token is not valid.")
        }
        guard claims.exp.value > clock.now else {
            throw AppError(401, .tokenExpired, "The access token has expired; refresh it.")
        }
        let identity = Identity(user: user, tenant: tenant, role: role, session: session, driver: claims.did.flatMap(ID<Driver>.init),
                                expiresAt: claims.exp.value)
        verified.withLockedValue { cache in
            if cache.count >= verifiedLimit { cache.removeAll(keepingCapacity: true) }
            cache[token] = (identity, claims.exp.value)
        }
        return identity
    }
}
