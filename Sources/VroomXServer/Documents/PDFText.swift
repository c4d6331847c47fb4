/// Text as the PDF's standard fonts (Helvetica, Helvetica-Bold) take it:
/// WinAnsi bytes, with each glyph's width for laying lines out.
enum PDFText {
    /// WinAnsi (CP1252) byte for a character; "?" for one the fonts lack.
    static func winAnsi(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x20...0x7E, 0xA0...0xFF: bytes.append(UInt8(scalar.value))
            case 0x09, 0x0A, 0x0D: bytes.append(0x20)
            default: bytes.append(special[scalar.value] ?? UInt8(ascii: "?"))
            }
        }
        return bytes
    }

    private static let special: [UInt32: UInt8] = [
        0x20AC: 0x80, 0x201A: 0x82, 0x0192: 0x83, 0x201E: 0x84, 0x2026: 0x85, 0x2020: 0x86, 0x2021: 0x87, 0x02C6: 0x88,
        0x2030: 0x89, 0x0160: 0x8A, 0x2039: 0x8B, 0x0152: 0x8C, 0x017D: 0x8E, 0x2018: 0x91, 0x2019: 0x92, 0x201C: 0x93,
        0x201D: 0x94, 0x2022: 0x95, 0x2013: 0x96, 0x2014: 0x97, 0x02DC: 0x98, 0x2122: 0x99, 0x0161: 0x9A, 0x203A: 0x9B,
        0x0153: 0x9C, 0x017E: 0x9E, 0x0178: 0x9F, 0x2192: UInt8(ascii: ">"),
    ]

    /// A PDF string literal of the bytes: `(` `)` `\` escaped.
    static func literal(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "(")]
        for byte in bytes {
            if byte == UInt8(ascii: "(") || byte == UInt8(ascii: ")") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: ")"))
        return out
    }

    /// Helvetica's advance widths (thousandths of the size) for 32…126; other bytes take 556.
    private static let helvetica: [Int] = [
        278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556,
        556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
        667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556,
        556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
    ]

    /// Width in points of text in Helvetica (bold a little wider).
    static func width(_ bytes: [UInt8], size: Double, bold: Bool) -> Double {
        let units = bytes.reduce(0) { $0 + ((32...126).contains($1) ? helvetica[Int($1) - 32] : 556) }
        return Double(units) * size / 1000 * (bold ? 1.07 : 1)
    }

    /// The text broken into lines no wider than `width`, at spaces (a word
    /// longer than a line is cut); the text's own line breaks kept.
    static func wrap(_ text: String, width: Double, size: Double, bold: Bool = false) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line: [UInt8] = []
            for word in winAnsi(String(paragraph)).split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true) {
                var word = Array(word)
                let candidate = line.isEmpty ? word : line + [UInt8(ascii: " ")] + word
                if self.width(candidate, size: size, bold: bold) <= width { line = candidate; continue }
                if !line.isEmpty { lines.append(line) }
                // A word longer than a line is cut where it fills one: measured glyph by glyph, once.
                while self.width(word, size: size, bold: bold) > width, word.count > 1 {
                    var cut = 0, used = 0.0
                    while cut < word.count {
                        let glyph = self.width([word[cut]], size: size, bold: bold)
                        if used + glyph > width, cut > 0 { break }
                        used += glyph
                        cut += 1
                    }
                    lines.append(Array(word[..<cut]))
                    word = Array(word[cut...])
                }
                line = word
            }
            lines.append(line)
        }
        return lines
    }
}
