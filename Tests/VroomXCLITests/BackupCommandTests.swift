import Foundation
import Testing
import VroomXTestSupport

/// `vroomx backup` beside a running server and `vroomx restore` into a new
/// data directory, as an operator runs them.
@Suite("vroomx backup and restore")
struct BackupCommandTests {
    @Test("a backup taken while the server runs restores into a new data directory, which then serves the same carrier; retention keeps one")
    func backupAndRestore() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-backup-\(UUID().uuidString.prefix(8))")
        let (data, backups, restored) = (scratch.appendingPathComponent("data"), scratch.appendingPathComponent("backups"),
                                         scratch.appendingPathComponent("restored"))
        defer { try? FileManager.default.removeItem(at: scratch) }
        let port = try ChildProcess.freePort()
        let server = try await DriverCommandTests.ServerProcess.start(dataDirectory: data, port: port)
        for _ in 0..<2 {
            let backup = try await VroomXBinary.run(["backup", "--to", backups.path, "--keep", "1"], environment: ["VROOMX_DATA_DIR": data.path])
            #expect(backup.status == 0 && backup.output.contains("Backed up to"), "\(backup.output)")
            try await Task.sleep(for: .seconds(1.1))  // folders are named by the second
        }
        await server.stop()
        let kept = try FileManager.default.contentsOfDirectory(atPath: backups.path).filter { $0.hasPrefix("vroomx-") }
        #expect(kept.count == 1, "\(kept)")
        let folder = backups.appendingPathComponent(try #require(kept.first))

        let restore = try await VroomXBinary.run(["restore", folder.path], environment: ["VROOMX_DATA_DIR": restored.path])
        #expect(restore.status == 0 && restore.output.contains("Restored the backup"), "\(restore.output)")
        let carriers = try await VroomXBinary.run(["tenant", "list"], environment: ["VROOMX_DATA_DIR": restored.path])
        #expect(carriers.status == 0 && carriers.output.contains("Demo Auto Transport"), "\(carriers.output)")
        // Never over a database that is there.
        let over = try await VroomXBinary.run(["restore", folder.path], environment: ["VROOMX_DATA_DIR": data.path])
        #expect(over.status != 0 && over.output.contains("exists"), "\(over.output)")
        // PostgreSQL has its own tools.
        let postgres = try await VroomXBinary.run(["backup", "--to", backups.path],
                                                  environment: ["VROOMX_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"])
        #expect(postgres.status != 0 && postgres.output.contains("pg_dump"), "\(postgres.output)")
    }
}
