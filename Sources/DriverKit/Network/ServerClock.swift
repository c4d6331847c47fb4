import Foundation
import NIOConcurrencyHelpers

/// How far this device's clock is from the server's, learnt from the
/// `Date` header of the server's answers. The times a driver's actions are
/// stamped with (a pickup, a delivery, an expense's day) are corrected by
/// it, so a phone whose clock runs fast or slow still records when things
/// happened. Offsets under two seconds are noise (the header has whole
/// seconds) and are ignored.
public final class ServerClock: Sendable {
    /// An offset as remembered between runs, with the moment of boot as the
    /// device clock read it then: if the device clock is set later, that
    /// reading moves and the remembered offset no longer applies.
    public struct Saved: Sendable, Hashable {
        public var skew: TimeInterval
        public var boot: TimeInterval
    }

    /// The device's own clock.
    let device: @Sendable () -> Date
    /// Seconds since boot (monotonic: setting the device clock does not move it).
    let uptime: @Sendable () -> TimeInterval
    private let save: @Sendable (Saved) -> Void
    private let offset = NIOLockedValueBox<TimeInterval>(0)
    /// The offset is trustworthy: learnt from an answer in this run, or
    /// remembered from one since the device clock was last set.
    private let learnt = NIOLockedValueBox(false)
    /// Which boot of the device this run is in (nil where it cannot be told).
    let bootID: String?
    private let formatter: NIOLockedValueBox<DateFormatter> = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return NIOLockedValueBox(formatter)
    }()

    /// - Parameters:
    ///   - saved: the offset learnt by an earlier run, used until an answer
    ///     says otherwise (a terminal command stamps its change before it
    ///     has heard from the server).
    ///   - save: told each offset learnt, to remember it.
    public init(device: @escaping @Sendable () -> Date = { Date() },
                uptime: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime },
                saved: Saved? = nil, save: @escaping @Sendable (Saved) -> Void = { _ in },
                bootID: String? = ServerClock.currentBootID()) {
        self.device = device
        self.uptime = uptime
        self.save = save
        self.bootID = bootID
        if let saved, abs(bootReading() - saved.boot) < 2 {
            offset.withLockedValue { $0 = saved.skew }
            learnt.withLockedValue { $0 = true }
        }
    }

    /// Whether `now` can be trusted: the offset was learnt from the server
    /// since the device clock was last set. While it is not (the clock was
    /// changed and nothing has been heard since), changes are stamped as
    /// well as the device can and corrected before they are first sent.
    public var isKnown: Bool { learnt.withLockedValue { $0 } }

    /// This boot of the device, to tell whether seconds since boot can
    /// still measure the time since a change was made.
    public static func currentBootID() -> String? {
        #if os(Linux)
        return (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #elseif canImport(Darwin)
        var boot = timeval()
        var size = MemoryLayout<timeval>.size
        guard sysctlbyname("kern.boottime", &boot, &size, nil, 0) == 0 else { return nil }
        return "\(boot.tv_sec).\(boot.tv_usec)"
        #else
        return nil
        #endif
    }

    /// Seconds since the device booted (a clock nobody sets).
    public var secondsSinceBoot: TimeInterval { uptime() }

    /// When the device clock says the device booted.
    private func bootReading() -> TimeInterval { device().timeIntervalSince1970 - uptime() }

    /// The server's clock minus the device's, in seconds.
    public var skew: TimeInterval { offset.withLockedValue { $0 } }

    /// Now, as the server's clock would say it.
    public var now: Date { device().addingTimeInterval(skew) }

    /// A moment the device's clock stamped (a position fix, a photo), as
    /// the server's clock would have.
    public func corrected(_ deviceTime: Date) -> Date { deviceTime.addingTimeInterval(skew) }

    /// Learns from an answer's `Date` header, received just now.
    func observe(dateHeader: String?) {
        let local = device()
        guard let dateHeader, let server = formatter.withLockedValue({ $0.date(from: dateHeader) }) else { return }
        // The header is truncated to the second: the server's clock was in [server, server + 1).
        let measured = server.addingTimeInterval(0.5).timeIntervalSince(local)
        let skew = abs(measured) < 2 ? 0 : measured
        let changed = offset.withLockedValue { current -> Bool in
            defer { current = skew }
            return abs(current - skew) >= 1 || (skew == 0) != (current == 0)
        }
        let first = learnt.withLockedValue { known -> Bool in
            defer { known = true }
            return !known
        }
        if changed || first { save(Saved(skew: skew, boot: bootReading())) }
    }
}
