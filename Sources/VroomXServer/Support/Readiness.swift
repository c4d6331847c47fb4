#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NIOCore
import VroomXModels

/// What `GET /readyz` checks before this instance takes traffic: the
/// database answers (within a short timeout), media storage takes a write
/// (the folder, or the S3 bucket when media live there), the data folder
/// (where the SQLite file lives) too, and the disks holding those folders
/// have at least `minFreeBytes` free.
struct Readiness: Sendable {
    let database: any SQLDatabase
    let databaseTimeout: Duration
    /// The media folder, unless media live in a bucket.
    let mediaFolder: URL?
    let bucket: S3Client?
    /// The data folder, when the server writes there (the SQLite file).
    let dataFolder: URL?
    let minFreeBytes: Int64

    init(_ configuration: ServerConfiguration, database: any SQLDatabase) {
        self.database = database
        databaseTimeout = min(configuration.databaseTimeout, .seconds(2))
        mediaFolder = configuration.s3 == nil ? configuration.resolvedMediaDirectory : nil
        let clock = configuration.clock
        bucket = configuration.s3.map { S3Client($0, now: { clock.now }) }
        dataFolder = configuration.usesPostgres ? nil : configuration.dataDirectory
        minFreeBytes = configuration.minFreeDiskBytes
    }

    func check() async -> ReadinessResponse {
        var checks = [await databaseCheck()]
        if let mediaFolder { checks.append(Self.writeProbe("media_folder", mediaFolder)) }
        if let bucket { checks.append(await Self.bucketProbe(bucket, timeout: databaseTimeout)) }
        if let dataFolder { checks.append(Self.writeProbe("data_folder", dataFolder)) }
        if mediaFolder != nil || dataFolder != nil { checks.append(freeDiskCheck()) }
        return ReadinessResponse(checks: checks)
    }

    /// Writes and deletes a small object: wrong credentials, a missing
    /// bucket or an unreachable store show here before an upload fails.
    static func bucketProbe(_ bucket: S3Client, timeout: Duration) async -> ReadinessCheck {
        let key = ".vroomx-ready/\(UUID().uuidString)"
        let name = bucket.configuration.bucket
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await bucket.putObject(key, body: ByteBuffer(string: "ready"))
                    try await bucket.deleteObject(key)
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw S3ProbeTimeout()
                }
                try await group.next()
                group.cancelAll()
            }
            return ReadinessCheck(name: "media_bucket", ok: true, detail: "bucket \(name) takes writes")
        } catch is S3ProbeTimeout {
            return ReadinessCheck(name: "media_bucket", ok: false, detail: "bucket \(name) did not answer within \(timeout)")
        } catch {
            return ReadinessCheck(name: "media_bucket", ok: false, detail: "bucket \(name): \(error)")
        }
    }

    private struct S3ProbeTimeout: Error {}

    func databaseCheck() async -> ReadinessCheck {
        do {
            try await database.ping(timeout: databaseTimeout)
            return ReadinessCheck(name: "database", ok: true, detail: "\(database.dialect.rawValue) answers")
        } catch {
            return ReadinessCheck(name: "database", ok: false, detail: "\(error)")
        }
    }

    /// Creates, writes, fsyncs and deletes a small file: a read-only or
    /// failing filesystem shows here before an upload or a write fails.
    static func writeProbe(_ name: String, _ folder: URL) -> ReadinessCheck {
        let path = folder.appendingPathComponent(".vroomx-ready-\(UUID().uuidString)").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { return failure(name, "cannot create a file in \(folder.path)") }
        defer { unlink(path) }
        let bytes = [UInt8](repeating: 0x2E, count: 512)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        let closed = close(descriptor) == 0
        guard written == bytes.count, synced, closed else { return failure(name, "cannot write a file in \(folder.path)") }
        return ReadinessCheck(name: name, ok: true, detail: "\(folder.path) takes writes")
    }

    private static func failure(_ name: String, _ what: String) -> ReadinessCheck {
        ReadinessCheck(name: name, ok: false, detail: "\(what): \(String(cString: strerror(errno)))")
    }

    /// The least free space among the filesystems holding the folders.
    func freeDiskCheck() -> ReadinessCheck {
        let folders = [mediaFolder, dataFolder].compactMap { $0 }
        var least: Int64?
        for folder in folders {
            var stats = statvfs()
            guard statvfs(folder.path, &stats) == 0 else {
                return Self.failure("free_disk", "cannot read the free space of \(folder.path)")
            }
            let free = Int64(clamping: UInt64(stats.f_bavail) &* UInt64(stats.f_frsize))
            least = min(least ?? free, free)
        }
        let free = least ?? 0
        return ReadinessCheck(name: "free_disk", ok: free >= minFreeBytes,
                              detail: "\(free >> 20) MB free, \(minFreeBytes >> 20) MB required")
    }
}
