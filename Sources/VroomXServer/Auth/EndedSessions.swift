import NIOConcurrencyHelpers
import VroomXModels

/// Sessions this instance knows have ended (signed out, the driver
/// deactivated, a refresh token reused): their access tokens are refused at
/// once, ahead of the few seconds an active session's answer is cached. The
/// store adds a session once the transaction that ended it committed; on
/// PostgreSQL that transaction also notifies every instance
/// (`PostgresChangeListener`), which adds it there.
final class EndedSessions: Sendable {
    private let ended = NIOLockedValueBox<Set<ID<Session>>>([])
    /// Past this many, the set starts over: an ended session then waits for
    /// the active-session cache to expire (seconds), as it would without the set.
    static let capacity = 100_000

    func insert(_ sessions: some Sequence<ID<Session>>) {
        ended.withLockedValue { ended in
            for session in sessions {
                if ended.count >= Self.capacity { ended.removeAll() }
                ended.insert(session)
            }
        }
    }

    func contains(_ session: ID<Session>) -> Bool { ended.withLockedValue { $0.contains(session) } }

    /// The notification payload that tells other instances (`ended:<id>`).
    static let notificationPrefix = "ended:"
}
