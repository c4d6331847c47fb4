import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOWebSocket
import VroomXModels
import WSClient

/// The realtime socket: hands the sync engine each frame's changes with the
/// cursor range they cover, so they are applied straight from the frame
/// (the engine pulls instead when they do not follow on from the cache),
/// and reconnects with backoff, refreshing the token on 4001 and
/// re-snapshotting on 4410.
struct RealtimeConnection: Sendable {
    let baseURL: String
    let credentials: CredentialStore
    /// Stated on the upgrade as on every request (a server may refuse older apps).
    var appVersion: AppVersion? = nil
    let logger: Logger

    enum Event: Sendable {
        case connected
        /// Every change the caller may see after `from`, up to `to`, in order
        /// (none for a heartbeat or `ready` that only moves the cursor).
        case changes([Change], from: Int64, to: Int64)
        case closed(code: UInt16?)
    }

    /// Connects once and reports events until the socket closes.
    func connect(since: Int64, events: @escaping @Sendable (Event) async -> Void) async throws {
        let token = try await credentials.accessToken()
        var configuration = WebSocketClientConfiguration()
        configuration.additionalHeaders[.authorization] = "Bearer \(token)"
        if let appVersion, let header = HTTPField.Name(AppVersion.header) { configuration.additionalHeaders[header] = appVersion.description }
        configuration.maxFrameSize = 1 << 22
        let url = baseURL.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(of: "https://", with: "wss://")
            + Endpoint.realtime.path() + "?since=\(since)"
        let decoder = WireJSON.decoder()
        let close = try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, _, _ in
            // The socket sends its changes in order from `since`: each frame continues from the one before.
            var reached = since
            for try await message in inbound.messages(maxSize: 1 << 24) {
                guard case .text(let text) = message,
                      let frame = try? decoder.decode(RealtimeMessage.self, from: Data(text.utf8)) else { continue }
                if frame.type == .ready { await events(.connected) }
                await events(.changes(frame.changes ?? [], from: reached, to: frame.cursor))
                reached = max(reached, frame.cursor)
            }
        }
        let code = close.flatMap { frame -> UInt16? in
            var buffer = ByteBuffer()
            buffer.write(webSocketErrorCode: frame.closeCode)
            return buffer.readInteger(as: UInt16.self)
        }
        await events(.closed(code: code))
    }
}
