#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import NIOCore
import VroomXSecurity

/// Where inspection media lives: uploads in progress under their upload id,
/// finished files under their storage key
/// (`{tenant}/{inspection}/photos/{slot}.jpg`). A partial upload is never
/// visible under a key: `commit` makes the whole file appear at once.
protocol MediaStorage: Sendable {
    /// Opens an upload in progress for writing (created when new).
    func openPartial(_ upload: String) throws -> any PartialMediaWriter
    /// The first bytes of an upload in progress (for content sniffing).
    func partialPrefix(_ upload: String, count: Int) throws -> [UInt8]
    /// Hex SHA-256 of an upload in progress.
    func partialSHA256(_ upload: String) throws -> String
    /// Makes a finished upload the file at `key`, durably and atomically
    /// (replacing what was there).
    func commit(_ upload: String, to key: String) throws
    /// Drops an upload in progress; nothing if there is none.
    func discardPartial(_ upload: String)
    /// Whether an upload in progress has its bytes here.
    func hasPartial(_ upload: String) -> Bool
    /// A finished file, for reading.
    func open(_ key: String) throws -> any StoredMediaReader
    /// Deletes a finished file; nothing if there is none.
    func remove(_ key: String)
}

protocol PartialMediaWriter: AnyObject {
    /// Writes at an absolute offset.
    func write(_ bytes: ByteBuffer, at offset: Int64) throws
    /// Makes what was written durable.
    func sync() throws
    /// Drops everything after `length` (a rejected chunk).
    func truncate(to length: Int64) throws
    func close()
}

protocol StoredMediaReader: AnyObject, Sendable {
    var size: Int64 { get }
    func read(at offset: Int64, count: Int) throws -> ByteBuffer
    func close()
}

/// A storage operation failed; `errno` says why when the system said.
struct MediaStorageError: Error, CustomStringConvertible {
    let description: String
    var errno: Int32? = nil

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

    func openPartial(_ upload: String) throws -> any PartialMediaWriter {
        try FileWriter(path: try partialURL(upload).path)
    }

    func partialPrefix(_ upload: String, count: Int) throws -> [UInt8] {
        let handle = try FileHandle(forReadingFrom: try partialURL(upload))
        defer { try? handle.close() }
        return [UInt8](try handle.read(upToCount: count) ?? Data())
    }

    func partialSHA256(_ upload: String) throws -> String {
        let handle = try FileHandle(forReadingFrom: try partialURL(upload))
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(data: chunk)
        }
        return hasher.finalize().hexString
    }

    func commit(_ upload: String, to key: String) throws {
        let source = try partialURL(upload)
        let destination = try fileURL(key)
        let folder = destination.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Self.fsync(path: source.path)
        guard rename(source.path, destination.path) == 0 else { throw MediaStorageError.system("rename") }
        try Self.fsync(path: folder.path)
    }

    func discardPartial(_ upload: String) {
        guard let url = try? partialURL(upload) else { return }
        try? FileManager.default.removeItem(at: url)
    }

    func hasPartial(_ upload: String) -> Bool {
        guard let url = try? partialURL(upload) else { return false }
        return FileManager.default.fileExists(atPath: url.path)
    }

    func open(_ key: String) throws -> any StoredMediaReader {
        try FileReader(path: try fileURL(key).path)
    }

    func remove(_ key: String) {
        guard let url = try? fileURL(key) else { return }
        try? FileManager.default.removeItem(at: url)
    }

    static func fsync(path: String) throws {
        let fd = Glibc.open(path, O_RDONLY)
        guard fd >= 0 else { throw MediaStorageError.system("open \(path)") }
        defer { _ = Glibc.close(fd) }
        guard Glibc.fsync(fd) == 0 else { throw MediaStorageError.system("fsync") }
    }
}

/// Positional writes to a file descriptor.
final class FileWriter: PartialMediaWriter {
    private let fd: Int32

    init(path: String) throws {
        fd = Glibc.open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw MediaStorageError.system("open") }
    }

    func write(_ bytes: ByteBuffer, at offset: Int64) throws {
        var position = offset
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

    func sync() throws {
        guard fsync(fd) == 0 else { throw MediaStorageError.system("fsync") }
    }

    func truncate(to length: Int64) throws {
        guard ftruncate(fd, off_t(length)) == 0 else { throw MediaStorageError.system("truncate") }
    }

    func close() { _ = Glibc.close(fd) }
}

/// Positional reads from a file descriptor.
final class FileReader: StoredMediaReader, Sendable {
    private let fd: Int32
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

    func read(at offset: Int64, count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        let read = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            let result = pread(fd, raw.baseAddress, count, off_t(offset))
            guard result >= 0 else { throw MediaStorageError.system("read") }
            return result
        }
        _ = read
        return buffer
    }

    func close() { _ = Glibc.close(fd) }
}
