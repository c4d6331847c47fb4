import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A counting semaphore for async code: `wait` suspends (it never blocks a
/// thread) until a permit is free; permits are handed out in FIFO order. A
/// wait with a timeout gives up when it passes.
final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: Int
        /// Waiters by ticket, with the timer that ends their wait; a ticket
        /// missing here gave up.
        var waiters: [UInt64: (continuation: CheckedContinuation<Bool, Never>, timer: Scheduled<Void>?)] = [:]
        var queue: [UInt64] = []
        var head = 0
        var nextTicket: UInt64 = 0
    }

    private let state: NIOLockedValueBox<State>

    init(permits: Int) {
        state = NIOLockedValueBox(State(permits: permits))
    }

    /// Waits for a permit; false when `timeout` passed first (no permit taken).
    func wait(timeout: Duration? = nil) async -> Bool {
        // Fast path: take a free permit without suspending the task.
        let acquired = state.withLockedValue { state -> Bool in
            guard state.permits > 0 else { return false }
            state.permits -= 1
            return true
        }
        if acquired { return true }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let ticket = state.withLockedValue { state -> UInt64? in
                if state.permits > 0 {
                    state.permits -= 1
                    return nil
                }
                state.nextTicket += 1
                state.waiters[state.nextTicket] = (continuation, nil)
                state.queue.append(state.nextTicket)
                return state.nextTicket
            }
            guard let ticket else { return continuation.resume(returning: true) }
            guard let timeout else { return }
            let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: TimeAmount(timeout)) {
                let waiter = self.state.withLockedValue { $0.waiters.removeValue(forKey: ticket) }
                waiter?.continuation.resume(returning: false)
            }
            let waiting = state.withLockedValue { state in
                state.waiters[ticket]?.timer = timer
                return state.waiters[ticket] != nil
            }
            if !waiting { timer.cancel() }
        }
    }

    /// How many tasks wait for a permit.
    var waiting: Int { state.withLockedValue { $0.waiters.count } }
    var hasWaiters: Bool { waiting > 0 }

    func signal() {
        let next = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            while state.head < state.queue.count {
                let ticket = state.queue[state.head]
                state.head += 1
                if state.head > 64, state.head * 2 > state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                if let waiter = state.waiters.removeValue(forKey: ticket) {
                    waiter.timer?.cancel()
                    return waiter.continuation
                }
            }
            state.permits += 1
            return nil
        }
        next?.resume(returning: true)
    }

    func withPermit<T>(_ body: () async throws -> T) async rethrows -> T {
        _ = await wait()
        defer { signal() }
        return try await body()
    }

    /// Runs `body` holding a permit; throws `timedOut` if none came within `timeout`.
    func withPermit<T>(timeout: Duration, orThrow timedOut: @autoclosure () -> any Error,
                       _ body: () async throws -> T) async throws -> T {
        guard await wait(timeout: timeout) else { throw timedOut() }
        defer { signal() }
        return try await body()
    }
}
