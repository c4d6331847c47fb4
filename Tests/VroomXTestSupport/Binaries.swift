import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import VroomXModels

/// The executables built beside the test bundle.
public enum VroomXBinary {
    /// The build products folder (where the test bundle itself lives).
    public static var productsDirectory: URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        var directory = bundle.deletingLastPathComponent()
        if directory.pathExtension == "xctest" || directory.lastPathComponent == "Contents" { directory.deleteLastPathComponent() }
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("vroomx").path), directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory
    }

    public static func path(_ name: String = "vroomx") -> String { productsDirectory.appendingPathComponent(name).path }

    /// Runs a command to completion (one of the package's binaries, or a system one by absolute path).
    public static func run(_ arguments: [String], binary: String = "vroomx", environment: [String: String] = [:],
                           timeout: Duration = .seconds(60)) async throws -> (status: Int32, output: String) {
        let process = try ChildProcess(binary.hasPrefix("/") ? binary : path(binary), arguments, environment: environment)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                await process.stop()
                throw ProcessError("\(binary) \(arguments) did not finish: \(process.text)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return (process.exitStatus ?? -1, process.text)
    }

    /// Starts `vroomx` with `arguments` plus `--port` and waits until it
    /// listens. Without a port one is chosen, and should another process
    /// take it before the server binds it, the next is tried; with a port
    /// (a restart clients already know the address of) it is retried a few
    /// times while something else holds it.
    public static func serve(_ arguments: [String], port: Int? = nil,
                             environment: [String: String] = [:]) async throws -> (process: ChildProcess, port: Int) {
        var attempt = 0
        while true {
            let chosen = try port ?? ChildProcess.freePort()
            let process = try start(arguments + ["--port", String(chosen)], environment: environment)
            do {
                try await process.waitFor("listening on 127.0.0.1:\(chosen)")
                return (process, chosen)
            } catch {
                attempt += 1
                guard process.text.contains("Address already in use"), attempt < 8 else { throw error }
                if port != nil { try await Task.sleep(for: .milliseconds(250)) }
            }
        }
    }

    /// Starts a long-running command (a server).
    public static func start(_ arguments: [String], binary: String = "vroomx", environment: [String: String] = [:]) throws -> ChildProcess {
        try ChildProcess(path(binary), arguments, environment: environment)
    }
}

/// Plain HTTP to a server running in another process.
public struct HTTPTestClient: Sendable {
    public let baseURL: String

    public init(baseURL: String) { self.baseURL = baseURL }

    public func send(_ endpoint: Endpoint, _ parameters: String..., query: String? = nil, json: (any Encodable & Sendable)? = nil,
                     token: String? = nil, headers: [String: String] = [:], timeout: Duration = .seconds(30)) async throws -> APIResponse {
        try await send(endpoint, parameters, query: query, json: json, token: token, headers: headers, timeout: timeout)
    }

    public func send(_ endpoint: Endpoint, _ parameters: [String], query: String? = nil, json: (any Encodable & Sendable)? = nil,
                     token: String? = nil, headers: [String: String] = [:], timeout: Duration = .seconds(30)) async throws -> APIResponse {
        var request = HTTPClientRequest(url: baseURL + endpoint.path(parameters) + (query.map { "?" + $0 } ?? ""))
        request.method = .init(rawValue: endpoint.method.rawValue)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try WireJSON.encoder().encode(json)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(timeout.nanoseconds))
        let body = try await response.body.collect(upTo: 16 << 20)
        var headers = HTTPFields()
        for header in response.headers {
            if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
        }
        return APIResponse(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView))
    }
}

extension Duration {
    public var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
