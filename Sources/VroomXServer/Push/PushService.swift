import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import VroomXModels

/// Delivers the push queue to APNs: wakes on every commit (and checks once a
/// second, for other instances' pushes and retries), claims due pushes and
/// sends them concurrently over the one HTTP/2 connection.
final class PushService: Service, CustomStringConvertible, Sendable {
    let store: Store
    let client: APNsClient
    let logger: Logger
    let maxInFlight = 100
    static let maxAttempts = 12
    private let wake = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    var description: String { "PushService" }

    init(store: Store, client: APNsClient, logger: Logger) {
        self.store = store
        self.client = client
        self.logger = logger
    }

    /// Something may be queued: look now.
    func poke() { wake.continuation.yield() }

    func run() async throws {
        await client.withConnection { connection in
            await cancelWhenGracefulShutdown {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { [wake = self.wake] in
                        while !Task.isCancelled {
                            try? await Task.sleep(for: .seconds(1))
                            wake.continuation.yield()
                        }
                    }
                    group.addTask {
                        for await _ in self.wake.stream {
                            if Task.isCancelled { break }
                            await self.deliverDue(over: connection)
                        }
                    }
                    await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    /// Sends everything due, batch after batch, at most `maxInFlight` at once.
    func deliverDue(over connection: APNsConnection) async {
        while !Task.isCancelled {
            let due: [Store.QueuedPush]
            do {
                due = try await store.claimDuePushes(limit: 500, lease: 60)
            } catch {
                logger.warning("push: claiming the queue failed", metadata: ["error": "\(error)"])
                return
            }
            if due.isEmpty { return }
            await withTaskGroup(of: Void.self) { group in
                var inFlight = 0
                for push in due {
                    if inFlight >= maxInFlight {
                        await group.next()
                        inFlight -= 1
                    }
                    group.addTask { await self.deliver(push, over: connection) }
                    inFlight += 1
                }
            }
        }
    }

    func deliver(_ push: Store.QueuedPush, over connection: APNsConnection) async {
        let outcome = await connection.send(push.request)
        do {
            switch outcome {
            case .delivered:
                try await store.pushDelivered(push.request.id)
            case .invalidToken(let reason):
                logger.info("push: device token removed", metadata: ["reason": "\(reason)"])
                try await store.forgetDeviceToken(push.request.deviceToken)
            case .retry(let reason, let after):
                let delay = after ?? min(pow(2, Double(push.attempts)), 600)
                try await store.pushFailed(push.request.id, error: reason, retryAt: store.now.addingTimeInterval(delay),
                                           maxAttempts: Self.maxAttempts)
            case .rejected(let reason):
                logger.error("push: APNs refused a push", metadata: ["reason": "\(reason)", "push": "\(push.request.id)"])
                try await store.pushFailed(push.request.id, error: reason, retryAt: nil, maxAttempts: Self.maxAttempts)
            }
        } catch {
            logger.warning("push: recording an outcome failed", metadata: ["error": "\(error)"])
        }
    }
}
