import Crypto
import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import VroomXModels

/// How big uploads may be and how much one driver or carrier may hold.
public struct UploadLimits: Sendable, Hashable {
    /// Largest file accepted per kind of media, in bytes.
    public var maxPhotoBytes: Int64 = 25 << 20
    public var maxVideoBytes: Int64 = 500 << 20
    public var maxSignatureBytes: Int64 = 2 << 20
    /// How long an unfinished upload may be resumed before it is cleaned up.
    public var lifetime: TimeInterval = 24 * 3600
    /// Uploads a user may have open (begun, not finished, not expired):
    /// more than one inspection's worth of slots.
    public var openUploadsPerUser = 60
    /// Bytes a user's open uploads may announce together.
    public var openBytesPerUser: Int64 = 2 << 30
    /// Bytes a carrier may store (finished files plus open uploads).
    public var storedBytesPerCarrier: Int64 = 200 << 30

    public init() {}

    public func maxBytes(_ kind: MediaKind) -> Int64 {
        switch kind {
        case .photo: return maxPhotoBytes
        case .video: return maxVideoBytes
        case .signature: return maxSignatureBytes
        }
    }
}

/// The rules of media uploads, apart from the protocol that carries them
/// (tus in `UploadController`, one-request PUTs in `InspectionController`):
/// size caps and quotas, one writer per upload, bytes kept across dropped
/// connections, content decided by the bytes, and the last byte attaching
/// the file to its inspection.
struct UploadService: Sendable {
    let store: Store
    let media: any MediaStorage
    let limits: UploadLimits
    let locks = UploadLocks()
    /// Within one request, bytes between progress records.
    static let recordEvery: Int64 = 16 << 20

    /// Checks the size against the slot's kind and the quotas, and opens the upload.
    func start(inspection: ID<Inspection>, slot: MediaSlot, length: Int64, metadata: String,
               _ identity: Identity) async throws -> UploadRecord {
        let limit = limits.maxBytes(slot.kind)
        guard length <= limit else {
            throw AppError(413, .payloadTooLarge, "A \(slot.kind.rawValue) may be at most \(limit >> 20) MB.", field: "Upload-Length")
        }
        let (record, replaced) = try await store.createUpload(inspection: inspection, slot: slot, length: length, metadata: metadata,
                                                              user: identity.user, identity.scope, limits: limits)
        // The bytes of an upload this one replaced no longer count against any quota: they go now,
        // not at the next upkeep, so repeated replacements cannot fill the disk.
        for id in replaced { media.discardPartial(id) }
        do {
            try media.openPartial(record.id).close()
        } catch {
            try? await store.deleteUpload(record.id, tenant: identity.tenant)
            throw Self.storageError(error)
        }
        return record
    }

    /// An upload of the caller (another user's is not found).
    func upload(_ id: String, _ identity: Identity) async throws -> UploadRecord {
        try await store.upload(id, user: identity.user, tenant: identity.tenant)
    }

    /// Writes a request body at `offset` of an upload and returns the upload
    /// with its new offset. Bytes that arrive before the connection drops are
    /// kept (unless a checksum covers the chunk, which then cannot be
    /// verified); the last byte finishes the upload.
    func append<Body: AsyncSequence & Sendable>(_ body: Body, contentLength: Int64?, at offset: Int64, checksum: Checksum?,
                                               to uploadID: String, _ identity: Identity) async throws -> UploadRecord
    where Body.Element == ByteBuffer {
        // Read under the lock, so the offset cannot move before the write.
        // Keyed by the user too: another user's request never learns the upload is busy.
        let lock = identity.user.rawValue + "/" + uploadID
        guard locks.lock(lock) else {
            throw AppError(423, .uploadLocked, "Another request is writing to this upload; ask for its offset again shortly.")
        }
        defer { locks.unlock(lock) }
        var upload = try await store.upload(uploadID, user: identity.user, tenant: identity.tenant)
        guard upload.completedAt == nil else {
            guard offset == upload.length else { throw Self.offsetMismatch(upload.length) }
            return upload
        }
        guard offset == upload.received else { throw Self.offsetMismatch(upload.received) }
        // offset == received <= length, so the subtraction cannot overflow; the sum could.
        if let contentLength, contentLength > upload.length - offset {
            throw AppError(413, .payloadTooLarge, "The chunk goes past Upload-Length (\(upload.length) bytes).", field: "Content-Length")
        }
        if upload.received == upload.length, upload.storedFile != nil {
            // Every byte arrived and the file was stored before; only its attachment is missing.
            try await finish(upload, detected: nil, identity)
            return upload
        }

        let writer: any PartialMediaWriter
        do {
            writer = try media.openPartial(upload.id)
        } catch {
            throw Self.storageError(error)
        }
        defer { writer.close() }
        var position = offset
        var recorded = offset
        var hasher = checksum?.hasher()
        var failure: (any Error)?
        var storageFailure: (any Error)?
        do {
            for try await chunk in body {
                guard position + Int64(chunk.readableBytes) <= upload.length else {
                    throw AppError(413, .payloadTooLarge, "The chunk goes past Upload-Length (\(upload.length) bytes).")
                }
                do {
                    try writer.write(chunk, at: position)
                } catch {
                    storageFailure = error
                    break
                }
                hasher?.update(chunk)
                position += Int64(chunk.readableBytes)
                if checksum == nil, position - recorded >= Self.recordEvery {
                    // Long requests record their progress as they go: a crash of this server
                    // loses at most the last few MB, and HEAD shows how far it got.
                    do {
                        try writer.sync()
                    } catch {
                        storageFailure = error
                        break
                    }
                    try await store.setReceived(upload.id, tenant: identity.tenant, received: position)
                    recorded = position
                }
            }
        } catch {
            failure = error
        }
        if let storageFailure {
            // The disk refused: keep what is durably recorded; the client resumes there once space is back.
            try? writer.truncate(to: recorded)
            throw Self.storageError(storageFailure)
        }
        if failure != nil && (checksum != nil || (failure as? AppError)?.code == .payloadTooLarge) {
            // Nothing unrecorded of this chunk can be trusted (with a checksum nothing was recorded).
            position = recorded
        }
        if failure == nil, let checksum, let hasher, !checksum.matches(hasher) {
            position = offset
            failure = AppError(460, .checksumMismatch, "The chunk does not match Upload-Checksum; send it again.", field: "Upload-Checksum")
        }
        do {
            try writer.truncate(to: position)
            try writer.sync()
        } catch {
            try? writer.truncate(to: recorded)
            throw Self.storageError(error)
        }
        if position != recorded { try await store.setReceived(upload.id, tenant: identity.tenant, received: position) }

        // Decided as soon as the first bytes are in, and again when the file is finished.
        let prefixLength = min(Int64(ContentSniffer.prefixLength), upload.length)
        var detected: ContentSniffer.Detected? = nil
        if offset < prefixLength && position >= prefixLength {
            detected = try await detectContent(upload, identity)
        }
        if let failure = failure as? AppError { throw failure }
        if failure != nil {
            // The connection dropped mid-chunk: what arrived is kept; the client resumes at the offset.
            var interrupted = AppError(400, .invalidParameter, "The upload was interrupted; resume at Upload-Offset \(position).",
                                       field: "Upload-Offset")
            interrupted.headers["Upload-Offset"] = String(position)
            throw interrupted
        }
        if position == upload.length {
            try await finish(upload, detected: detected, identity)
        }
        upload.received = position
        return upload
    }

    /// A whole file in one request: the same checks and storage as a
    /// resumable upload, but nothing is kept if the request fails.
    func putWhole<Body: AsyncSequence & Sendable>(_ body: Body, length: Int64, inspection: ID<Inspection>, slot: MediaSlot,
                                                 _ identity: Identity) async throws -> Inspection where Body.Element == ByteBuffer {
        let upload = try await start(inspection: inspection, slot: slot, length: length, metadata: "", identity)
        do {
            let received = try await append(body, contentLength: length, at: 0, checksum: nil, to: upload.id, identity).received
            guard received == length else {
                throw AppError(400, .invalidParameter, "The body ended after \(received) of \(length) bytes.", field: "Content-Length")
            }
        } catch {
            media.discardPartial(upload.id)
            try? await store.deleteUpload(upload.id, tenant: identity.tenant)
            throw error
        }
        return try await store.inspection(upload.inspectionID, identity.scope)
    }

    /// Ends an upload the client gave up; its bytes go.
    func terminate(_ uploadID: String, _ identity: Identity) async throws {
        let upload = try await store.upload(uploadID, user: identity.user, tenant: identity.tenant)
        let lock = identity.user.rawValue + "/" + upload.id
        guard locks.lock(lock) else {
            throw AppError(423, .uploadLocked, "Another request is writing to this upload.")
        }
        defer { locks.unlock(lock) }
        media.discardPartial(upload.id)
        try await store.deleteUpload(upload.id, tenant: identity.tenant)
    }

    /// Removes every upload past its expiry with its partial file (and a
    /// stored file that was never attached); returns how many.
    func pruneExpired() async throws -> Int {
        var pruned = 0
        while true {
            let expired = try await store.expiredUploads(limit: 500)
            for upload in expired {
                media.discardPartial(upload.id)
                if let orphan = upload.unattachedKey { media.remove(orphan) }
            }
            try await store.deleteUploads(expired.map(\.id))
            pruned += expired.count
            if expired.count < 500 { return pruned }
        }
    }

    static func offsetMismatch(_ expected: Int64) -> AppError {
        var error = AppError(409, .uploadOffsetMismatch, "Upload-Offset must be \(expected), the bytes this server has.",
                             field: "Upload-Offset")
        error.headers["Upload-Offset"] = String(expected)
        return error
    }

    /// A storage failure as the client should see it: the disk is full
    /// (507, retry later: the bytes recorded so far are kept) or storage is
    /// failing (503); never a refusal of the upload itself.
    static func storageError(_ error: any Error) -> AppError {
        if let error = error as? AppError { return error }
        if let error = error as? MediaStorageError, error.isOutOfSpace {
            return AppError(507, .insufficientStorage, "The server is out of storage space; try again later.", retryAfter: 300)
        }
        return AppError(503, .unavailable, "Media storage is failing; try again shortly.", retryAfter: 30)
    }

    /// The first bytes decide what the file is; the wrong kind for the slot
    /// ends the upload.
    private func detectContent(_ upload: UploadRecord, _ identity: Identity) async throws -> ContentSniffer.Detected {
        let prefix: [UInt8]
        do {
            prefix = try media.partialPrefix(upload.id, count: ContentSniffer.prefixLength)
        } catch {
            throw Self.storageError(error)
        }
        if let detected = ContentSniffer.detect(prefix), ContentSniffer.allowed(detected, for: upload.kind) { return detected }
        media.discardPartial(upload.id)
        try await store.deleteUpload(upload.id, tenant: identity.tenant)
        throw AppError(415, .unsupportedMediaType, "The \(upload.slot) slot takes \(ContentSniffer.expected(for: upload.kind)).")
    }

    /// Stores the finished file under a key of its own and attaches it to
    /// the inspection in one transaction, which also checks that the
    /// inspection is still open. A file never replaces another in place:
    /// if the attachment is refused the new file goes, and once it is
    /// attached the slot's previous file goes. The key is recorded on the
    /// upload before the file moves there, so a request that fails between
    /// the move and the attachment (the database went away) is finished by
    /// the client's retry instead of stranding the upload.
    private func finish(_ upload: UploadRecord, detected: ContentSniffer.Detected?, _ identity: Identity) async throws {
        let file: UploadRecord.StoredFile
        if let committed = upload.storedFile, !media.hasPartial(upload.id) {
            file = committed
        } else {
            let type: ContentSniffer.Detected
            if let detected { type = detected } else { type = try await detectContent(upload, identity) }
            let sha256: String
            do {
                sha256 = try media.partialSHA256(upload.id)
            } catch {
                throw Self.storageError(error)
            }
            let folder = switch upload.kind {
            case .photo: "photos"
            case .video: "videos"
            case .signature: "signatures"
            }
            file = UploadRecord.StoredFile(
                key: "\(identity.tenant.rawValue)/\(upload.inspectionID.rawValue)/\(folder)/\(upload.slot.rawValue).\(upload.id).\(type.fileExtension)",
                sha256: sha256, contentType: type.contentType)
            try await store.recordStoredFile(file, of: upload.id, tenant: identity.tenant)
            do {
                try media.commit(upload.id, to: file.key)
            } catch {
                throw Self.storageError(error)
            }
        }
        let attached = InspectionMedia(slot: upload.slot, kind: upload.kind, contentType: file.contentType,
                                       sizeBytes: upload.length, sha256: file.sha256, uploadedAt: store.now)
        let replaced: String?
        do {
            replaced = try await store.finishUpload(upload, media: attached, key: file.key, identity.scope)
        } catch let error as AppError where error.status < 500 {
            // Refused for good (the inspection was completed meanwhile): the file and the upload go.
            media.remove(file.key)
            try? await store.deleteUpload(upload.id, tenant: identity.tenant)
            throw error
        }
        if let replaced, replaced != file.key { media.remove(replaced) }
    }
}

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

/// Uploads being written by a request of this instance: a second writer
/// of the same upload waits its turn (423) instead of interleaving bytes.
final class UploadLocks: Sendable {
    private let held = NIOLockedValueBox<Set<String>>([])

    func lock(_ id: String) -> Bool { held.withLockedValue { $0.insert(id).inserted } }
    func unlock(_ id: String) { _ = held.withLockedValue { $0.remove(id) } }
}
