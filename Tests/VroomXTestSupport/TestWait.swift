import Foundation

/// How long tests wait for what happens in the background (an upload
/// finishing, a socket delivering, a process printing): each wait's own
/// bound times one scale, `VROOMX_TEST_WAIT_SCALE` (default 1; `scripts/test`
/// sets 3 under CI, where a fresh machine builds and runs 300 tests at
/// once). A bound is only an upper limit: a wait whose condition holds
/// returns at once, so a generous scale slows nothing that passes. Tests
/// that measure the server's own deadlines keep theirs.
public enum TestWait {
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["VROOMX_TEST_WAIT_SCALE"], let value = Double(text), value >= 1, value <= 20 else {
            return 1
        }
        return value
    }()

    /// `bound` stretched by the scale.
    public static func bound(_ bound: Duration) -> Duration { bound * scale }
}
