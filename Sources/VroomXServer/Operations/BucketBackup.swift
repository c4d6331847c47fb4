import Foundation
import NIOCore

/// Where `vroomx backup` writes: a folder on this machine, or an
/// S3-compatible bucket (`s3://bucket/prefix`) off it.
public enum BackupTarget: Sendable, Equatable, CustomStringConvertible {
    case folder(URL)
    case bucket(S3Configuration, prefix: String)

    /// A folder path or `s3://bucket[/prefix]`. A bucket's endpoint and keys
    /// are `VROOMX_BACKUP_S3_ENDPOINT`, `_REGION`, `_ACCESS_KEY_ID`,
    /// `_SECRET_ACCESS_KEY` and `_PATH_STYLE`, each defaulting to the media
    /// bucket's `VROOMX_S3_*` setting.
    public static func parse(_ text: String, environment: [String: String]) throws -> BackupTarget {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 1024, !trimmed.contains(where: { $0.isNewline }) else {
            throw ConfigurationError("A backup target is a folder or s3://bucket/prefix.")
        }
        guard trimmed.lowercased().hasPrefix("s3://") else { return .folder(URL(fileURLWithPath: trimmed)) }
        let path = trimmed.dropFirst(5).split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let bucket = path.first else { throw ConfigurationError("s3:// names a bucket: s3://bucket/prefix.") }
        guard path.dropFirst().allSatisfy({ $0 != "." && $0 != ".." }) else { throw ConfigurationError("An s3:// prefix has no . or .. parts.") }
        // Each backup setting unset takes the media bucket's.
        var settings: [String: String] = [:]
        for suffix in ["ENDPOINT", "REGION", "ACCESS_KEY_ID", "SECRET_ACCESS_KEY", "PATH_STYLE"] {
            let own = environment["VROOMX_BACKUP_S3_" + suffix].flatMap { $0.isEmpty ? nil : $0 }
            if let value = own ?? environment["VROOMX_S3_" + suffix] { settings["VROOMX_BACKUP_S3_" + suffix] = value }
        }
        guard let configuration = try S3Configuration.fromEnvironment(settings, prefix: "VROOMX_BACKUP_S3_", bucket: bucket) else {
            throw ConfigurationError("For a backup to \(trimmed), set VROOMX_BACKUP_S3_ENDPOINT, VROOMX_BACKUP_S3_ACCESS_KEY_ID and "
                                     + "VROOMX_BACKUP_S3_SECRET_ACCESS_KEY (or the media's VROOMX_S3_* settings).")
        }
        return .bucket(configuration, prefix: path.dropFirst().map { $0 + "/" }.joined())
    }

    public var description: String {
        switch self {
        case .folder(let url): url.path
        case .bucket(let s3, let prefix): "s3://\(s3.bucket)/\(prefix)"
        }
    }

    /// Takes a backup there and keeps the newest `keep`; where it went and what it holds.
    public func backUp(_ configuration: ServerConfiguration, keep: Int?, now: Date = Date()) async throws -> (location: String, manifest: Backup.Manifest) {
        // Whole seconds, as the manifest stores it: what is answered is what a restore reads back.
        let now = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        switch self {
        case .folder(let root):
            let (folder, manifest) = try await Backup.offThread { try Backup.create(configuration, into: root, keep: keep, now: now) }
            return (folder.path, manifest)
        case .bucket(let s3, let prefix):
            let backup = BucketBackup(client: S3Client(s3), prefix: prefix)
            let (name, manifest) = try await Self.explaining(s3) { try await backup.create(configuration, keep: keep, now: now) }
            return ("s3://\(s3.bucket)/\(prefix)\(name)", manifest)
        }
    }

    /// What the bucket answered, said with where it is and what to do about the usual causes.
    static func explaining<T>(_ s3: S3Configuration, _ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as S3Error {
            let hint = switch error.code {
            case "NoSuchBucket": " Create the bucket first (the backups' keys need to list, read, write and delete in it)."
            case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch": " Check VROOMX_BACKUP_S3_ACCESS_KEY_ID and _SECRET_ACCESS_KEY and what they may do."
            default: ""
            }
            throw Backup.Failure("The bucket \(s3.bucket) at \(s3.endpoint.absoluteString) answered \(error).\(hint)")
        } catch let error as Backup.Failure {
            throw error
        } catch {
            throw Backup.Failure("The bucket \(s3.bucket) at \(s3.endpoint.absoluteString) could not be reached: \(error).")
        }
    }
}

extension BackupTarget {
    /// The backups there, oldest first: where each is and what it holds.
    public func backups() async throws -> [(location: String, manifest: Backup.Manifest)] {
        switch self {
        case .folder(let root):
            return try Backup.backups(in: root).map { ($0.path, try Backup.read($0)) }
        case .bucket(let s3, let prefix):
            return try await Self.explaining(s3) { try await BucketBackup(client: S3Client(s3), prefix: prefix).backups() }
                .map { ("s3://\(s3.bucket)/\(prefix)\($0.name)", $0.manifest) }
        }
    }

    /// Restores the backup at `location` (a backup's folder, or
    /// `s3://bucket/prefix/vroomx-YYYYMMDD-HHMMSS`) into `configuration`'s data directory.
    public static func restore(_ location: String, environment: [String: String], into configuration: ServerConfiguration) async throws -> Backup.Manifest {
        switch try parse(location, environment: environment) {
        case .folder(let folder):
            return try await Backup.offThread { try Backup.restore(folder, into: configuration) }
        case .bucket(let s3, let path):
            let parts = path.split(separator: "/").map(String.init)
            guard let name = parts.last, name.hasPrefix(Backup.folderPrefix) else {
                throw Backup.Failure("Name the backup itself: s3://\(s3.bucket)/\(path)vroomx-YYYYMMDD-HHMMSS (`vroomx backup --list --to …` lists them).")
            }
            let backup = BucketBackup(client: S3Client(s3), prefix: parts.dropLast().map { $0 + "/" }.joined())
            return try await explaining(s3) { try await backup.restore(name, into: configuration) }
        }
    }
}

extension Backup {
    /// Runs blocking file work on a thread of its own, off the server's task pool.
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}

/// Backups in an S3-compatible bucket, under `prefix`:
///
/// - `vroomx-YYYYMMDD-HHMMSS/` per backup: `vroomx.sqlite`, the sign-in key,
///   `media.txt` (size and key of every media file the backup holds) and
///   `backup.json`, written last, so a backup without it is unfinished;
/// - `media/KEY`: media files, uploaded once and shared by every backup that
///   holds them (a stored file never changes under its key), so a daily
///   backup sends only the day's new photos.
///
/// Retention removes old backups' folders, then the media no kept backup
/// lists (only those more than a day old: a backup running beside it may
/// have uploaded a file its list does not show yet).
struct BucketBackup {
    let client: S3Client
    let prefix: String

    static let mediaListName = "media.txt"
    private var mediaPrefix: String { prefix + "media/" }

    func create(_ configuration: ServerConfiguration, keep: Int?, now: Date) async throws -> (String, Backup.Manifest) {
        try Backup.checkBackupable(configuration)
        let name = Backup.folderPrefix + Backup.stamp(now)
        guard try await client.headObject(prefix + name + "/" + Backup.manifestName) == nil else {
            throw Backup.Failure("s3://\(client.configuration.bucket)/\(prefix)\(name) exists already.")
        }
        // The database is copied beside itself first (same disk, known to have room), then sent.
        let local = configuration.dataDirectory.appendingPathComponent(".backup-" + UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(at: local, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: local) }
        let schemaVersion = try await Backup.offThread { try Backup.snapshot(configuration, into: local) }
        let database = local.appendingPathComponent(Backup.databaseName)
        let databaseSHA256 = try await Backup.offThread { try Backup.sha256(database) }

        let stored = Dictionary(try await client.listAllObjects(prefix: mediaPrefix).map { ($0.key, $0.size) }, uniquingKeysWith: { first, _ in first })
        let files = try Backup.mediaFiles(in: configuration.resolvedMediaDirectory).filter { !$0.key.contains(where: { $0.isNewline }) }
        var (bytes, present) = (Int64(0), 0)
        for file in files {
            bytes += file.size
            if stored[mediaPrefix + file.key] == file.size { present += 1; continue }
            try await client.putFile(mediaPrefix + file.key, from: file.url)
        }
        let folder = prefix + name + "/"
        try await client.putFile(folder + Backup.databaseName, from: database)
        let key = local.appendingPathComponent(Backup.keyFileName)
        if FileManager.default.fileExists(atPath: key.path) { try await client.putFile(folder + Backup.keyFileName, from: key) }
        let list = files.map { "\($0.size) \($0.key)\n" }.joined()
        try await client.putObject(folder + Self.mediaListName, body: ByteBuffer(string: list), contentType: "text/plain")
        let manifest = Backup.Manifest(createdAt: now, schemaVersion: schemaVersion, databaseBytes: try Backup.size(database),
                                       databaseSHA256: databaseSHA256, mediaFiles: files.count, mediaBytes: bytes, mediaLinked: present)
        try await client.putObject(folder + Backup.manifestName, body: ByteBuffer(data: try Backup.encode(manifest)), contentType: "application/json")
        if let keep {
            try await prune(keep: keep, sparing: name, now: now)
            try await removeUnfinished(now: now)
        }
        return (name, manifest)
    }

    /// The finished backups' names and manifests, oldest first.
    func backups() async throws -> [(name: String, manifest: Backup.Manifest)] {
        var found: [(name: String, manifest: Backup.Manifest)] = []
        for object in try await client.listAllObjects(prefix: prefix + Backup.folderPrefix) where object.key.hasSuffix("/" + Backup.manifestName) {
            let name = String(object.key.dropFirst(prefix.count).dropLast(Backup.manifestName.count + 1))
            guard !name.contains("/"), let manifest = try? await manifest(of: name) else { continue }
            found.append((name, manifest))
        }
        return found.sorted { $0.manifest.createdAt < $1.manifest.createdAt }
    }

    /// Removes backups that never finished (no manifest: a backup killed or cut
    /// off midway), once every object of theirs is more than a day old.
    func removeUnfinished(now: Date) async throws {
        var folders: [String: (finished: Bool, newest: Date)] = [:]
        let objects = try await client.listAllObjects(prefix: prefix + Backup.folderPrefix)
        for object in objects {
            guard let slash = object.key.dropFirst(prefix.count).firstIndex(of: "/") else { continue }
            let name = String(object.key[object.key.index(object.key.startIndex, offsetBy: prefix.count)..<slash])
            var folder = folders[name] ?? (false, .distantPast)
            if object.key.hasSuffix("/" + Backup.manifestName) { folder.finished = true }
            folder.newest = max(folder.newest, object.modified ?? now)
            folders[name] = folder
        }
        for (name, folder) in folders where !folder.finished && now.timeIntervalSince(folder.newest) > 86_400 {
            for object in objects where object.key.hasPrefix(prefix + name + "/") { try await client.deleteObject(object.key) }
        }
    }

    func manifest(of name: String) async throws -> Backup.Manifest {
        guard let data = try await client.getSmallObject(prefix + name + "/" + Backup.manifestName, limit: 1 << 20) else {
            throw Backup.Failure("s3://\(client.configuration.bucket)/\(prefix)\(name) is not a backup (no \(Backup.manifestName)).")
        }
        return try Backup.decode(Data(data.readableBytesView))
    }

    /// The media a backup holds: key → size.
    func mediaList(of name: String) async throws -> [String: Int64] {
        guard let data = try await client.getSmallObject(prefix + name + "/" + Self.mediaListName, limit: 1 << 30) else {
            throw Backup.Failure("The backup \(name) has no \(Self.mediaListName).")
        }
        var list: [String: Int64] = [:]
        for line in String(decoding: data.readableBytesView, as: UTF8.self).split(separator: "\n") {
            guard let space = line.firstIndex(of: " "), let size = Int64(line[..<space]), size >= 0 else {
                throw Backup.Failure("The backup \(name)'s \(Self.mediaListName) is damaged: \(line.prefix(80))")
            }
            list[String(line[line.index(after: space)...])] = size
        }
        return list
    }

    /// Keeps the newest `keep` backups (never `sparing`), then the media only they list.
    func prune(keep: Int, sparing: String, now: Date) async throws {
        let all = try await backups()
        let others = all.filter { $0.name != sparing }
        let removed = others.dropLast(max(keep - 1, 0))
        for backup in removed {
            // The manifest first: from then on the folder is an unfinished backup nothing reads.
            try await client.deleteObject(prefix + backup.name + "/" + Backup.manifestName)
            for object in try await client.listAllObjects(prefix: prefix + backup.name + "/") { try await client.deleteObject(object.key) }
        }
        guard !removed.isEmpty else { return }
        var listed = Set<String>()
        for backup in all where !removed.contains(where: { $0.name == backup.name }) {
            listed.formUnion(try await mediaList(of: backup.name).keys.map { mediaPrefix + $0 })
        }
        for object in try await client.listAllObjects(prefix: mediaPrefix) where !listed.contains(object.key) {
            guard let modified = object.modified, now.timeIntervalSince(modified) > 86_400 else { continue }
            try await client.deleteObject(object.key)
        }
    }

    /// Brings the backup `name` back into `configuration`'s data directory
    /// (which holds no database) and checks it, as a restore from a folder does.
    func restore(_ name: String, into configuration: ServerConfiguration) async throws -> Backup.Manifest {
        let manifest = try await manifest(of: name)
        let target = try Backup.restorableTarget(of: manifest, into: configuration)
        let media = try await mediaList(of: name)
        let folder = prefix + name + "/"
        try FileManager.default.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true)
        let download = configuration.dataDirectory.appendingPathComponent(".restore-" + UUID().uuidString.prefix(8) + ".sqlite")
        defer { try? FileManager.default.removeItem(at: download) }
        try await client.getFile(folder + Backup.databaseName, size: manifest.databaseBytes, to: download)
        guard try Backup.sha256(download) == manifest.databaseSHA256 else {
            throw Backup.Failure("The backup's database does not match its manifest (damaged or changed).")
        }
        // Every check on the backup itself, before anything is written.
        try Backup.check(database: download, mediaFolder: "the backup's media list") { row in
            guard let size = media[row.key] else { return "missing" }
            if let expected = row.size, expected != size { return "\(size) bytes in the list, its row says \(expected)" }
            return nil
        }
        let mediaFolder = configuration.resolvedMediaDirectory
        var written: [URL] = []
        do {
            if !FileManager.default.fileExists(atPath: configuration.keyFile.path),
               let size = try await client.headObject(folder + Backup.keyFileName) {
                try await client.getFile(folder + Backup.keyFileName, size: size, to: configuration.keyFile)
                written.append(configuration.keyFile)
            }
            for (key, size) in media.sorted(by: { $0.key < $1.key }) {
                // Keys the server wrote, never a path out of the media folder.
                guard key.split(separator: "/", omittingEmptySubsequences: false).allSatisfy({ FileMediaStorage.isSafeComponent(String($0)) }) else { continue }
                let file = mediaFolder.appendingPathComponent(key)
                try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                if FileManager.default.fileExists(atPath: file.path) { try FileManager.default.removeItem(at: file) }
                try await client.getFile(mediaPrefix + key, size: size, to: file)
            }
            try FileManager.default.moveItem(at: download, to: target)
            written.append(target)
            try Backup.check(database: target, media: mediaFolder)
        } catch {
            for file in written { try? FileManager.default.removeItem(at: file) }
            throw error
        }
        return manifest
    }
}
