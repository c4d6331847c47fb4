import Foundation
import Logging
import NIOConcurrencyHelpers
import VroomXServer

/// Where the benchmarks keep their data. Every server data folder lies under
/// one folder of this process and every PostgreSQL database made here is
/// noted; `Bench.main` removes both when the benchmark ends, passed or failed
/// (one `realtime` run writes hundreds of megabytes).
enum BenchScratch {
    static let root = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-bench-\(UUID().uuidString.prefix(8))")
    private static let databases = NIOLockedValueBox<[(admin: String, url: String)]>([])
    private static let logger = Logger(label: "bench")

    /// A new, empty folder under the process's scratch folder.
    static func directory() -> URL {
        root.appendingPathComponent(String(UUID().uuidString.prefix(8)))
    }

    /// A server configuration on a new data folder and, with a PostgreSQL
    /// URL, on a new database of that server.
    static func configuration(postgres adminURL: String?) async throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.logLevel = .error
        configuration.dataDirectory = directory()
        // For comparing runs with and without prepared statements.
        configuration.databasePreparedStatements = ProcessInfo.processInfo.environment["VROOMX_DATABASE_PREPARED_STATEMENTS"] != "false"
        if let adminURL {
            let url = try await PostgresDatabase.createDatabase(adminURL: adminURL, prefix: "vroomx_bench", logger: logger)
            databases.withLockedValue { $0.append((adminURL, url)) }
            configuration.databaseURL = url
        }
        return configuration
    }

    /// Drops the databases and removes the folder (kept, and named, with VROOMX_BENCH_KEEP=1: to look at a query's plan).
    static func remove() async {
        if ProcessInfo.processInfo.environment["VROOMX_BENCH_KEEP"] == "1" {
            print("kept: \(root.path)")
            return
        }
        for (admin, url) in databases.withLockedValue({ $0 }) {
            do {
                try await PostgresDatabase.dropDatabase(url, adminURL: admin, logger: logger)
            } catch {
                print("could not drop the bench database \(url): \(error)")
            }
        }
        try? FileManager.default.removeItem(at: root)
    }
}
