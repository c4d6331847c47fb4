import Foundation
import VroomXModels

/// Inspections and their media in the database: the SQL and the row
/// mapping, nothing else. An inspection is stored as its document.
enum InspectionRepository {
    static func find(_ id: ID<Inspection>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Inspection? {
        guard let row = try await db.first("SELECT doc FROM inspections WHERE tenant_id = \(tenant) AND id = \(id)") else { return nil }
        return try decode(row)
    }

    static func of(_ order: ID<Order>, _ tx: TenantTransaction) async throws -> [Inspection] {
        try await of(order, tenant: tx.tenant, tx.db)
    }

    static func of(_ order: ID<Order>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Inspection] {
        try await db.query("SELECT doc FROM inspections WHERE tenant_id = \(tenant) AND order_id = \(order)").map(decode)
    }

    /// An order's inspections as stored documents, pickup first.
    static func documents(of order: ID<Order>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> DocumentPage {
        let rows = try await db.documents("""
            SELECT doc FROM inspections WHERE tenant_id = \(tenant) AND order_id = \(order) ORDER BY kind DESC
            """, limit: .max)
        return DocumentPage(joined: rows.joined, count: rows.count, nextCursor: nil)
    }

    static func exists(of order: ID<Order>, vehicle: ID<Vehicle>, kind: Inspection.Kind, tenant: ID<Tenant>,
                       _ db: any SQLExecutor) async throws -> Bool {
        try await db.first("""
            SELECT id FROM inspections WHERE tenant_id = \(tenant) AND order_id = \(order) AND vehicle_id = \(vehicle) AND kind = \(kind.rawValue)
            """) != nil
    }

    /// Writes an inspection (new, or the next version of the one stored) and records the change.
    static func store(_ inspection: Inspection, isNew: Bool, visibleTo driver: ID<Driver>?, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(inspection)
        if isNew {
            try await tx.execute("""
                INSERT INTO inspections (id, tenant_id, order_id, vehicle_id, driver_id, kind, odometer, notes, customer_unavailable, signer_name,
                                         completed_at, version, created_at, updated_at, doc)
                VALUES (\(inspection.id), \(tx.tenant), \(inspection.orderID), \(inspection.vehicleID ?? ID(inspection.orderID.uuid)),
                        \(inspection.driverID), \(inspection.kind.rawValue),
                        \(inspection.odometer), \(inspection.notes), \(inspection.customerUnavailable), \(inspection.signerName),
                        \(inspection.completedAt), \(inspection.version), \(inspection.createdAt), \(inspection.updatedAt), \(doc))
                """, unique: AppError.idTaken)
        } else {
            guard try await tx.first("""
                UPDATE inspections SET driver_id = \(inspection.driverID), odometer = \(inspection.odometer), notes = \(inspection.notes),
                    customer_unavailable = \(inspection.customerUnavailable), signer_name = \(inspection.signerName),
                    completed_at = \(inspection.completedAt),
                    version = \(inspection.version), updated_at = \(inspection.updatedAt), doc = \(doc)
                WHERE tenant_id = \(tx.tenant) AND id = \(inspection.id) AND version = \(inspection.version - 1) RETURNING id
                """) != nil else { throw WriteConflict() }
        }
        tx.recordUpsert(.inspection, id: inspection.id.rawValue, document: doc, visibleTo: driver)
    }

    /// Where a slot's file is stored.
    static func mediaKey(of inspection: ID<Inspection>, slot: MediaSlot, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> String? {
        try await db.first("""
            SELECT storage_key FROM inspection_media
            WHERE tenant_id = \(tenant) AND inspection_id = \(inspection) AND slot = \(slot.rawValue)
            """)?.string("storage_key")
    }

    /// Puts a file in a slot; where the file it replaced was stored, if any.
    static func replaceMedia(_ media: InspectionMedia, key: String, of inspection: ID<Inspection>,
                             _ tx: TenantTransaction) async throws -> String? {
        let replaced = try await tx.first("""
            DELETE FROM inspection_media WHERE tenant_id = \(tx.tenant) AND inspection_id = \(inspection) AND slot = \(media.slot.rawValue)
            RETURNING storage_key
            """)?.string("storage_key")
        try await tx.execute("""
            INSERT INTO inspection_media (tenant_id, inspection_id, slot, kind, content_type, size_bytes, sha256, storage_key, uploaded_at)
            VALUES (\(tx.tenant), \(inspection), \(media.slot.rawValue), \(media.kind.rawValue), \(media.contentType), \(media.sizeBytes),
                    \(media.sha256), \(key), \(media.uploadedAt))
            """)
        return replaced
    }

    private static func decode(_ row: SQLRow) throws -> Inspection {
        try WireDocument.decode(Inspection.self, from: try row.string("doc"))
    }
}
