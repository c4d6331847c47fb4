import Foundation
#if canImport(Security)
import Security
#endif

/// Where secrets live on the device: tokens and the PIN hash.
public protocol SecureStore: Sendable {
    func data(for key: String) throws -> Data?
    func set(_ data: Data, for key: String) throws
    func remove(_ key: String) throws
}

public struct SecureStoreError: Error, CustomStringConvertible {
    public let description: String
}

/// On Linux: one JSON file in the app's state directory, readable and
/// writable by the user only (mode 600), replaced atomically on each write.
/// Each read-modify-write holds an exclusive `flock` on a lock file beside
/// it: two processes (a background sync saving refreshed tokens, a command
/// opening the unlock window) would otherwise each write back the file as
/// they read it and undo the other's change (an undone token rotation ends
/// the session on the server as a replayed refresh token).
public final class FileSecureStore: SecureStore, @unchecked Sendable {
    private let url: URL
    private let lockURL: URL
    private let lock = NSLock()

    public init(directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        url = directory.appendingPathComponent("secrets.json")
        lockURL = directory.appendingPathComponent("secrets.lock")
    }

    public func data(for key: String) throws -> Data? {
        try locked(LOCK_SH) { try load()[key].flatMap { Data(base64Encoded: $0) } }
    }

    public func set(_ data: Data, for key: String) throws {
        try locked(LOCK_EX) {
            var values = try load()
            values[key] = data.base64EncodedString()
            try save(values)
        }
    }

    public func remove(_ key: String) throws {
        try locked(LOCK_EX) {
            var values = try load()
            guard values.removeValue(forKey: key) != nil else { return }
            try save(values)
        }
    }

    /// Runs `body` holding this process's lock and the file lock. The lock
    /// is held for one small file's read and write; the kernel drops it if
    /// the process dies holding it.
    private func locked<T>(_ operation: Int32, _ body: () throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        let descriptor = open(lockURL.path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SecureStoreError(description: "cannot open \(lockURL.path): errno \(errno)") }
        defer { close(descriptor) }
        while flock(descriptor, operation) != 0 {
            guard errno == EINTR else { throw SecureStoreError(description: "cannot lock \(lockURL.path): errno \(errno)") }
        }
        return try body()
    }

    private func load() throws -> [String: String] {
        guard let data = try? Data(contentsOf: url) else { return [:] }
        return try JSONDecoder().decode([String: String].self, from: data)
    }

    private func save(_ values: [String: String]) throws {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".secrets-\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: try JSONEncoder().encode(values),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw SecureStoreError(description: "cannot write \(temporary.path)")
        }
        // rename(2) replaces the old file atomically: a crash leaves the old or the new one, never half.
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw SecureStoreError(description: "cannot replace \(url.path): errno \(errno)")
        }
    }
}

#if canImport(Security)
/// On Apple platforms: the Keychain, available after first unlock, never
/// synced to other devices.
public struct KeychainSecureStore: SecureStore {
    let service: String

    public init(service: String = "app.vroomx.driver") { self.service = service }

    private func query(_ key: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: key]
    }

    public func data(for key: String) throws -> Data? {
        var item: CFTypeRef?
        var request = query(key)
        request[kSecReturnData as String] = true
        request[kSecMatchLimit as String] = kSecMatchLimitOne
        let status = SecItemCopyMatching(request as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw SecureStoreError(description: "Keychain read failed: \(status)") }
        return item as? Data
    }

    public func set(_ data: Data, for key: String) throws {
        let attributes: [String: Any] = [kSecValueData as String: data,
                                         kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
        var status = SecItemUpdate(query(key) as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(query(key).merging(attributes) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw SecureStoreError(description: "Keychain write failed: \(status)") }
    }

    public func remove(_ key: String) throws {
        let status = SecItemDelete(query(key) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else {
            throw SecureStoreError(description: "Keychain delete failed: \(status)")
        }
    }
}
#endif
