import Foundation
import NIOConcurrencyHelpers

/// How far this device's clock is from the server's, learnt from the
/// `Date` header of the server's answers. The times a driver's actions are
/// stamped with (a pickup, a delivery, an expense's day) are corrected by
/// it, so a phone whose clock runs fast or slow still records when things
/// happened. Offsets under two seconds are noise (the header has whole
/// seconds) and are ignored.
public final class ServerClock: Sendable {
    /// The device's own clock.
    let device: @Sendable () -> Date
    private let offset = NIOLockedValueBox<TimeInterval>(0)
    private let formatter: NIOLockedValueBox<DateFormatter> = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return NIOLockedValueBox(formatter)
    }()

    public init(device: @escaping @Sendable () -> Date = { Date() }) { self.device = device }

    /// The server's clock minus the device's, in seconds.
    public var skew: TimeInterval { offset.withLockedValue { $0 } }

    /// Now, as the server's clock would say it.
    public var now: Date { device().addingTimeInterval(skew) }

    /// Learns from an answer's `Date` header, received just now.
    func observe(dateHeader: String?) {
        let local = device()
        guard let dateHeader, let server = formatter.withLockedValue({ $0.date(from: dateHeader) }) else { return }
        // The header is truncated to the second: the server's clock was in [server, server + 1).
        let measured = server.addingTimeInterval(0.5).timeIntervalSince(local)
        offset.withLockedValue { $0 = abs(measured) < 2 ? 0 : measured }
    }
}
