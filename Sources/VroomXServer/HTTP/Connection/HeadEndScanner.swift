import NIOCore

/// Finds the blank line that ends a request head (LF, an optional CR, LF),
/// across reads, so that the raw-byte guards know when a head is complete
/// even before the decoder hands it on (an upgrade request is held back
/// while the upgrade is decided).
struct HeadEndScanner {
    private enum State { case none, lineFeed, lineFeedReturn }
    private var state = State.none

    /// How many of `bytes` belong to the head, through its end; nil when the
    /// head goes on past them.
    mutating func scan(_ bytes: ByteBufferView) -> Int? {
        for (count, byte) in bytes.enumerated() {
            switch (state, byte) {
            case (.lineFeed, UInt8(ascii: "\r")):
                state = .lineFeedReturn
            case (.lineFeed, UInt8(ascii: "\n")), (.lineFeedReturn, UInt8(ascii: "\n")):
                state = .none
                return count + 1
            case (_, UInt8(ascii: "\n")):
                state = .lineFeed
            default:
                state = .none
            }
        }
        return nil
    }

    mutating func reset() { state = .none }
}
