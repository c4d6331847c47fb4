import Crypto
import Foundation
import VroomXSecurity

/// AWS Signature Version 4: the `Authorization` header of a request, or the
/// query of a presigned URL. Pure functions of the request, the keys and
/// the clock, so they are tested against AWS's published examples.
struct SigV4Signer: Sendable {
    struct Credentials: Sendable {
        let accessKeyID: String
        let secretAccessKey: String
    }

    let credentials: Credentials
    let region: String
    let service: String

    /// The SHA-256 of an empty body, which GET, HEAD and DELETE carry.
    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// The headers to add to a request: `x-amz-date`, `x-amz-content-sha256`
    /// and `Authorization`. `headers` must include `host`.
    func sign(method: String, path: String, query: [(String, String)], headers: [(String, String)],
              payloadHash: String, date: Date) -> [(String, String)] {
        let stamp = Self.timestamps(date)
        var all = headers + [("x-amz-date", stamp.full), ("x-amz-content-sha256", payloadHash)]
        all = all.map { ($0.0.lowercased(), Self.trimmed($0.1)) }
        let canonical = Self.canonicalHeaders(all)
        let request = [method, Self.canonicalURI(path), Self.canonicalQuery(query), canonical.text, canonical.signed, payloadHash]
            .joined(separator: "\n")
        let scope = "\(stamp.day)/\(region)/\(service)/aws4_request"
        let signature = self.signature(of: request, scope: scope, stamp: stamp)
        let authorization = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), "
            + "SignedHeaders=\(canonical.signed), Signature=\(signature)"
        return [("x-amz-date", stamp.full), ("x-amz-content-sha256", payloadHash), ("Authorization", authorization)]
    }

    /// The query of a presigned URL valid for `expires` seconds (1…604800),
    /// signing only the `host` header and an unsigned payload.
    func presignedQuery(method: String, path: String, query: [(String, String)], host: String, expires: Int,
                        date: Date) -> [(String, String)] {
        let stamp = Self.timestamps(date)
        let scope = "\(stamp.day)/\(region)/\(service)/aws4_request"
        let signing = query + [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope)"),
            ("X-Amz-Date", stamp.full),
            ("X-Amz-Expires", String(min(max(expires, 1), 604_800))),
            ("X-Amz-SignedHeaders", "host"),
        ]
        let request = [method, Self.canonicalURI(path), Self.canonicalQuery(signing), "host:\(Self.trimmed(host))\n", "host",
                       Self.unsignedPayload].joined(separator: "\n")
        return signing + [("X-Amz-Signature", signature(of: request, scope: scope, stamp: stamp))]
    }

    private func signature(of canonicalRequest: String, scope: String, stamp: (full: String, day: String)) -> String {
        let hashed = SHA256.hash(data: Array(canonicalRequest.utf8)).hexString
        let toSign = "AWS4-HMAC-SHA256\n\(stamp.full)\n\(scope)\n\(hashed)"
        var key = SymmetricKey(data: Array("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [stamp.day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key)))
        }
        return Data(HMAC<SHA256>.authenticationCode(for: Array(toSign.utf8), using: key)).hexString
    }

    // MARK: Canonical forms

    static func timestamps(_ date: Date) -> (full: String, day: String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        let day = String(format: "%04d", c.year ?? 1970) + two(c.month) + two(c.day)
        return ("\(day)T\(two(c.hour))\(two(c.minute))\(two(c.second))Z", day)
    }

    /// RFC 3986 encoding of everything but the unreserved characters (and
    /// `/` in a path): what SigV4 signs and what the request must carry.
    static func encode(_ text: String, keepingSlash: Bool = false) -> String {
        var out = ""
        for byte in text.utf8 {
            if unreserved.contains(byte) || (keepingSlash && byte == slash) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    private static let slash = UInt8(ascii: "/")
    private static let unreserved: Set<UInt8> = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))

    /// S3 signs the path as sent, each segment encoded once.
    static func canonicalURI(_ path: String) -> String {
        path.isEmpty ? "/" : encode(path, keepingSlash: true)
    }

    static func canonicalQuery(_ query: [(String, String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { (encode($0.0), encode($0.1)) }
        let sorted = encoded.sorted { a, b in a.name == b.name ? a.value < b.value : a.name < b.name }
        return sorted.map { pair in pair.name + "=" + pair.value }.joined(separator: "&")
    }

    static func canonicalHeaders(_ headers: [(String, String)]) -> (text: String, signed: String) {
        var merged: [String: [String]] = [:]
        for (name, value) in headers { merged[name, default: []].append(value) }
        let names = merged.keys.sorted()
        let text = names.map { "\($0):\(merged[$0, default: []].joined(separator: ","))\n" }.joined()
        return (text, names.joined(separator: ";"))
    }

    /// Leading and trailing spaces go and inner runs of spaces become one.
    static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}
