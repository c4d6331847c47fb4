import Foundation
import VroomXModels

/// The rows of uploads in progress, kept by the rules: an upload opens only
/// for a slot, unit, expense or payment the caller may add to and within the quotas, a user's
/// retry for a slot replaces their unfinished one, a finished one becomes
/// its inspection's file or its unit's photo in one transaction. The bytes
/// themselves are `UploadService`'s; the SQL is `UploadRepository`'s.
public struct UploadRecords: Sendable {
    let store: Store

    /// Opens an upload for a slot of an open inspection the driver may see,
    /// or for a photo of a unit the caller may see, within the user's and
    /// the carrier's quotas. The user's unfinished upload for the same
    /// inspection slot, if any, ends (answers 410 from now on) and it is
    /// returned so its bytes can go at once.
    public func open(_ target: UploadTarget, length: Int64, metadata: String,
                     user: ID<User>, _ scope: Scope, limits: UploadLimits) async throws -> (upload: UploadRecord, replaced: [UploadRecord]) {
        try await store.write(tenant: scope.tenant) { tx in
            let replaced: [UploadRecord]
            switch target {
            case .inspection(let inspection, let slot):
                guard let found = try await InspectionRepository.find(inspection, tenant: scope.tenant, tx.db),
                      try await OrderRepository.find(found.orderID, scope, tx.db) != nil else { throw AppError.notFound("Inspection") }
                guard found.completedAt == nil else {
                    throw AppError(409, .inspectionCompleted, "This inspection is completed and can no longer change.")
                }
                // A new upload for a slot replaces the user's unfinished ones for it (a retry after a lost
                // answer, a request delivered twice): abandoned uploads never pile up against the quota.
                replaced = try await UploadRepository.expireUnfinished(of: user, inspection: inspection, slot: slot, tx)
            case .unitPhoto(let unit):
                try await store.fleet.checkRoomForPhoto(of: unit, scope, tx)
                replaced = []
            case .receipt, .collectionPhoto, .problemPhoto, .messagePhoto:
                if let paper = target.paper { try await store.receipts.checkRoom(on: paper, scope, tx) }
                replaced = []
            }
            try await checkQuotas(length: length, user: user, limits: limits, tx)
            let upload = try await UploadRepository.insert(id: UUID().uuidString.lowercased(), target, length: length, metadata: metadata,
                                                           user: user, expires: tx.now.addingTimeInterval(limits.lifetime), tx)
            return (upload, replaced)
        }
    }

    /// A user may hold a bounded number and size of open uploads (429
    /// until some finish or expire); a carrier's stored files and open
    /// uploads together stay within its storage quota (507).
    private func checkQuotas(length: Int64, user: ID<User>, limits: UploadLimits, _ tx: TenantTransaction) async throws {
        // One upload of a user opens at a time (PostgreSQL), so two cannot both take the last place.
        try await UploadRepository.lockUser(user, tx)
        let open = try await UploadRepository.open(of: user, tx)
        if open.uploads >= Int64(limits.openUploadsPerUser) || open.bytes > limits.openBytesPerUser - length {
            let firstExpiry = open.firstExpiry ?? tx.now
            let wait = Int(min(max(firstExpiry.timeIntervalSince(tx.now), 1), 900).rounded(.up))
            throw AppError(429, .uploadQuotaExceeded,
                           "Too many unfinished uploads (at most \(limits.openUploadsPerUser), \(limits.openBytesPerUser >> 20) MB); finish or cancel some first.",
                           retryAfter: wait)
        }
        if try await UploadRepository.storedBytes(tx) > limits.storedBytesPerCarrier - length {
            throw AppError(507, .storageQuotaExceeded,
                           "This carrier's media storage (\(limits.storedBytesPerCarrier >> 30) GB) is full; ask your dispatcher.",
                           retryAfter: 3600)
        }
    }

    /// An upload of the calling user; another user's or carrier's is not found.
    public func find(_ id: String, user: ID<User>, tenant: ID<Tenant>) async throws -> UploadRecord {
        guard UUID(uuidString: id) != nil,
              let upload = try await store.read({ try await UploadRepository.find(id.lowercased(), user: user, tenant: tenant, $0) }) else {
            throw AppError.notFound("Upload")
        }
        guard upload.expiresAt > store.now || upload.completedAt != nil else {
            throw AppError(410, .uploadExpired, "This upload expired; start a new one.")
        }
        return upload
    }

    /// Records the storage's handle for an upload's bytes.
    func setStorageHandle(_ id: String, tenant: ID<Tenant>, handle: String?) async throws {
        try await store.writeRows { try await UploadRepository.setStorageHandle(id, tenant: tenant, handle: handle, $0) }
    }

    /// Takes the right to write to an upload until `until`, unless another
    /// request (of any instance) holds it. False when it is held.
    func claim(_ id: String, tenant: ID<Tenant>, lease: String, until: Date) async throws -> Bool {
        let now = store.now
        return try await store.writeRows { try await UploadRepository.claim(id, tenant: tenant, lease: lease, until: until, now: now, $0) }
    }

    /// Gives the right to write back.
    func release(_ id: String, tenant: ID<Tenant>, lease: String) async throws {
        try await store.writeRows { try await UploadRepository.release(id, tenant: tenant, lease: lease, $0) }
    }

    /// Records how many bytes have durably arrived, and extends the lease,
    /// if this request still holds it; false when it lost it (it stalled
    /// past the lease and another request took over).
    func setReceived(_ id: String, tenant: ID<Tenant>, received: Int64, lease: String, until: Date) async throws -> Bool {
        try await store.writeRows { try await UploadRepository.setReceived(id, tenant: tenant, received: received, lease: lease, until: until, $0) }
    }

    /// Records the offset a request ends at and gives the lease back in one
    /// statement, so the offset HEAD shows is one a client can resume at
    /// at once (never a 423 from the request that is still letting go).
    func settle(_ id: String, tenant: ID<Tenant>, received: Int64, lease: String) async throws -> Bool {
        try await store.writeRows { try await UploadRepository.settle(id, tenant: tenant, received: received, lease: lease, $0) }
    }

    /// Records where a finished upload's file is about to be put.
    func recordStoredFile(_ file: UploadRecord.StoredFile, of id: String, tenant: ID<Tenant>) async throws {
        try await store.writeRows { try await UploadRepository.recordStoredFile(file, of: id, tenant: tenant, $0) }
    }

    /// Marks an upload finished and attaches its file to its inspection or
    /// unit, in one transaction (the change appears in the feed). Returns
    /// the storage key of the file the inspection's slot held before, if any.
    func finish(_ upload: UploadRecord, file: UploadRecord.StoredFile, user: ID<User>, _ scope: Scope) async throws -> String? {
        try await store.write(tenant: scope.tenant) { tx in
            try await UploadRepository.markCompleted(upload.id, tx)
            switch upload.target {
            case .inspection(let inspection, let slot):
                // Checked when the upload began (`UploadService.start`).
                let captured = try? MediaCapture.from(metadata: Tus.decodeMetadata(upload.metadata) ?? [:])
                let media = InspectionMedia(slot: slot, kind: upload.kind, contentType: file.contentType,
                                            sizeBytes: upload.length, sha256: file.sha256, uploadedAt: tx.now, captured: captured ?? nil)
                return try await store.inspections.attach(media, key: file.key, to: inspection, scope, tx)
            case .unitPhoto(let unit):
                let photo = EquipmentPhoto(id: ID(), contentType: file.contentType, sizeBytes: upload.length, sha256: file.sha256,
                                           uploadedBy: user, uploadedAt: tx.now)
                try await store.fleet.addPhoto(photo, key: file.key, to: unit, scope, tx)
                return nil
            case .receipt, .collectionPhoto, .problemPhoto, .messagePhoto:
                if let paper = upload.target.paper {
                    try await store.receipts.attach(Self.receipt(upload, file, now: tx.now), key: file.key, to: paper, uploadedBy: user, scope, tx)
                }
                return nil
            }
        }
    }

    private static func receipt(_ upload: UploadRecord, _ file: UploadRecord.StoredFile, now: Date) -> ReceiptPhoto {
        ReceiptPhoto(id: ID(), contentType: file.contentType, sizeBytes: upload.length, sha256: file.sha256, uploadedAt: now)
    }

    func delete(_ id: String, tenant: ID<Tenant>) async throws {
        try await store.writeRows { try await UploadRepository.delete(id, tenant: tenant, $0) }
    }

    /// Uploads past their expiry (finished ones a day after their start):
    /// the caller removes their files, then `delete(_:)`.
    func expired(limit: Int) async throws -> [ExpiredUpload] {
        let now = store.now
        return try await store.read { try await UploadRepository.expired(before: now, limit: limit, $0) }.map(ExpiredUpload.init(upload:))
    }

    /// Which of these upload ids or storage handles a row still describes
    /// (of any carrier: storage is swept as a whole).
    func described(_ candidates: [String]) async throws -> Set<String> {
        var found: Set<String> = []
        for start in stride(from: 0, to: candidates.count, by: 500) {
            let batch = Array(candidates[start..<min(start + 500, candidates.count)])
            found.formUnion(try await store.read { try await UploadRepository.described(batch, $0) })
        }
        return found
    }

    func delete(_ ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await store.writeRows { try await UploadRepository.delete(ids, $0) }
    }
}

extension Store {
    /// Uploads in progress: opening within quotas, leases, finishing.
    public var uploads: UploadRecords { UploadRecords(store: self) }
}
