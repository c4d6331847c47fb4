import Foundation

/// A PostgreSQL cluster of a test's own, for tests that stop, restart or
/// crash the database (the shared test cluster must never be stopped).
/// Runs the installed `initdb` and `pg_ctl`, as the postgres user when the
/// tests run as root (PostgreSQL refuses to run as root).
public final class PostgresCluster: Sendable {
    public let port: Int
    let directory: String
    let binaries: String

    /// The folder of `pg_ctl`, or nil when PostgreSQL is not installed.
    public static var binaries: String? {
        let candidates = ["/usr/local/bin/pg_ctl", "/usr/bin/pg_ctl"]
            + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
                .sorted { $0.compare($1, options: .numeric) == .orderedDescending }
                .map { "/usr/lib/postgresql/\($0)/bin/pg_ctl" }
        guard let pgctl = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        return URL(fileURLWithPath: pgctl).resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// Whether a test that needs a cluster of its own runs: PostgreSQL is
    /// installed, or this is CI, where a missing PostgreSQL must fail the
    /// test (`start()` throws) instead of skipping it.
    public static var isAvailable: Bool { binaries != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    /// Creates and starts a new cluster on a free port.
    public static func start() async throws -> PostgresCluster {
        guard let binaries else { throw TestSetupError("PostgreSQL is not installed (initdb, pg_ctl), but this test needs a cluster of its own.") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-pg-\(UUID().uuidString.prefix(8))").path
        let cluster = PostgresCluster(port: try ChildProcess.freePort(), directory: directory, binaries: binaries)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 { try await cluster.shell("chown postgres:postgres '\(directory)'", asPostgres: false) }
        try await cluster.shell("'\(binaries)/initdb' -D '\(directory)' -U postgres --auth=trust --encoding=UTF8 --no-locale")
        try await cluster.start()
        return cluster
    }

    private init(port: Int, directory: String, binaries: String) {
        self.port = port
        self.directory = directory
        self.binaries = binaries
    }

    public var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=disable" }

    /// Starts the stopped cluster and waits until it accepts connections.
    public func start() async throws {
        try await retryingWhilePortBusy { try await pgctl("-l '\(directory)/server.log' -o \"\(Self.options(port: port))\" start") }
    }

    /// The port was free when chosen, but while the server is down another
    /// process of a full test run (a client's ephemeral port, a server
    /// probing for a free port) may hold it for a moment: try again.
    private func retryingWhilePortBusy(_ body: () async throws -> Void) async throws {
        var attempt = 1
        while true {
            let before = logText().utf8.count
            do {
                return try await body()
            } catch {
                guard attempt < 10, portWasBusy(since: before) else { throw error }
                attempt += 1
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    private func logText() -> String { (try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? "" }

    private func portWasBusy(since offset: Int) -> Bool {
        String(decoding: logText().utf8.dropFirst(offset), as: UTF8.self).contains("Address already in use")
    }

    /// `mode`: `fast` (clients are disconnected cleanly) or `immediate`
    /// (as after a crash: recovery runs at the next start).
    public func stop(mode: String = "fast") async throws {
        try await pgctl("-m \(mode) stop")
    }

    public func restart(mode: String = "fast") async throws {
        let before = logText().utf8.count
        do {
            try await pgctl("-m \(mode) -l '\(directory)/server.log' -o \"\(Self.options(port: port))\" restart")
        } catch where portWasBusy(since: before) {
            // Stopped, but its port was taken while it was down: start it again once the port is back.
            try await start()
        }
    }

    /// Stops the cluster and deletes its files.
    public func destroy() async {
        _ = try? await pgctl("-m immediate stop")
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Commits are durable across a crash of PostgreSQL (an immediate stop),
    /// which these tests cause: `synchronous_commit` stays on. Without fsync
    /// only a crash of the machine could lose them.
    static func options(port: Int) -> String {
        "-p \(port) -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=100"
    }

    /// The server it starts must not inherit this process's descriptors: a
    /// daemon holding the one that reports the child's exit would make it
    /// look alive for as long as the cluster runs.
    private func pgctl(_ arguments: String) async throws {
        let closeInherited = #"for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done 2>/dev/null; "#
        try await shell(closeInherited + "exec '\(binaries)/pg_ctl' -D '\(directory)' -w -t 60 \(arguments)")
    }

    private func shell(_ command: String, asPostgres: Bool = true) async throws {
        let (executable, arguments) = asPostgres && getuid() == 0
            ? ("/bin/su", ["postgres", "-s", "/bin/bash", "-c", command])
            : ("/bin/bash", ["-c", command])
        let (status, output) = try await ChildProcess.run(executable, arguments, timeout: .seconds(90))
        guard status == 0 else { throw TestSetupError("\(command) failed (\(status)): \(output)") }
    }
}
