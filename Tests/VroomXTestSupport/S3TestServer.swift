import Foundation
import VroomXServer

/// A real S3-compatible server for tests: `moto_server` (PyPI
/// `moto[server]`), one per test process, a bucket per test. moto does not
/// check signatures, which is why the signer has its own vector tests.
public actor S3TestServer {
    public static let shared = S3TestServer()
    private var started: (process: ChildProcess, port: Int)?

    /// The endpoint, starting the server on first use.
    public func endpoint() async throws -> URL {
        if let started { return URL(string: "http://127.0.0.1:\(started.port)")! }
        let port = try ChildProcess.freePort()
        // The server goes when this test process does (it would outlive it otherwise; and it inherits
        // this process's signal mask, SIGTERM blocked, hence -9).
        let process = try ChildProcess("/bin/sh", ["-c", """
            python3 -m moto.server -H 127.0.0.1 -p \(port) & server=$!
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            kill -9 $server
            """])
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if (try? await ChildProcess.run("/usr/bin/env", ["curl", "-s", "-o", "/dev/null", "http://127.0.0.1:\(port)/"],
                                            timeout: .seconds(5)))?.status == 0 {
                started = (process, port)
                return URL(string: "http://127.0.0.1:\(port)")!
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw ProcessError("moto_server did not start (pip install 'moto[server]'); output: \(process.text)")
    }

    /// A configuration for a new, empty bucket name (the caller creates it).
    public func configuration() async throws -> S3Configuration {
        S3Configuration(endpoint: try await endpoint(), bucket: "vroomx-test-\(UUID().uuidString.prefix(8).lowercased())",
                        region: "us-east-1", accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                        secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", pathStyle: true)
    }
}
