import Foundation
import VroomXModels

/// Files that look like what phones produce, as far as the server can
/// tell from their first bytes; the rest is random so checksums differ.
public enum MediaSamples {
    public static func jpeg(size: Int = 2048) -> [UInt8] {
        header([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01], size: size)
    }

    public static func png(size: Int = 2048) -> [UInt8] {
        header([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52], size: size)
    }

    public static func mp4(size: Int = 4096) -> [UInt8] {
        header([0x00, 0x00, 0x00, 0x18] + Array("ftypisom".utf8) + [0x00, 0x00, 0x02, 0x00], size: size)
    }

    public static func pdf(size: Int = 2048) -> [UInt8] {
        header(Array("%PDF-1.7\n%".utf8), size: size)
    }

    static func header(_ header: [UInt8], size: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(size, header.count))
        bytes.withUnsafeMutableBytes { raw in
            var generator = SystemRandomNumberGenerator()
            let words = raw.count / 8
            for index in 0..<words { raw.storeBytes(of: generator.next() as UInt64, toByteOffset: index * 8, as: UInt64.self) }
            for index in (words * 8)..<raw.count { raw[index] = UInt8.random(in: 0...255, using: &generator) }
        }
        bytes.replaceSubrange(0..<header.count, with: header)
        return bytes
    }

    /// `Upload-Metadata` for a slot of an inspection.
    public static func metadata(_ inspection: ID<Inspection>, _ slot: MediaSlot, filename: String = "photo.jpg") -> String {
        Tus.encodeMetadata(["inspection_id": inspection.rawValue, "slot": slot.rawValue, "filename": filename])
    }
}
