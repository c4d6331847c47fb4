import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import VroomXModels

/// Delivers the push queue to APNs: looks at it on start, on every commit
/// and every `checkInterval` (for other instances' pushes and retries), claims due pushes and
/// sends them concurrently over the one HTTP/2 connection.
final class PushService: Service, CustomStringConvertible, Sendable {
    let store: Store
    let provider: any PushProvider
    let logger: Logger
    let maxInFlight = 100
    /// Besides every commit here: other instances' pushes and due retries.
    let checkInterval: Duration
    static let maxAttempts = 12
    private let wake = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    var description: String { "PushService" }

    init(store: Store, provider: any PushProvider, checkInterval: Duration = .seconds(1), logger: Logger) {
        self.store = store
        self.checkInterval = checkInterval
        self.provider = provider
        self.logger = logger
    }

    /// Something may be queued: look now.
    func poke() { wake.continuation.yield() }

    func run() async throws {
        await provider.withSender { connection in
            await cancelWhenGracefulShutdown {
                await withTaskGroup(of: Void.self) { group in
                    // What waited while no instance ran (a restart, an outage) goes out now, not at the first tick.
                    self.wake.continuation.yield()
                    group.addTask { [wake = self.wake, checkInterval = self.checkInterval, store = self.store] in
                        while !Task.isCancelled {
                            try? await Task.sleep(for: checkInterval)
                            wake.continuation.yield()
                            // Sampled on the clock, not per delivery round: a burst makes many rounds.
                            if let waiting = try? await store.pendingPushCount() { ServerMetrics.pushQueueDepth.set(waiting) }
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

    /// Sends everything due: claims the next batch while the last is still
    /// in flight (at most `maxInFlight` streams), and records outcomes in
    /// groups of a hundred beside the sending, so neither waits for the other.
    func deliverDue(over connection: any PushSender) async {
        let (answers, answered) = AsyncStream<(Store.QueuedPush, PushOutcome)>.makeStream()
        async let recording: Void = recordAll(answers)
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            while !Task.isCancelled {
                let due: [Store.QueuedPush]
                do {
                    due = try await store.claimDuePushes(limit: 500, lease: 60)
                } catch {
                    logger.warning("push: claiming the queue failed", metadata: ["error": "\(error)"])
                    break
                }
                if due.isEmpty { break }
                for push in due {
                    if inFlight >= maxInFlight {
                        await group.next()
                        inFlight -= 1
                    }
                    group.addTask { answered.yield((push, await connection.send(push.request))) }
                    inFlight += 1
                }
            }
        }
        answered.finish()
        await recording
    }

    func recordAll(_ answers: AsyncStream<(Store.QueuedPush, PushOutcome)>) async {
        var group: [(Store.QueuedPush, PushOutcome)] = []
        for await answer in answers {
            group.append(answer)
            if group.count >= 100 {
                await record(group)
                group.removeAll(keepingCapacity: true)
            }
        }
        await record(group)
    }

    func record(_ answered: [(Store.QueuedPush, PushOutcome)]) async {
        guard !answered.isEmpty else { return }
        for (_, outcome) in answered { ServerMetrics.apnsAnswer(outcome).increment() }
        let settlements = answered.map { push, outcome -> (push: PushRequest, settlement: Store.PushSettlement) in
            switch outcome {
            case .delivered:
                return (push.request, .delivered)
            case .invalidToken(let reason):
                logger.info("push: device token removed", metadata: ["reason": "\(reason)"])
                return (push.request, .forgetToken)
            case .retry(let reason, let after):
                let delay = after ?? min(pow(2, Double(push.attempts)), 600)
                return (push.request, .retry(at: store.now.addingTimeInterval(delay), error: reason))
            case .rejected(let reason):
                logger.error("push: APNs refused a push", metadata: ["reason": "\(reason)", "push": "\(push.request.id)"])
                return (push.request, .failed(error: reason))
            }
        }
        do {
            try await store.settlePushes(settlements, maxAttempts: Self.maxAttempts)
        } catch {
            // The claims lapse and these pushes are sent again: at least once, never lost.
            logger.warning("push: recording outcomes failed", metadata: ["error": "\(error)"])
        }
    }
}
