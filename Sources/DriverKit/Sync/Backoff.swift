import Foundation

/// Exponential backoff with jitter: `base`, 2×, 4×, … capped at `cap`, each
/// delay spread ±20 % so that many devices coming back online at once do
/// not retry in lockstep.
public struct Backoff: Sendable, Hashable {
    public var base: TimeInterval
    public var cap: TimeInterval
    public var jitter: Double

    public init(base: TimeInterval, cap: TimeInterval, jitter: Double = 0.2) {
        self.base = base
        self.cap = cap
        self.jitter = jitter
    }

    /// The delay before attempt `attempt + 1`, after `attempt` failures
    /// (1 → base). `random` in 0…1 picks the jitter (injected for tests).
    public func delay(afterFailures attempt: Int, random: Double = Double.random(in: 0...1)) -> TimeInterval {
        let exponent = min(max(attempt - 1, 0), 30)
        let raw = min(base * pow(2, Double(exponent)), cap)
        let spread = raw * jitter * (random * 2 - 1)
        return min(max(raw + spread, 0), cap)
    }

    /// Outbox retries (seed 000): 5 s, 10 s, 20 s, … capped at 15 minutes.
    public static let outbox = Backoff(base: 5, cap: 900)
    /// Realtime reconnects: 1 s, 2 s, 4 s, … capped at one minute.
    public static let reconnect = Backoff(base: 1, cap: 60)
}
