import Foundation
import VroomXModels

/// Drivers' notifications in the database: the SQL and the row mapping,
/// nothing else. Policy and words live in `NotificationService`.
enum NotificationRepository {
    static func filter(_ scope: Scope, unreadOnly: Bool) -> SQL {
        scope.filter() + (unreadOnly ? " AND read_at IS NULL" : "")
    }

    static func documents(_ scope: Scope, unreadOnly: Bool, _ page: PageRequest, _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "driver_notifications", where: filter(scope, unreadOnly: unreadOnly),
                                     order: DriverNotification.order, page, db)
    }

    static func recent(_ scope: Scope, unreadOnly: Bool, limit: Int, _ db: any SQLExecutor) async throws -> [DriverNotification] {
        try await db.query("""
            SELECT \(DriverNotification.columns) FROM driver_notifications WHERE \(filter(scope, unreadOnly: unreadOnly))
            ORDER BY \(DriverNotification.order.sql) LIMIT \(limit)
            """).map(DriverNotification.init(row:))
    }

    /// How many of a driver's notifications are unread, counting no further than `atMost` when given.
    static func unread(driver: ID<Driver>, tenant: ID<Tenant>, atMost: Int? = nil, _ db: any SQLExecutor) async throws -> Int {
        let limit: SQL = atMost.map { " LIMIT \($0)" } ?? ""
        return try await db.first("""
            SELECT COUNT(*) AS n FROM (SELECT id FROM driver_notifications
                WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND read_at IS NULL\(limit)) AS waiting
            """)?.int("n") ?? 0
    }

    static func find(_ id: ID<DriverNotification>, _ scope: Scope, _ db: any SQLExecutor) async throws -> DriverNotification? {
        try await db.first("""
            SELECT \(DriverNotification.columns) FROM driver_notifications WHERE \(scope.filter()) AND id = \(id)
            """).map(DriverNotification.init(row:))
    }

    /// Writes the read time of a notification still unread, and records the change.
    static func markRead(_ notification: DriverNotification, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(notification)
        guard try await tx.first("""
            UPDATE driver_notifications SET read_at = \(notification.readAt), read_received_at = \(notification.readReceivedAt), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(notification.id) AND read_at IS NULL RETURNING id
            """) != nil else { throw WriteConflict() }
        tx.recordUpsert(.notification, id: notification.id.rawValue, document: doc, visibleTo: notification.driverID)
    }

    /// Writes an urgent message's "Got it" (and its read time), and records the change.
    static func acknowledge(_ notification: DriverNotification, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(notification)
        guard try await tx.first("""
            UPDATE driver_notifications SET read_at = \(notification.readAt), read_received_at = \(notification.readReceivedAt),
                acknowledged_at = \(notification.acknowledgedAt), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(notification.id) AND acknowledged_at IS NULL RETURNING id
            """) != nil else { throw WriteConflict() }
        tx.recordUpsert(.notification, id: notification.id.rawValue, document: doc, visibleTo: notification.driverID)
    }

    /// Writes a new notification and records the change; `coalesceUntil`:
    /// notices about its trip until then are folded into it.
    static func insert(_ notification: DriverNotification, coalesceUntil: Date? = nil, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(notification)
        try await tx.execute("""
            INSERT INTO driver_notifications (id, tenant_id, driver_id, type, title, body, trip_id, order_id, created_at, doc, coalesce_until)
            VALUES (\(notification.id), \(tx.tenant), \(notification.driverID), \(notification.type), \(notification.title),
                    \(notification.body), \(notification.data.tripID), \(notification.data.orderID), \(notification.createdAt), \(doc),
                    \(coalesceUntil))
            """)
        tx.recordUpsert(.notification, id: notification.id.rawValue, document: doc, visibleTo: notification.driverID)
    }

    /// The driver's unread notice about `trip` still gathering what follows
    /// (locked on PostgreSQL until commit, so two folds never lose a line).
    /// Only the last `oldest` seconds are looked at: a bounded range of the driver's index.
    static func gathering(driver: ID<Driver>, trip: ID<Trip>, tenant: ID<Tenant>, now: Date, since oldest: Date,
                          _ db: any SQLExecutor) async throws -> DriverNotification? {
        try await db.first("""
            SELECT \(DriverNotification.columns) FROM driver_notifications
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND created_at >= \(oldest) AND trip_id = \(trip)
              AND read_at IS NULL AND coalesce_until >= \(now)
            ORDER BY created_at DESC, id LIMIT 1\(Store.lockingRows(db))
            """).map(DriverNotification.init(row:))
    }

    /// Ends the gathering of the driver's notices about `trip`: nothing more
    /// folds into them, and their pushes still waiting for the gathering to
    /// end are dropped (the phone has the first alert; the notification has every line).
    static func endGathering(driver: ID<Driver>, trip: ID<Trip>, _ tx: TenantTransaction) async throws {
        let gathering = try await tx.query("""
            UPDATE driver_notifications SET coalesce_until = NULL
            WHERE tenant_id = \(tx.tenant) AND driver_id = \(driver) AND trip_id = \(trip) AND coalesce_until IS NOT NULL
            RETURNING id
            """).map { try $0.string("id") }
        guard !gathering.isEmpty else { return }
        try await tx.execute("""
            DELETE FROM push_queue WHERE tenant_id = \(tx.tenant) AND notification_id IN (\(SQL.list(gathering))) AND next_attempt_at > \(tx.now)
            """)
    }

    /// Writes a notification's gathered body and what it points at while it is still unread; false if it was read meanwhile.
    static func fold(_ notification: DriverNotification, coalesceUntil: Date, _ tx: TenantTransaction) async throws -> Bool {
        let doc = try WireDocument.encode(notification)
        guard try await tx.first("""
            UPDATE driver_notifications SET type = \(notification.type), body = \(notification.body), order_id = \(notification.data.orderID),
                coalesce_until = \(coalesceUntil), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(notification.id) AND read_at IS NULL RETURNING id
            """) != nil else { return false }
        tx.recordUpsert(.notification, id: notification.id.rawValue, document: doc, visibleTo: notification.driverID)
        return true
    }
}
