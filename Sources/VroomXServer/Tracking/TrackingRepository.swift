import Foundation
import VroomXModels

/// Tracking links in the database: the SQL and the row mapping, nothing
/// else. Policy lives in `TrackingService`.
enum TrackingRepository {
    struct Row: Sendable {
        let id: UUID
        let tenant: ID<Tenant>
        let order: ID<Order>
        let createdAt: Date
    }

    /// An order's live link, if it has one.
    static func live(of order: ID<Order>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Row? {
        try await db.first("""
            SELECT id, tenant_id, order_id, created_at FROM tracking_links
            WHERE tenant_id = \(tenant) AND order_id = \(order) AND revoked_at IS NULL
            """).map(row)
    }

    /// The live link of this id, whoever's it is (a customer's page names no carrier).
    static func live(_ id: UUID, _ db: any SQLExecutor) async throws -> Row? {
        try await db.first("""
            SELECT id, tenant_id, order_id, created_at FROM tracking_links WHERE id = \(id.uuidString.lowercased()) AND revoked_at IS NULL
            """).map(row)
    }

    static func insert(_ id: UUID, order: ID<Order>, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO tracking_links (id, tenant_id, order_id, created_by, created_at)
            VALUES (\(id.uuidString.lowercased()), \(tx.tenant), \(order), \(tx.actingUser), \(tx.now))
            """)
    }

    /// Ends an order's live link; whether there was one. `byDispatcher`:
    /// taken away (not replaced by a new one), which an email respects.
    static func revoke(of order: ID<Order>, _ tx: TenantTransaction, byDispatcher: Bool = false) async throws -> Bool {
        try await tx.first("""
            UPDATE tracking_links SET revoked_at = \(tx.now), withdrawn = \(byDispatcher ? 1 : 0)
            WHERE tenant_id = \(tx.tenant) AND order_id = \(order) AND revoked_at IS NULL
            RETURNING id
            """) != nil
    }

    static func anyRevoked(of order: ID<Order>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Bool {
        try await db.first("SELECT id FROM tracking_links WHERE tenant_id = \(tenant) AND order_id = \(order) AND withdrawn = 1 LIMIT 1") != nil
    }

    private static func row(_ row: SQLRow) throws -> Row {
        guard let id = UUID(uuidString: try row.string("id")) else { throw SQLDecodingError(column: "id", expected: "uuid", found: row["id"]) }
        return Row(id: id, tenant: try row.id("tenant_id"), order: try row.id("order_id"), createdAt: try row.date("created_at"))
    }
}
