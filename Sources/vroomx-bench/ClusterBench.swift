#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import VroomXModels
import VroomXServer

/// `GET /v1/trips` and `GET /healthz` through nginx in front of one
/// instance, then two (each a fresh `scripts/cluster`: PostgreSQL, moto,
/// the instances, nginx), for a driver with 50 trips.
struct ClusterBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster", abstract: "GET /v1/trips through nginx: two instances against one (runs scripts/cluster).")

    @Option(help: "Seconds per measurement.") var seconds = 5
    @Option(help: "Concurrent keep-alive connections.") var connections = 32
    @Option(help: "Measurements per endpoint (the median is reported).") var runs = 3
    @Option(help: "The cluster script.") var script = "scripts/cluster"
    @Option(help: "Folder of the vroomx executable (default: beside this one).") var bin: String?

    func run() async throws {
        let bin = bin ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        print("GET /v1/trips (driver with 50 trips) and GET /healthz through nginx, PostgreSQL — \(connections) connections, "
              + "\(seconds) s × \(runs) runs, median shown")
        print("instances  endpoint        req/s     p50 ms   p99 ms")
        var trips: [Int: Double] = [:]
        for instances in [1, 2] {
            let cluster = try await RunningCluster.start(script: script, bin: bin, instances: instances)
            do {
                let token = try await cluster.driverWithFiftyTrips()
                let generator = LoadGenerator(host: "127.0.0.1", port: cluster.port, connections: connections)
                let auth = [("Authorization", "Bearer \(token)")]
                _ = try await generator.run(path: "/v1/trips", headers: auth, duration: .seconds(1))
                let health = try await median(generator, path: "/healthz", headers: [])
                let list = try await median(generator, path: "/v1/trips", headers: auth)
                for (label, result) in [("/healthz", health), ("/v1/trips", list)] {
                    print(String(instances).padding(toLength: 11, withPad: " ", startingAt: 0) + label.padding(toLength: 12, withPad: " ", startingAt: 0)
                          + String(format: "%9.0f %9.2f %8.2f", result.requestsPerSecond, result.percentile(0.5), result.percentile(0.99))
                          + (result.errors > 0 ? " (\(result.errors) errors)" : ""))
                }
                trips[instances] = list.requestsPerSecond
            } catch {
                await cluster.stop()
                throw error
            }
            await cluster.stop()
        }
        if let one = trips[1], let two = trips[2] {
            print(String(format: "GET /v1/trips, two instances / one: %.2f", two / one))
        }
    }

    func median(_ generator: LoadGenerator, path: String, headers: [(String, String)]) async throws -> LoadGenerator.Result {
        var results: [LoadGenerator.Result] = []
        for _ in 0..<runs { results.append(try await generator.run(path: path, headers: headers, duration: .seconds(seconds))) }
        return results.sorted { $0.requestsPerSecond < $1.requestsPerSecond }[results.count / 2]
    }
}

/// A `scripts/cluster` run, used over HTTP through its nginx.
struct RunningCluster {
    let process: Process
    let directory: URL
    let port: Int
    let client = HTTPClient.shared

    static func start(script: String, bin: String, instances: Int) async throws -> RunningCluster {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-bench-cluster-\(UUID().uuidString.prefix(8))")
        let port = Int.random(in: 20_000...60_000)
        let output = directory.appendingPathExtension("out")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // Through a wrapper that clears the signal mask, so the script stops on SIGTERM.
        process.arguments = ["python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])",
                             "bash", script, "--bin", bin, "--instances", String(instances), "--port", String(port), "--dir", directory.path]
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = process.standardOutput
        try process.run()
        let cluster = RunningCluster(process: process, directory: directory, port: port)
        for _ in 0..<1800 {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            if text.contains("VroomX cluster is up") { return cluster }
            guard process.isRunning else { throw BenchError("scripts/cluster stopped: \(text)") }
            try await Task.sleep(for: .milliseconds(100))
        }
        await cluster.stop()
        throw BenchError("scripts/cluster did not start in 3 minutes")
    }

    func stop() async {
        process.terminate()
        for _ in 0..<600 where process.isRunning { try? await Task.sleep(for: .milliseconds(100)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
        try? FileManager.default.removeItem(at: directory.appendingPathExtension("out"))
    }

    /// Signs in as the demo dispatcher and Alex (codes from the instances'
    /// logs), gives Alex 50 trips in all, and returns Alex's access token.
    func driverWithFiftyTrips() async throws -> String {
        let dispatcher = try await signIn(DemoData.dispatcherEmail)
        let alex = try await signIn(DemoData.driverEmails[0])
        guard let driver = alex.driver else { throw BenchError("the demo driver has no driver record") }
        let existing = try await call("GET", "/v1/trips?limit=500", token: alex.accessToken, as: ListEnvelope<Trip>.self).items.count
        for index in existing..<50 {
            _ = try await call("POST", "/v1/dispatch/trips", token: dispatcher.accessToken, body: CreateTripRequest(
                number: "T-B\(index)", driverID: driver.id, origin: "Houston, TX", destination: "Dallas, TX", revenueCents: 100_000, miles: 240),
                as: Trip.self)
        }
        return alex.accessToken
    }

    private func signIn(_ email: String) async throws -> AuthSession {
        let before = codes(email).count
        _ = try await call("POST", "/v1/auth/otp", body: SendCodeRequest(email: email), as: SendCodeResponse.self)
        for _ in 0..<500 {
            let codes = codes(email)
            if codes.count > before, let code = codes.last {
                return try await call("POST", "/v1/auth/verify", body: VerifyCodeRequest(email: email, code: code), as: AuthSession.self)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw BenchError("no sign-in code for \(email) in the instances' logs")
    }

    private func codes(_ email: String) -> [String] {
        let logs = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)) ?? []
        return logs.filter { $0.lastPathComponent.hasPrefix("instance") && $0.pathExtension == "log" }.flatMap { log in
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line -> String? in
                guard line.contains(email), let range = line.range(of: #"sign-in code: \d{6}"#, options: .regularExpression) else { return nil }
                return String(line[range].suffix(6))
            }
        }
    }

    private func call<T: Decodable>(_ method: String, _ path: String, token: String? = nil, body: (any Encodable)? = nil,
                                    as type: T.Type) async throws -> T {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .init(rawValue: method)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try WireJSON.encoder().encode(body)))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let data = try await response.body.collect(upTo: 16 << 20)
        guard (200..<300).contains(Int(response.status.code)) else {
            throw BenchError("\(method) \(path): \(response.status) \(String(buffer: data))")
        }
        return try WireJSON.decoder().decode(T.self, from: Data(data.readableBytesView))
    }
}

private struct ListEnvelope<T: Decodable>: Decodable {
    let items: [T]
}
