import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

public struct HTTPRequestData: Sendable {
    public init(method: String, url: String, headers: [(String, String)], body: Data?) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: Data?
}

public struct HTTPResponseData: Sendable {
    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var status: Int
    public var headers: [String: String]
    public var body: Data
}

/// Sends one HTTP request. The real implementation is `AsyncHTTPTransport`;
/// tests wrap it to simulate a network that loses answers.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData
}

/// The transport could not reach the server or got no answer: the device is
/// offline or the server is down. Never a reason to sign the driver out.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// The server was reached but did not answer in time: it is slow, not
    /// gone, and the device is not offline.
    public let answeredLate: Bool
    /// No connection was ever made (refused, no route, the connection
    /// timed out): the request certainly never reached the server.
    public let neverSent: Bool
    public init(description: String, answeredLate: Bool = false, neverSent: Bool = false) {
        self.description = description
        self.answeredLate = answeredLate
        self.neverSent = neverSent
    }

    /// Whether an error from the HTTP client means no connection was made.
    static func isConnectFailure(_ error: any Error) -> Bool {
        if let http = error as? HTTPClientError, http == .connectTimeout { return true }
        if error is NIOConnectionError { return true }
        if let channel = error as? ChannelError, case .connectTimeout = channel { return true }
        if let io = error as? IOError { return [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, ENETDOWN].contains(io.errnoCode) }
        return false
    }
}

/// HTTP over AsyncHTTPClient (SwiftNIO; works on Linux and Apple platforms).
public struct AsyncHTTPTransport: HTTPTransport {
    let client: HTTPClient
    let timeout: TimeAmount
    let maxResponseBytes: Int

    /// A client for a device that is often offline: a connection that cannot
    /// be made fails at once (after at most 5 s) instead of being retried
    /// until the request's deadline, so the app learns it is offline quickly
    /// and its own backoff decides when to try again.
    public static let deviceClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.idleTimeout = .seconds(30)
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public init(client: HTTPClient = deviceClient, timeout: TimeAmount = .seconds(20), maxResponseBytes: Int = 64 << 20) {
        self.client = client
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }

    public func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        do {
            let response = try await client.execute(outgoing, timeout: timeout)
            let body = try await response.body.collect(upTo: maxResponseBytes)
            var headers: [String: String] = [:]
            for header in response.headers { headers[header.name.lowercased()] = header.value }
            return HTTPResponseData(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView))
        } catch {
            // A connection that could not be made fails first (5 s): the deadline passing means one was made
            // and the answer was late.
            let late = (error as? HTTPClientError).map { [.deadlineExceeded, .readTimeout].contains($0) } ?? false
            throw TransportError(description: "\(error)", answeredLate: late, neverSent: TransportError.isConnectFailure(error))
        }
    }
}
