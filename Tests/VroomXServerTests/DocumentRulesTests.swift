import Foundation
import Testing
import VroomXModels
@testable import VroomXServer

/// The rules under the bill of lading: which pictures it holds, how its text
/// fits, and what a failed send says about the message.
@Suite("Document rules")
struct DocumentRulesTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    @Test("photos are JPEGs passed through, a signature may be a PNG, and a picture whose header claims a giant frame is none")
    func pictures() throws {
        let jpeg = Array(try Data(contentsOf: Self.fixtures.appendingPathComponent("vehicle-photo.jpg")))
        let png = Array(try Data(contentsOf: Self.fixtures.appendingPathComponent("signature.png")))
        #expect(PDFImage(jpeg)?.filter == "DCTDecode" && PDFImage(jpeg)?.data == jpeg)
        #expect(PDFImage(png) == nil, "a PNG photo is not decoded: no upload makes a document cost much work")
        #expect(PDFImage(png, png: true)?.filter == "FlateDecode" && PDFImage(png, png: true)?.width == 300)
        // The fixture's frame header rewritten to claim 65535 × 65535.
        var giant = jpeg
        let sof = try #require(giant.indices.first { giant[$0] == 0xFF && [0xC0, 0xC2].contains(giant[$0 + 1]) })
        giant[sof + 5...sof + 8] = [0xFF, 0xFF, 0xFF, 0xFF]
        #expect(PDFImage(giant) == nil)
        #expect(PDFImage([0xFF, 0xD8, 0xFF, 0xE0]) == nil)
    }

    @Test("a word longer than a line is cut where it fills one, and a line that cannot wrap ends in an ellipsis")
    func text() {
        let word = String(repeating: "W", count: 4_000)
        let lines = PDFText.wrap(word, width: 200, size: 10)
        #expect(lines.allSatisfy { PDFText.width($0, size: 10, bold: false) <= 200 } && lines.reduce(0) { $0 + $1.count } == 4_000)
        let fitted = PDFText.fitted("Signed by María Guadalupe Fernández-Rodríguez for Lakeshore Auto Auction LLC", width: 150, size: 9)
        #expect(PDFText.width(fitted, size: 9, bold: false) <= 150 && fitted.last == 0x85)
    }

    @Test("a send refused for good is not retried, one cut off after it went out is not sent twice, one never taken is retried")
    func sendOutcomes() {
        #expect(DocumentMailService.outcome(of: SMTPError.unexpectedReply(expected: [250], got: "550 no such user")) == .refusedForGood)
        #expect(DocumentMailService.outcome(of: SMTPError.unexpectedReply(expected: [250], got: "451 try later")) == .notTaken)
        #expect(DocumentMailService.outcome(of: SMTPError.timeout) == .unknown)
        #expect(DocumentMailService.outcome(of: CancellationError()) == .unknown)
        #expect(DocumentMailService.outcome(of: SMTPError.unsafeRecipient) == .refusedForGood)
        #expect(DocumentMailService.outcome(of: URLError(.cannotConnectToHost)) == .notTaken)
    }
}
