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

    /// Writes a message's photos (its document too) and records the change for its driver's phone.
    static func update(_ message: DriverMessage, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(message)
        try await tx.execute("""
            UPDATE driver_messages SET photos = \(try WireDocument.encode(message.photos)), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(message.id)
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

    /// The unread driver message that reached the server last, of any
    /// driver (one sent hours ago from a dead zone is news when it arrives).
    static func newestUnread(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> DriverMessage? {
        try await db.first("""
            SELECT \(DriverMessage.columns) FROM driver_messages WHERE tenant_id = \(tenant) AND read_by_dispatch_at IS NULL
            ORDER BY created_at DESC, id DESC LIMIT 1
            """).map(DriverMessage.init(row:))
    }

    /// A driver's newest messages to dispatch, newest first (the index read backwards).
    static func latest(of driver: ID<Driver>, tenant: ID<Tenant>, limit: Int, _ db: any SQLExecutor) async throws -> [DriverMessage] {
        try await db.query("""
            SELECT \(DriverMessage.columns) FROM driver_messages WHERE tenant_id = \(tenant) AND driver_id = \(driver)
            ORDER BY sent_at DESC, id DESC LIMIT \(limit)
            """).map(DriverMessage.init(row:))
    }

    /// How many messages a driver sent that reached the server since `since`.
    static func arrived(from driver: ID<Driver>, tenant: ID<Tenant>, since: Date, _ db: any SQLExecutor) async throws -> Int {
        try await db.first("""
            SELECT COUNT(*) AS n FROM driver_messages WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND created_at >= \(since)
            """)?.int("n") ?? 0
    }

    /// Dispatch's newest messages to a driver (not the server's notices about work), newest first.
    static func dispatchMessages(to driver: ID<Driver>, tenant: ID<Tenant>, limit: Int, _ db: any SQLExecutor) async throws -> [DriverNotification] {
        try await db.query("""
            SELECT \(DriverNotification.columns) FROM driver_notifications
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND type IN ('dispatch_message', 'urgent')
            ORDER BY created_at DESC, id DESC LIMIT \(limit)
            """).map(DriverNotification.init(row:))
    }

    /// The lines of any conversation about an order, oldest first (the newest `limit`), each with its driver:
    /// what its drivers wrote and what dispatch wrote them.
    static func about(order: ID<Order>, tenant: ID<Tenant>, limit: Int,
                      _ db: any SQLExecutor) async throws -> [(line: ConversationLine, driver: ID<Driver>)] {
        let written = try await db.query("""
            SELECT \(DriverMessage.columns) FROM driver_messages WHERE tenant_id = \(tenant) AND order_id = \(order)
            ORDER BY sent_at DESC, id DESC LIMIT \(limit)
            """).map(DriverMessage.init(row:))
        let sent = try await db.query("""
            SELECT \(DriverNotification.columns) FROM driver_notifications
            WHERE tenant_id = \(tenant) AND order_id = \(order) AND type IN ('dispatch_message', 'urgent')
            ORDER BY created_at DESC, id DESC LIMIT \(limit)
            """).map(DriverNotification.init(row:))
        var drivers: [String: ID<Driver>] = [:]
        for message in written { drivers[message.id.rawValue] = message.driverID }
        for notification in sent { drivers[notification.id.rawValue] = notification.driverID }
        return ConversationLine.merged(sent, written).suffix(limit).compactMap { line in drivers[line.id].map { (line, $0) } }
    }

    /// The drivers with a conversation: who wrote to dispatch, and whom dispatch wrote to.
    static func correspondents(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Set<ID<Driver>> {
        let writers = try await db.query("SELECT DISTINCT driver_id FROM driver_messages WHERE tenant_id = \(tenant)")
        let readers = try await db.query("""
            SELECT DISTINCT driver_id FROM driver_notifications WHERE tenant_id = \(tenant) AND type IN ('dispatch_message', 'urgent')
            """)
        return Set(try (writers + readers).map { try $0.id("driver_id") })
    }

    /// How many of each driver's messages dispatch has not opened.
    static func unreadByDriver(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [ID<Driver>: Int] {
        var unread: [ID<Driver>: Int] = [:]
        for row in try await db.query("""
            SELECT driver_id, COUNT(*) AS n FROM driver_messages WHERE tenant_id = \(tenant) AND read_by_dispatch_at IS NULL GROUP BY driver_id
            """) { unread[try row.id("driver_id")] = try row.int("n") }
        return unread
    }
}
