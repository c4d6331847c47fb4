import NIOConcurrencyHelpers
import NIOCore

/// Why a connection's WebSocket upgrade was refused, kept from the upgrade
/// decision until the connection answers it. NIO does not hand a refused
/// upgrade request on to the HTTP handlers, so the router cannot answer it;
/// the server channel writes the recorded JSON error instead.
final class RefusedUpgrades: Sendable {
    private let refusals = NIOLockedValueBox<[ObjectIdentifier: AppError]>([:])

    func record(_ refusal: AppError, for channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let isNew = refusals.withLockedValue { $0.updateValue(refusal, forKey: key) == nil }
        if isNew {
            channel.closeFuture.whenComplete { [refusals] _ in _ = refusals.withLockedValue { $0.removeValue(forKey: key) } }
        }
    }

    func take(for channel: any Channel) -> AppError? {
        refusals.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}
