import Foundation
import NIOCore

/// Finds the blank line that ends a request head (LF, an optional CR, LF),
/// across reads, so that the raw-byte guards know when a head is complete
/// even before the decoder hands it on (an upgrade request is held back
/// while the upgrade is decided).
struct HeadEndScanner {
    private enum State { case none, lineFeed, lineFeedReturn }
    private var state = State.none

    /// How many of `buffer`'s readable bytes belong to the head, through its
    /// end; nil when the head goes on past them.
    mutating func scan(_ buffer: ByteBuffer) -> Int? {
        buffer.withUnsafeReadableBytes { scan($0) }
    }

    /// Only the bytes after a line feed decide anything: the rest is skipped
    /// by `memchr` to the next one (every request passes here, twice).
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let lineFeed = UInt8(ascii: "\n")
        var index = 0
        while index < bytes.count {
            switch state {
            case .none:
                guard let found = memchr(base + index, Int32(lineFeed), bytes.count - index) else { return nil }
                index = base.distance(to: UnsafeRawPointer(found)) + 1
                state = .lineFeed
            case .lineFeed, .lineFeedReturn:
                let byte = bytes[index]
                if byte == lineFeed {
                    state = .none
                    return index + 1
                }
                if state == .lineFeed, byte == UInt8(ascii: "\r") {
                    state = .lineFeedReturn
                    index += 1
                } else {
                    state = .none  // this byte is no line feed: the search goes on from it
                }
            }
        }
        return nil
    }

    mutating func reset() { state = .none }
}
