import Crypto
import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import VroomXModels

/// `Upload-Checksum: sha256 <base64 digest>` of one PATCH body.
struct Checksum {
    enum Algorithm: String { case sha1, sha256 }
    let algorithm: Algorithm
    let digest: Data

    init(header: String) throws {
        let parts = header.split(separator: " ")
        guard parts.count == 2, let digest = Data(base64Encoded: String(parts[1])) else {
            throw AppError(400, .invalidParameter, "Upload-Checksum must be `algorithm base64-digest`.", field: "Upload-Checksum")
        }
        guard let algorithm = Algorithm(rawValue: parts[0].lowercased()) else {
            throw AppError(400, .invalidParameter, "Upload-Checksum supports \(Tus.checksumAlgorithms).", field: "Upload-Checksum")
        }
        self.algorithm = algorithm
        self.digest = digest
    }

    func hasher() -> ChunkHasher {
        switch algorithm {
        case .sha1: return .sha1(Insecure.SHA1())
        case .sha256: return .sha256(SHA256())
        }
    }

    func matches(_ hasher: ChunkHasher) -> Bool { hasher.digest == digest }
}

enum ChunkHasher {
    case sha1(Insecure.SHA1)
    case sha256(SHA256)

    mutating func update(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { bytes in
            switch self {
            case .sha1(var hasher): hasher.update(bufferPointer: bytes); self = .sha1(hasher)
            case .sha256(var hasher): hasher.update(bufferPointer: bytes); self = .sha256(hasher)
            }
        }
    }

    var digest: Data {
        switch self {
        case .sha1(let hasher): return Data(hasher.finalize())
        case .sha256(let hasher): return Data(hasher.finalize())
        }
    }
}
