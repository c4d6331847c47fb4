#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A deployment of several `vroomx` instances behind nginx, started by
/// `scripts/cluster` (PostgreSQL, moto's S3 server, the instances, nginx),
/// so the script people try is the one the tests prove.
public final class Cluster: Sendable {
    public let directory: URL
    /// nginx, the only address clients use.
    public let port: Int
    public let instancePorts: [Int]
    public let instancePIDs: [Int32]
    public let databaseURL: String
    private let script: ChildProcess

    /// Whether nginx, PostgreSQL and moto are here (on CI they must be).
    public static var isAvailable: Bool {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].contains { FileManager.default.isExecutableFile(atPath: $0) }
        return (nginx && PostgresCluster.binaries != nil) || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    public static func start(instances: Int = 2) async throws -> Cluster {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-cluster-\(UUID().uuidString.prefix(8))")
        let port = try ChildProcess.freePort()
        // Through a wrapper that clears the signal mask: children inherit this test process's, which blocks
        // SIGTERM, and the script (and moto) must stop on it.
        let script = try ChildProcess("/usr/bin/env", [
            "python3", "-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])",
            "bash", repository.appendingPathComponent("scripts/cluster").path, "--bin", VroomXBinary.productsDirectory.path,
            "--instances", String(instances), "--port", String(port), "--dir", directory.path,
        ])
        do {
            try await script.waitFor("VroomX cluster is up", timeout: .seconds(180))
        } catch {
            await script.stop()
            throw ProcessError("scripts/cluster did not start: \(script.text)")
        }
        let values = try String(contentsOf: directory.appendingPathComponent("cluster.env"), encoding: .utf8)
            .split(separator: "\n").reduce(into: [String: String]()) { values, line in
                let parts = line.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
            }
        let ports = (1...instances).compactMap { values["INSTANCE_\($0)_PORT"].flatMap(Int.init) }
        let pids = (1...instances).compactMap { values["INSTANCE_\($0)_PID"].flatMap(Int32.init) }
        guard ports.count == instances, pids.count == instances, let databaseURL = values["DATABASE_URL"] else {
            throw ProcessError("cluster.env is incomplete: \(values)")
        }
        return Cluster(directory: directory, port: port, instancePorts: ports, instancePIDs: pids, databaseURL: databaseURL, script: script)
    }

    private init(directory: URL, port: Int, instancePorts: [Int], instancePIDs: [Int32], databaseURL: String, script: ChildProcess) {
        self.directory = directory
        self.port = port
        self.instancePorts = instancePorts
        self.instancePIDs = instancePIDs
        self.databaseURL = databaseURL
        self.script = script
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Kills an instance (0-based) the hard way, mid-whatever it was doing.
    public func kill9(instance: Int) {
        _ = kill(instancePIDs[instance], SIGKILL)
    }

    /// Stops everything the script started, and removes its folder.
    public func stop() async {
        await script.stop(grace: .seconds(60))
        try? FileManager.default.removeItem(at: directory)
    }

    public func log(instance: Int) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("instance\(instance + 1).log"), encoding: .utf8)) ?? ""
    }

    /// Sign-in codes for an email printed so far by any instance (whichever served the request).
    public func codes(for email: String) -> [String] {
        instancePorts.indices.flatMap { index in
            log(instance: index).split(separator: "\n").compactMap { line -> String? in
                guard line.contains(email), let range = line.range(of: #"sign-in code: \d{6}"#, options: .regularExpression) else { return nil }
                return String(line[range].suffix(6))
            }
        }
    }

    /// The next code for `email` after `count` seen before.
    public func code(for email: String, after count: Int) async throws -> String {
        for _ in 0..<1000 {
            let codes = codes(for: email)
            if codes.count > count, let code = codes.last { return code }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw ProcessError("no sign-in code for \(email) in the instances' logs")
    }

    /// One line of nginx's access log: the request line, its status, and
    /// the instance port that served it (nil when none did).
    public struct Served: Sendable {
        public let request: String
        public let status: Int
        public let instancePort: Int?
    }

    /// Every request nginx has logged so far, oldest first.
    public func served() -> [Served] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("nginx-access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            // 127.0.0.1 "PATCH /v1/uploads/… HTTP/1.1" 204 127.0.0.1:40001 0.123
            let quoted = line.split(separator: "\"")
            guard quoted.count >= 3 else { return nil }
            let rest = quoted[2].split(separator: " ")
            guard rest.count >= 2, let status = Int(rest[0]) else { return nil }
            // After a failed try nginx lists each upstream it tried ("a:1, b:2"); the last one answered.
            let upstream = rest[1...].dropLast().joined(separator: " ").split(separator: ",").last?
                .trimmingCharacters(in: .whitespaces)
            return Served(request: String(quoted[1]), status: status,
                          instancePort: upstream.flatMap { $0.split(separator: ":").last.flatMap { Int($0) } })
        }
    }

    /// The instance port that served the last logged request matching `prefix` ("PATCH /v1/uploads/").
    public func lastServed(_ prefix: String) -> Served? {
        served().last { $0.request.hasPrefix(prefix) }
    }
}
