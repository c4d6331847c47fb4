import Foundation
import VroomXModels

/// Uploads in progress in the database (tus): the SQL and the row mapping,
/// nothing else.
enum UploadRepository {
    static func find(_ id: String, user: ID<User>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> UploadRecord? {
        try await db.first("""
            SELECT \(UploadRecord.columns) FROM uploads WHERE tenant_id = \(tenant) AND user_id = \(user) AND id = \(id)
            """).map(UploadRecord.init(row:))
    }

    static func insert(id: String, _ target: UploadTarget, length: Int64, metadata: String, user: ID<User>, expires: Date,
                       _ tx: TenantTransaction) async throws -> UploadRecord {
        let (inspection, unit, paper): (ID<Inspection>?, ID<Equipment>?, String?) = switch target {
        case .inspection(let inspection, _): (inspection, nil, nil)
        case .unitPhoto(let unit): (nil, unit, nil)
        case .receipt(let expense): (nil, nil, expense.rawValue)
        case .collectionPhoto(let payment): (nil, nil, payment.rawValue)
        case .problemPhoto(let problem, _): (nil, nil, problem.rawValue)
        case .messagePhoto(let message): (nil, nil, message.rawValue)
        }
        try await tx.execute("""
            INSERT INTO uploads (id, tenant_id, inspection_id, equipment_id, paper_id, user_id, slot, kind, length, metadata, created_at, expires_at)
            VALUES (\(id), \(tx.tenant), \(inspection), \(unit), \(paper), \(user), \(target.slot.rawValue), \(target.slot.kind.rawValue),
                    \(length), \(metadata), \(tx.now), \(expires))
            """)
        guard let row = try await tx.first("SELECT \(UploadRecord.columns) FROM uploads WHERE id = \(id)") else {
            throw AppError.notFound("Upload")
        }
        return try UploadRecord(row: row)
    }

    /// Ends a user's unfinished uploads for an inspection slot now; the uploads ended.
    static func expireUnfinished(of user: ID<User>, inspection: ID<Inspection>, slot: MediaSlot,
                                 _ tx: TenantTransaction) async throws -> [UploadRecord] {
        try await tx.query("""
            UPDATE uploads SET expires_at = \(tx.now)
            WHERE tenant_id = \(tx.tenant) AND user_id = \(user) AND inspection_id = \(inspection) AND slot = \(slot.rawValue)
              AND completed_at IS NULL AND expires_at > \(tx.now)
            RETURNING \(UploadRecord.columns)
            """).map(UploadRecord.init(row:))
    }

    /// Holds the user's row (PostgreSQL) so their uploads open one at a time.
    static func lockUser(_ user: ID<User>, _ tx: TenantTransaction) async throws {
        _ = try await tx.first("SELECT id FROM users WHERE id = \(user)\(Store.lockingRows(tx.db))")
    }

    /// A user's unfinished uploads: how many, the bytes they announce, and the first to expire.
    static func open(of user: ID<User>, _ tx: TenantTransaction) async throws -> (uploads: Int64, bytes: Int64, firstExpiry: Date?) {
        let open = try await tx.first("""
            SELECT COUNT(*) AS uploads, COALESCE(SUM(length), 0) AS bytes, MIN(expires_at) AS first_expiry FROM uploads
            WHERE tenant_id = \(tx.tenant) AND user_id = \(user) AND completed_at IS NULL AND expires_at > \(tx.now)
            """)
        return (try open?.int64("uploads") ?? 0, try open?.int64("bytes") ?? 0, try open?.optionalDate("first_expiry"))
    }

    /// The bytes a carrier stores: inspection files, unit photos, receipts, and unfinished uploads.
    static func storedBytes(_ tx: TenantTransaction) async throws -> Int64 {
        try await tx.first("""
            SELECT (SELECT COALESCE(SUM(size_bytes), 0) FROM inspection_media WHERE tenant_id = \(tx.tenant))
                 + (SELECT COALESCE(SUM(size_bytes), 0) FROM equipment_photos WHERE tenant_id = \(tx.tenant))
                 + (SELECT COALESCE(SUM(size_bytes), 0) FROM receipt_photos WHERE tenant_id = \(tx.tenant))
                 + (SELECT COALESCE(SUM(length), 0) FROM uploads
                    WHERE tenant_id = \(tx.tenant) AND completed_at IS NULL AND expires_at > \(tx.now)) AS bytes
            """)?.int64("bytes") ?? 0
    }

    static func setStorageHandle(_ id: String, tenant: ID<Tenant>, handle: String?, _ db: any SQLExecutor) async throws {
        try await db.execute("UPDATE uploads SET storage_handle = \(handle) WHERE tenant_id = \(tenant) AND id = \(id)")
    }

    /// Takes the lease unless another holds it unexpired; false when held.
    static func claim(_ id: String, tenant: ID<Tenant>, lease: String, until: Date, now: Date, _ db: any SQLExecutor) async throws -> Bool {
        try await db.first("""
            UPDATE uploads SET lease_token = \(lease), lease_until = \(until)
            WHERE tenant_id = \(tenant) AND id = \(id) AND (lease_token IS NULL OR lease_until <= \(now) OR lease_token = \(lease))
            RETURNING id
            """) != nil
    }

    static func release(_ id: String, tenant: ID<Tenant>, lease: String, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE uploads SET lease_token = NULL, lease_until = NULL WHERE tenant_id = \(tenant) AND id = \(id) AND lease_token = \(lease)
            """)
    }

    /// Records the bytes received and extends the lease, if still held; false when lost.
    static func setReceived(_ id: String, tenant: ID<Tenant>, received: Int64, lease: String, until: Date,
                            _ db: any SQLExecutor) async throws -> Bool {
        try await db.first("""
            UPDATE uploads SET received = \(received), lease_until = \(until)
            WHERE tenant_id = \(tenant) AND id = \(id) AND lease_token = \(lease)
            RETURNING id
            """) != nil
    }

    /// Records the bytes received and lets go of the lease, if still held; false when lost.
    static func settle(_ id: String, tenant: ID<Tenant>, received: Int64, lease: String, _ db: any SQLExecutor) async throws -> Bool {
        try await db.first("""
            UPDATE uploads SET received = \(received), lease_token = NULL, lease_until = NULL
            WHERE tenant_id = \(tenant) AND id = \(id) AND lease_token = \(lease)
            RETURNING id
            """) != nil
    }

    static func recordStoredFile(_ file: UploadRecord.StoredFile, of id: String, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE uploads SET storage_key = \(file.key), sha256 = \(file.sha256), content_type = \(file.contentType)
            WHERE tenant_id = \(tenant) AND id = \(id)
            """)
    }

    static func markCompleted(_ id: String, _ tx: TenantTransaction) async throws {
        try await tx.execute("UPDATE uploads SET received = length, completed_at = \(tx.now) WHERE tenant_id = \(tx.tenant) AND id = \(id)")
    }

    static func delete(_ id: String, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws {
        try await db.execute("DELETE FROM uploads WHERE tenant_id = \(tenant) AND id = \(id)")
    }

    static func expired(before now: Date, limit: Int, _ db: any SQLExecutor) async throws -> [UploadRecord] {
        try await db.query("SELECT \(UploadRecord.columns) FROM uploads WHERE expires_at < \(now) ORDER BY expires_at LIMIT \(limit)")
            .map(UploadRecord.init(row:))
    }

    static func described(_ candidates: [String], _ db: any SQLExecutor) async throws -> Set<String> {
        guard !candidates.isEmpty else { return [] }
        let rows = try await db.query("""
            SELECT id, storage_handle FROM uploads WHERE id IN (\(SQL.list(candidates))) OR storage_handle IN (\(SQL.list(candidates)))
            """)
        let named = try rows.flatMap { [try $0.string("id"), try $0.optionalString("storage_handle")].compactMap { $0 } }
        return Set(named).intersection(candidates)
    }

    static func delete(_ ids: [String], _ db: any SQLExecutor) async throws {
        try await db.execute("DELETE FROM uploads WHERE id IN (\(SQL.list(ids)))")
    }
}
