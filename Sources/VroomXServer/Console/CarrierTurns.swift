import NIOConcurrencyHelpers
import VroomXModels

/// Work a carrier does one at a time on this instance (order imports): a
/// second one is refused while the first runs, rather than queued.
final class CarrierTurns: Sendable {
    private let busy = NIOLockedValueBox<Set<ID<Tenant>>>([])

    /// Whether the carrier's turn was free (and is now taken).
    func take(_ tenant: ID<Tenant>) -> Bool { busy.withLockedValue { $0.insert(tenant).inserted } }

    func give(_ tenant: ID<Tenant>) { busy.withLockedValue { _ = $0.remove(tenant) } }
}
