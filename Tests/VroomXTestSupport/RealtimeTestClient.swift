import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import VroomXModels
import WSClient

/// A realtime socket to a live server, recording every message.
public final class RealtimeTestClient: Sendable {
    private struct State {
        var messages: [RealtimeMessage] = []
        var closeCode: UInt16?
        var finished = false
    }

    private let state = NIOLockedValueBox(State())
    private let task: NIOLockedValueBox<Task<Void, Never>?> = .init(nil)

    /// Connects to `ws://127.0.0.1:port/v1/realtime?since=…`.
    public init(port: Int, token: String, since: Int64, tokenInQuery: Bool = false) {
        var configuration = WebSocketClientConfiguration()
        configuration.maxFrameSize = 1 << 22
        var url = "ws://127.0.0.1:\(port)/v1/realtime?since=\(since)"
        if tokenInQuery {
            url += "&access_token=\(token)"
        } else {
            configuration.additionalHeaders[.authorization] = "Bearer \(token)"
        }
        let state = self.state
        let settings = configuration
        let address = url
        task.withLockedValue {
            $0 = Task {
                let decoder = WireJSON.decoder()
                let closeFrame = try? await WebSocketClient.connect(url: address, configuration: settings,
                                                                   logger: Logger(label: "test-ws")) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 24) {
                        guard case .text(let text) = message,
                              let decoded = try? decoder.decode(RealtimeMessage.self, from: Data(text.utf8)) else { continue }
                        state.withLockedValue { $0.messages.append(decoded) }
                    }
                }
                state.withLockedValue {
                    $0.closeCode = closeFrame.flatMap { frame in
                        var buffer = ByteBuffer()
                        buffer.write(webSocketErrorCode: frame.closeCode)
                        return buffer.readInteger(as: UInt16.self)
                    }
                    $0.finished = true
                }
            }
        }
    }

    public var messages: [RealtimeMessage] { state.withLockedValue { $0.messages } }
    public var changes: [Change] { messages.flatMap { $0.changes ?? [] } }
    public var cursor: Int64? { messages.last?.cursor }
    public var closeCode: UInt16? { state.withLockedValue { $0.closeCode } }
    public var isFinished: Bool { state.withLockedValue { $0.finished } }

    /// Waits until `condition` holds for the messages so far.
    public func waitUntil(timeout: Duration = .seconds(60), _ what: String = "condition",
                          _ condition: @Sendable ([RealtimeMessage]) -> Bool) async throws {
        let deadline = ContinuousClock.now + TestWait.bound(timeout)
        while !condition(messages) {
            guard ContinuousClock.now < deadline else {
                throw TestSetupError("realtime: timed out waiting for \(what); got \(messages.count) messages, close \(String(describing: closeCode))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    public func waitForReady() async throws {
        try await waitUntil("ready") { $0.contains { $0.type == .ready } }
    }

    public func waitForClose(timeout: Duration = .seconds(20)) async throws -> UInt16? {
        let deadline = ContinuousClock.now + TestWait.bound(timeout)
        while !isFinished {
            guard ContinuousClock.now < deadline else { throw TestSetupError("realtime: socket did not close") }
            try await Task.sleep(for: .milliseconds(10))
        }
        return closeCode
    }

    /// Drops the connection from the client side (a phone losing signal).
    public func disconnect() async {
        let task = self.task.withLockedValue { $0 }
        task?.cancel()
        _ = await task?.value
    }
}
