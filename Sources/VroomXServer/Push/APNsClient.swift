import AsyncHTTPClient
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import VroomXSecurity

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

/// Where pushes are delivered. The push service sees only this; the one
/// implementation is Apple's provider API (`APNsClient`), pointed at Apple
/// in production and at the local APNs-protocol server in tests.
protocol PushProvider: Sendable {
    /// Opens what pushes are sent over for as long as `body` runs.
    func withSender(_ body: (any PushSender) async -> Void) async
}

/// Sends one push over an open provider connection.
protocol PushSender: Sendable {
    func send(_ push: PushRequest) async -> PushOutcome
}

/// Apple's HTTP/2 provider API with token authentication. All pushes share
/// one HTTP/2 connection (streams are multiplexed); the ES256 provider token
/// is reused for 50 minutes (Apple asks for at least 20 and at most 60).
///
/// The HTTP client is opened by `withConnection` for as long as the push
/// service runs, so a server that never starts it holds no connection.
final class APNsClient: PushProvider {
    let configuration: APNsConfiguration
    let clock: Clock
    private let signingKey: P256.Signing.PrivateKey
    private let httpConfiguration: HTTPClient.Configuration
    private let token = NIOLockedValueBox<(value: String, issuedAt: Date)?>(nil)
    static let tokenLifetime: TimeInterval = 50 * 60

    /// Fails at start on a key or root certificate that cannot be read.
    init(configuration: APNsConfiguration, clock: Clock) async throws {
        self.configuration = configuration
        self.clock = clock
        do {
            signingKey = try P256.Signing.PrivateKey(pemRepresentation: configuration.privateKeyPEM)
        } catch {
            throw ConfigurationError("The APNs key is not a valid P-256 (.p8) private key.")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let root = configuration.extraRootCertificatePEM {
            tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(root.utf8)))]
        }
        var settings = HTTPClient.Configuration(tlsConfiguration: tls)
        settings.httpVersion = .automatic // HTTP/2 through ALPN, as APNs requires
        settings.timeout.connect = .seconds(10)
        // A failed connection fails the pushes waiting for it at once; the
        // queue retries them with its own backoff.
        settings.connectionPool.retryConnectionEstablishment = false
        httpConfiguration = settings
    }

    /// Runs `body` with the HTTP client open, and closes it afterwards.
    func withSender(_ body: (any PushSender) async -> Void) async {
        await withConnection { await body($0) }
    }

    func withConnection<T: Sendable>(_ body: (APNsConnection) async throws -> T) async rethrows -> T {
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        let result: T
        do {
            result = try await body(APNsConnection(client: self, http: http))
        } catch {
            try? await http.shutdown()
            throw error
        }
        try? await http.shutdown()
        return result
    }

    struct TokenHeader: Encodable { let alg = "ES256"; let kid: String }
    struct TokenClaims: Encodable { let iss: String; let iat: Int }

    /// The provider token (a JWT signed with the .p8 key), renewed once it is
    /// 50 minutes old. Made under the lock, so concurrent pushes share one.
    func providerToken() throws -> String {
        try token.withLockedValue { current in
            let now = clock.now
            if let current, now.timeIntervalSince(current.issuedAt) < Self.tokenLifetime { return current.value }
            let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
            let encoder = JSONEncoder()
            let header = SecureToken.base64URL(Array(try encoder.encode(TokenHeader(kid: configuration.keyID))))
            let claims = SecureToken.base64URL(Array(try encoder.encode(
                TokenClaims(iss: configuration.teamID, iat: Int(issuedAt.timeIntervalSince1970)))))
            let signature = SecureToken.base64URL(Array(try signingKey.signature(for: Data("\(header).\(claims)".utf8)).rawRepresentation))
            let value = "\(header).\(claims).\(signature)"
            current = (value, issuedAt)
            return value
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

/// The open HTTP/2 connection pushes are sent over.
struct APNsConnection: PushSender {
    let client: APNsClient
    let http: HTTPClient

    func send(_ push: PushRequest) async -> PushOutcome {
        let configuration = client.configuration
        do {
            var request = HTTPClientRequest(url: "\(configuration.baseURL)/3/device/\(push.deviceToken)")
            request.method = .POST
            request.headers.add(name: "authorization", value: "bearer \(try client.providerToken())")
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
            return client.outcome(status: Int(response.status.code), body: body, retryAfter: response.headers.first(name: "retry-after"))
        } catch {
            return .retry("\(error)", after: nil)
        }
    }
}

