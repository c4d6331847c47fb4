import Foundation
import VroomXModels

/// Drivers in the database: the SQL and the row mapping, nothing else.
enum DriverRepository {
    static func find(_ id: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Driver? {
        try await db.first("SELECT \(Driver.columns) FROM \(Driver.from) WHERE d.tenant_id = \(tenant) AND d.id = \(id)")
            .map(Driver.init(row:))
    }

    /// Reads a driver and, on PostgreSQL, holds their row until the
    /// transaction ends, so deactivating them and giving them work (or
    /// signing them in) happen one after the other, never both on the same
    /// stale read. (SQLite runs one writer at a time already.)
    static func lock(_ id: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Driver? {
        try await db.first("""
            SELECT \(Driver.columns) FROM \(Driver.from) WHERE d.tenant_id = \(tenant) AND d.id = \(id)\(Store.lockingRows(db, of: "d"))
            """).map(Driver.init(row:))
    }

    /// The driver record of a user.
    static func find(userID: ID<User>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Driver? {
        try await db.first("SELECT \(Driver.columns) FROM \(Driver.from) WHERE d.tenant_id = \(tenant) AND d.user_id = \(userID)")
            .map(Driver.init(row:))
    }

    static func documents(tenant: ID<Tenant>, _ page: PageRequest, _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "drivers d", where: "d.tenant_id = \(tenant)", order: Driver.order, page, document: "d.doc", db)
    }

    static func all(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Driver] {
        try await db.query("SELECT \(Driver.columns) FROM \(Driver.from) WHERE d.tenant_id = \(tenant) ORDER BY \(Driver.order.sql)")
            .map(Driver.init(row:))
    }

    /// Writes a new driver record and records the change.
    static func insert(_ driver: Driver, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(driver)
        try await tx.execute("""
            INSERT INTO drivers (id, tenant_id, user_id, name, phone, pay_type, pay_rate, version, created_at, updated_at, doc)
            VALUES (\(driver.id), \(tx.tenant), \(driver.userID), \(driver.name), \(driver.phone), \(driver.payType),
                    \(driver.payRate), \(driver.version), \(driver.createdAt), \(driver.updatedAt), \(doc))
            """)
        tx.recordUpsert(.driver, id: driver.id.rawValue, document: doc, visibleTo: driver.id)
    }

    /// Writes a driver's new state (already at its next version) if nobody
    /// changed the row since `previous`; records the change.
    static func update(_ saved: Driver, from previous: Driver, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(saved)
        guard try await tx.first("""
            UPDATE drivers SET name = \(saved.name), phone = \(saved.phone), pay_type = \(saved.payType), pay_rate = \(saved.payRate),
                deactivated_at = \(saved.deactivatedAt), version = \(saved.version), updated_at = \(saved.updatedAt), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(previous.id) AND version = \(previous.version)
            RETURNING id
            """) != nil else { throw WriteConflict() }
        tx.recordUpsert(.driver, id: saved.id.rawValue, document: doc, visibleTo: saved.id)
    }

    /// A driver's trips planned or under way, and orders not yet delivered.
    static func openWork(of id: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> (trips: Int, orders: Int) {
        let open = try await db.first("""
            SELECT (SELECT COUNT(*) FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(id)
                        AND status IN ('planned', 'in_progress')) AS trips,
                   (SELECT COUNT(*) FROM orders WHERE tenant_id = \(tenant) AND driver_id = \(id)
                        AND status IN ('assigned', 'picked_up')) AS orders
            """)
        return (try open?.int("trips") ?? 0, try open?.int("orders") ?? 0)
    }

    /// Notes that a driver used the API now, unless noted within the last minute.
    static func noteSeen(_ driver: ID<Driver>, tenant: ID<Tenant>, at now: Date, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE drivers SET last_seen_at = \(now)
            WHERE tenant_id = \(tenant) AND id = \(driver) AND (last_seen_at IS NULL OR last_seen_at < \(now.addingTimeInterval(-60)))
            """)
    }
}
