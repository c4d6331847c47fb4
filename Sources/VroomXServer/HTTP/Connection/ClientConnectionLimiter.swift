import NIOConcurrencyHelpers
import NIOCore

/// Counts open connections per client address and refuses more than the
/// cap, so that one client cannot take every descriptor of the process.
/// IPv6 clients are counted per /64, the block one subscriber usually gets.
final class ClientConnectionLimiter: Sendable {
    let maxPerClient: Int
    private let open = NIOLockedValueBox<[String: Int]>([:])

    init(maxPerClient: Int) { self.maxPerClient = maxPerClient }

    /// Takes a place for the channel's client until the channel closes;
    /// false when the client already holds the most it may.
    func admit(_ channel: any Channel) -> Bool {
        let client = Self.key(channel.remoteAddress)
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
        open.withLockedValue { $0[Self.key(address), default: 0] }
    }

    /// Counted as every per-client limit counts (`ClientAddress.limitKey`).
    static func key(_ address: SocketAddress?) -> String {
        address?.ipAddress.map(ClientAddress.limitKey) ?? "unknown"
    }
}
