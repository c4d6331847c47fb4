import Foundation
import VroomXModels

/// A document laid out from the top of Letter pages down: the margins, the
/// cursor `y`, and the blocks the bill of lading and the invoice share.
protocol PDFPageLayout {
    var pdf: PDFWriter { get set }
    /// Where the next block starts, from the top of the page.
    var y: Double { get set }
}

extension PDFPageLayout {
    var left: Double { 40 }
    var right: Double { PDFWriter.pageWidth - 40 }
    var width: Double { right - left }
    var bottom: Double { PDFWriter.pageHeight - 56 }

    /// Room for `height` more points on this page, or a new page.
    mutating func ensure(_ height: Double) {
        guard y + height > bottom else { return }
        pdf.newPage()
        y = 48
    }

    mutating func rule() {
        pdf.line(from: (left, y), to: (right, y), width: 1, gray: 0.2)
        y += 10
    }

    /// One line ending at the right margin, cut to 240 points.
    mutating func rightAligned(_ string: String, y: Double, size: Double, bold: Bool = false) {
        let bytes = PDFText.fitted(string, width: 240, size: size, bold: bold)
        pdf.text(bytes, x: right - PDFText.width(bytes, size: size, bold: bold), y: y + size, size: size, bold: bold)
    }

    /// A shaded band naming the section below it.
    mutating func heading(_ label: String) {
        ensure(40)
        y += 8
        pdf.fill(x: left, y: y, width: width, height: 16, gray: 0.93)
        pdf.text(label, x: left + 6, y: y + 11.5, size: 8.5, bold: true, gray: 0.2)
        y += 26
    }

    /// Text wrapped from `x` to the right margin, onto new pages as needed.
    mutating func text(_ string: String, x: Double, size: Double, bold: Bool = false, gray: Double = 0) {
        for line in string.split(separator: "\n", omittingEmptySubsequences: false).flatMap({ PDFText.wrap(String($0), width: right - x, size: size, bold: bold) }) {
            ensure(size + 3)
            pdf.text(line, x: x, y: y + size, size: size, bold: bold, gray: gray)
            y += size + 3
        }
    }

    mutating func paragraph(_ string: String, size: Double, gray: Double = 0) {
        text(string, x: left, size: size, gray: gray)
        y += 3
    }

    /// Two labelled blocks side by side; each block's first line is bold unless its label is in `plain`.
    mutating func columns(_ first: (String, [String]), _ second: (String, [String]), plain: Set<String> = []) {
        let half = width / 2 - 10
        let wrapped = [first.1, second.1].map { lines in lines.flatMap { PDFText.wrap($0, width: half, size: 9.5) } }
        ensure(Double(max(wrapped[0].count, wrapped[1].count)) * 12 + 24)
        for (index, (label, _)) in [first, second].enumerated() {
            let x = left + Double(index) * (half + 20)
            pdf.text(label, x: x, y: y + 10, size: 8, bold: true, gray: 0.4)
            for (number, line) in wrapped[index].enumerated() {
                pdf.text(line, x: x, y: y + 24 + Double(number) * 12, size: 9.5, bold: number == 0 && !plain.contains(label))
            }
        }
        y += Double(max(wrapped[0].count, wrapped[1].count)) * 12 + 26
    }

    /// A rule, `footer` and "Page n of m" at the foot of every page.
    mutating func footers(_ footer: String) {
        pdf.eachPage { page, number, count in
            page.line(from: (40, PDFWriter.pageHeight - 40), to: (PDFWriter.pageWidth - 40, PDFWriter.pageHeight - 40))
            page.text(footer, x: 40, y: PDFWriter.pageHeight - 28, size: 8, gray: 0.4)
            let pages = "Page \(number) of \(count)"
            page.text(pages, x: PDFWriter.pageWidth - 40 - PDFText.width(PDFText.winAnsi(pages), size: 8, bold: false), y: PDFWriter.pageHeight - 28,
                      size: 8, gray: 0.4)
        }
    }

    // MARK: Money columns (invoice, statement)

    /// Where the amount column ends its figures.
    var amountRight: Double { right - 6 }

    /// A total: its label right-aligned beside the amount.
    mutating func total(_ label: String, _ cents: Int, bold: Bool = false) {
        ensure(16)
        let bytes = PDFText.fitted(label, width: 300, size: 10, bold: bold)
        pdf.text(bytes, x: amountRight - 110 - PDFText.width(bytes, size: 10, bold: bold), y: y + 11, size: 10, bold: bold)
        amount(MoneyFormat.dollars(cents), y: y + 11, size: 10, bold: bold)
        y += 16
    }

    mutating func amount(_ text: String, y: Double, size: Double, bold: Bool = false, gray: Double = 0) {
        let bytes = PDFText.winAnsi(text)
        pdf.text(bytes, x: amountRight - PDFText.width(bytes, size: size, bold: bold), y: y, size: size, bold: bold, gray: gray)
    }

}

extension PDFText {
    /// One line cut to `width` with an ellipsis, for places that cannot wrap.
    static func fitted(_ string: String, width: Double, size: Double, bold: Bool = false) -> [UInt8] {
        var bytes = winAnsi(string)
        guard self.width(bytes, size: size, bold: bold) > width else { return bytes }
        while !bytes.isEmpty, self.width(bytes + [0x85], size: size, bold: bold) > width { bytes.removeLast() }
        return bytes + [0x85]  // WinAnsi's "…"
    }
}
