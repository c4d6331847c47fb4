import Foundation
import GRDB
import VroomXModels

/// Reading and writing the cached rows.
extension AppDatabase {
    // MARK: Reads (every screen renders from these, never from the network)

    public func trips() throws -> [Trip] { try reader.read(Self.trips) }
    public func trip(_ id: ID<Trip>) throws -> Trip? { try reader.read { try Self.trip(id, $0) } }
    public func orders() throws -> [Order] { try reader.read(Self.orders) }
    func order(holding problem: ID<StopProblem>) throws -> Order? { try reader.read { try Self.order(holding: problem, $0) } }
    /// Orders with this status (all when nil), newest first.
    public func orders(status: OrderStatus?) throws -> [Order] { try orders().filter { status == nil || $0.status == status } }
    public func orders(trip: ID<Trip>) throws -> [Order] { try reader.read { try Self.orders(trip: trip, $0) } }
    public func order(_ id: ID<Order>) throws -> Order? { try reader.read { try Self.order(id, $0) } }
    public func expenses(trip: ID<Trip>) throws -> [Expense] { try reader.read { try Self.expenses(trip: trip, $0) } }
    /// Every expense on the device, newest first: also those on a trip dispatch gave to another driver since.
    public func expenses() throws -> [Expense] {
        try reader.read { try Self.docs($0, "SELECT doc FROM expenses ORDER BY expense_date DESC, created_at DESC, id") }
    }
    public func notifications() throws -> [DriverNotification] { try reader.read(Self.notifications) }
    public func unreadCount() throws -> Int { try reader.read(Self.unreadCount) }
    /// The conversation with dispatch: dispatch's messages and the driver's, oldest first.
    public func conversation() throws -> [ConversationLine] { try reader.read(Self.conversation) }
    /// The truck and trailer assigned to the driver, by unit number.
    public func equipment() throws -> [Equipment] { try reader.read(Self.equipment) }

    static func equipment(_ db: Database) throws -> [Equipment] {
        try docs(db, "SELECT doc FROM equipment ORDER BY lower(unit_number), id")
    }

    static func unit(_ id: ID<Equipment>, _ db: Database) throws -> Equipment? {
        let units: [Equipment] = try docs(db, "SELECT doc FROM equipment WHERE id = ?", [id.rawValue])
        return units.first
    }

    static func trips(_ db: Database) throws -> [Trip] {
        // Newest start first; trips without a start date last (as on the server).
        try docs(db, "SELECT doc FROM trips ORDER BY start_date IS NULL, start_date DESC, created_at DESC, id")
    }

    static func trip(_ id: ID<Trip>, _ db: Database) throws -> Trip? {
        let trips: [Trip] = try docs(db, "SELECT doc FROM trips WHERE id = ?", [id.rawValue])
        return trips.first
    }

    /// A cached trip's number, read without decoding the trip (every queued change is described by it).
    static func tripNumber(_ id: ID<Trip>, _ db: Database) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT number FROM trips WHERE id = ?"), arguments: [id.rawValue])
    }

    /// A cached order's number, read without decoding the order.
    static func orderNumber(_ id: ID<Order>, _ db: Database) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT number FROM orders WHERE id = ?"), arguments: [id.rawValue])
    }

    static func orders(_ db: Database) throws -> [Order] {
        try docs(db, "SELECT doc FROM orders ORDER BY created_at DESC, id")
    }

    static func orders(trip: ID<Trip>, _ db: Database) throws -> [Order] {
        try docs(db, "SELECT doc FROM orders WHERE trip_id = ? ORDER BY created_at DESC, id", [trip.rawValue])
    }

    /// The order a reported problem is on (a problem's photo names it; the phone finds it here).
    static func order(holding problem: ID<StopProblem>, _ db: Database) throws -> Order? {
        try orders(db).first { $0.problems.contains { $0.id == problem } }
    }

    static func order(_ id: ID<Order>, _ db: Database) throws -> Order? {
        let orders: [Order] = try docs(db, "SELECT doc FROM orders WHERE id = ?", [id.rawValue])
        return orders.first
    }

    static func expenses(trip: ID<Trip>, _ db: Database) throws -> [Expense] {
        try docs(db, "SELECT doc FROM expenses WHERE trip_id = ? ORDER BY expense_date DESC, created_at DESC, id", [trip.rawValue])
    }

    static func allExpenses(_ db: Database) throws -> [Expense] {
        try docs(db, "SELECT doc FROM expenses ORDER BY expense_date DESC, created_at DESC, id")
    }

    static func notifications(_ db: Database) throws -> [DriverNotification] {
        try docs(db, "SELECT doc FROM notifications ORDER BY created_at DESC, id")
    }

    /// What the driver wrote to dispatch, oldest first.
    static func messages(_ db: Database) throws -> [DriverMessage] {
        try docs(db, "SELECT doc FROM messages ORDER BY sent_at, id")
    }

    static func conversation(_ db: Database) throws -> [ConversationLine] {
        ConversationLine.merged(try notifications(db), try messages(db))
    }

    static func unreadCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notifications WHERE unread = 1") ?? 0
    }

    static func docs<T: Decodable>(_ db: Database, _ sql: String, _ arguments: StatementArguments = []) throws -> [T] {
        try String.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map { try CacheJSON.decode(T.self, $0) }
    }

    // MARK: Writes of server rows

    /// Stores a row: its JSON as received when there is one (`raw`), else
    /// encoded here; plus the columns lists sort and filter by.
    static func store(_ row: ChangeRow, raw: String? = nil, _ db: Database) throws {
        func doc<T: Encodable>(_ value: T) throws -> String { try raw ?? CacheJSON.encode(value) }
        switch row {
        case .trip(let trip):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO trips (id, number, start_date, created_at, doc) VALUES (?, ?, ?, ?, ?)").execute(
                           arguments: [trip.id.rawValue, trip.number, trip.startDate?.description, trip.createdAt.timeIntervalSince1970,
                                       try doc(trip)])
        case .order(let order):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO orders (id, number, trip_id, created_at, doc) VALUES (?, ?, ?, ?, ?)").execute(
                           arguments: [order.id.rawValue, order.number, order.tripID?.rawValue, order.createdAt.timeIntervalSince1970,
                                       try doc(order)])
        case .expense(let expense):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO expenses (id, trip_id, expense_date, created_at, doc) VALUES (?, ?, ?, ?, ?)").execute(
                           arguments: [expense.id.rawValue, expense.tripID.rawValue, expense.date.description,
                                       expense.createdAt.timeIntervalSince1970, try doc(expense)])
        case .notification(let notification):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO notifications (id, created_at, unread, doc) VALUES (?, ?, ?, ?)").execute(
                           arguments: [notification.id.rawValue, notification.createdAt.timeIntervalSince1970,
                                       notification.isUnread, try doc(notification)])
        case .driver(let driver):
            try db.execute(sql: "UPDATE account SET driver_doc = ?, driver_id = ?", arguments: [try doc(driver), driver.id.rawValue])
        case .inspection(let inspection):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO inspections (id, order_id, doc) VALUES (?, ?, ?)").execute(
                           arguments: [inspection.id.rawValue, inspection.orderID.rawValue, try doc(inspection)])
        case .equipment(let unit):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO equipment (id, unit_number, doc) VALUES (?, ?, ?)").execute(
                           arguments: [unit.id.rawValue, unit.unitNumber, try doc(unit)])
        case .message(let message):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO messages (id, sent_at, doc) VALUES (?, ?, ?)").execute(
                           arguments: [message.id.rawValue, message.sentAt.timeIntervalSince1970, try doc(message)])
        case .customer:
            break  // dispatch's records: the server never sends them to a driver
        }
    }

    /// Stores a row a request's answer carried (a mutation's result, the
    /// driver's own record), unless the cache has a later version of it
    /// already: the feed (a realtime frame, a pull) can bring dispatch's next
    /// change before the answer arrives.
    static func storeAnswered(_ row: ChangeRow, _ db: Database) throws {
        if let version = row.version, let cached = try cachedVersion(of: row, db), cached > version { return }
        try store(row, db)
    }

    private static func cachedVersion(of row: ChangeRow, _ db: Database) throws -> Int? {
        let sql: String
        switch row.entity {
        case .driver: sql = "SELECT json_extract(driver_doc, '$.version') FROM account WHERE driver_id = ?"
        case .trip: sql = "SELECT json_extract(doc, '$.version') FROM trips WHERE id = ?"
        case .order: sql = "SELECT json_extract(doc, '$.version') FROM orders WHERE id = ?"
        case .inspection: sql = "SELECT json_extract(doc, '$.version') FROM inspections WHERE id = ?"
        case .equipment: sql = "SELECT json_extract(doc, '$.version') FROM equipment WHERE id = ?"
        case .expense, .notification, .customer, .message: return nil
        }
        return try Int.fetchOne(db.cachedStatement(sql: sql), arguments: [row.id])
    }

    static func remove(_ entity: ChangeEntity, id: String, _ db: Database) throws {
        switch entity {
        case .trip: try db.execute(sql: "DELETE FROM trips WHERE id = ?", arguments: [id])
        case .order:
            // Photos of its inspections still on the phone become evidence now, while the order's number is known.
            if let order = ID<Order>(id) {
                for inspection in try inspections(order: order, db)
                where try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM upload_queue WHERE inspection_id = ? AND status <> 'completed'",
                                       arguments: [inspection.id.rawValue]) ?? 0 > 0 {
                    try holdEvidence(inspection.id, reason: "The order was given to another driver.", refused: nil, now: Date(), db)
                }
            }
            try db.execute(sql: "DELETE FROM orders WHERE id = ?", arguments: [id])
        case .expense: try db.execute(sql: "DELETE FROM expenses WHERE id = ?", arguments: [id])
        case .notification: try db.execute(sql: "DELETE FROM notifications WHERE id = ?", arguments: [id])
        case .message: try db.execute(sql: "DELETE FROM messages WHERE id = ?", arguments: [id])
        case .equipment: try db.execute(sql: "DELETE FROM equipment WHERE id = ?", arguments: [id])
        case .inspection:
            // Its queued files can no longer land (the order went to another driver): any the phone
            // still holds are kept as evidence; the upload queue deletes copies it no longer lists.
            if let inspection = ID<Inspection>(id) {
                try holdEvidence(inspection, reason: "The order was given to another driver.", refused: nil, now: Date(), db)
            }
        case .driver, .customer: break
        }
    }

    /// Drops every cached row (a snapshot begins, or logout).
    static func clearRows(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM trips; DELETE FROM orders; DELETE FROM expenses; DELETE FROM notifications; DELETE FROM messages; DELETE FROM inspections; DELETE FROM equipment")
    }

    /// Applies one page of the feed in one transaction: rows, the cursor,
    /// and then the driver's own pending changes on top, so an unsynced tap
    /// is never hidden by an older server state arriving first. Pending
    /// changes the page shows applied leave the outbox first.
    public func apply(_ page: SyncPage, syncedAt: Date) throws {
        try writer.write { db in
            if page.reset { try Self.clearRows(db) }
            for change in page.changes {
                if change.op == .upsert, let row = change.row {
                    try Self.store(row, raw: change.rawRow, db)
                } else {
                    try Self.remove(change.entity, id: change.id, db)
                }
            }
            try db.execute(sql: "UPDATE sync_state SET cursor = ?, snapshot_after = ?, last_synced_at = ?",
                           arguments: [page.cursor, page.snapshotAfter, syncedAt.timeIntervalSince1970])
            try Self.forgetApplied(page.changes, db)
            try Self.overlayPending(touching: Set(page.changes.map(\.id)), reset: page.reset, db)
        }
    }

    /// Applies changes a realtime frame carried, in one transaction, when
    /// they follow on from the cache: the socket had sent everything up to
    /// `from` and the cache has at least that (changes a pull already
    /// brought are skipped by their number). False when they do not follow
    /// on — a gap, a snapshot in progress, nothing synced yet — and the
    /// caller pulls instead. A frame with no changes moves the cursor.
    public func applyLive(_ changes: [Change], from: Int64, to cursor: Int64, syncedAt: Date) throws -> Bool {
        try writer.write { db in
            let position = try Row.fetchOne(db, sql: "SELECT cursor, snapshot_after FROM sync_state")!
            let local: Int64 = position["cursor"]
            let snapshotAfter: String? = position["snapshot_after"]
            guard snapshotAfter == nil, local > 0, from <= local else { return false }
            guard cursor > local else { return true }
            let fresh = changes.filter { $0.seq > local }
            for change in fresh {
                if change.op == .upsert, let row = change.row {
                    try Self.store(row, raw: change.rawRow, db)
                } else {
                    try Self.remove(change.entity, id: change.id, db)
                }
            }
            try db.execute(sql: "UPDATE sync_state SET cursor = ?, last_synced_at = ?",
                           arguments: [cursor, syncedAt.timeIntervalSince1970])
            try Self.forgetApplied(fresh, db)
            try Self.overlayPending(touching: Set(fresh.map(\.id)), reset: false, db)
            return true
        }
    }

    public func syncPosition() throws -> (cursor: Int64, snapshotAfter: String?) {
        try reader.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT cursor, snapshot_after FROM sync_state")!
            return (row["cursor"], row["snapshot_after"])
        }
    }

    /// Forgets the cursor so the next sync starts with a snapshot.
    public func resetSyncPosition() throws {
        try writer.write { db in try db.execute(sql: "UPDATE sync_state SET cursor = 0, snapshot_after = NULL") }
    }

    public func lastSyncedAt() throws -> Date? {
        try reader.read { db in
            try Double.fetchOne(db, sql: "SELECT last_synced_at FROM sync_state").map(Date.init(timeIntervalSince1970:))
        }
    }
}
