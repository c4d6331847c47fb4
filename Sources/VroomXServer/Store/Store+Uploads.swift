import Foundation
import VroomXModels

/// An upload in progress (tus): where its bytes go and how many have
/// durably arrived.
public struct UploadRecord: Sendable, Hashable {
    public let id: String
    public let inspectionID: ID<Inspection>
    public let slot: MediaSlot
    public let kind: MediaKind
    public let length: Int64
    public var received: Int64
    public let metadata: String
    public let expiresAt: Date
    public var completedAt: Date?

    init(row: SQLRow) throws {
        id = try row.string("id")
        inspectionID = try row.id("inspection_id")
        slot = MediaSlot(try row.string("slot"))
        kind = MediaKind(rawValue: try row.string("kind")) ?? .photo
        length = try row.int64("length")
        received = try row.int64("received")
        metadata = try row.string("metadata")
        expiresAt = WireTime.date(milliseconds: try row.int64("expires_at"))
        completedAt = try row.optionalInt64("completed_at").map(WireTime.date(milliseconds:))
    }

    static let columns: SQL = "id, inspection_id, slot, kind, length, received, metadata, expires_at, completed_at"
}

extension Store {
    /// Opens an upload for a slot of an open inspection the driver may see.
    public func createUpload(inspection: ID<Inspection>, slot: MediaSlot, length: Int64, metadata: String,
                             user: ID<User>, _ scope: Scope, lifetime: TimeInterval) async throws -> UploadRecord {
        try await write(tenant: scope.tenant) { tx in
            guard let found = try await fetchInspection(inspection, tenant: scope.tenant, tx.db),
                  try await fetchOrder(found.orderID, scope, tx.db) != nil else { throw AppError.notFound("Inspection") }
            guard found.completedAt == nil else {
                throw AppError(409, .inspectionCompleted, "This inspection is completed and can no longer change.")
            }
            let id = UUID().uuidString.lowercased()
            let expires = tx.now.addingTimeInterval(lifetime)
            try await tx.execute("""
                INSERT INTO uploads (id, tenant_id, inspection_id, user_id, slot, kind, length, metadata, created_at, expires_at)
                VALUES (\(id), \(scope.tenant), \(inspection), \(user), \(slot.rawValue), \(slot.kind.rawValue), \(length),
                        \(metadata), \(tx.now), \(expires))
                """)
            guard let row = try await tx.first("SELECT \(UploadRecord.columns) FROM uploads WHERE id = \(id)") else {
                throw AppError.notFound("Upload")
            }
            return try UploadRecord(row: row)
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

    /// Records how many bytes have durably arrived.
    func setReceived(_ id: String, tenant: ID<Tenant>, received: Int64) async throws {
        try await database.write { db in
            try await db.execute("UPDATE uploads SET received = \(received) WHERE tenant_id = \(tenant) AND id = \(id)")
        }
    }

    /// Marks an upload finished and attaches its file to the inspection,
    /// in one transaction (the attachment appears in the change feed).
    func finishUpload(_ upload: UploadRecord, media: InspectionMedia, key: String, _ scope: Scope) async throws -> Inspection {
        try await write(tenant: scope.tenant) { tx in
            try await tx.execute("""
                UPDATE uploads SET received = length, completed_at = \(tx.now) WHERE tenant_id = \(scope.tenant) AND id = \(upload.id)
                """)
            return try await attachMedia(media, key: key, to: upload.inspectionID, scope, tx)
        }
    }

    func deleteUpload(_ id: String, tenant: ID<Tenant>) async throws {
        try await database.write { db in
            try await db.execute("DELETE FROM uploads WHERE tenant_id = \(tenant) AND id = \(id)")
        }
    }

    /// Uploads past their expiry (finished ones a day after): the caller
    /// removes their partial files, then `deleteUploads`.
    func expiredUploads(limit: Int = 500) async throws -> [String] {
        let now = self.now
        return try await read { db in
            try await db.query("SELECT id FROM uploads WHERE expires_at < \(now) ORDER BY expires_at LIMIT \(limit)")
                .map { try $0.string("id") }
        }
    }

    func deleteUploads(_ ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await database.write { db in
            try await db.execute("DELETE FROM uploads WHERE id IN (\(SQL.list(ids)))")
        }
    }
}
