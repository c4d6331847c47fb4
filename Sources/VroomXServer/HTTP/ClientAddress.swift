#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Hummingbird

/// Who a request comes from, for per-client limits.
enum ClientAddress {
    /// The client's address: the peer, or behind `hops` proxies of our own,
    /// the address the outermost of them saw. Each proxy appends the address
    /// it received the request from to `X-Forwarded-For`, so the entries a
    /// client wrote itself are on the left and can be forged; only the
    /// `hops`-th entry from the right was added by a proxy we trust.
    static func of(_ request: Request, peer: String?, trustedHops hops: Int) -> String? {
        guard hops > 0, let header = request.headers[.init("X-Forwarded-For")!] else { return peer }
        let entries = header.split(separator: ",").map { $0.trimmingHorizontalSpace() }.filter { !$0.isEmpty }
        guard !entries.isEmpty else { return peer }
        return entries[max(0, entries.count - hops)]
    }

    /// The key limits are counted under: an IPv4 address as is, an IPv6
    /// address by its /64 prefix (one subscriber usually holds a whole /64
    /// and can pick any address in it), IPv4-mapped IPv6 as IPv4.
    static func limitKey(_ address: String) -> String {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return address }
        var v6 = in6_addr()
        let bare = address.hasPrefix("[") && address.hasSuffix("]") ? String(address.dropFirst().dropLast()) : address
        guard inet_pton(AF_INET6, bare.split(separator: "%").first.map(String.init) ?? bare, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
