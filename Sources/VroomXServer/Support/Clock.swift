import Foundation
import NIOConcurrencyHelpers

/// Where the server reads the time. Tests inject a manual clock so that code
/// expiry, token lifetimes and rate-limit windows can be tested exactly.
public struct Clock: Sendable {
    private let read: @Sendable () -> Date

    public init(_ read: @escaping @Sendable () -> Date) { self.read = read }

    public var now: Date { read() }

    public static let system = Clock { Date() }
}

/// A clock that only moves when told to.
public final class ManualClock: Sendable {
    private let time: NIOLockedValueBox<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_790_000_000)) { time = NIOLockedValueBox(start) }

    public var now: Date { time.withLockedValue { $0 } }
    public func advance(by seconds: TimeInterval) { time.withLockedValue { $0 = $0.addingTimeInterval(seconds) } }
    public func set(_ date: Date) { time.withLockedValue { $0 = date } }
    public var clock: Clock { Clock { [time] in time.withLockedValue { $0 } } }
}
