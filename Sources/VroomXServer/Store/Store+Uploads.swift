import Foundation
import VroomXModels

/// What a finished upload becomes: the file of an inspection's slot, or a
/// photo of a unit.
public enum UploadTarget: Sendable, Hashable {
    case inspection(ID<Inspection>, MediaSlot)
    case unitPhoto(ID<Equipment>)

    /// The slot the upload fills (a unit's photos are all `unit_photo`).
    var slot: MediaSlot {
        switch self {
        case .inspection(_, let slot): slot
        case .unitPhoto: .unitPhoto
        }
    }
}

extension MediaSlot {
    /// Where uploads of a unit's photos go; not one of an inspection's slots.
    static let unitPhoto = MediaSlot("unit_photo")
}

/// An upload in progress (tus): where its bytes go and how many have
/// durably arrived.
public struct UploadRecord: Sendable, Hashable {
    /// Where a finished upload's file was put, recorded before it moved there.
    public struct StoredFile: Sendable, Hashable {
        public let key: String
        public let sha256: String
        public let contentType: String
    }

    public let id: String
    public let tenantID: ID<Tenant>
    public let target: UploadTarget
    public var slot: MediaSlot { target.slot }
    public let kind: MediaKind
    public let length: Int64
    public var received: Int64
    public let metadata: String
    public let expiresAt: Date
    public var completedAt: Date?
    public var storedFile: StoredFile?
    /// The storage's reference to the bytes in progress (an S3 multipart upload id).
    public var storageHandle: String?

    /// Where the finished file goes: `{tenant}/{inspection}/{photos|videos|signatures}/{slot}.{upload}`,
    /// or `{tenant}/equipment/{unit}/photos/{upload}`.
    public var fileKey: String {
        switch target {
        case .inspection(let inspection, let slot):
            let folder = switch kind {
            case .photo: "photos"
            case .video: "videos"
            case .signature: "signatures"
            }
            return "\(tenantID.rawValue)/\(inspection.rawValue)/\(folder)/\(slot.rawValue).\(id)"
        case .unitPhoto(let unit):
            return "\(tenantID.rawValue)/equipment/\(unit.rawValue)/photos/\(id)"
        }
    }

    init(row: SQLRow) throws {
        id = try row.string("id")
        tenantID = try row.id("tenant_id")
        storageHandle = try row.optionalString("storage_handle")
        if let unit = try row.optionalID("equipment_id", as: Equipment.self) {
            target = .unitPhoto(unit)
        } else {
            target = .inspection(try row.id("inspection_id"), MediaSlot(try row.string("slot")))
        }
        kind = MediaKind(rawValue: try row.string("kind")) ?? .photo
        length = try row.int64("length")
        received = try row.int64("received")
        metadata = try row.string("metadata")
        expiresAt = WireTime.date(milliseconds: try row.int64("expires_at"))
        completedAt = try row.optionalInt64("completed_at").map(WireTime.date(milliseconds:))
        if let key = try row.optionalString("storage_key") {
            storedFile = StoredFile(key: key, sha256: try row.string("sha256"), contentType: try row.string("content_type"))
        }
    }

    static let columns: SQL = """
        id, tenant_id, inspection_id, equipment_id, slot, kind, length, received, metadata, expires_at, completed_at, storage_key, sha256,
        content_type, storage_handle
        """
}

/// An upload past its expiry: its bytes in progress, and a stored file
/// that was never attached, go with it.
struct ExpiredUpload: Sendable {
    let upload: UploadRecord
    var unattachedKey: String? { upload.completedAt == nil ? upload.storedFile?.key : nil }
}

extension Store {
    /// Opens an upload for a slot of an open inspection the driver may see,
    /// or for a photo of a unit the caller may see, within the user's and
    /// the carrier's quotas. The user's unfinished upload for the same
    /// inspection slot, if any, ends (answers 410 from now on) and it is
    /// returned so its bytes can go at once.
    public func createUpload(_ target: UploadTarget, length: Int64, metadata: String,
                             user: ID<User>, _ scope: Scope, limits: UploadLimits) async throws -> (upload: UploadRecord, replaced: [UploadRecord]) {
        try await write(tenant: scope.tenant) { tx in
            let replaced: [UploadRecord]
            let inspectionID: ID<Inspection>?
            let unitID: ID<Equipment>?
            switch target {
            case .inspection(let inspection, let slot):
                guard let found = try await InspectionRepository.find(inspection, tenant: scope.tenant, tx.db),
                      try await OrderRepository.find(found.orderID, scope, tx.db) != nil else { throw AppError.notFound("Inspection") }
                guard found.completedAt == nil else {
                    throw AppError(409, .inspectionCompleted, "This inspection is completed and can no longer change.")
                }
                // A new upload for a slot replaces the user's unfinished ones for it (a retry after a lost
                // answer, a request delivered twice): abandoned uploads never pile up against the quota.
                replaced = try await tx.query("""
                    UPDATE uploads SET expires_at = \(tx.now)
                    WHERE tenant_id = \(scope.tenant) AND user_id = \(user) AND inspection_id = \(inspection) AND slot = \(slot.rawValue)
                      AND completed_at IS NULL AND expires_at > \(tx.now)
                    RETURNING \(UploadRecord.columns)
                    """).map(UploadRecord.init(row:))
                (inspectionID, unitID) = (inspection, nil)
            case .unitPhoto(let unit):
                try await fleet.checkRoomForPhoto(of: unit, scope, tx)
                replaced = []
                (inspectionID, unitID) = (nil, unit)
            }
            try await checkQuotas(length: length, user: user, limits: limits, tx)
            let id = UUID().uuidString.lowercased()
            let expires = tx.now.addingTimeInterval(limits.lifetime)
            try await tx.execute("""
                INSERT INTO uploads (id, tenant_id, inspection_id, equipment_id, user_id, slot, kind, length, metadata, created_at, expires_at)
                VALUES (\(id), \(scope.tenant), \(inspectionID), \(unitID), \(user), \(target.slot.rawValue), \(target.slot.kind.rawValue),
                        \(length), \(metadata), \(tx.now), \(expires))
                """)
            guard let row = try await tx.first("SELECT \(UploadRecord.columns) FROM uploads WHERE id = \(id)") else {
                throw AppError.notFound("Upload")
            }
            return (try UploadRecord(row: row), replaced)
        }
    }

    /// A user may hold a bounded number and size of open uploads (429
    /// until some finish or expire); a carrier's stored files and open
    /// uploads together stay within its storage quota (507).
    private func checkQuotas(length: Int64, user: ID<User>, limits: UploadLimits, _ tx: TenantTransaction) async throws {
        // One upload of a user opens at a time (PostgreSQL), so two cannot both take the last place.
        _ = try await tx.first("SELECT id FROM users WHERE id = \(user)\(Self.lockingRows(tx.db))")
        let open = try await tx.first("""
            SELECT COUNT(*) AS uploads, COALESCE(SUM(length), 0) AS bytes, MIN(expires_at) AS first_expiry FROM uploads
            WHERE tenant_id = \(tx.tenant) AND user_id = \(user) AND completed_at IS NULL AND expires_at > \(tx.now)
            """)
        let uploads = try open?.int64("uploads") ?? 0
        let bytes = try open?.int64("bytes") ?? 0
        if uploads >= Int64(limits.openUploadsPerUser) || bytes > limits.openBytesPerUser - length {
            let firstExpiry = try open?.optionalDate("first_expiry") ?? tx.now
            let wait = Int(min(max(firstExpiry.timeIntervalSince(tx.now), 1), 900).rounded(.up))
            throw AppError(429, .uploadQuotaExceeded,
                           "Too many unfinished uploads (at most \(limits.openUploadsPerUser), \(limits.openBytesPerUser >> 20) MB); finish or cancel some first.",
                           retryAfter: wait)
        }
        let stored = try await tx.first("""
            SELECT (SELECT COALESCE(SUM(size_bytes), 0) FROM inspection_media WHERE tenant_id = \(tx.tenant))
                 + (SELECT COALESCE(SUM(size_bytes), 0) FROM equipment_photos WHERE tenant_id = \(tx.tenant))
                 + (SELECT COALESCE(SUM(length), 0) FROM uploads
                    WHERE tenant_id = \(tx.tenant) AND completed_at IS NULL AND expires_at > \(tx.now)) AS bytes
            """)?.int64("bytes") ?? 0
        if stored > limits.storedBytesPerCarrier - length {
            throw AppError(507, .storageQuotaExceeded,
                           "This carrier's media storage (\(limits.storedBytesPerCarrier >> 30) GB) is full; ask your dispatcher.",
                           retryAfter: 3600)
        }
    }

    /// An upload of the calling user; another user's or carrier's is not found.
    public func upload(_ id: String, user: ID<User>, tenant: ID<Tenant>) async throws -> UploadRecord {
        guard UUID(uuidString: id) != nil,
              let row = try await read({ try await $0.first("""
                  SELECT \(UploadRecord.columns) FROM uploads WHERE tenant_id = \(tenant) AND user_id = \(user) AND id = \(id.lowercased())
                  """) }) else { throw AppError.notFound("Upload") }
        let upload = try UploadRecord(row: row)
        guard upload.expiresAt > now || upload.completedAt != nil else {
            throw AppError(410, .uploadExpired, "This upload expired; start a new one.")
        }
        return upload
    }

    /// Records the storage's handle for an upload's bytes.
    func setStorageHandle(_ id: String, tenant: ID<Tenant>, handle: String?) async throws {
        try await writeRows { db in
            try await db.execute("UPDATE uploads SET storage_handle = \(handle) WHERE tenant_id = \(tenant) AND id = \(id)")
        }
    }

    /// Takes the right to write to an upload until `until`, unless another
    /// request (of any instance) holds it. False when it is held.
    func claimUpload(_ id: String, tenant: ID<Tenant>, lease: String, until: Date) async throws -> Bool {
        let now = self.now
        return try await writeRows { db in
            try await db.first("""
                UPDATE uploads SET lease_token = \(lease), lease_until = \(until)
                WHERE tenant_id = \(tenant) AND id = \(id) AND (lease_token IS NULL OR lease_until <= \(now) OR lease_token = \(lease))
                RETURNING id
                """) != nil
        }
    }

    /// Gives the right to write back.
    func releaseUpload(_ id: String, tenant: ID<Tenant>, lease: String) async throws {
        try await writeRows { db in
            try await db.execute("""
                UPDATE uploads SET lease_token = NULL, lease_until = NULL WHERE tenant_id = \(tenant) AND id = \(id) AND lease_token = \(lease)
                """)
        }
    }

    /// Records how many bytes have durably arrived, and extends the lease,
    /// if this request still holds it; false when it lost it (it stalled
    /// past the lease and another request took over).
    func setReceived(_ id: String, tenant: ID<Tenant>, received: Int64, lease: String, until: Date) async throws -> Bool {
        try await writeRows { db in
            try await db.first("""
                UPDATE uploads SET received = \(received), lease_until = \(until)
                WHERE tenant_id = \(tenant) AND id = \(id) AND lease_token = \(lease)
                RETURNING id
                """) != nil
        }
    }

    /// Records where a finished upload's file is about to be put.
    func recordStoredFile(_ file: UploadRecord.StoredFile, of id: String, tenant: ID<Tenant>) async throws {
        try await writeRows { db in
            try await db.execute("""
                UPDATE uploads SET storage_key = \(file.key), sha256 = \(file.sha256), content_type = \(file.contentType)
                WHERE tenant_id = \(tenant) AND id = \(id)
                """)
        }
    }

    /// Marks an upload finished and attaches its file to its inspection or
    /// unit, in one transaction (the change appears in the feed). Returns
    /// the storage key of the file the inspection's slot held before, if any.
    func finishUpload(_ upload: UploadRecord, file: UploadRecord.StoredFile, user: ID<User>, _ scope: Scope) async throws -> String? {
        try await write(tenant: scope.tenant) { tx in
            try await tx.execute("""
                UPDATE uploads SET received = length, completed_at = \(tx.now) WHERE tenant_id = \(scope.tenant) AND id = \(upload.id)
                """)
            switch upload.target {
            case .inspection(let inspection, let slot):
                let media = InspectionMedia(slot: slot, kind: upload.kind, contentType: file.contentType,
                                            sizeBytes: upload.length, sha256: file.sha256, uploadedAt: tx.now)
                return try await inspections.attach(media, key: file.key, to: inspection, scope, tx)
            case .unitPhoto(let unit):
                let photo = EquipmentPhoto(id: ID(), contentType: file.contentType, sizeBytes: upload.length, sha256: file.sha256,
                                           uploadedBy: user, uploadedAt: tx.now)
                try await fleet.addPhoto(photo, key: file.key, to: unit, scope, tx)
                return nil
            }
        }
    }

    func deleteUpload(_ id: String, tenant: ID<Tenant>) async throws {
        try await writeRows { db in
            try await db.execute("DELETE FROM uploads WHERE tenant_id = \(tenant) AND id = \(id)")
        }
    }

    /// Uploads past their expiry (finished ones a day after their start):
    /// the caller removes their files, then `deleteUploads`.
    func expiredUploads(limit: Int) async throws -> [ExpiredUpload] {
        let now = self.now
        return try await read { db in
            try await db.query("""
                SELECT \(UploadRecord.columns) FROM uploads WHERE expires_at < \(now) ORDER BY expires_at LIMIT \(limit)
                """).map { ExpiredUpload(upload: try UploadRecord(row: $0)) }
        }
    }

    func deleteUploads(_ ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await writeRows { db in
            try await db.execute("DELETE FROM uploads WHERE id IN (\(SQL.list(ids)))")
        }
    }
}
