import NIOConcurrencyHelpers
import VroomXModels

/// Console pages a carrier may have in the making at once on this instance.
/// Past `width`, its pages wait their turn (first come, first served) behind
/// its own, never another carrier's: however heavy one carrier's board
/// searches and reports, other carriers' dispatchers keep their share of the
/// database and its connections. A carrier with `width + queue` pages
/// already running or waiting is refused at once rather than queued.
final class CarrierLanes: Sendable {
    let width: Int
    let queue: Int
    /// How long a page waits for its turn before it is refused.
    let wait: Duration
    private let lanes = NIOLockedValueBox<[ID<Tenant>: (turns: AsyncSemaphore, pages: Int)]>([:])

    init(width: Int = 2, queue: Int = 30, wait: Duration = .seconds(20)) {
        self.width = width
        self.queue = queue
        self.wait = wait
    }

    func run<T>(_ tenant: ID<Tenant>, _ body: () async throws -> T) async throws -> T {
        let turns = lanes.withLockedValue { lanes -> AsyncSemaphore? in
            var lane = lanes[tenant] ?? (AsyncSemaphore(permits: width), 0)
            guard lane.pages < width + queue else { return nil }
            lane.pages += 1
            lanes[tenant] = lane
            return lane.turns
        }
        guard let turns else { throw Self.busy }
        defer {
            lanes.withLockedValue { lanes in
                guard var lane = lanes[tenant] else { return }
                lane.pages -= 1
                lanes[tenant] = lane.pages == 0 ? nil : lane
            }
        }
        guard await turns.wait(timeout: wait) else { throw Self.busy }
        defer { turns.signal() }
        return try await body()
    }

    /// How many pages of `tenant` are running or waiting (for tests).
    func pages(_ tenant: ID<Tenant>) -> Int { lanes.withLockedValue { $0[tenant]?.pages ?? 0 } }

    static let busy = AppError(429, .rateLimited,
                               "Your carrier has many pages loading at once on this server. Try again in a few seconds.", retryAfter: 5)
}
