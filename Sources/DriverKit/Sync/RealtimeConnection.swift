import Foundation
import Logging
import NIOCore
import NIOWebSocket
import VroomXModels
import WSClient

/// The realtime socket: tells the sync engine when there is something new
/// after the local cursor. It only triggers pulls — the feed stays the one
/// way rows reach the cache — and reconnects with backoff, refreshing the
/// token on 4001 and re-snapshotting on 4410.
struct RealtimeConnection: Sendable {
    let baseURL: String
    let credentials: CredentialStore
    let logger: Logger

    enum Event: Sendable {
        case connected
        case newChanges(cursor: Int64)
        case closed(code: UInt16?)
    }

    /// Connects once and reports events until the socket closes.
    func connect(since: Int64, events: @escaping @Sendable (Event) async -> Void) async throws {
        let token = try await credentials.accessToken()
        var configuration = WebSocketClientConfiguration()
        configuration.additionalHeaders[.authorization] = "Bearer \(token)"
        configuration.maxFrameSize = 1 << 22
        let url = baseURL.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(of: "https://", with: "wss://")
            + Endpoint.realtime.path() + "?since=\(since)"
        let decoder = JSONDecoder()
        let close = try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, _, _ in
            for try await message in inbound.messages(maxSize: 1 << 24) {
                guard case .text(let text) = message,
                      let header = try? decoder.decode(MessageHeader.self, from: Data(text.utf8)) else { continue }
                switch header.type {
                case .ready: await events(.connected); await events(.newChanges(cursor: header.cursor))
                case .changes, .heartbeat: await events(.newChanges(cursor: header.cursor))
                }
            }
        }
        let code = close.flatMap { frame -> UInt16? in
            var buffer = ByteBuffer()
            buffer.write(webSocketErrorCode: frame.closeCode)
            return buffer.readInteger(as: UInt16.self)
        }
        await events(.closed(code: code))
    }

    /// Just the fields needed to decide whether to pull.
    struct MessageHeader: Decodable {
        let type: RealtimeMessage.Kind
        let cursor: Int64
    }
}
