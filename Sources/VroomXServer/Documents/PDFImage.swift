import CompressNIO
import NIOCore

/// A picture a PDF can draw: a JPEG as it is (PDF reads JPEG itself, so a
/// photo is never re-encoded), or a PNG (a signature) read into RGB on
/// white and compressed again.
struct PDFImage: Sendable {
    let width: Int
    let height: Int
    /// The `/ColorSpace` name.
    let colorSpace: String
    /// The `/Filter` the data is encoded with.
    let filter: String
    let data: [UInt8]
    /// `/DecodeParms`, when the filter needs them.
    var decodeParameters: String? = nil

    /// A picture from a file's bytes, or nil when it is not a JPEG (or, with
    /// `png`, a PNG) this reads. Photos are JPEGs passed through; only a
    /// signature, a small drawing, is decoded, so no upload can make a
    /// document cost much work.
    init?(_ bytes: [UInt8], png allowPNG: Bool = false) {
        if let jpeg = Self.jpeg(bytes) { self = jpeg; return }
        if allowPNG, let png = Self.png(bytes) { self = png; return }
        return nil
    }

    /// The largest signature decoded, in pixels (a phone's signature pad is well under a megapixel).
    static let maxSignaturePixels = 2_000_000

    private init(width: Int, height: Int, colorSpace: String, filter: String, data: [UInt8]) {
        (self.width, self.height, self.colorSpace, self.filter, self.data) = (width, height, colorSpace, filter, data)
    }

    // MARK: JPEG

    /// The size and colours from the frame header (SOFn); the bytes pass through.
    private static func jpeg(_ bytes: [UInt8]) -> PDFImage? {
        guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var index = 2
        while index + 9 < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            if marker == 0xFF { index += 1; continue }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            // SOF0…SOF15 except DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                let height = Int(bytes[index + 5]) << 8 | Int(bytes[index + 6])
                let width = Int(bytes[index + 7]) << 8 | Int(bytes[index + 8])
                let components = Int(bytes[index + 9])
                // A header claiming more than a large camera's frame is no photo (a reader would try to allocate it).
                guard (1...12_000).contains(width), (1...12_000).contains(height), [1, 3].contains(components) else { return nil }
                let space = components == 1 ? "DeviceGray" : components == 3 ? "DeviceRGB" : "DeviceCMYK"
                return PDFImage(width: width, height: height, colorSpace: space, filter: "DCTDecode", data: bytes)
            }
            guard length >= 2 else { return nil }
            index += 2 + length
        }
        return nil
    }

    // MARK: PNG

    /// 8-bit grey, RGB, and either with alpha (laid on white); not palette or interlaced ones.
    private static func png(_ bytes: [UInt8]) -> PDFImage? {
        guard bytes.count > 33, bytes.prefix(8).elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return nil }
        var index = 8
        var width = 0, height = 0, colorType = 0, depth = 0, interlaced = false
        var compressed = ByteBuffer()
        while index + 8 <= bytes.count {
            let length = Int(bytes[index]) << 24 | Int(bytes[index + 1]) << 16 | Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            let type = String(decoding: bytes[(index + 4)..<(index + 8)], as: UTF8.self)
            let start = index + 8
            guard length >= 0, start + length + 4 <= bytes.count else { return nil }
            switch type {
            case "IHDR":
                guard length >= 13 else { return nil }
                width = Int(bytes[start]) << 24 | Int(bytes[start + 1]) << 16 | Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
                height = Int(bytes[start + 4]) << 24 | Int(bytes[start + 5]) << 16 | Int(bytes[start + 6]) << 8 | Int(bytes[start + 7])
                (depth, colorType, interlaced) = (Int(bytes[start + 8]), Int(bytes[start + 9]), bytes[start + 12] != 0)
            case "IDAT": compressed.writeBytes(bytes[start..<(start + length)])
            case "IEND": index = bytes.count
            default: break
            }
            index = start + length + 4
        }
        let channels = [0: 1, 2: 3, 4: 2, 6: 4][colorType]
        // A signature is a few hundred pixels a side: anything far larger is not one, and would take memory for nothing.
        guard let channels, depth == 8, !interlaced, (1...4096).contains(width), (1...4096).contains(height),
              width * height <= maxSignaturePixels else { return nil }
        let stride = width * channels
        guard let raw = try? compressed.decompress(with: .zlib(), maxSize: (stride + 1) * height),
              raw.readableBytes == (stride + 1) * height else { return nil }
        let pixels = unfilter(Array(raw.readableBytesView), stride: stride, height: height, bytesPerPixel: channels)
        var rgb = [UInt8]()
        rgb.reserveCapacity(width * height * 3)
        for pixel in Swift.stride(from: 0, to: pixels.count, by: channels) {
            let alpha = channels == 2 || channels == 4 ? Int(pixels[pixel + channels - 1]) : 255
            for channel in 0..<3 {
                let value = Int(pixels[pixel + (channels <= 2 ? 0 : channel)])
                rgb.append(UInt8((value * alpha + 255 * (255 - alpha) + 127) / 255))  // over white
            }
        }
        var plain = ByteBuffer(bytes: rgb)
        guard let deflated = try? plain.compress(with: .zlib()) else { return nil }
        return PDFImage(width: width, height: height, colorSpace: "DeviceRGB", filter: "FlateDecode", data: Array(deflated.readableBytesView))
    }

    /// PNG's per-line filters undone (none, sub, up, average, Paeth).
    private static func unfilter(_ data: [UInt8], stride: Int, height: Int, bytesPerPixel: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: stride * height)
        for row in 0..<height {
            let filter = data[row * (stride + 1)]
            let source = row * (stride + 1) + 1
            let line = row * stride
            for column in 0..<stride {
                let x = Int(data[source + column])
                let left = column >= bytesPerPixel ? Int(out[line + column - bytesPerPixel]) : 0
                let up = row > 0 ? Int(out[line - stride + column]) : 0
                let upLeft = row > 0 && column >= bytesPerPixel ? Int(out[line - stride + column - bytesPerPixel]) : 0
                let predicted: Int
                switch filter {
                case 1: predicted = left
                case 2: predicted = up
                case 3: predicted = (left + up) / 2
                case 4:
                    let p = left + up - upLeft
                    let (pa, pb, pc) = (abs(p - left), abs(p - up), abs(p - upLeft))
                    predicted = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft
                default: predicted = 0
                }
                out[line + column] = UInt8((x + predicted) & 0xFF)
            }
        }
        return out
    }
}
