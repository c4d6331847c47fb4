import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import VroomXModels
import VroomXServer

/// The real server application on a fresh database, with a clock the test
/// moves and a mailbox it reads.
public struct TestServer: Sendable {
    public let backend: TestBackend
    public let services: ServerServices
    public let clock: ManualClock
    public let mailbox: DevelopmentMailbox

    /// - Parameter databaseURL: for PostgreSQL, a database of the test's own
    ///   (a `PostgresCluster`); by default a new database on the shared test server.
    public static func make(_ backend: TestBackend, databaseURL: String? = nil, clock: ManualClock = ManualClock(Date()),
                            configure: @Sendable (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
        var configuration = try await backend.freshConfiguration(databaseURL: databaseURL)
        let mailbox = DevelopmentMailbox(logger: .init(label: "test-mailbox"))
        configuration.clock = clock.clock
        configuration.mailer = mailbox
        configure(&configuration)
        let services = try await ServerServices.make(configuration)
        return TestServer(backend: backend, services: services, clock: clock, mailbox: mailbox)
    }

    public var store: Store { services.store }

    /// Runs the application for the test body (in-process router by default,
    /// `.live` for real sockets) and shuts it down afterwards.
    /// The hourly upkeep stays off unless asked for: tests run each step
    /// themselves, and one running at start-up would race what they check.
    public func run<T: Sendable>(_ setup: TestingSetup = .router, upkeep: Bool = false,
                                 _ body: @Sendable (TestAPI) async throws -> T) async throws -> T {
        let app = buildApplication(services, upkeep: upkeep)
        return try await app.test(setup) { client in try await body(TestAPI(client: client)) }
    }

    /// The newest sign-in code mailed to an address (codes are mailed in the
    /// background); with `after`, only one mailed after that many messages
    /// to the address (not an earlier code still in the mailbox).
    public func code(for email: String, after earlier: Int = 0) async throws -> String {
        try await mailbox.code(for: email, after: earlier)
    }

    /// Sign-in codes mailed to an address so far.
    public func codeCount(to email: String) -> Int { mailbox.codeCount(to: email) }
}

/// JSON calls against the application under test, by shared `Endpoint`.
public struct TestAPI: Sendable {
    public let client: any TestClientProtocol

    public var port: Int? { client.port }

    public func call(_ endpoint: Endpoint, _ parameters: String..., query: String? = nil, json: (any Encodable & Sendable)? = nil,
                     body: String? = nil, bytes: [UInt8]? = nil, token: String? = nil,
                     headers: [String: String] = [:]) async throws -> APIResponse {
        try await call(endpoint, parameters: parameters, query: query, json: json, body: body, bytes: bytes, token: token, headers: headers)
    }

    public func call(_ endpoint: Endpoint, parameters: [String], query: String? = nil, json: (any Encodable & Sendable)? = nil,
                     body: String? = nil, bytes: [UInt8]? = nil, token: String? = nil,
                     headers: [String: String] = [:]) async throws -> APIResponse {
        var fields = HTTPFields()
        if let token { fields[.authorization] = "Bearer \(token)" }
        var buffer: ByteBuffer?
        if let json {
            fields[.contentType] = "application/json"
            buffer = ByteBuffer(bytes: try WireJSON.encoder().encode(json))
        } else if let body {
            fields[.contentType] = "application/json"
            buffer = ByteBuffer(string: body)
        } else if let bytes {
            fields[.contentType] = "application/octet-stream"
            buffer = ByteBuffer(bytes: bytes)
        }
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        let path = endpoint.path(parameters)
        let uri = query.map { path + "?" + $0 } ?? path
        let response = try await client.executeRequest(uri: uri, method: HTTPRequest.Method(rawValue: endpoint.method.rawValue)!,
                                                       headers: fields, body: buffer)
        return APIResponse(status: Int(response.status.code), headers: response.headers, body: Data(response.body.readableBytesView))
    }

    /// Any path, for requests the route table does not describe.
    public func raw(_ method: HTTPRequest.Method, _ uri: String, body: String? = nil, headers: [String: String] = [:]) async throws -> APIResponse {
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        let response = try await client.executeRequest(uri: uri, method: method, headers: fields, body: body.map { ByteBuffer(string: $0) })
        return APIResponse(status: Int(response.status.code), headers: response.headers, body: Data(response.body.readableBytesView))
    }

    /// Signs in through the code flow, as a client would.
    public func signIn(_ email: String, server: TestServer) async throws -> AuthSession {
        let earlier = server.codeCount(to: email)
        let sent = try await call(.sendCode, json: SendCodeRequest(email: email))
        guard sent.status == 202 else { throw TestSetupError("sending a code answered \(sent.status): \(sent.text)") }
        let code = try await server.code(for: email, after: earlier)
        return try await call(.verifyCode, json: VerifyCodeRequest(email: email, code: code)).decode(AuthSession.self)
    }
}

public struct APIResponse: Sendable {
    public let status: Int
    public let headers: HTTPFields
    public let body: Data

    public var text: String { String(decoding: body, as: UTF8.self) }

    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        do {
            return try WireJSON.decoder().decode(T.self, from: body)
        } catch {
            throw TestSetupError("cannot decode \(T.self) from \(status) \(text): \(error)")
        }
    }

    /// The error body, if the answer is the shared error shape.
    public var error: APIErrorBody? { try? WireJSON.decoder().decode(APIErrorResponse.self, from: body).error }
    public var errorCode: String? { error?.code.rawValue }
}


extension DevelopmentMailbox {
    /// The sign-in codes mailed to an address so far, oldest first.
    public func codes(to email: String) -> [String] {
        sent.filter { $0.to == email && $0.subject.hasPrefix("Your VroomX sign-in code: ") }.map { String($0.subject.suffix(6)) }
    }

    public func codeCount(to email: String) -> Int { codes(to: email).count }

    /// The newest sign-in code mailed to an address, once more than
    /// `earlier` codes went there (mail is sent in the background).
    public func code(for email: String, after earlier: Int = 0) async throws -> String {
        for _ in 0..<300 {
            let codes = codes(to: email)
            if codes.count > earlier, let code = codes.last { return code }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestSetupError("no code was mailed to \(email)")
    }

    /// The newest message to an address whose subject contains `words`,
    /// waiting a while for it (mail is sent in the background).
    public func message(to email: String, subject words: String) async throws -> MailMessage {
        for _ in 0..<300 {
            if let message = sent.last(where: { $0.to == email && $0.subject.contains(words) }) { return message }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestSetupError("no message about \"\(words)\" was mailed to \(email)")
    }
}
