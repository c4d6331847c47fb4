import Crypto
import Foundation
import VroomXSecurity
import VroomXModels

/// A tracking link's token: the link's id and a signature of it under the
/// server's key, so the database never holds a usable token and a guessed
/// or altered one is refused before any query.
struct TrackingToken: Sendable {
    let key: SymmetricKey

    /// 32 hex digits of the id, then 22 characters of signature.
    static let length = 54

    func token(for link: UUID) -> String {
        let id = Self.hex(link)
        return id + signature(id)
    }

    /// The link a token names, when its signature is the server's.
    func link(of token: String) -> UUID? {
        guard token.utf8.count == Self.length, token.utf8.allSatisfy({ $0 < 128 }) else { return nil }
        let id = String(token.prefix(32))
        guard let uuid = Self.uuid(hex: id) else { return nil }
        let given = Array(token.utf8.dropFirst(32))
        let expected = Array(signature(id).utf8)
        // Compared in full whatever differs, so timing tells nothing of the signature.
        guard zip(given, expected).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 else { return nil }
        return uuid
    }

    private func signature(_ id: String) -> String {
        SecureToken.base64URL(Array(HMAC<SHA256>.authenticationCode(for: Array(id.utf8), using: key).prefix(16)))
    }

    private static func hex(_ uuid: UUID) -> String { uuid.uuidString.lowercased().replacingOccurrences(of: "-", with: "") }

    private static func uuid(hex: String) -> UUID? {
        guard hex.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        let characters = Array(hex)
        let grouped = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
        return UUID(uuidString: grouped)
    }
}
