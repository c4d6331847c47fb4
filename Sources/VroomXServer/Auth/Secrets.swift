import Crypto
import Foundation
import VroomXSecurity

/// The server's signing secret, and keys derived from it.
struct Secrets: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    var description: String { "Secrets(redacted)" }
    var debugDescription: String { description }

    let jwtKey: [UInt8]
    /// Keys the hashes of one-time codes, so a database copy alone cannot
    /// be used to recover codes by trying all million of them.
    let codePepper: SymmetricKey
    /// Derives the refresh token that follows another (see `refreshSuccessor`).
    let refreshKey: SymmetricKey
    /// Signs customers' tracking links (see `TrackingToken`).
    let trackingKey: SymmetricKey

    init(jwtKey: [UInt8]) {
        self.jwtKey = jwtKey
        trackingKey = Self.derive("vroomx tracking links", from: jwtKey)
        codePepper = Self.derive("vroomx one-time codes", from: jwtKey)
        refreshKey = Self.derive("vroomx refresh successors", from: jwtKey)
    }

    private static func derive(_ purpose: String, from key: [UInt8]) -> SymmetricKey {
        SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(purpose.utf8), using: SymmetricKey(data: key)))
    }

    /// The refresh token that replaces `token` when it is rotated. Derived,
    /// not random, so that presenting `token` again (a client that lost the
    /// answer, two processes refreshing at once) yields the very same
    /// successor instead of a second lineage; unguessable without the key.
    func refreshSuccessor(of token: String) -> String {
        SecureToken.base64URL(Array(HMAC<SHA256>.authenticationCode(for: Array(token.utf8), using: refreshKey)))
    }

    /// `VROOMX_JWT_SECRET` when given (at least 32 characters), otherwise the
    /// key file in the data directory, created with fresh random bytes and
    /// owner-only permissions on first start.
    static func load(secret: String?, keyFile: URL) throws -> Secrets {
        if let secret {
            guard secret.utf8.count >= 32 else { throw ConfigurationError("VROOMX_JWT_SECRET must be at least 32 characters.") }
            return Secrets(jwtKey: Array(secret.utf8))
        }
        if let data = try? Data(contentsOf: keyFile), let text = String(data: data, encoding: .utf8),
           let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count >= 32 {
            return Secrets(jwtKey: [UInt8](key))
        }
        var generator = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try FileManager.default.createDirectory(at: keyFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: keyFile.path, contents: Data((Data(key).base64EncodedString() + "\n").utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw ConfigurationError("Cannot write the key file \(keyFile.path).")
        }
        return Secrets(jwtKey: key)
    }

    func codeHash(email: String, code: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(email):\(code)".utf8), using: codePepper)
        return mac.hexString
    }
}
