import Foundation
import VroomXModels

/// Drivers' messages to dispatch in the database, and the reads that put
/// them beside dispatch's messages: the SQL and the row mapping, nothing else.
enum ConversationRepository {
    static func find(_ id: ID<DriverMessage>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> DriverMessage? {
        try await db.first("SELECT \(DriverMessage.columns) FROM driver_messages WHERE tenant_id = \(tenant) AND id = \(id)")
            .map(DriverMessage.init(row:))
    }

    /// Writes a new message (an id taken anywhere is `DatabaseConstraintError.unique`) and records the change.
    static func insert(_ message: DriverMessage, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(message)
        try await tx.execute("""
            INSERT INTO driver_messages (id, tenant_id, driver_id, trip_id, order_id, body, sent_at, created_at, doc)
            VALUES (\(message.id), \(tx.tenant), \(message.driverID), \(message.tripID), \(message.orderID), \(message.body),
                    \(message.sentAt), \(message.createdAt), \(doc))
            """)
        tx.recordUpsert(.message, id: message.id.rawValue, document: doc, visibleTo: message.driverID)
    }

    /// A driver's messages dispatch has not opened, counting no further than `atMost`.
    static func unread(driver: ID<Driver>, tenant: ID<Tenant>, atMost: Int, _ db: any SQLExecutor) async throws -> Int {
        try await db.first("""
            SELECT COUNT(*) AS n FROM (SELECT id FROM driver_messages
                WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND read_by_dispatch_at IS NULL LIMIT \(atMost)) AS waiting
            """)?.int("n") ?? 0
    }

    /// Marks a driver's unread messages read by dispatch (each row's
    /// document too: the driver's phone shows "Read"), and records each.
    static func markRead(driver: ID<Driver>, _ tx: TenantTransaction) async throws -> Int {
        let unread = try await tx.query("""
            SELECT \(DriverMessage.columns) FROM driver_messages
            WHERE tenant_id = \(tx.tenant) AND driver_id = \(driver) AND read_by_dispatch_at IS NULL
            """).map(DriverMessage.init(row:))
        for var message in unread {
            message.readByDispatchAt = tx.now
            let doc = try WireDocument.encode(message)
            try await tx.execute("""
                UPDATE driver_messages SET read_by_dispatch_at = \(tx.now), doc = \(doc) WHERE tenant_id = \(tx.tenant) AND id = \(message.id)
                """)
            tx.recordUpsert(.message, id: message.id.rawValue, document: doc, visibleTo: driver)
        }
        return unread.count
    }

    /// A driver's newest messages to dispatch, newest first.
    static func latest(of driver: ID<Driver>, tenant: ID<Tenant>, limit: Int, _ db: any SQLExecutor) async throws -> [DriverMessage] {
        try await db.query("""
            SELECT \(DriverMessage.columns) FROM driver_messages WHERE tenant_id = \(tenant) AND driver_id = \(driver)
            ORDER BY sent_at DESC, id LIMIT \(limit)
            """).map(DriverMessage.init(row:))
    }

    /// Dispatch's newest messages to a driver (not the server's notices about work), newest first.
    static func dispatchMessages(to driver: ID<Driver>, tenant: ID<Tenant>, limit: Int, _ db: any SQLExecutor) async throws -> [DriverNotification] {
        try await db.query("""
            SELECT \(DriverNotification.columns) FROM driver_notifications
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND type IN (\(NotificationType.dispatchMessage), \(NotificationType.urgent))
            ORDER BY created_at DESC, id LIMIT \(limit)
            """).map(DriverNotification.init(row:))
    }

    /// Every driver's newest message to dispatch, and how many dispatch has not opened.
    static func driverSides(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [ID<Driver>: (last: DriverMessage, unread: Int)] {
        let newest = try await db.query("""
            SELECT \(DriverMessage.columns) FROM driver_messages m
            WHERE m.tenant_id = \(tenant) AND m.id = (SELECT x.id FROM driver_messages x WHERE x.tenant_id = \(tenant)
                                                      AND x.driver_id = m.driver_id ORDER BY x.sent_at DESC, x.id LIMIT 1)
            """).map(DriverMessage.init(row:))
        let counts = try await db.query("""
            SELECT driver_id, COUNT(*) AS n FROM driver_messages WHERE tenant_id = \(tenant) AND read_by_dispatch_at IS NULL GROUP BY driver_id
            """)
        var unread: [ID<Driver>: Int] = [:]
        for row in counts { unread[try row.id("driver_id")] = try row.int("n") }
        return Dictionary(uniqueKeysWithValues: newest.map { ($0.driverID, (last: $0, unread: unread[$0.driverID] ?? 0)) })
    }

    /// Dispatch's newest message to each driver it wrote to.
    static func dispatchSides(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [ID<Driver>: DriverNotification] {
        let newest = try await db.query("""
            SELECT \(DriverNotification.columns) FROM driver_notifications n
            WHERE n.tenant_id = \(tenant) AND n.type IN (\(NotificationType.dispatchMessage), \(NotificationType.urgent))
              AND n.id = (SELECT x.id FROM driver_notifications x WHERE x.tenant_id = \(tenant) AND x.driver_id = n.driver_id
                          AND x.type IN (\(NotificationType.dispatchMessage), \(NotificationType.urgent)) ORDER BY x.created_at DESC, x.id LIMIT 1)
            """).map(DriverNotification.init(row:))
        return Dictionary(uniqueKeysWithValues: newest.map { ($0.driverID, $0) })
    }
}
