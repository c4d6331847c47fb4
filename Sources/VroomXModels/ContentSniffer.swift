/// Recognizes a media file from its first bytes, never from what the client
/// says it is: JPEG, PNG and HEIC photos, MP4 and QuickTime videos. The
/// server checks uploads with it; the app names exported files by it.
public enum ContentSniffer {
    public struct Detected: Equatable, Sendable {
        public let contentType: String
        public let fileExtension: String
    }

    /// Bytes needed to decide.
    public static let prefixLength = 16

    public static func detect(_ bytes: [UInt8]) -> Detected? {
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return Detected(contentType: "image/jpeg", fileExtension: "jpg") }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            return Detected(contentType: "image/png", fileExtension: "png")
        }
        // ISO base media files: a box size, then `ftyp` and the major brand.
        guard bytes.count >= 12, String(decoding: bytes[4..<8], as: UTF8.self) == "ftyp" else {
            // Older QuickTime files may open with another top-level atom.
            if bytes.count >= 8, ["moov", "mdat", "wide", "free"].contains(String(decoding: bytes[4..<8], as: UTF8.self)) {
                return Detected(contentType: "video/quicktime", fileExtension: "mov")
            }
            return nil
        }
        let brand = String(decoding: bytes[8..<12], as: UTF8.self)
        switch brand {
        case "heic", "heix", "heim", "heis", "mif1", "msf1", "hevc", "hevx":
            return Detected(contentType: "image/heic", fileExtension: "heic")
        case "qt  ":
            return Detected(contentType: "video/quicktime", fileExtension: "mov")
        case "isom", "iso2", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "M4V ", "M4VH", "M4VP", "dash", "3gp4", "3gp5", "3g2a":
            return Detected(contentType: "video/mp4", fileExtension: "mp4")
        default:
            return nil
        }
    }

    /// Whether a detected type may fill a slot of this kind.
    public static func allowed(_ detected: Detected, for kind: MediaKind) -> Bool {
        switch kind {
        case .photo: return ["image/jpeg", "image/png", "image/heic"].contains(detected.contentType)
        case .signature: return ["image/jpeg", "image/png"].contains(detected.contentType)
        case .video: return ["video/mp4", "video/quicktime"].contains(detected.contentType)
        }
    }

    public static func expected(for kind: MediaKind) -> String {
        switch kind {
        case .photo: return "a JPEG, PNG or HEIC photo"
        case .signature: return "a PNG or JPEG image"
        case .video: return "an MP4 or MOV video"
        }
    }
}
