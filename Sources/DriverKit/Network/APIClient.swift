import Foundation
import VroomXModels

/// Calls the VroomX API by shared `Endpoint`: attaches the access token,
/// refreshes it once when the server says it expired, and tells the network
/// monitor what each call saw.
public struct APIClient: Sendable {
    public let baseURL: String
    let transport: any HTTPTransport
    let credentials: CredentialStore
    let network: any NetworkMonitor
    /// Learns the server's time from every answer.
    let serverClock: ServerClock

    init(baseURL: String, transport: any HTTPTransport, credentials: CredentialStore, network: any NetworkMonitor,
         serverClock: ServerClock) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.transport = transport
        self.credentials = credentials
        self.network = network
        self.serverClock = serverClock
    }

    public func send<Response: Decodable>(_ endpoint: Endpoint, _ parameters: String..., query: String? = nil,
                                          body: (any Encodable & Sendable)? = nil, headers: [(String, String)] = [],
                                          as type: Response.Type = Response.self) async throws -> Response {
        try Self.decode(Response.self, try await call(endpoint, parameters, query: query, body: body, headers: headers))
    }

    /// For endpoints that answer 204.
    public func send(_ endpoint: Endpoint, _ parameters: String..., body: (any Encodable & Sendable)? = nil,
                     headers: [(String, String)] = []) async throws {
        let response = try await call(endpoint, parameters, query: nil, body: body, headers: headers)
        try Self.check(response)
    }

    /// A file the server answers with (a statement PDF), its bytes as sent.
    public func download(_ endpoint: Endpoint, _ parameters: String...) async throws -> Data {
        let response = try await call(endpoint, parameters, query: nil, body: nil, headers: [])
        try Self.check(response)
        return response.body
    }

    /// A feed page, keeping each row's JSON as the server sent it.
    func syncPage(query: String) async throws -> SyncPage {
        let response = try await call(.sync, [], query: query, body: nil, headers: [])
        try Self.check(response)
        do {
            return try await SyncPage.decode(response.body, decoder: CacheJSON.decoder)
        } catch {
            throw APIError.unreadable("\(error)")
        }
    }

    func call(_ endpoint: Endpoint, _ parameters: [String], query: String?, body: (any Encodable & Sendable)?,
              headers: [(String, String)]) async throws -> HTTPResponseData {
        var request = HTTPRequestData(method: endpoint.method.rawValue,
                                      url: baseURL + endpoint.path(parameters) + (query.map { "?" + $0 } ?? ""),
                                      headers: headers, body: nil)
        if let body {
            request.body = Data(try WireJSON.encode(body))
            request.headers.append(("Content-Type", "application/json"))
        }
        return try await authorized(request, access: endpoint.access)
    }

    /// A request with its own headers and bytes (resumable uploads), to an
    /// endpoint's path or a URL the server gave.
    func callRaw(_ endpoint: Endpoint, _ parameters: [String], location: String? = nil, headers: [(String, String)],
                 body: Data?) async throws -> HTTPResponseData {
        let url = location.map { $0.hasPrefix("http") ? $0 : baseURL + $0 } ?? baseURL + endpoint.path(parameters)
        return try await authorized(HTTPRequestData(method: endpoint.method.rawValue, url: url, headers: headers, body: body),
                                    access: endpoint.access)
    }

    /// Sends with the access token, refreshing it once if the server says it expired.
    private func authorized(_ request: HTTPRequestData, access: Endpoint.Access) async throws -> HTTPResponseData {
        guard access != .anyone else { return try await deliver(request) }
        let token = try await credentials.accessToken()
        var authorized = request
        authorized.headers.append(("Authorization", "Bearer \(token)"))
        var response = try await deliver(authorized)
        if response.status == 401, (try? Self.decodeError(response))?.code == .tokenExpired {
            // The server's clock says the token expired: refresh once and try again.
            var retry = request
            retry.headers.append(("Authorization", "Bearer \(try await credentials.refresh().accessToken)"))
            response = try await deliver(retry)
        }
        if response.status == 401, let body = try? Self.decodeError(response) {
            await credentials.rejected(accessToken: token, because: .server(status: 401, body: body))
        }
        return response
    }

    private func deliver(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        do {
            let response = try await transport.send(request)
            network.reportSuccess()
            serverClock.observe(dateHeader: response.headers["date"])
            return response
        } catch let error as TransportError where error.answeredLate {
            // Reached, but slow: the device is online, the server busy.
            network.reportSuccess()
            throw APIError.slow(error.description)
        } catch let error as TransportError where error.neverSent {
            network.reportFailure()
            throw APIError.notConnected(error.description)
        } catch {
            network.reportFailure()
            throw APIError.unreachable("\(error)")
        }
    }

    static func check(_ response: HTTPResponseData) throws {
        guard (200..<300).contains(response.status) else {
            guard let body = try? decodeError(response) else {
                throw APIError.unreadable("status \(response.status)")
            }
            throw APIError.server(status: response.status, body: body)
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ response: HTTPResponseData) throws -> T {
        try check(response)
        do {
            return try CacheJSON.decoder.decode(T.self, from: response.body)
        } catch {
            throw APIError.unreadable("\(error)")
        }
    }

    static func decodeError(_ response: HTTPResponseData) throws -> APIErrorBody {
        try CacheJSON.decoder.decode(APIErrorResponse.self, from: response.body).error
    }

    /// Whether the server answers at all (the network monitor's probe).
    public static func probe(baseURL: String, transport: any HTTPTransport) async -> Bool {
        (try? await transport.send(HTTPRequestData(method: "GET", url: baseURL + Endpoint.health.path(), headers: [], body: nil)))
            .map { $0.status == 200 } ?? false
    }
}
