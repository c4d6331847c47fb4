import NIOCore
import Testing
@testable import VroomXServer

/// The end of a request head, found across reads as the guards see them.
@Suite("HTTP: the end of a request head")
struct HeadEndScannerTests {
    /// Byte by byte, the rule itself: LF, an optional CR, LF.
    static func reference(_ bytes: [UInt8]) -> Int? {
        var afterLineFeed = false
        var afterReturn = false
        for (index, byte) in bytes.enumerated() {
            if byte == 10, afterLineFeed || afterReturn { return index + 1 }
            let wasLineFeed = afterLineFeed
            afterLineFeed = byte == 10
            afterReturn = wasLineFeed && byte == 13
        }
        return nil
    }

    /// The head's length as the scanner finds it, the bytes arriving in the given pieces.
    static func scanned(_ bytes: [UInt8], cuts: [Int]) -> Int? {
        var scanner = HeadEndScanner()
        var start = 0
        for end in cuts.sorted() + [bytes.count] where end >= start {
            if let found = scanner.scan(ByteBuffer(bytes: bytes[start..<end])) { return start + found }
            start = end
        }
        return nil
    }

    @Test("a head ends at the blank line however the reads cut it: CRLF, bare LF, a lone CR inside, or no end yet")
    func headsCutEverywhere() {
        let heads = ["GET / HTTP/1.1\r\nHost: a\r\n\r\nbody", "GET / HTTP/1.1\nHost: a\n\nnext", "GET /\r\nX: \r\r\n\r\n",
                     "GET /\n\r\r\n\n", "\n\n", "\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\n", "", "\n\r\n"]
        for head in heads {
            let bytes = Array(head.utf8)
            #expect(Self.scanned(bytes, cuts: []) == Self.reference(bytes), "\(head.debugDescription)")
            for cut in 0...bytes.count {
                #expect(Self.scanned(bytes, cuts: [cut]) == Self.reference(bytes), "\(head.debugDescription) cut at \(cut)")
            }
        }
        #expect(Self.reference(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\nbody".utf8)) == 27)
    }

    @Test("random bytes of CR, LF and letters in random pieces agree with the byte-by-byte rule")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in [UInt8(10), 13, 65, 66][Int.random(in: 0..<4, using: &generator)] }
            let cuts = (0..<Int.random(in: 0..<4, using: &generator)).map { _ in Int.random(in: 0...bytes.count, using: &generator) }
            #expect(Self.scanned(bytes, cuts: cuts) == Self.reference(bytes), "\(bytes) cut at \(cuts)")
        }
    }
}
