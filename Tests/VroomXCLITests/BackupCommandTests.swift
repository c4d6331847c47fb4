import Foundation
import Testing
import VroomXServer
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
        let (server, port) = try await DriverCommandTests.ServerProcess.start(dataDirectory: data)
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

    @Test("the server backs itself up on its schedule into an S3 bucket, keeps the newest, counts it in /metrics; the backup is listed and restored from the bucket")
    func scheduledToBucket() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-backup-\(UUID().uuidString.prefix(8))")
        let (data, restored) = (scratch.appendingPathComponent("data"), scratch.appendingPathComponent("restored"))
        defer { try? FileManager.default.removeItem(at: scratch) }
        let s3 = try await S3TestServer.shared.configuration()
        // moto takes any signature: the bucket is made with a plain request.
        let made = try await ChildProcess.run("/usr/bin/env", ["curl", "-sf", "-X", "PUT", "\(s3.endpoint.absoluteString)/\(s3.bucket)"])
        #expect(made.status == 0, "\(made.text)")
        let bucket = ["VROOMX_BACKUP_S3_ENDPOINT": s3.endpoint.absoluteString, "VROOMX_BACKUP_S3_ACCESS_KEY_ID": s3.accessKeyID,
                      "VROOMX_BACKUP_S3_SECRET_ACCESS_KEY": s3.secretAccessKey]
        let target = "s3://\(s3.bucket)/nightly"

        // A schedule that is not one stops the server at once, saying which field.
        let wrong = try await VroomXBinary.run(["serve", "--port", "0"], environment: bucket.merging(
            ["VROOMX_DATA_DIR": data.path, "VROOMX_BACKUP_TO": target, "VROOMX_BACKUP_SCHEDULE": "61 * * * *"]) { $1 })
        #expect(wrong.status != 0 && wrong.output.contains("VROOMX_BACKUP_SCHEDULE") && wrong.output.contains("minute"), "\(wrong.output)")

        let token = "metrics-token-\(UUID().uuidString)"
        let (server, port) = try await DriverCommandTests.ServerProcess.start(dataDirectory: data, environment: bucket.merging(
            ["VROOMX_BACKUP_TO": target, "VROOMX_BACKUP_SCHEDULE": "* * * * *", "VROOMX_BACKUP_KEEP": "1", "VROOMX_METRICS_TOKEN": token]) { $1 })
        // Every minute: two backups within about two minutes, the first one pruned by the second.
        try await server.waitFor("backup taken", timeout: .seconds(90))
        let metrics = try await ChildProcess.run("/usr/bin/env", ["curl", "-s", "-H", "Authorization: Bearer \(token)", "http://127.0.0.1:\(port)/metrics"])
        #expect(metrics.text.contains(#"vroomx_backups_total{outcome="succeeded"} 1"#), "\(metrics.text.split(separator: "\n").filter { $0.contains("backup") })")
        #expect(metrics.text.contains("vroomx_backup_last_success_timestamp_seconds"))
        try await waitUntil("a second scheduled backup", timeout: .seconds(90)) {
            server.text.components(separatedBy: "backup taken").count > 2
        }
        await server.stop()
        #expect(!server.text.contains("backup failed"), "\(server.text.suffix(2000))")

        // The target the server is set up with is the command's too.
        let listed = try await VroomXBinary.run(["backup", "--list"], environment: bucket.merging(["VROOMX_BACKUP_TO": target]) { $1 })
        let lines = listed.output.split(separator: "\n").filter { $0.hasPrefix("s3://") }
        #expect(listed.status == 0 && lines.count == 1, "keeps the newest one: \(listed.output)")
        let location = try #require(lines.first.map { String($0.split(separator: " ")[0]) })

        let restore = try await VroomXBinary.run(["restore", location], environment: bucket.merging(["VROOMX_DATA_DIR": restored.path]) { $1 })
        #expect(restore.status == 0 && restore.output.contains("Restored the backup"), "\(restore.output)")
        let carriers = try await VroomXBinary.run(["tenant", "list"], environment: ["VROOMX_DATA_DIR": restored.path])
        #expect(carriers.status == 0 && carriers.output.contains("Demo Auto Transport"), "\(carriers.output)")
        // The sign-in key comes back (phones stay signed in), the server's user's alone.
        let key = restored.appendingPathComponent("jwt-secret.key")
        #expect(FileManager.default.contents(atPath: key.path) == FileManager.default.contents(atPath: data.appendingPathComponent("jwt-secret.key").path))
        let mode = try FileManager.default.attributesOfItem(atPath: key.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600, "\(String(mode?.intValue ?? 0, radix: 8))")
        // A server whose bucket is missing says so at start, not at the first backup, and counts it as a failure.
        let (missing, missingPort) = try await DriverCommandTests.ServerProcess.start(dataDirectory: data, environment: bucket.merging(
            ["VROOMX_BACKUP_TO": "s3://no-such-bucket-\(UUID().uuidString.prefix(6).lowercased())/x", "VROOMX_METRICS_TOKEN": token]) { $1 })
        try await missing.waitFor("cannot be read")
        #expect(missing.text.contains("Create the bucket first"), "\(missing.text.suffix(1500))")
        let failed = try await ChildProcess.run("/usr/bin/env", ["curl", "-s", "-H", "Authorization: Bearer \(token)", "http://127.0.0.1:\(missingPort)/metrics"])
        #expect(failed.text.contains(#"vroomx_backups_total{outcome="failed"} 1"#))
        await missing.stop()

        // The bucket without a backup's name: told how to find one.
        let vague = try await VroomXBinary.run(["restore", target], environment: bucket.merging(["VROOMX_DATA_DIR": scratch.appendingPathComponent("other").path]) { $1 })
        #expect(vague.status != 0 && vague.output.contains("--list"), "\(vague.output)")
    }
}
