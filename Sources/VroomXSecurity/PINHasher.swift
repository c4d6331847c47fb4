import Crypto
import CryptoExtras
import Foundation

/// Slow, salted hashing for the 4-digit PIN (scrypt). A PIN has only 10,000
/// values, so the real protection is the attempt cap; the slow hash makes a
/// stolen hash cost minutes of work instead of microseconds and never
/// reveals the PIN at a glance, unlike the bare SHA-256 the seed proposed.
///
/// Stored as `scrypt$N$r$p$salt$hash` (base64), so the cost can be raised
/// later while old hashes keep verifying.
public enum PINHasher {
    public static let defaultCost = 15 // N = 2^15, r = 8: 32 MiB, tens of milliseconds

    public static func hash(_ pin: String, cost: Int = defaultCost) throws -> String {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        let key = try derive(pin, salt: salt, n: 1 << cost, r: 8, p: 1)
        return "scrypt$\(1 << cost)$8$1$\(Data(salt).base64EncodedString())$\(Data(key).base64EncodedString())"
    }

    /// Compares in constant time. A malformed stored value never verifies.
    public static func verify(_ pin: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$").map(String.init)
        guard parts.count == 6, parts[0] == "scrypt", let n = Int(parts[1]), let r = Int(parts[2]), let p = Int(parts[3]),
              n > 1, n.nonzeroBitCount == 1, n <= 1 << 20, (1...16).contains(r), (1...4).contains(p),
              let salt = Data(base64Encoded: parts[4]), let expected = Data(base64Encoded: parts[5]),
              let key = try? derive(pin, salt: [UInt8](salt), n: n, r: r, p: p) else { return false }
        return constantTimeEqual(key, [UInt8](expected))
    }

    /// Whether a hash made elsewhere (the app) has this format and exactly
    /// the cost given, so a client can neither weaken stored PINs nor make
    /// every later check expensive.
    public static func isWellFormed(_ stored: String, cost: Int) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 6, parts[0] == "scrypt", parts[1] == String(1 << cost), parts[2] == "8", parts[3] == "1",
              let salt = Data(base64Encoded: parts[4]), salt.count >= 16, salt.count <= 64,
              let key = Data(base64Encoded: parts[5]), key.count == 32 else { return false }
        return true
    }

    static func derive(_ pin: String, salt: [UInt8], n: Int, r: Int, p: Int) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(from: Array(pin.utf8), salt: salt, outputByteCount: 32,
                                           rounds: n, blockSize: r, parallelism: p, maxMemory: 256 * r * n * p + 1 << 20)
        return key.withUnsafeBytes { Array($0) }
    }
}

public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
}

/// Random tokens and their digests.
public enum SecureToken {
    /// `byteCount` random bytes as unpadded base64url.
    public static func random(byteCount: Int = 32) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return base64URL(bytes)
    }

    /// SHA-256 as lowercase hex: how high-entropy tokens are stored, so a
    /// database leak does not hand out live tokens.
    public static func sha256Hex(_ text: String) -> String {
        SHA256.hash(data: Array(text.utf8)).hexString
    }

    public static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
