import NIOConcurrencyHelpers
import NIOCore

/// Values kept per connection, each dropped when its connection closes.
final class PerConnection<Value: Sendable>: Sendable {
    private let values = NIOLockedValueBox<[ObjectIdentifier: Value]>([:])

    func set(_ value: Value, for channel: any Channel) {
        let isNew = values.withLockedValue { $0.updateValue(value, forKey: ObjectIdentifier(channel)) == nil }
        if isNew { forgetOnClose(channel) }
    }

    /// The connection's value, made (and kept) if it has none yet.
    func value(for channel: any Channel, orMake make: () -> Value) -> Value {
        let (value, isNew) = values.withLockedValue { values -> (Value, Bool) in
            if let existing = values[ObjectIdentifier(channel)] { return (existing, false) }
            let made = make()
            values[ObjectIdentifier(channel)] = made
            return (made, true)
        }
        if isNew { forgetOnClose(channel) }
        return value
    }

    /// The connection's value, taken.
    func take(for channel: any Channel) -> Value? {
        values.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    private func forgetOnClose(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channel.closeFuture.whenComplete { [values] _ in _ = values.withLockedValue { $0.removeValue(forKey: key) } }
    }
}
