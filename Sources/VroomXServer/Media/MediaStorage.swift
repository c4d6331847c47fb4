#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import VroomXSecurity

/// Where inspection media lives: uploads in progress under their upload id,
/// finished files under their storage key
/// (`{tenant}/{inspection}/photos/{slot}.{upload}`). A partial upload is
/// never visible under its key: `commit` makes the whole file appear at once.
///
/// The database records how many bytes of an upload arrived; storage keeps
/// at least that many durably, so any instance can resume an upload from
/// the recorded offset (`openPartial(at:)` drops anything stored beyond it).
protocol MediaStorage: Sendable {
    /// Prepares storage for a new upload that will become `key`; what it
    /// returns is kept with the upload (S3: the multipart upload id).
    func beginPartial(_ upload: String, key: String) async throws -> String?
    /// Opens an upload of `length` bytes in progress to continue after its
    /// first `offset` bytes.
    func openPartial(_ upload: String, key: String, handle: String?, length: Int64, at offset: Int64) async throws -> any PartialMediaWriter
    /// Makes a finished upload of `length` bytes the file at `key`, durably
    /// and atomically. Done again after it succeeded, it succeeds.
    func commit(_ upload: String, key: String, handle: String?, length: Int64) async throws
    /// Drops an upload in progress and its bytes; nothing if there is none.
    func discardPartial(_ upload: String, key: String, handle: String?) async
    /// A finished file, for reading; nil when there is none.
    func open(_ key: String) async throws -> (any StoredMediaReader)?
    /// Deletes a finished file; nothing if there is none.
    func remove(_ key: String) async
    /// Removes what uploads that ended long ago may have left behind
    /// (storage their cleanup never reached), never what an upload row
    /// still describes; returns how many.
    func removeLeftovers(olderThan age: TimeInterval, described: UploadRowCheck) async throws -> Int
}

/// Which of these upload ids or storage handles an upload row still
/// describes.
typealias UploadRowCheck = @Sendable ([String]) async throws -> Set<String>

/// Bytes of one upload in progress, written in order by one request.
protocol PartialMediaWriter: AnyObject {
    /// Appends bytes after those already written.
    func append(_ bytes: ByteBuffer) async throws
    /// Makes durable what can be made durable cheaply mid-request, and
    /// returns how many bytes of the upload are now durable.
    func checkpoint() async throws -> Int64
    /// Keeps the upload's first `length` bytes (no fewer than the offset it
    /// was opened at or the last checkpoint) durably, dropping the rest.
    func finish(keeping length: Int64) async throws
    /// The upload's first `count` bytes, when this writer holds them.
    func prefix(_ count: Int) async throws -> [UInt8]?
    func close()
}

/// A finished file.
protocol StoredMediaReader: AnyObject, Sendable {
    var size: Int64 { get }
    /// Sends the bytes of `range` to `consume`, in order, in chunks.
    func read(_ range: Range<Int64>, into consume: (ByteBuffer) async throws -> Void) async throws
    func close()
}

extension StoredMediaReader {
    /// The hex SHA-256 of the whole file.
    func sha256() async throws -> String {
        var hasher = SHA256()
        try await read(0..<size) { chunk in chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) } }
        return hasher.finalize().hexString
    }

    /// The first `count` bytes (fewer in a shorter file).
    func prefix(_ count: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        try await read(0..<min(Int64(count), size)) { chunk in bytes += chunk.readableBytesView }
        return bytes
    }
}

/// A storage operation failed; `errno` says why when the system said.
struct MediaStorageError: Error, CustomStringConvertible {
    let description: String
    var errno: Int32? = nil
    /// Some of an upload's stored bytes are gone; this many from the start
    /// are still there (the client can resend from here).
    var stillStored: Int64? = nil
    /// An upload's stored bytes are gone altogether (it must start again).
    var uploadLost = false

    /// The disk (or the user's disk quota) is full: worth retrying later.
    var isOutOfSpace: Bool { errno == ENOSPC || errno == EDQUOT || errno == EFBIG }

    /// The failed call and the system's reason, from the current `errno`.
    static func system(_ operation: String) -> MediaStorageError {
        let code = Glibc.errno
        return MediaStorageError(description: "\(operation): \(String(cString: strerror(code)))", errno: code)
    }
}

/// The embedded default: a folder in the data directory. Uploads in
/// progress are `.partial/{upload}`; `commit` fsyncs the file, renames it
/// into place and fsyncs the folder, so after a crash a key holds either
/// the previous file or the complete new one.
struct FileMediaStorage: MediaStorage {
    let root: URL

    init(root: URL) throws {
        self.root = root
        try FileManager.default.createDirectory(at: root.appendingPathComponent(".partial"), withIntermediateDirectories: true)
    }

    private func partialURL(_ upload: String) throws -> URL {
        guard Self.isSafeComponent(upload) else { throw MediaStorageError(description: "bad upload id") }
        return root.appendingPathComponent(".partial").appendingPathComponent(upload)
    }

    /// Keys are built by the server from ids and validated slots; checked
    /// again here so no key can leave the media folder.
    private func fileURL(_ key: String) throws -> URL {
        let components = key.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !components.isEmpty, components.allSatisfy(Self.isSafeComponent) else {
            throw MediaStorageError(description: "bad storage key")
        }
        return components.reduce(root) { $0.appendingPathComponent($1) }
    }

    static func isSafeComponent(_ component: String) -> Bool {
        !component.isEmpty && component.count <= 100 && !component.hasPrefix(".")
            && component.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: ".")
            }
    }

    func beginPartial(_ upload: String, key: String) async throws -> String? {
        let fd = Glibc.open(try partialURL(upload).path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw MediaStorageError.system("open") }
        _ = Glibc.close(fd)
        return nil
    }

    func openPartial(_ upload: String, key: String, handle: String?, length: Int64, at offset: Int64) async throws -> any PartialMediaWriter {
        try FileWriter(path: try partialURL(upload).path, at: offset)
    }

    func commit(_ upload: String, key: String, handle: String?, length: Int64) async throws {
        let source = try partialURL(upload)
        let destination = try fileURL(key)
        if !FileManager.default.fileExists(atPath: source.path), FileManager.default.fileExists(atPath: destination.path) { return }
        let folder = destination.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard Glibc.truncate(source.path, off_t(length)) == 0 else { throw MediaStorageError.system("truncate") }
        try Self.fsync(path: source.path)
        guard rename(source.path, destination.path) == 0 else { throw MediaStorageError.system("rename") }
        try Self.fsync(path: folder.path)
    }

    func discardPartial(_ upload: String, key: String, handle: String?) async {
        guard let url = try? partialURL(upload) else { return }
        try? FileManager.default.removeItem(at: url)
    }

    func open(_ key: String) async throws -> (any StoredMediaReader)? {
        let path = try fileURL(key).path
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try FileReader(path: path)
    }

    func remove(_ key: String) async {
        guard let url = try? fileURL(key) else { return }
        try? FileManager.default.removeItem(at: url)
    }

    /// Partial files whose upload row is gone (removed at expiry already,
    /// so only files a crash left behind).
    func removeLeftovers(olderThan age: TimeInterval, described: UploadRowCheck) async throws -> Int {
        let folder = root.appendingPathComponent(".partial")
        let cutoff = Date().addingTimeInterval(-age)
        let listed = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: [.contentModificationDateKey])) ?? []
        let old = listed.filter { url in
            (try? url.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate).map { $0 < cutoff } ?? false
        }
        let live = try await described(old.map(\.lastPathComponent))
        var removed = 0
        for url in old where !live.contains(url.lastPathComponent) {
            if (try? FileManager.default.removeItem(at: url)) != nil { removed += 1 }
        }
        return removed
    }

    static func fsync(path: String) throws {
        let fd = Glibc.open(path, O_RDONLY)
        guard fd >= 0 else { throw MediaStorageError.system("open \(path)") }
        defer { _ = Glibc.close(fd) }
        guard Glibc.fsync(fd) == 0 else { throw MediaStorageError.system("fsync") }
    }
}

/// An upload's partial file, written in order from an offset.
final class FileWriter: PartialMediaWriter {
    private let fd: Int32
    private var position: Int64

    init(path: String, at offset: Int64) throws {
        fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw MediaStorageError.system("open") }
        position = offset
    }

    func append(_ bytes: ByteBuffer) async throws {
        try bytes.withUnsafeReadableBytes { raw in
            var remaining = raw[...]
            while !remaining.isEmpty {
                let written = pwrite(fd, UnsafeRawBufferPointer(rebasing: remaining).baseAddress, remaining.count, off_t(position))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw MediaStorageError.system("write")
                }
                remaining = remaining.dropFirst(written)
                position += Int64(written)
            }
        }
    }

    func checkpoint() async throws -> Int64 {
        guard fsync(fd) == 0 else { throw MediaStorageError.system("fsync") }
        return position
    }

    func finish(keeping length: Int64) async throws {
        guard ftruncate(fd, off_t(length)) == 0 else { throw MediaStorageError.system("truncate") }
        guard fsync(fd) == 0 else { throw MediaStorageError.system("fsync") }
        position = length
    }

    func prefix(_ count: Int) async throws -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, 0) }
        guard read >= 0 else { throw MediaStorageError.system("read") }
        return Array(bytes.prefix(read))
    }

    func close() { _ = Glibc.close(fd) }
}

/// Positional reads from a file descriptor. The descriptor closes once,
/// at `close()` or when the reader is released: a response whose body is
/// never written (HEAD, a client gone before the headers) leaks nothing.
final class FileReader: StoredMediaReader, Sendable {
    private let fd: Int32
    private let isOpen = NIOLockedValueBox(true)
    let size: Int64

    init(path: String) throws {
        fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw MediaStorageError.system("open") }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = MediaStorageError.system("stat")
            _ = Glibc.close(fd)
            throw error
        }
        size = Int64(info.st_size)
    }

    func read(_ range: Range<Int64>, into consume: (ByteBuffer) async throws -> Void) async throws {
        var position = range.lowerBound
        while position < range.upperBound {
            let count = Int(min(256 << 10, range.upperBound - position))
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            let read = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                let result = pread(fd, raw.baseAddress, count, off_t(position))
                guard result >= 0 else { throw MediaStorageError.system("read") }
                return result
            }
            guard read > 0 else { return }
            try await consume(buffer)
            position += Int64(read)
        }
    }

    func close() {
        if isOpen.withLockedValue({ open in defer { open = false }; return open }) { _ = Glibc.close(fd) }
    }

    deinit { close() }
}

extension MediaStorage {
    /// Removes the bytes of a row whose deletion the caller's write has just
    /// made and put in the trash (`ReceiptRepository.trash`), once that has
    /// committed: a failure here leaves bytes nobody can reach, never a row
    /// without them. Inside a request's own transaction (an Idempotency-Key)
    /// the commit is still to come: the sweeper removes them after it
    /// (`UploadService.emptyTrash`).
    func removeOnceCommitted(_ key: String) async {
        if TenantTransaction.ambient == nil { await remove(key) }
    }
}
