import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// One push to one device.
struct PushRequest: Sendable {
    let id: String
    let deviceToken: String
    let payload: String
    let priority: Int
    let collapseID: String?
    let expiresAt: Date
}

/// What APNs said about a push.
enum PushOutcome: Sendable, Equatable {
    case delivered
    /// The token is dead (uninstalled, or for another app): forget it.
    case invalidToken(String)
    /// Try again later (rate limit, server trouble, connection lost).
    case retry(String, after: TimeInterval?)
    /// Will never work as sent (a bug or misconfiguration); logged.
    case rejected(String)
}

/// Apple's HTTP/2 provider API with token authentication. All pushes share
/// one HTTP/2 connection (streams are multiplexed); the ES256 provider token
/// is reused for 50 minutes (Apple asks for at least 20 and at most 60).
final class APNsClient: Sendable {
    let configuration: APNsConfiguration
    let http: HTTPClient
    let clock: Clock
    let logger: Logger
    private let keys: JWTKeyCollection
    private let token = NIOLockedValueBox<(value: String, issuedAt: Date)?>(nil)
    static let tokenLifetime: TimeInterval = 50 * 60

    init(configuration: APNsConfiguration, clock: Clock, logger: Logger) async throws {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: configuration.privateKeyPEM), kid: JWKIdentifier(string: configuration.keyID))
        var tls = TLSConfiguration.makeClientConfiguration()
        if let root = configuration.extraRootCertificatePEM {
            tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(root.utf8)))]
        }
        var settings = HTTPClient.Configuration(tlsConfiguration: tls)
        settings.httpVersion = .automatic // HTTP/2 through ALPN, as APNs requires
        settings.timeout.connect = .seconds(10)
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
    }

    func shutdown() async {
        try? await http.shutdown()
    }

    struct ProviderClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// The provider token, renewed once it is 50 minutes old.
    func providerToken(forceNew: Bool = false) async throws -> String {
        let now = clock.now
        if !forceNew, let current = token.withLockedValue({ $0 }), now.timeIntervalSince(current.issuedAt) < Self.tokenLifetime {
            return current.value
        }
        let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let value = try await keys.sign(ProviderClaims(iss: .init(value: configuration.teamID), iat: .init(value: issuedAt)),
                                        kid: JWKIdentifier(string: configuration.keyID))
        token.withLockedValue { $0 = (value, issuedAt) }
        return value
    }

    func send(_ push: PushRequest) async -> PushOutcome {
        do {
            var request = HTTPClientRequest(url: "\(configuration.baseURL)/3/device/\(push.deviceToken)")
            request.method = .POST
            request.headers.add(name: "authorization", value: "bearer \(try await providerToken())")
            request.headers.add(name: "apns-topic", value: configuration.topic)
            request.headers.add(name: "apns-push-type", value: "alert")
            request.headers.add(name: "apns-priority", value: String(push.priority))
            request.headers.add(name: "apns-expiration", value: String(Int(push.expiresAt.timeIntervalSince1970)))
            request.headers.add(name: "apns-id", value: push.id)
            if let collapse = push.collapseID { request.headers.add(name: "apns-collapse-id", value: collapse) }
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: push.payload))
            let response = try await http.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 64 * 1024)
            return outcome(status: Int(response.status.code), body: body, retryAfter: response.headers.first(name: "retry-after"))
        } catch {
            return .retry("\(error)", after: nil)
        }
    }

    func outcome(status: Int, body: ByteBuffer, retryAfter: String?) -> PushOutcome {
        if status == 200 { return .delivered }
        let reason = (try? JSONDecoder().decode(Reason.self, from: Data(body.readableBytesView)))?.reason ?? "HTTP \(status)"
        switch (status, reason) {
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
            return .invalidToken(reason)
        case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"):
            token.withLockedValue { $0 = nil }
            return .retry(reason, after: nil)
        case (429, _), (500...599, _):
            return .retry(reason, after: retryAfter.flatMap(TimeInterval.init))
        default:
            return .rejected(reason)
        }
    }

    struct Reason: Decodable { let reason: String }
}
