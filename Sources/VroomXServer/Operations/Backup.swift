import Crypto
import Foundation
import GRDBSQLite

/// Backups of the embedded deployment: the SQLite database, copied with
/// SQLite's online backup API (one read transaction, so the copy is one
/// consistent moment while the server keeps writing), and the media folder
/// (files unchanged since the previous backup are hard links to it). Each
/// backup is a folder `vroomx-YYYYMMDD-HHMMSS` with `vroomx.sqlite`,
/// `media/` and `backup.json`. A restore copies one back into an empty data
/// directory and checks it: SQLite's integrity and foreign keys, the schema
/// version, and every file a row names. (PostgreSQL and S3 have their own
/// tools: docs/operations.md.)
public enum Backup {
    public struct Manifest: Codable, Sendable, Equatable {
        public var createdAt: Date
        public var schemaVersion: Int
        public var databaseBytes: Int64
        public var databaseSHA256: String
        public var mediaFiles: Int
        public var mediaBytes: Int64
        /// Media files hard-linked to the previous backup's (unchanged).
        public var mediaLinked: Int

        enum CodingKeys: String, CodingKey {
            case createdAt = "created_at"
            case schemaVersion = "schema_version"
            case databaseBytes = "database_bytes"
            case databaseSHA256 = "database_sha256"
            case mediaFiles = "media_files"
            case mediaBytes = "media_bytes"
            case mediaLinked = "media_linked"
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static let databaseName = "vroomx.sqlite"
    static let keyFileName = "jwt-secret.key"
    static let manifestName = "backup.json"
    static let folderPrefix = "vroomx-"

    /// Takes a backup of `configuration`'s database and media into a new
    /// folder under `root`, then keeps the newest `keep` backups there.
    public static func create(_ configuration: ServerConfiguration, into root: URL, keep: Int? = nil, now: Date = Date()) throws -> (URL, Manifest) {
        try checkBackupable(configuration, into: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let previous = try backups(in: root).last
        let folder = root.appendingPathComponent(folderPrefix + stamp(now))
        guard !FileManager.default.fileExists(atPath: folder.path) else { throw Failure("\(folder.path) exists already.") }
        // This run's own work folder: two backups at once never share (or remove) each other's.
        let partial = root.appendingPathComponent(".partial-" + stamp(now) + "-" + UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(at: partial, withIntermediateDirectories: true)
        do {
            // The database first: a file a row names is written before the row commits.
            let schemaVersion = try snapshot(configuration, into: partial)
            let media = try copyMedia(from: configuration.resolvedMediaDirectory, to: partial.appendingPathComponent("media"),
                                      previous: previous?.appendingPathComponent("media"))
            let database = partial.appendingPathComponent(databaseName)
            let manifest = Manifest(createdAt: now, schemaVersion: schemaVersion, databaseBytes: try size(database),
                                    databaseSHA256: try sha256(database), mediaFiles: media.files, mediaBytes: media.bytes, mediaLinked: media.linked)
            try encode(manifest).write(to: partial.appendingPathComponent(manifestName))
            try FileManager.default.moveItem(at: partial, to: folder)
            if let keep { try prune(root, keep: keep, sparing: folder) }
            return (folder, manifest)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }

    /// Brings a backup back into `configuration`'s data directory (which
    /// holds no database yet) and checks it; answers what it found.
    public static func restore(_ backup: URL, into configuration: ServerConfiguration) throws -> Manifest {
        let manifest = try read(backup)
        let target = try restorableTarget(of: manifest, into: configuration)
        let copy = backup.appendingPathComponent(databaseName)
        guard try sha256(copy) == manifest.databaseSHA256 else {
            throw Failure("The backup's database does not match its manifest (damaged or changed).")
        }
        // Every check on the backup itself, before anything is written.
        try check(database: copy, media: backup.appendingPathComponent("media"))
        let media = configuration.resolvedMediaDirectory
        var written: [URL] = []
        do {
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: copy, to: target)
            written.append(target)
            let key = backup.appendingPathComponent(keyFileName)
            if FileManager.default.fileExists(atPath: key.path), !FileManager.default.fileExists(atPath: configuration.keyFile.path) {
                try FileManager.default.copyItem(at: key, to: configuration.keyFile)
                written.append(configuration.keyFile)
            }
            _ = try copyMedia(from: backup.appendingPathComponent("media"), to: media, previous: nil, replacing: true)
            guard try sha256(target) == manifest.databaseSHA256 else { throw Failure("The database changed while it was copied in.") }
            try check(database: target, media: media, hashing: false)
        } catch {
            for file in written { try? FileManager.default.removeItem(at: file) }
            throw error
        }
        return manifest
    }

    /// What a row says of the file it names: its key, and its size and
    /// SHA-256 where the table records them.
    struct StoredFileRow {
        let table: String
        let key: String
        let size: Int64?
        let sha256: String?
    }

    /// SQLite's integrity and foreign-key checks, and every stored file a row
    /// names present in `media` with the size and SHA-256 its row records.
    /// `hashing: false` skips the SHA-256s (for files just copied from ones that were hashed).
    public static func check(database: URL, media: URL, hashing: Bool = true) throws {
        try check(database: database, mediaFolder: "the media folder") { row in
            let path = media.appendingPathComponent(row.key).path
            guard let size = fileSize(path) else { return "missing" }
            if let expected = row.size, expected != size { return "\(size) bytes, its row says \(expected)" }
            if hashing, let expected = row.sha256, try sha256(URL(fileURLWithPath: path)) != expected { return "not the file its row's SHA-256 names" }
            return nil
        }
    }

    /// The checks of `check(database:media:)`, asking `examine` what is wrong
    /// with a row's file in the backup (nil when nothing is).
    static func check(database: URL, mediaFolder: String, examine: (StoredFileRow) throws -> String?) throws {
        try SQLiteFile(database, readOnly: true).use { file in
            let integrity = try file.rows("PRAGMA integrity_check").compactMap { $0.first ?? nil }
            guard integrity == ["ok"] else { throw Failure("Integrity check: \(integrity.prefix(5).joined(separator: "; "))") }
            let broken = try file.rows("PRAGMA foreign_key_check")
            guard broken.isEmpty else { throw Failure("\(broken.count) rows point at rows that are missing.") }
            var problems: [String] = []
            var examined = Set<String>()
            for table in try file.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").compactMap({ $0.first ?? nil })
            where table != "media_trash" {
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                let columns = Set(try file.rows("PRAGMA table_info(\(quoted))").compactMap { $0.count > 1 ? $0[1] : nil })
                guard columns.contains("storage_key") else { continue }
                // A table that records a file's size records what its hash is of; an upload's hash may be the client's claim.
                let recorded = columns.contains("size_bytes") && columns.contains("sha256")
                let sql = "SELECT storage_key\(recorded ? ", size_bytes, sha256" : "") FROM \(quoted) WHERE storage_key IS NOT NULL"
                for values in try file.rows(sql) {
                    guard let key = values.first ?? nil else { continue }
                    // A key names a file inside the media folder, as the server builds them.
                    guard key.split(separator: "/", omittingEmptySubsequences: false).allSatisfy({ FileMediaStorage.isSafeComponent(String($0)) }) else {
                        throw Failure("\(table) names a stored file outside the media folder: \(key)")
                    }
                    let row = StoredFileRow(table: table, key: key, size: recorded ? (values[1] ?? nil).flatMap { Int64($0) } : nil,
                                            sha256: recorded ? (values[2] ?? nil).flatMap { $0.count == 64 ? $0.lowercased() : nil } : nil)
                    // One file may be named by several rows (an upload and its photo): examined once, with what its rows record.
                    guard row.size != nil || !examined.contains(key) else { continue }
                    examined.insert(key)
                    if let problem = try examine(row) { problems.append("\(key) (\(table)): \(problem)") }
                }
            }
            guard problems.isEmpty else {
                throw Failure("\(problems.count) stored files are missing or damaged in \(mediaFolder), e.g. \(problems.prefix(3).joined(separator: "; ")).")
            }
        }
    }

    /// The backups under `root`, oldest first.
    public static func backups(in root: URL) throws -> [URL] {
        guard FileManager.default.fileExists(atPath: root.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasPrefix(folderPrefix) && FileManager.default.fileExists(atPath: $0.appendingPathComponent(manifestName).path) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    public static func read(_ backup: URL) throws -> Manifest {
        guard let data = FileManager.default.contents(atPath: backup.appendingPathComponent(manifestName).path) else {
            throw Failure("\(backup.path) is not a backup (no \(manifestName)).")
        }
        return try decode(data)
    }

    /// Keeps the newest `keep` backups by when they were made (their manifests'), never `sparing` (the one just made).
    static func prune(_ root: URL, keep: Int, sparing: URL) throws {
        let others = try backups(in: root).filter { $0.lastPathComponent != sparing.lastPathComponent }
            .map { (url: $0, made: (try? read($0))?.createdAt ?? .distantPast) }
            .sorted { $0.made < $1.made }
        for old in others.dropLast(max(keep - 1, 0)) { try FileManager.default.removeItem(at: old.url) }
        // The work folders of backups that died (killed, machine off) more than a day ago.
        for leftover in try FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: [.contentModificationDateKey])
        where leftover.lastPathComponent.hasPrefix(".partial-") {
            let modified = try? leftover.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate
            if let modified, Date().timeIntervalSince(modified) > 86_400 { try? FileManager.default.removeItem(at: leftover) }
        }
    }

    // MARK: Shared by backups to a folder and to a bucket

    /// Refuses what `vroomx backup` cannot copy.
    static func checkBackupable(_ configuration: ServerConfiguration, into folder: URL? = nil) throws {
        guard configuration.databaseURL == nil else {
            throw Failure("The database is PostgreSQL: back it up with pg_dump or base backups (docs/operations.md).")
        }
        // Backups inside what they copy would hold every earlier one, and the media pool would send them.
        if let folder {
            let target = folder.standardizedFileURL.resolvingSymlinksInPath().path + "/"
            for inside in [configuration.dataDirectory, configuration.resolvedMediaDirectory] {
                let path = inside.standardizedFileURL.resolvingSymlinksInPath().path + "/"
                guard !target.hasPrefix(path) else { throw Failure("Back up to a folder outside \(inside.path) (it would copy itself).") }
            }
        }
        guard FileManager.default.fileExists(atPath: configuration.sqlitePath) else { throw Failure("No database at \(configuration.sqlitePath).") }
    }

    /// Copies the database (online) and the sign-in key into `folder`; the copy's schema version.
    static func snapshot(_ configuration: ServerConfiguration, into folder: URL) throws -> Int {
        let copy = folder.appendingPathComponent(databaseName)
        try SQLiteFile.backup(from: URL(fileURLWithPath: configuration.sqlitePath), to: copy)
        let schemaVersion = try SQLiteFile(copy, readOnly: true).use { file in
            Int(try file.rows("SELECT MAX(version) FROM schema_migrations").first?.first.flatMap { $0 } ?? "0") ?? 0
        }
        // The key that signs sign-in tokens: restored with the data, the phones stay signed in.
        if FileManager.default.fileExists(atPath: configuration.keyFile.path) {
            try FileManager.default.copyItem(at: configuration.keyFile, to: folder.appendingPathComponent(keyFileName))
        }
        return schemaVersion
    }

    /// Where a restore of `manifest` writes the database, once it is sure it may.
    static func restorableTarget(of manifest: Manifest, into configuration: ServerConfiguration) throws -> URL {
        guard configuration.databaseURL == nil else { throw Failure("The database is PostgreSQL: restore it with pg_restore (docs/operations.md).") }
        guard manifest.schemaVersion <= ServerServices.schemaVersion else {
            throw Failure("The backup is of schema \(manifest.schemaVersion), newer than this VroomX's (\(ServerServices.schemaVersion)): restore it with that version.")
        }
        let target = URL(fileURLWithPath: configuration.sqlitePath)
        // A database, or a journal an earlier database left (SQLite would read it into the restored one).
        for suffix in ["", "-wal", "-shm", "-journal"] where FileManager.default.fileExists(atPath: target.path + suffix) {
            throw Failure("\(target.path + suffix) exists: restore into a data directory without a database (move it and its -wal and -shm files aside first).")
        }
        return target
    }

    static func encode(_ manifest: Manifest) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(manifest)
    }

    static func decode(_ data: Data) throws -> Manifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(Manifest.self, from: data)
    }

    /// A finished media file: its key (the path under the media folder), where it is and its size.
    struct MediaFile {
        let key: String
        let url: URL
        let size: Int64
    }

    /// Longest path a media file may have to be backed up. The server's keys
    /// are short (carrier, kind, id); Foundation's file calls go wrong past
    /// 1,024 bytes (a path cut short, once a damaged heap), so a stray file
    /// deeper than this is left out rather than handed to them.
    static let longestMediaPath = 1_000

    /// The finished files under `source` (not `.partial` uploads or other
    /// hidden files, nor symbolic links), walked with the C calls.
    static func mediaFiles(in source: URL) throws -> [MediaFile] {
        var files: [MediaFile] = []
        func walk(_ directory: String, _ prefix: String) {
            guard let handle = opendir(directory) else { return }
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                    String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard !name.hasPrefix("."), !name.isEmpty else { continue }
                let path = directory + "/" + name
                guard path.utf8.count <= longestMediaPath else { continue }
                var status = stat()
                guard lstat(path, &status) == 0 else { continue }
                switch status.st_mode & S_IFMT {
                case S_IFDIR: walk(path, prefix + name + "/")
                case S_IFREG: files.append(MediaFile(key: prefix + name, url: URL(fileURLWithPath: path), size: Int64(status.st_size)))
                default: continue
                }
            }
        }
        walk(source.path, "")
        return files.sorted { $0.key < $1.key }
    }

    /// Copies every finished file (not `.partial` uploads); one the previous backup holds is a hard link to it instead.
    static func copyMedia(from source: URL, to destination: URL, previous: URL?, replacing: Bool = false) throws -> (files: Int, bytes: Int64, linked: Int) {
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        var (files, bytes, linked) = (0, Int64(0), 0)
        for media in try mediaFiles(in: source) {
            let (relative, file, size) = (media.key, media.url, media.size)
            let target = destination.appendingPathComponent(relative)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            // A stored file never changes under its key (a new photo is a new key): the same name and size is the same file.
            // (The C calls: Foundation's attributes and link calls fail on paths over 1,024 bytes, and one damaged the heap.)
            if let previous, fileSize(previous.appendingPathComponent(relative).path) == size,
               link(previous.appendingPathComponent(relative).path, target.path) == 0 {
                linked += 1
            } else {
                // Into a media folder a restore finds: the backup's copy of a key stands.
                if replacing, FileManager.default.fileExists(atPath: target.path) { try FileManager.default.removeItem(at: target) }
                try FileManager.default.copyItem(at: file, to: target)
            }
            files += 1
            bytes += size
        }
        return (files, bytes, linked)
    }

    static func stamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return formatter.string(from: date)
    }

    /// A regular file's size (nil for anything else, or nothing), from `lstat`.
    static func fileSize(_ path: String) -> Int64? {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(status.st_size)
    }

    static func size(_ file: URL) throws -> Int64 {
        guard let size = fileSize(file.path) else { throw Failure("\(file.path) is not a file.") }
        return size
    }

    static func sha256(_ file: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}

/// A SQLite file opened with the C API, as the server's database is: for
/// the online backup and the checks of a restore.
struct SQLiteFile {
    private let handle: OpaquePointer

    init(_ file: URL, readOnly: Bool) throws {
        var opened: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        guard sqlite3_open_v2(file.path, &opened, flags, nil) == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(opened)
            throw Backup.Failure("\(file.path): \(message)")
        }
        sqlite3_busy_timeout(opened, 10_000)
        handle = opened
    }

    func use<T>(_ body: (SQLiteFile) throws -> T) throws -> T {
        defer { sqlite3_close(handle) }
        return try body(self)
    }

    /// Every row's columns as text (NULL as nil).
    func rows(_ sql: String) throws -> [[String?]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw Backup.Failure("\(sql): \(String(cString: sqlite3_errmsg(handle)))")
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[String?]] = []
        while true {
            let step = sqlite3_step(statement)
            guard step == SQLITE_ROW else {
                guard step == SQLITE_DONE else { throw Backup.Failure("\(sql): \(String(cString: sqlite3_errmsg(handle)))") }
                return rows
            }
            rows.append((0..<sqlite3_column_count(statement)).map { column in
                sqlite3_column_text(statement, column).map { String(cString: $0) }
            })
        }
    }

    /// SQLite's online backup of `source` into a new file `target`: every
    /// page in one step, so under one read transaction — the copy is one
    /// moment of the database while its writers go on (WAL).
    static func backup(from source: URL, to target: URL) throws {
        try SQLiteFile(source, readOnly: true).use { from in
            try SQLiteFile(target, readOnly: false).use { to in
                guard let backup = sqlite3_backup_init(to.handle, "main", from.handle, "main") else {
                    throw Backup.Failure("backup: \(String(cString: sqlite3_errmsg(to.handle)))")
                }
                var step = SQLITE_OK
                for _ in 0..<600 {  // a writer's lock lasts milliseconds; give up after about a minute
                    step = sqlite3_backup_step(backup, -1)
                    guard step == SQLITE_BUSY || step == SQLITE_LOCKED else { break }
                    usleep(100_000)
                }
                let finished = sqlite3_backup_finish(backup)
                guard step == SQLITE_DONE, finished == SQLITE_OK else {
                    throw Backup.Failure("backup: \(String(cString: sqlite3_errmsg(to.handle)))")
                }
                // One file, no -wal and -shm beside it (the server turns WAL on again when it opens it).
                _ = try to.rows("PRAGMA journal_mode = DELETE")
            }
        }
    }
}
