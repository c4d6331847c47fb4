import NIOConcurrencyHelpers
import NIOCore

/// Counts open connections per client address and refuses more than the
/// cap, so that one client cannot take every descriptor of the process.
/// IPv6 clients are counted per /64, the block one subscriber usually gets.
final class ClientConnectionLimiter: Sendable {
    let maxPerClient: Int
    private let open = NIOLockedValueBox<[ClientAddress: Int]>([:])

    init(maxPerClient: Int) { self.maxPerClient = maxPerClient }

    /// Takes a place for the channel's client until the channel closes;
    /// false when the client already holds the most it may.
    func admit(_ channel: any Channel) -> Bool {
        let client = ClientAddress(channel.remoteAddress)
        let admitted = open.withLockedValue { open -> Bool in
            let count = open[client, default: 0]
            guard count < maxPerClient else { return false }
            open[client] = count + 1
            return true
        }
        if admitted {
            channel.closeFuture.whenComplete { [open] _ in
                open.withLockedValue { open in
                    let count = open[client, default: 1] - 1
                    open[client] = count > 0 ? count : nil
                }
            }
        }
        return admitted
    }

    func connections(from address: SocketAddress?) -> Int {
        open.withLockedValue { $0[ClientAddress(address), default: 0] }
    }
}

/// The part of a peer address that identifies a client: an IPv4 address, or
/// the /64 network of an IPv6 address (IPv4-mapped ones count as IPv4).
enum ClientAddress: Hashable, Sendable {
    case v4(UInt32)
    case v6(UInt64)
    case unknown

    init(_ address: SocketAddress?) {
        switch address {
        case .v4(let v4)?:
            self = .v4(UInt32(bigEndian: v4.address.sin_addr.s_addr))
        case .v6(let v6)?:
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                self = .v4(bytes[12...].reduce(0) { $0 << 8 | UInt32($1) })
            } else {
                self = .v6(bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
            }
        default:
            self = .unknown
        }
    }
}
