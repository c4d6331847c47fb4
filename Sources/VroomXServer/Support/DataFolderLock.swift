import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One server per SQLite data folder. A second `vroomx serve` on the same
/// folder would commit to the same file unheard: neither instance's realtime
/// sockets nor its read cache would learn of the other's writes (PostgreSQL
/// instances hear each other through LISTEN; SQLite has no such channel).
/// The lock is the kernel's (`flock`), so it goes with the process, however
/// that ends.
public final class DataFolderLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Takes the folder's lock, or says which server holds it.
    public static func acquire(_ directory: URL) throws -> DataFolderLock {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("server.lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ConfigurationError("Cannot open \(path): \(String(cString: strerror(errno))).")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            close(descriptor)
            throw ConfigurationError("""
                Another vroomx server\(holder.isEmpty ? "" : " (process \(holder))") is serving \(directory.path). \
                Stop it first, or give this one its own VROOMX_DATA_DIR (several instances share PostgreSQL, not a SQLite folder).
                """)
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return DataFolderLock(descriptor: descriptor)
    }
}
