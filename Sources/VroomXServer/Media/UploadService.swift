import Crypto
import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import VroomXModels

/// The rules of media uploads, apart from the protocol that carries them
/// (tus in `UploadController`, one-request PUTs in `InspectionController`):
/// size caps and quotas, one writer per upload across every instance (a
/// lease in the database), bytes kept across dropped connections, content
/// decided by the bytes, and the last byte attaching the file to its
/// inspection or unit.
struct UploadService: Sendable {
    let store: Store
    let media: any MediaStorage
    let limits: UploadLimits
    /// Within one request, bytes between progress records.
    static let recordEvery: Int64 = 16 << 20

    /// Checks the size against the slot's kind and the quotas, and opens the upload.
    func start(_ target: UploadTarget, length: Int64, metadata: String, _ identity: Identity) async throws -> UploadRecord {
        let kind = target.slot.kind
        // When and where it was taken, checked now: the file is attached later, when no one can be told.
        do {
            _ = try MediaCapture.from(metadata: Tus.decodeMetadata(metadata) ?? [:], now: store.now)
        } catch {
            throw AppError(400, .invalidParameter, "Upload-Metadata's \(error.field): \(error.message)", field: "Upload-Metadata")
        }
        let limit = limits.maxBytes(kind)
        guard length <= limit else {
            throw AppError(413, .payloadTooLarge, "A \(kind.rawValue) may be at most \(limit >> 20) MB.", field: "Upload-Length")
        }
        var (record, replaced) = try await store.uploads.open(target, length: length, metadata: metadata,
                                                              user: identity.user, identity.scope, limits: limits)
        // The bytes of an upload this one replaced no longer count against any quota: they go now,
        // not at the next upkeep, so repeated replacements cannot fill the storage.
        for old in replaced { await media.discardPartial(old.id, key: old.fileKey, handle: old.storageHandle) }
        do {
            record.storageHandle = try await media.beginPartial(record.id, key: record.fileKey)
            if record.storageHandle != nil {
                try await store.uploads.setStorageHandle(record.id, tenant: identity.tenant, handle: record.storageHandle)
            }
        } catch {
            await media.discardPartial(record.id, key: record.fileKey, handle: record.storageHandle)
            try? await store.uploads.delete(record.id, tenant: identity.tenant)
            throw Self.storageError(error)
        }
        return record
    }

    /// An upload of the caller (another user's is not found).
    func upload(_ id: String, _ identity: Identity) async throws -> UploadRecord {
        try await store.uploads.find(id, user: identity.user, tenant: identity.tenant)
    }

    /// Runs `body` holding the upload's lease (423 while another request,
    /// on this instance or another, holds it), and gives it back after.
    private func withLease<T: Sendable>(_ uploadID: String, _ identity: Identity,
                                        _ body: (_ lease: String) async throws -> T) async throws -> T {
        // The upload is looked up for this user first: another user's request never learns it is busy.
        let upload = try await store.uploads.find(uploadID, user: identity.user, tenant: identity.tenant)
        let lease = UUID().uuidString
        guard try await store.uploads.claim(upload.id, tenant: identity.tenant, lease: lease,
                                          until: store.now.addingTimeInterval(limits.leaseDuration)) else {
            throw Self.locked
        }
        // Given back even when the request was cancelled (the client went away, the server is shutting
        // down): otherwise the upload stays locked until the lease runs out.
        let release = { [store] in await Task { try? await store.uploads.release(upload.id, tenant: identity.tenant, lease: lease) }.value }
        do {
            let result = try await body(lease)
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    static let locked = AppError(423, .uploadLocked, "Another request is writing to this upload; ask for its offset again shortly.",
                                 retryAfter: 5)

    /// Writes a request body at `offset` of an upload and returns the upload
    /// with its new offset. Bytes that arrive before the connection drops are
    /// kept (unless a checksum covers the chunk, which then cannot be
    /// verified); the last byte finishes the upload.
    func append<Body: AsyncSequence & Sendable>(_ body: Body, contentLength: Int64?, at offset: Int64, checksum: Checksum?,
                                               to uploadID: String, _ identity: Identity) async throws -> UploadRecord
    where Body.Element == ByteBuffer {
        try await withLease(uploadID, identity) { lease in
            do {
                return try await append(body, contentLength: contentLength, at: offset, checksum: checksum, to: uploadID, lease: lease, identity)
            } catch let lost as MediaStorageError where lost.uploadLost || lost.stillStored != nil {
                throw try await recover(uploadID, from: lost, lease: lease, identity)
            }
        }
    }

    /// Storage lost some of an upload's bytes (a bucket that lost state, a
    /// multipart upload aborted behind the server's back): the client is
    /// told where to resume (409 with the offset still stored), or to start
    /// again (410) when nothing is left — never a 503 it would retry forever.
    private func recover(_ uploadID: String, from lost: MediaStorageError, lease: String, _ identity: Identity) async throws -> AppError {
        let upload = try await store.uploads.find(uploadID, user: identity.user, tenant: identity.tenant)
        if let kept = lost.stillStored, !lost.uploadLost {
            guard try await store.uploads.setReceived(upload.id, tenant: identity.tenant, received: min(kept, upload.received), lease: lease,
                                              until: store.now.addingTimeInterval(limits.leaseDuration)) else { return Self.locked }
            return Self.offsetMismatch(min(kept, upload.received))
        }
        await media.discardPartial(upload.id, key: upload.fileKey, handle: upload.storageHandle)
        try await store.uploads.delete(upload.id, tenant: identity.tenant)
        return AppError(410, .uploadLost, "The stored bytes of this upload are gone; start a new upload of the file.")
    }

    private func append<Body: AsyncSequence & Sendable>(_ body: Body, contentLength: Int64?, at offset: Int64, checksum: Checksum?,
                                                       to uploadID: String, lease: String, _ identity: Identity) async throws -> UploadRecord
    where Body.Element == ByteBuffer {
        // Read under the lease, so the offset cannot move before the write.
        var upload = try await store.uploads.find(uploadID, user: identity.user, tenant: identity.tenant)
        guard upload.completedAt == nil else {
            guard offset == upload.length else { throw Self.offsetMismatch(upload.length) }
            return upload
        }
        guard offset == upload.received else { throw Self.offsetMismatch(upload.received) }
        // offset == received <= length, so the subtraction cannot overflow; the sum could.
        if let contentLength, contentLength > upload.length - offset {
            throw AppError(413, .payloadTooLarge, "The chunk goes past Upload-Length (\(upload.length) bytes).", field: "Content-Length")
        }
        if upload.received == upload.length {
            // Every byte arrived before; only storing or attaching the file is missing.
            try await finish(upload, identity)
            return upload
        }
        upload.received = try await write(body, at: offset, checksum: checksum, to: upload, lease: lease, identity)
        if upload.received == upload.length {
            try await finish(upload, identity)
        }
        return upload
    }

    /// The body's bytes into storage after `offset`; returns the new durable
    /// offset, recorded. Throws after recording what it kept when the body
    /// broke off or was refused.
    private func write<Body: AsyncSequence & Sendable>(_ body: Body, at offset: Int64, checksum: Checksum?, to upload: UploadRecord,
                                                       lease: String, _ identity: Identity) async throws -> Int64
    where Body.Element == ByteBuffer {
        let writer: any PartialMediaWriter
        do {
            writer = try await media.openPartial(upload.id, key: upload.fileKey, handle: upload.storageHandle, length: upload.length, at: offset)
        } catch {
            throw Self.writeFailure(error)
        }
        defer { writer.close() }
        func record(_ received: Int64) async throws {
            guard try await store.uploads.setReceived(upload.id, tenant: identity.tenant, received: received, lease: lease,
                                              until: store.now.addingTimeInterval(limits.leaseDuration)) else { throw Self.locked }
        }
        var position = offset
        var recorded = offset
        var renewed = store.now
        var hasher = checksum?.hasher()
        var failure: (any Error)?
        var storageFailure: (any Error)?
        var detected = offset >= min(Int64(ContentSniffer.prefixLength), upload.length)
        do {
            for try await chunk in body {
                guard position + Int64(chunk.readableBytes) <= upload.length else {
                    throw AppError(413, .payloadTooLarge, "The chunk goes past Upload-Length (\(upload.length) bytes).")
                }
                do {
                    try await writer.append(chunk)
                    ServerMetrics.uploadBytes.increment(by: chunk.readableBytes)
                } catch {
                    storageFailure = error
                    break
                }
                hasher?.update(chunk)
                position += Int64(chunk.readableBytes)
                if !detected, position >= min(Int64(ContentSniffer.prefixLength), upload.length) {
                    // Decided as soon as the first bytes are in: a wrong file ends before the rest is sent.
                    detected = true
                    if let prefix = try await writer.prefix(ContentSniffer.prefixLength) { try await refuseWrongContent(prefix, upload, identity) }
                }
                let renewDue = store.now.timeIntervalSince(renewed) >= limits.leaseRenewal
                if checksum == nil, position - recorded >= Self.recordEvery || renewDue {
                    // Long requests record their progress as they go: a crash of this server loses at most
                    // the last few MB, HEAD (on any instance) shows how far it got, and the lease stays ours.
                    let durable: Int64
                    do {
                        durable = try await writer.checkpoint()
                    } catch {
                        storageFailure = error
                        break
                    }
                    try await record(durable)
                    recorded = durable
                    renewed = store.now
                } else if renewDue {
                    // A checksummed chunk records nothing until it is verified, but keeps its lease all the same.
                    try await record(recorded)
                    renewed = store.now
                }
            }
        } catch {
            failure = error
        }
        if let storageFailure {
            // Storage refused: keep what is durably recorded; the client resumes there once storage is back.
            if (try? await record(recorded)) != nil { try? await writer.finish(keeping: recorded) }
            throw Self.writeFailure(storageFailure)
        }
        if let refused = failure as? AppError, refused.code == .unsupportedMediaType || refused.code == .uploadLocked {
            // The upload is gone, or another request took it over: storage is no longer this request's to touch.
            throw refused
        }
        if failure != nil && (checksum != nil || (failure as? AppError)?.code == .payloadTooLarge) {
            // Nothing unrecorded of this chunk can be trusted (with a checksum nothing was recorded).
            position = recorded
        }
        if failure == nil, let checksum, let hasher, !checksum.matches(hasher) {
            position = offset
            failure = AppError(460, .checksumMismatch, "The chunk does not match Upload-Checksum; send it again.", field: "Upload-Checksum")
        }
        // Storage is touched again only while the lease is still this request's (renewed here, so for
        // another 60 s: longer than any storage call may take).
        try await record(recorded)
        do {
            try await writer.finish(keeping: position)
        } catch {
            try? await writer.finish(keeping: recorded)
            throw Self.writeFailure(error)
        }
        if position < upload.length {
            // This request ends here: the offset and the free lease become visible together.
            guard try await store.uploads.settle(upload.id, tenant: identity.tenant, received: position, lease: lease) else { throw Self.locked }
        } else if position != recorded {
            try await record(position)  // the last byte: the lease stays held while the file is attached
        }
        if let failure = failure as? AppError { throw failure }
        if failure != nil {
            // The connection dropped mid-chunk: what arrived is kept; the client resumes at the offset.
            var interrupted = AppError(400, .invalidParameter, "The upload was interrupted; resume at Upload-Offset \(position).",
                                       field: "Upload-Offset")
            interrupted.headers["Upload-Offset"] = String(position)
            throw interrupted
        }
        return position
    }

    /// A whole file in one request: the same checks and storage as a
    /// resumable upload, but nothing is kept if the request fails.
    /// The request says its size (Content-Length), which the size caps check first.
    func putWhole(_ request: Request, to target: UploadTarget, _ identity: Identity) async throws {
        guard let length = try request.integer(.contentLength) else {
            throw AppError(411, .invalidParameter, "Send Content-Length with the file.", field: "Content-Length")
        }
        guard length > 0 else { throw AppError(400, .invalidParameter, "The file is empty.", field: "Content-Length") }
        let body = request.body
        let upload: UploadRecord
        do {
            upload = try await start(target, length: length, metadata: "", identity)
        } catch var error as AppError where error.body.field == "Upload-Length" {
            error.body.field = "Content-Length"  // this request named its size there
            throw error
        }
        do {
            let received = try await append(body, contentLength: length, at: 0, checksum: nil, to: upload.id, identity).received
            guard received == length else { throw Self.cutShort(received, of: length) }
        } catch {
            await media.discardPartial(upload.id, key: upload.fileKey, handle: upload.storageHandle)
            try? await store.uploads.delete(upload.id, tenant: identity.tenant)
            // Nothing of a one-request upload is kept: an interrupted body is sent again whole.
            if let interrupted = error as? AppError, interrupted.body.field == "Upload-Offset",
               let offset = interrupted.headers["Upload-Offset"].flatMap(Int64.init) {
                throw Self.cutShort(offset, of: length)
            }
            throw error
        }
    }

    private static func cutShort(_ received: Int64, of length: Int64) -> AppError {
        AppError(400, .invalidParameter, "The body ended after \(received) of \(length) bytes; send the whole file again.",
                 field: "Content-Length")
    }

    /// Ends an upload the client gave up; its bytes go.
    func terminate(_ uploadID: String, _ identity: Identity) async throws {
        try await withLease(uploadID, identity) { _ in
            let upload = try await store.uploads.find(uploadID, user: identity.user, tenant: identity.tenant)
            await media.discardPartial(upload.id, key: upload.fileKey, handle: upload.storageHandle)
            try await store.uploads.delete(upload.id, tenant: identity.tenant)
        }
    }

    /// Removes every upload past its expiry with its bytes in progress (and
    /// a stored file that was never attached), then whatever storage holds
    /// of uploads older than that which no row describes; returns how many
    /// uploads went.
    func pruneExpired() async throws -> Int {
        var pruned = 0
        while true {
            let expired = try await store.uploads.expired(limit: 500)
            for item in expired {
                await media.discardPartial(item.upload.id, key: item.upload.fileKey, handle: item.upload.storageHandle)
                if let orphan = item.unattachedKey { await media.remove(orphan) }
            }
            try await store.uploads.delete(expired.map(\.upload.id))
            pruned += expired.count
            if expired.count < 500 { break }
        }
        _ = try? await media.removeLeftovers(olderThan: limits.lifetime * 2, described: { [store] in try await store.uploads.described($0) })
        try await emptyTrash()
        return pruned
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
    /// As `storageError`, but bytes storage reports lost pass through to
    /// `recover`, which answers them.
    static func writeFailure(_ error: any Error) -> any Error {
        if let lost = error as? MediaStorageError, lost.uploadLost || lost.stillStored != nil { return lost }
        return storageError(error)
    }

    /// Removes the files whose rows were deleted (a deleted expense's
    /// receipts), then their trash entries.
    func emptyTrash() async throws {
        while true {
            let keys = try await store.read { try await ReceiptRepository.trashed(limit: 500, $0) }
            for key in keys { await media.remove(key) }
            try await store.writeRows { try await ReceiptRepository.emptyTrash(keys, $0) }
            if keys.count < 500 { break }
        }
    }

    static func storageError(_ error: any Error) -> AppError {
        if let error = error as? AppError { return error }
        if let error = error as? MediaStorageError, error.isOutOfSpace {
            return AppError(507, .insufficientStorage, "The server is out of storage space; try again later.", retryAfter: 300)
        }
        return AppError(503, .unavailable, "Media storage is failing; try again shortly.", retryAfter: 30)
    }

    /// The first bytes decide what the file is; the wrong kind for the slot
    /// ends the upload.
    @discardableResult
    private func refuseWrongContent(_ prefix: [UInt8], _ upload: UploadRecord, _ identity: Identity) async throws -> ContentSniffer.Detected {
        if let detected = ContentSniffer.detect(prefix), ContentSniffer.allowed(detected, for: upload.kind) { return detected }
        await media.discardPartial(upload.id, key: upload.fileKey, handle: upload.storageHandle)
        try await store.uploads.delete(upload.id, tenant: identity.tenant)
        throw AppError(415, .unsupportedMediaType, "\(upload.target.description) takes \(ContentSniffer.expected(for: upload.kind)).")
    }

    /// Makes the finished upload its file and attaches it to the inspection
    /// (or unit) in one transaction, which also checks that the inspection
    /// is still open (or the unit still the caller's, with room for it). A file never replaces another in place: each upload has a key
    /// of its own; if the attachment is refused the new file goes, and once
    /// it is attached the slot's previous file goes. Every step can be done
    /// again, so a request that fails midway (the database went away) is
    /// finished by the client's retry instead of stranding the upload.
    private func finish(_ upload: UploadRecord, _ identity: Identity) async throws {
        let file: UploadRecord.StoredFile
        if let recorded = upload.storedFile {
            file = recorded
        } else {
            let key = upload.fileKey
            let reader: any StoredMediaReader
            do {
                try await media.commit(upload.id, key: key, handle: upload.storageHandle, length: upload.length)
                guard let opened = try await media.open(key) else { throw MediaStorageError(description: "\(key) vanished after commit") }
                reader = opened
            } catch {
                throw Self.writeFailure(error)
            }
            defer { reader.close() }
            let prefix: [UInt8]
            let sha256: String
            do {
                prefix = try await reader.prefix(ContentSniffer.prefixLength)
                sha256 = try await reader.sha256()
            } catch {
                throw Self.writeFailure(error)
            }
            guard let detected = ContentSniffer.detect(prefix), ContentSniffer.allowed(detected, for: upload.kind) else {
                await media.remove(key)
                try await refuseWrongContent(prefix, upload, identity)
                return
            }
            file = UploadRecord.StoredFile(key: key, sha256: sha256, contentType: detected.contentType)
            try await store.uploads.recordStoredFile(file, of: upload.id, tenant: identity.tenant)
        }
        let replaced: String?
        do {
            replaced = try await store.uploads.finish(upload, file: file, user: identity.user, identity.scope)
        } catch let error as AppError where error.status < 500 {
            // Refused for good (the inspection was completed meanwhile, the unit is another driver's or
            // has no room left): the file and the upload go.
            await media.remove(file.key)
            try? await store.uploads.delete(upload.id, tenant: identity.tenant)
            throw error
        }
        if let replaced, replaced != file.key { await media.remove(replaced) }
    }
}
