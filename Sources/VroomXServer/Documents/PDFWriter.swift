import CompressNIO
import Foundation
import NIOCore

/// A PDF 1.4 document of US Letter pages drawn with the standard Helvetica
/// fonts, lines and pictures: enough for the documents VroomX sends (a
/// bill of lading), readable by any PDF reader and by `pdftotext`.
/// Positions are in points from the page's top-left corner.
struct PDFWriter {
    static let pageWidth = 612.0
    static let pageHeight = 792.0

    private var pages: [[UInt8]] = []
    private var current: [UInt8] = []
    private var images: [PDFImage] = []

    init() {}

    // MARK: Drawing

    /// Text whose baseline starts at (x, y), in Helvetica or Helvetica-Bold, grey 0 (black) to 1.
    mutating func text(_ bytes: [UInt8], x: Double, y: Double, size: Double, bold: Bool = false, gray: Double = 0) {
        emit("BT \(Self.number(gray)) g /\(bold ? "F2" : "F1") \(Self.number(size)) Tf \(Self.number(x)) \(Self.number(Self.pageHeight - y)) Td ")
        current += PDFText.literal(bytes)
        emit(" Tj ET\n")
    }

    mutating func text(_ string: String, x: Double, y: Double, size: Double, bold: Bool = false, gray: Double = 0) {
        text(PDFText.winAnsi(string), x: x, y: y, size: size, bold: bold, gray: gray)
    }

    mutating func line(from: (Double, Double), to: (Double, Double), width: Double = 0.5, gray: Double = 0.7) {
        emit("\(Self.number(gray)) G \(Self.number(width)) w \(Self.number(from.0)) \(Self.number(Self.pageHeight - from.1)) m "
             + "\(Self.number(to.0)) \(Self.number(Self.pageHeight - to.1)) l S\n")
    }

    /// A filled rectangle whose top-left corner is (x, y).
    mutating func fill(x: Double, y: Double, width: Double, height: Double, gray: Double) {
        emit("\(Self.number(gray)) g \(Self.number(x)) \(Self.number(Self.pageHeight - y - height)) \(Self.number(width)) \(Self.number(height)) re f\n")
    }

    /// A picture drawn into the box whose top-left corner is (x, y), keeping its proportions.
    mutating func image(_ image: PDFImage, x: Double, y: Double, width: Double, height: Double) {
        let scale = min(width / Double(image.width), height / Double(image.height))
        let (drawnWidth, drawnHeight) = (Double(image.width) * scale, Double(image.height) * scale)
        let left = x + (width - drawnWidth) / 2
        images.append(image)
        emit("q \(Self.number(drawnWidth)) 0 0 \(Self.number(drawnHeight)) \(Self.number(left)) "
             + "\(Self.number(Self.pageHeight - y - drawnHeight)) cm /Im\(images.count) Do Q\n")
    }

    /// Ends the page being drawn and starts another.
    mutating func newPage() {
        pages.append(current)
        current = []
    }

    /// Draws on every page once all are known (a footer with "page 2 of 3").
    mutating func eachPage(_ draw: (inout PDFWriter, _ page: Int, _ of: Int) -> Void) {
        let drawn = pages + [current]
        var result: [[UInt8]] = []
        for (index, page) in drawn.enumerated() {
            var writer = self
            writer.current = page
            draw(&writer, index + 1, drawn.count)
            images = writer.images
            result.append(writer.current)
        }
        pages = Array(result.dropLast())
        current = result.last ?? []
    }

    private mutating func emit(_ operators: String) { current += Array(operators.utf8) }

    /// Numbers as PDF writes them: at most two decimals, no exponent.
    private static func number(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(format: "%.2f", rounded)
    }

    // MARK: The file

    /// The finished document.
    func bytes(title: String, now: Date) throws -> [UInt8] {
        let contents = pages + [current]
        var objects: [[UInt8]] = []
        // 1 catalog, 2 page tree, 3–4 fonts, 5 information; then pictures; then each page and its content.
        let firstImage = 6
        let firstPage = firstImage + images.count
        let pageObjects = contents.indices.map { firstPage + $0 * 2 }
        objects.append(Array("<< /Type /Catalog /Pages 2 0 R >>".utf8))
        objects.append(Array("<< /Type /Pages /Kids [\(pageObjects.map { "\($0) 0 R" }.joined(separator: " "))] /Count \(contents.count) >>".utf8))
        for font in ["Helvetica", "Helvetica-Bold"] {
            objects.append(Array("<< /Type /Font /Subtype /Type1 /BaseFont /\(font) /Encoding /WinAnsiEncoding >>".utf8))
        }
        let stamp = Self.date(now)
        objects.append(Array("<< /Title ".utf8) + PDFText.literal(PDFText.winAnsi(title))
                       + Array(" /Producer (VroomX) /CreationDate (D:\(stamp)Z) >>".utf8))
        for image in images {
            var dictionary = "<< /Type /XObject /Subtype /Image /Width \(image.width) /Height \(image.height) /ColorSpace /\(image.colorSpace) "
                + "/BitsPerComponent 8 /Filter /\(image.filter) /Length \(image.data.count)"
            if let parameters = image.decodeParameters { dictionary += " /DecodeParms \(parameters)" }
            objects.append(Array((dictionary + " >>\nstream\n").utf8) + image.data + Array("\nendstream".utf8))
        }
        let resources = "<< /Font << /F1 3 0 R /F2 4 0 R >> /XObject << "
            + images.indices.map { "/Im\($0 + 1) \(firstImage + $0) 0 R" }.joined(separator: " ") + " >> >>"
        for (index, content) in contents.enumerated() {
            objects.append(Array(("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources \(resources) "
                                  + "/Contents \(pageObjects[index] + 1) 0 R >>").utf8))
            var plain = ByteBuffer(bytes: content)
            let deflated = Array(try plain.compress(with: .zlib()).readableBytesView)
            objects.append(Array("<< /Length \(deflated.count) /Filter /FlateDecode >>\nstream\n".utf8) + deflated + Array("\nendstream".utf8))
        }
        var file = Array("%PDF-1.4\n%\u{E2}\u{E3}\u{CF}\u{D3}\n".utf8)
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(file.count)
            file += Array("\(index + 1) 0 obj\n".utf8) + object + Array("\nendobj\n".utf8)
        }
        let table = file.count
        file += Array("xref\n0 \(objects.count + 1)\n0000000000 65535 f \n".utf8)
        for offset in offsets { file += Array((String(repeating: "0", count: 10 - String(offset).count) + "\(offset) 00000 n \n").utf8) }
        file += Array("trailer\n<< /Size \(objects.count + 1) /Root 1 0 R /Info 5 0 R >>\nstartxref\n\(table)\n%%EOF\n".utf8)
        return file
    }

    private static func date(_ date: Date) -> String {
        let day = LocalDateParts(date)
        return String(format: "%04d%02d%02d%02d%02d%02d", day.year, day.month, day.day, day.hour, day.minute, day.second)
    }
}

/// The UTC calendar and clock fields of an instant.
private struct LocalDateParts {
    let year, month, day, hour, minute, second: Int

    init(_ date: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        (year, month, day) = (parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
        (hour, minute, second) = (parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
    }
}
