import NIOConcurrencyHelpers

/// A counting semaphore for async code: `wait` suspends (it never blocks a
/// thread) until a permit is free; permits are handed out in FIFO order.
final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: NIOLockedValueBox<State>

    init(permits: Int) {
        state = NIOLockedValueBox(State(permits: permits))
    }

    func wait() async {
        // Fast path: take a free permit without suspending the task.
        let acquired = state.withLockedValue { state -> Bool in
            guard state.permits > 0 else { return false }
            state.permits -= 1
            return true
        }
        if acquired { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLockedValue { state -> Bool in
                if state.permits > 0 {
                    state.permits -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    func signal() {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard state.head < state.waiters.count else {
                state.permits += 1
                return nil
            }
            let waiter = state.waiters[state.head]
            state.head += 1
            if state.head > 64, state.head * 2 > state.waiters.count {
                state.waiters.removeFirst(state.head)
                state.head = 0
            }
            return waiter
        }
        next?.resume()
    }

    func withPermit<T>(_ body: () async throws -> T) async rethrows -> T {
        await wait()
        defer { signal() }
        return try await body()
    }
}
