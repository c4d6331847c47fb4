import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import VroomXModels

/// Resumable media uploads over tus 1.0 (core, creation, termination,
/// checksum, expiration), so any standard tus client can send a photo or a
/// walkthrough video: create an upload for an inspection slot, PATCH bytes
/// at offsets, HEAD to learn the offset after an interruption. Bytes that
/// arrived before a connection dropped are kept. A finished upload becomes
/// the slot's file and the inspection's change reaches the feed.
struct UploadController {
    let store: Store
    let media: any MediaStorage
    let configuration: ServerConfiguration
    let locks = UploadLocks()
    /// Within one PATCH, bytes between progress records.
    static let recordEvery: Int64 = 16 << 20

    func register(_ routes: Routes) {
        routes.onResponse(.uploadOptions) { _, _ in
            var headers = Self.tusHeaders
            headers[.tusVersion] = Tus.version
            headers[.tusExtension] = Tus.extensions
            headers[.tusChecksumAlgorithm] = Tus.checksumAlgorithms
            headers[.tusMaxSize] = String(configuration.maxVideoBytes)
            return Response(status: .noContent, headers: headers)
        }
        routes.onResponse(.createUpload) { request, context in try await tus { try await create(request, context) } }
        routes.onResponse(.uploadOffset) { request, context in try await tus { try await head(request, context) } }
        routes.onResponse(.appendUpload) { request, context in try await tus { try await patch(request, context) } }
        routes.onResponse(.terminateUpload) { request, context in try await tus { try await terminate(request, context) } }
    }

    static var tusHeaders: HTTPFields {
        var headers = HTTPFields()
        headers[.tusResumable] = Tus.version
        return headers
    }

    /// Every tus answer, errors included, says which protocol version it speaks.
    private func tus(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch var error as AppError {
            error.headers["Tus-Resumable"] = Tus.version
            throw error
        }
    }

    private func checkVersion(_ request: Request) throws {
        guard request.headers[.tusResumable] == Tus.version else {
            var error = AppError(412, .tusVersionUnsupported, "Send Tus-Resumable: \(Tus.version).", field: "Tus-Resumable")
            error.headers["Tus-Version"] = Tus.version
            throw error
        }
    }

    // MARK: Creation

    private func create(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        try checkVersion(request)
        let identity = try context.caller()
        if request.headers[.uploadDeferLength] != nil {
            throw AppError(400, .invalidParameter, "Upload-Defer-Length is not supported; send Upload-Length.", field: "Upload-Defer-Length")
        }
        guard let length = try request.integer(.uploadLength) else {
            throw AppError(400, .invalidParameter, "Upload-Length must be the file size in bytes.", field: "Upload-Length")
        }
        let metadataText = request.headers[.uploadMetadata] ?? ""
        guard metadataText.utf8.count <= 4096, let metadata = Tus.decodeMetadata(metadataText) else {
            throw AppError(400, .invalidParameter, "Upload-Metadata must be comma-separated `key base64` pairs.", field: "Upload-Metadata")
        }
        guard let inspection = metadata["inspection_id"].flatMap(ID<Inspection>.init) else {
            throw AppError(400, .invalidParameter, "Upload-Metadata must name the inspection_id.", field: "Upload-Metadata")
        }
        let slot = MediaSlot(metadata["slot"] ?? "")
        guard slot.isValid else {
            throw AppError(400, .invalidParameter, "Upload-Metadata must name a slot (like front or walkthrough).", field: "Upload-Metadata")
        }
        let record = try await startUpload(inspection: inspection, slot: slot, length: length, metadata: metadataText, identity)
        var headers = Self.tusHeaders
        headers[.location] = Endpoint.appendUpload.path(record.id)
        headers[.uploadExpires] = Self.httpDate(record.expiresAt)
        return Response(status: .created, headers: headers)
    }

    /// Checks the size against the slot's kind and opens the upload.
    func startUpload(inspection: ID<Inspection>, slot: MediaSlot, length: Int64, metadata: String,
                     _ identity: Identity) async throws -> UploadRecord {
        let limit = configuration.maxBytes(slot.kind)
        guard length <= limit else {
            throw AppError(413, .payloadTooLarge, "A \(slot.kind.rawValue) may be at most \(limit >> 20) MB.", field: "Upload-Length")
        }
        let record = try await store.createUpload(inspection: inspection, slot: slot, length: length, metadata: metadata,
                                                  user: identity.user, identity.scope, lifetime: configuration.uploadLifetime)
        try media.openPartial(record.id).close()
        return record
    }

    // MARK: Core

    private func head(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        try checkVersion(request)
        let identity = try context.caller()
        let upload = try await store.upload(try uploadID(context), user: identity.user, tenant: identity.tenant)
        var headers = Self.tusHeaders
        headers[.uploadOffset] = String(upload.completedAt == nil ? upload.received : upload.length)
        headers[.uploadLength] = String(upload.length)
        headers[.cacheControl] = "no-store"
        if !upload.metadata.isEmpty { headers[.uploadMetadata] = upload.metadata }
        if upload.completedAt == nil { headers[.uploadExpires] = Self.httpDate(upload.expiresAt) }
        return Response(status: .ok, headers: headers)
    }

    private func patch(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        try checkVersion(request)
        guard request.headers[.contentType]?.lowercased() == Tus.patchContentType else {
            throw AppError(415, .unsupportedMediaType, "Send the bytes as \(Tus.patchContentType).", field: "Content-Type")
        }
        guard let offset = try request.integer(.uploadOffset) else {
            throw AppError(400, .invalidParameter, "Upload-Offset must be the byte offset of this chunk.", field: "Upload-Offset")
        }
        let contentLength = try request.integer(.contentLength)
        let checksum = try request.headers[.uploadChecksum].map(Checksum.init(header:))
        let identity = try context.caller()
        let upload = try await append(request.body, contentLength: contentLength, at: offset, checksum: checksum,
                                      to: try uploadID(context), identity)
        var headers = Self.tusHeaders
        headers[.uploadOffset] = String(upload.received)
        if upload.received < upload.length { headers[.uploadExpires] = Self.httpDate(upload.expiresAt) }
        return Response(status: .noContent, headers: headers)
    }

    /// Writes a request body at `offset` of an upload and returns the upload
    /// with its new offset. Bytes that arrive before the connection drops are kept
    /// (unless a checksum covers the chunk, which then cannot be verified);
    /// the last byte finishes the upload.
    func append(_ body: RequestBody, contentLength: Int64?, at offset: Int64, checksum: Checksum?,
                to uploadID: String, _ identity: Identity) async throws -> UploadRecord {
        // Read under the lock, so the offset cannot move before the write.
        // Keyed by the user too: another user's request never learns the upload is busy.
        let lock = identity.user.rawValue + "/" + uploadID
        guard locks.lock(lock) else {
            throw AppError(423, .uploadLocked, "Another request is writing to this upload; ask for its offset again shortly.")
        }
        defer { locks.unlock(lock) }
        var upload = try await store.upload(uploadID, user: identity.user, tenant: identity.tenant)
        guard upload.completedAt == nil else {
            guard offset == upload.length else { throw offsetMismatch(upload.length) }
            return upload
        }
        guard offset == upload.received else { throw offsetMismatch(upload.received) }
        // offset == received <= length, so the subtraction cannot overflow; the sum could.
        if let contentLength, contentLength > upload.length - offset {
            throw AppError(413, .payloadTooLarge, "The chunk goes past Upload-Length (\(upload.length) bytes).", field: "Content-Length")
        }

        let writer = try media.openPartial(upload.id)
        defer { writer.close() }
        var position = offset
        var recorded = offset
        var hasher = checksum?.hasher()
        var failure: (any Error)?
        do {
            for try await chunk in body {
                guard position + Int64(chunk.readableBytes) <= upload.length else {
                    throw AppError(413, .payloadTooLarge, "The chunk goes past Upload-Length (\(upload.length) bytes).")
                }
                try writer.write(chunk, at: position)
                hasher?.update(chunk)
                position += Int64(chunk.readableBytes)
                if checksum == nil, position - recorded >= Self.recordEvery {
                    // Long requests record their progress as they go: a crash of this server
                    // loses at most the last few MB, and HEAD shows how far it got.
                    try writer.sync()
                    try await store.setReceived(upload.id, tenant: identity.tenant, received: position)
                    recorded = position
                }
            }
        } catch {
            failure = error
        }
        if failure != nil && (checksum != nil || (failure as? AppError)?.code == .payloadTooLarge) {
            // Nothing unrecorded of this chunk can be trusted (with a checksum nothing was recorded).
            position = recorded
        }
        if failure == nil, let checksum, let hasher, !checksum.matches(hasher) {
            position = offset
            failure = AppError(460, .checksumMismatch, "The chunk does not match Upload-Checksum; send it again.", field: "Upload-Checksum")
        }
        try writer.truncate(to: position)
        try writer.sync()
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
            let type: ContentSniffer.Detected
            if let detected { type = detected } else { type = try await detectContent(upload, identity) }
            try await finish(upload, as: type, identity)
        }
        upload.received = position
        return upload
    }

    private func offsetMismatch(_ expected: Int64) -> AppError {
        var error = AppError(409, .uploadOffsetMismatch, "Upload-Offset must be \(expected), the bytes this server has.",
                             field: "Upload-Offset")
        error.headers["Upload-Offset"] = String(expected)
        return error
    }

    /// The first bytes decide what the file is; the wrong kind for the slot
    /// ends the upload.
    private func detectContent(_ upload: UploadRecord, _ identity: Identity) async throws -> ContentSniffer.Detected {
        let prefix = try media.partialPrefix(upload.id, count: ContentSniffer.prefixLength)
        if let detected = ContentSniffer.detect(prefix), ContentSniffer.allowed(detected, for: upload.kind) { return detected }
        media.discardPartial(upload.id)
        try await store.deleteUpload(upload.id, tenant: identity.tenant)
        throw AppError(415, .unsupportedMediaType, "The \(upload.slot) slot takes \(ContentSniffer.expected(for: upload.kind)).")
    }

    /// Moves the finished file to its key and attaches it to the inspection.
    private func finish(_ upload: UploadRecord, as detected: ContentSniffer.Detected, _ identity: Identity) async throws {
        let sha256 = try media.partialSHA256(upload.id)
        let folder = switch upload.kind {
        case .photo: "photos"
        case .video: "videos"
        case .signature: "signatures"
        }
        let key = "\(identity.tenant.rawValue)/\(upload.inspectionID.rawValue)/\(folder)/\(upload.slot.rawValue).\(detected.fileExtension)"
        // Refuse before replacing a file if the inspection was completed meanwhile.
        guard try await store.inspection(upload.inspectionID, identity.scope).completedAt == nil else {
            throw AppError(409, .inspectionCompleted, "This inspection is completed and can no longer change.")
        }
        try media.commit(upload.id, to: key)
        let attached = InspectionMedia(slot: upload.slot, kind: upload.kind, contentType: detected.contentType,
                                       sizeBytes: upload.length, sha256: sha256, uploadedAt: store.now)
        _ = try await store.finishUpload(upload, media: attached, key: key, identity.scope)
    }

    // MARK: Termination

    private func terminate(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        try checkVersion(request)
        let identity = try context.caller()
        let upload = try await store.upload(try uploadID(context), user: identity.user, tenant: identity.tenant)
        let lock = identity.user.rawValue + "/" + upload.id
        guard locks.lock(lock) else {
            throw AppError(423, .uploadLocked, "Another request is writing to this upload.")
        }
        defer { locks.unlock(lock) }
        media.discardPartial(upload.id)
        try await store.deleteUpload(upload.id, tenant: identity.tenant)
        return Response(status: .noContent, headers: Self.tusHeaders)
    }

    private func uploadID(_ context: AppRequestContext) throws -> String {
        guard let id = context.parameters.get("id"), UUID(uuidString: id) != nil else { throw AppError.notFound("Upload") }
        return id.lowercased()
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110), built without a formatter
    /// object on every response.
    static func httpDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
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

extension HTTPField.Name {
    static let tusResumable = HTTPField.Name("Tus-Resumable")!
    static let tusVersion = HTTPField.Name("Tus-Version")!
    static let tusExtension = HTTPField.Name("Tus-Extension")!
    static let tusMaxSize = HTTPField.Name("Tus-Max-Size")!
    static let tusChecksumAlgorithm = HTTPField.Name("Tus-Checksum-Algorithm")!
    static let uploadLength = HTTPField.Name("Upload-Length")!
    static let uploadOffset = HTTPField.Name("Upload-Offset")!
    static let uploadMetadata = HTTPField.Name("Upload-Metadata")!
    static let uploadExpires = HTTPField.Name("Upload-Expires")!
    static let uploadChecksum = HTTPField.Name("Upload-Checksum")!
    static let uploadDeferLength = HTTPField.Name("Upload-Defer-Length")!
}
