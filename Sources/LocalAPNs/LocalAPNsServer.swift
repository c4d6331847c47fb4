import Crypto
import Foundation
import Hummingbird
import HummingbirdHTTP2
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import SwiftASN1
import X509

/// A local server that speaks Apple's push provider API: HTTP/2 over TLS,
/// `POST /3/device/<token>`, ES256 provider tokens. It checks what APNs
/// checks (token signature, key id, team, age; topic, push type, priority,
/// expiration, apns-id, collapse id; payload size and shape) and answers the
/// way APNs does, or as a test scripts it per device token.
///
/// It makes its own provider key (the `.p8` a developer downloads) and a
/// self-signed TLS certificate for 127.0.0.1 that clients must trust.
public final class LocalAPNsServer: Sendable {
    public let keyID = "VRMXKEY001"
    public let teamID = "VRMXTEAM01"
    public let topic = "com.vroomx.driver"
    /// The provider signing key, PEM (PKCS#8), as in Apple's `.p8` file.
    public let providerKeyPEM: String
    /// The TLS certificate to trust, PEM.
    public let certificatePEM: String
    /// The port it listens on (or last listened on, once stopped).
    public var port: Int { boundPort.withLockedValue { $0 } }
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    private let tls: TLSConfiguration
    private let checks: ProtocolChecks
    private let state = NIOLockedValueBox(State())
    private let running = NIOLockedValueBox<Running?>(nil)
    private let boundPort = NIOLockedValueBox(0)

    struct Running {
        let task: Task<Void, any Error>
        let group: ServiceGroup
    }

    /// One answer the server gives instead of 200.
    public enum Reply: Sendable, Equatable {
        case ok
        case unregistered
        case badDeviceToken
        case deviceTokenNotForTopic
        case tooManyRequests(retryAfter: Int?)
        case internalServerError
        case serviceUnavailable

        var status: HTTPResponse.Status {
            switch self {
            case .ok: .ok
            case .unregistered: .gone
            case .badDeviceToken, .deviceTokenNotForTopic: .badRequest
            case .tooManyRequests: .tooManyRequests
            case .internalServerError: .internalServerError
            case .serviceUnavailable: .serviceUnavailable
            }
        }

        var reason: String {
            switch self {
            case .ok: ""
            case .unregistered: "Unregistered"
            case .badDeviceToken: "BadDeviceToken"
            case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
            case .tooManyRequests: "TooManyRequests"
            case .internalServerError: "InternalServerError"
            case .serviceUnavailable: "ServiceUnavailable"
            }
        }
    }

    /// A push as the server accepted it (it passed every check).
    public struct ReceivedPush: Sendable {
        public let deviceToken: String
        public let headers: [String: String]
        public let body: Data
        /// The provider token it came with.
        public let providerToken: String
        /// The client's address and port: one value per TCP connection.
        public let connection: String
        /// What the server answered.
        public let reply: Reply

        /// The payload as JSON.
        public var payload: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        public var aps: [String: Any] { payload["aps"] as? [String: Any] ?? [:] }
        public var badge: Int? { aps["badge"] as? Int }
    }

    struct State {
        var scripts: [String: [Reply]] = [:]
        var received: [ReceivedPush] = []
        var deliveredCount = 0
        /// Requests refused by the protocol checks, with the reason APNs would give.
        var violations: [String] = []
    }

    /// Makes the provider key and the TLS certificate; `start` listens.
    /// `now` is the time provider tokens are checked against.
    public init(now: @escaping @Sendable () -> Date = { Date() }) async throws {
        let signingKey = P256.Signing.PrivateKey()
        providerKeyPEM = signingKey.pemRepresentation
        let verifier = JWTKeyCollection()
        await verifier.add(ecdsa: try ES256PublicKey(pem: signingKey.publicKey.pemRepresentation))
        checks = ProtocolChecks(keyID: keyID, teamID: teamID, topic: topic, verifier: verifier, now: now)

        let tlsKey = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("127.0.0.1") }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(tlsKey.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600), notValidAfter: Date().addingTimeInterval(30 * 86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])), .dnsName("localhost")])
                try ExtendedKeyUsage([.serverAuth])
            },
            issuerPrivateKey: .init(tlsKey))
        certificatePEM = try certificate.serializeAsPEM().pemString
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(tlsKey.pemRepresentation.utf8), format: .pem)))
        tls.applicationProtocols = ["h2", "http/1.1"]
        self.tls = tls
    }

    static let eventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Made and listening on a free port.
    public static func started(now: @escaping @Sendable () -> Date = { Date() }) async throws -> LocalAPNsServer {
        let server = try await LocalAPNsServer(now: now)
        try await server.start()
        return server
    }

    /// Listens on 127.0.0.1 (`port` 0 picks a free one; a stopped server
    /// may start again on its old port).
    public func start(port: Int = 0) async throws {
        guard running.withLockedValue({ $0 == nil }) else { return }
        let router = Router(context: APNsRequestContext.self)
        router.post("/3/device/:token") { [checks, state] request, context in
            try await Self.handle(request, context, checks: checks, state: state)
        }
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "local-apns")
        logger.logLevel = .critical
        let app = Application(
            router: router, server: try .http2Upgrade(tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "local-apns"),
            onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) },
            // Its own thread, as a remote APNs would be: the sender's connection work is not measured on the same thread.
            eventLoopGroupProvider: .shared(Self.eventLoop),
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task { try await group.run() }
        var bound = 0
        for await value in ports { bound = value; break }
        boundPort.withLockedValue { $0 = bound }
        running.withLockedValue { $0 = Running(task: task, group: group) }
    }

    /// Stops listening (open connections are closed).
    public func stop() async {
        guard let current = running.withLockedValue({ value -> Running? in
            defer { value = nil }
            return value
        }) else { return }
        await current.group.triggerGracefulShutdown()
        _ = await current.task.result
    }

    /// The next answers for a device token, in order; after them, 200.
    public func script(_ deviceToken: String, _ replies: Reply...) {
        state.withLockedValue { $0.scripts[deviceToken, default: []].append(contentsOf: replies) }
    }

    public var received: [ReceivedPush] { state.withLockedValue { $0.received } }
    public var delivered: [ReceivedPush] { received.filter { $0.reply == .ok } }
    /// How many were answered 200 (cheap to poll).
    public var deliveredCount: Int { state.withLockedValue { $0.deliveredCount } }
    public var violations: [String] { state.withLockedValue { $0.violations } }
    /// Distinct TCP connections pushes arrived on.
    public var connections: Set<String> { Set(received.map(\.connection)) }

    static func handle(_ request: Request, _ context: APNsRequestContext, checks: ProtocolChecks,
                       state: NIOLockedValueBox<State>) async throws -> Response {
        let token = context.parameters.get("token") ?? ""
        let body = try await request.body.collect(upTo: 64 * 1024)
        let apnsID = request.headers[.init("apns-id")!] ?? UUID().uuidString
        let failure: (HTTPResponse.Status, String)?
        var providerToken = ""
        if !context.isHTTP2 {
            failure = (.badRequest, "HTTP2Required")
        } else {
            do {
                providerToken = try await checks.verify(request, token: token, body: body)
                failure = nil
            } catch let error as Refusal {
                failure = (error.status, error.reason)
            }
        }
        if let (status, reason) = failure {
            state.withLockedValue { $0.violations.append(reason) }
            return answer(status, reason: reason, apnsID: apnsID)
        }
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        let reply = state.withLockedValue { state -> Reply in
            let reply = state.scripts[token]?.isEmpty == false ? state.scripts[token]!.removeFirst() : .ok
            state.received.append(ReceivedPush(deviceToken: token, headers: headers, body: Data(body.readableBytesView),
                                               providerToken: providerToken, connection: context.connection, reply: reply))
            if reply == .ok { state.deliveredCount += 1 }
            return reply
        }
        if reply == .ok { return answer(.ok, reason: nil, apnsID: apnsID) }
        var response = answer(reply.status, reason: reply.reason, apnsID: apnsID, timestamp: reply == .unregistered)
        if case .tooManyRequests(let after?) = reply { response.headers[.retryAfter] = String(after) }
        return response
    }

    static func answer(_ status: HTTPResponse.Status, reason: String?, apnsID: String, timestamp: Bool = false) -> Response {
        var headers = HTTPFields()
        headers[.init("apns-id")!] = apnsID
        guard let reason else { return Response(status: status, headers: headers) }
        headers[.contentType] = "application/json"
        let json = timestamp
            ? #"{"reason":"\#(reason)","timestamp":\#(Int(Date().timeIntervalSince1970 * 1000))}"#
            : #"{"reason":"\#(reason)"}"#
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: json)))
    }
}

/// Knows which TCP connection and HTTP version a request came on.
struct APNsRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let connection: String
    let isHTTP2: Bool

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        connection = source.channel.remoteAddress?.description ?? "unknown"
        // An HTTP/2 stream's parent is its connection; an HTTP/1 connection's parent is the listening socket.
        isHTTP2 = source.channel.parent?.parent != nil
    }
}

struct Refusal: Error {
    let status: HTTPResponse.Status
    let reason: String
}

/// The request checks APNs makes, with its reasons.
struct ProtocolChecks: Sendable {
    let keyID: String
    let teamID: String
    let topic: String
    let verifier: JWTKeyCollection
    let now: @Sendable () -> Date
    let verified = NIOLockedValueBox<[String: ProviderClaims]>([:])

    struct ProviderClaims: JWTPayload {
        let iss: IssuerClaim
        let iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    struct Header: Decodable {
        let alg: String?
        let kid: String?
    }

    /// Returns the provider token when every check passes.
    func verify(_ request: Request, token: String, body: ByteBuffer) async throws -> String {
        func refuse(_ status: HTTPResponse.Status, _ reason: String) -> Refusal { Refusal(status: status, reason: reason) }
        func header(_ name: String) -> String? { request.headers[.init(name)!] }

        guard token.count >= 64, token.count % 2 == 0, token.allSatisfy(\.isHexDigit) else { throw refuse(.badRequest, "BadDeviceToken") }
        guard let authorization = header("authorization") else { throw refuse(.forbidden, "MissingProviderToken") }
        guard authorization.lowercased().hasPrefix("bearer ") else { throw refuse(.forbidden, "InvalidProviderToken") }
        let jwt = String(authorization.dropFirst("bearer ".count))
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URL: String(parts[0])),
              let jwtHeader = try? JSONDecoder().decode(Header.self, from: headerData),
              jwtHeader.alg == "ES256", jwtHeader.kid == keyID else { throw refuse(.forbidden, "InvalidProviderToken") }
        // Like APNs, the signature is checked once per token, then remembered.
        let claims: ProviderClaims
        if let known = verified.withLockedValue({ $0[jwt] }) {
            claims = known
        } else {
            do {
                claims = try await verifier.verify(jwt, as: ProviderClaims.self)
            } catch {
                throw refuse(.forbidden, "InvalidProviderToken")
            }
            verified.withLockedValue { $0[jwt] = claims }
        }
        guard claims.iss.value == teamID else { throw refuse(.forbidden, "InvalidProviderToken") }
        let age = now().timeIntervalSince(claims.iat.value)
        guard age < 3600 else { throw refuse(.forbidden, "ExpiredProviderToken") }
        guard age > -60 else { throw refuse(.forbidden, "InvalidProviderToken") }

        guard let requestTopic = header("apns-topic") else { throw refuse(.badRequest, "MissingTopic") }
        guard requestTopic == topic else { throw refuse(.badRequest, "TopicDisallowed") }
        guard let pushType = header("apns-push-type"), ["alert", "background"].contains(pushType) else {
            throw refuse(.badRequest, "InvalidPushType")
        }
        if let priority = header("apns-priority"), !["5", "10"].contains(priority) { throw refuse(.badRequest, "BadPriority") }
        if let expiration = header("apns-expiration"), Int(expiration) == nil { throw refuse(.badRequest, "BadExpirationDate") }
        if let id = header("apns-id"), UUID(uuidString: id) == nil { throw refuse(.badRequest, "BadMessageId") }
        if let collapse = header("apns-collapse-id"), collapse.utf8.count > 64 { throw refuse(.badRequest, "BadCollapseId") }

        guard body.readableBytes > 0 else { throw refuse(.badRequest, "PayloadEmpty") }
        guard body.readableBytes <= 4096 else { throw refuse(.contentTooLarge, "PayloadTooLarge") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
              let aps = object["aps"] as? [String: Any] else { throw refuse(.badRequest, "BadPayload") }
        if pushType == "alert", aps["alert"] == nil { throw refuse(.badRequest, "BadPayload") }
        return jwt
    }
}

extension Data {
    init?(base64URL: String) {
        var text = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        self.init(base64Encoded: text)
    }
}
