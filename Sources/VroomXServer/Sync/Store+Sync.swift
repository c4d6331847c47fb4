import Foundation
import VroomXModels

/// The change feed: what a caller may see, since a cursor.
extension Store {
    /// A page of the feed as JSON fragments: each change is assembled from
    /// the stored row document, never decoded and re-encoded.
    public struct FeedPage: Sendable {
        public var changes: [FeedEntry]
        public var cursor: Int64
        public var hasMore: Bool
        public var reset: Bool
        public var snapshotAfter: String?
    }

    public struct FeedEntry: Sendable {
        public let seq: Int64
        public let entity: ChangeEntity
        public let id: String
        public let operation: ChangeOperation
        public let document: String?
        /// The driver's offline change that made it, if one did.
        public var mutationID: String? = nil
        /// Who may see it (used by the realtime hub to filter).
        let driverID: ID<Driver>?
        let dispatchVisible: Bool

        func visible(to scope: Scope) -> Bool {
            if let driver = scope.driverID { return driverID == driver }
            return dispatchVisible
        }
    }

    /// Changes after `since` the caller may see, oldest first. The cursor of
    /// a complete page is the carrier's counter read in the same snapshot,
    /// so a change committed while the page was read can never be skipped.
    public func feed(since: Int64, limit: Int, _ scope: Scope) async throws -> FeedPage {
        try await database.snapshot { db in
            let (counter, floor) = try await feedBounds(scope.tenant, db)
            guard since >= floor, since <= counter else {
                throw AppError(410, .cursorExpired, since > counter
                    ? "The cursor is ahead of the server; start over with since=0."
                    : "The cursor is older than the history the server keeps; start over with since=0.")
            }
            let visibility: SQL = scope.driverID.map { "driver_id = \($0)" } ?? "dispatch_visible = 1"
            let rows = try await db.query("""
                SELECT \(Self.feedColumns) FROM change_log
                WHERE tenant_id = \(scope.tenant) AND \(visibility) AND seq > \(since)
                ORDER BY seq LIMIT \(limit + 1)
                """)
            var entries = try rows.map(Self.feedEntry)
            let hasMore = entries.count > limit
            if hasMore {
                let next = entries.removeLast()
                Self.endPage(&entries, before: next)
            }
            return FeedPage(changes: entries, cursor: hasMore ? entries.last!.seq : counter, hasMore: hasMore,
                            reset: false, snapshotAfter: nil)
        }
    }

    /// Ends a full page between two mutations' entries, not inside one's
    /// (unless that one alone fills the page): a device takes a mutation out
    /// of its outbox at its first entry and stops laying it over the rows,
    /// so its other rows (an inspection's order) come in the same page.
    static func endPage(_ entries: inout [FeedEntry], before next: FeedEntry) {
        guard let mutation = next.mutationID, entries.last?.mutationID == mutation,
              let lastOther = entries.lastIndex(where: { $0.mutationID != mutation }) else { return }
        entries.removeSubrange((lastOther + 1)...)
    }

    /// Changes after `since` for everyone in the carrier (the realtime hub
    /// filters per subscriber).
    func tenantChanges(_ tenant: ID<Tenant>, after since: Int64, limit: Int) async throws -> [FeedEntry] {
        try await read { db in
            try await db.query("""
                SELECT \(Self.feedColumns) FROM change_log
                WHERE tenant_id = \(tenant) AND seq > \(since) ORDER BY seq LIMIT \(limit)
                """).map(Self.feedEntry)
        }
    }

    public func changeCounter(_ tenant: ID<Tenant>) async throws -> (counter: Int64, floor: Int64) {
        try await read { db in try await feedBounds(tenant, db) }
    }

    private func feedBounds(_ tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> (Int64, Int64) {
        guard let row = try await db.first("SELECT change_seq, change_floor FROM tenants WHERE id = \(tenant)") else {
            throw AppError.notFound("Carrier")
        }
        return (try row.int64("change_seq"), try row.int64("change_floor"))
    }

    /// The change log's columns `feedEntry` reads.
    static let feedColumns: SQL = "seq, entity, entity_id, op, payload, driver_id, dispatch_visible, mutation_id"

    static func feedEntry(_ row: SQLRow) throws -> FeedEntry {
        FeedEntry(seq: try row.int64("seq"), entity: try row.enumeration("entity"), id: try row.string("entity_id"),
                  operation: try row.enumeration("op"), document: try row.optionalString("payload"),
                  mutationID: try row.optionalString("mutation_id"),
                  driverID: try row.optionalID("driver_id"), dispatchVisible: try row.bool("dispatch_visible"))
    }

    /// One page of a snapshot of everything the caller may see, in a fixed
    /// order (entity, then id). Its cursor is the carrier's counter when
    /// the snapshot began (`cursor` of the first page, carried by the
    /// client); applying the changes after it afterwards covers whatever
    /// happened while the pages were read.
    public func snapshot(after token: String?, cursor: Int64?, limit: Int, _ scope: Scope) async throws -> FeedPage {
        var position = try token.map(SnapshotPosition.init(token:)) ?? SnapshotPosition(entity: .driver, afterID: nil)
        return try await database.snapshot { db in
            let (counter, floor) = try await feedBounds(scope.tenant, db)
            let startCursor = cursor ?? counter
            if token != nil, startCursor < floor || startCursor > counter {
                throw AppError(410, .cursorExpired, "The snapshot is too old to continue; start over with since=0.")
            }
            var entries: [FeedEntry] = []
            while entries.count <= limit {
                let rows = try await db.query(snapshotQuery(position, scope, limit: limit + 1 - entries.count))
                for row in rows {
                    let id = try row.string("id")
                    entries.append(FeedEntry(seq: startCursor, entity: position.entity, id: id, operation: .upsert,
                                             document: try row.string("doc"), driverID: scope.driverID, dispatchVisible: true))
                    position.afterID = id
                }
                if entries.count > limit { break }
                guard let next = position.entity.nextInSnapshot else {
                    return FeedPage(changes: entries, cursor: startCursor, hasMore: counter > startCursor,
                                    reset: token == nil, snapshotAfter: nil)
                }
                position = SnapshotPosition(entity: next, afterID: nil)
            }
            entries.removeLast()
            let last = entries.last!
            return FeedPage(changes: entries, cursor: startCursor, hasMore: true, reset: token == nil,
                            snapshotAfter: SnapshotPosition(entity: last.entity, afterID: last.id).token)
        }
    }

    private func snapshotQuery(_ position: SnapshotPosition, _ scope: Scope, limit: Int) -> SQL {
        let after: SQL = position.afterID.map { " AND x.id > \($0)" } ?? ""
        let tenant = scope.tenant
        let mine: SQL
        switch (position.entity, scope.driverID) {
        case (.driver, let driver?): mine = " AND x.id = \(driver)"
        case (.expense, let driver?):
            mine = ExpenseRepository.visible(to: driver, tenant: tenant)
        case (.inspection, let driver?):
            mine = " AND x.order_id IN (SELECT o.id FROM orders o WHERE o.tenant_id = \(tenant) AND o.driver_id = \(driver))"
        case (.customer, _?): mine = " AND 1 = 0"  // dispatch's alone
        case (_, let driver?): mine = " AND x.driver_id = \(driver)"
        case (_, nil): mine = ""
        }
        return """
            SELECT x.id, x.doc FROM \(unsafeRaw: position.entity.table) x
            WHERE x.tenant_id = \(tenant)\(mine)\(after) ORDER BY x.id LIMIT \(limit)
            """
    }

    /// Deletes feed history older than `retention` and raises each carrier's
    /// floor: a client whose cursor is below the floor must re-snapshot.
    public func pruneChangeLog(olderThan retention: TimeInterval) async throws {
        let cutoff = now.addingTimeInterval(-retention)
        for tenant in try await people.tenants() {
            try await writeRows { db in
                guard let newest = try await db.first("""
                    SELECT MAX(seq) AS seq FROM change_log WHERE tenant_id = \(tenant.id) AND committed_at < \(cutoff)
                    """)?.optionalInt64("seq") else { return }
                try await db.execute("DELETE FROM change_log WHERE tenant_id = \(tenant.id) AND seq <= \(newest)")
                try await db.execute("UPDATE tenants SET change_floor = \(newest) WHERE id = \(tenant.id) AND change_floor < \(newest)")
            }
        }
    }
}

/// Where a snapshot continues: `entity:last-id`.
struct SnapshotPosition {
    var entity: ChangeEntity
    var afterID: String?

    init(entity: ChangeEntity, afterID: String?) {
        self.entity = entity
        self.afterID = afterID
    }

    init(token: String) throws {
        let parts = token.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let entity = ChangeEntity(rawValue: parts[0]), ID<Trip>(parts[1]) != nil else {
            throw AppError(400, .invalidParameter, "snapshot_after is not a value this server gave.", field: "snapshot_after")
        }
        self.entity = entity
        afterID = parts[1]
    }

    var token: String { entity.rawValue + ":" + (afterID ?? "") }
}

extension ChangeEntity {
    var table: String {
        switch self {
        case .driver: return "drivers"
        case .trip: return "trips"
        case .order: return "orders"
        case .expense: return "trip_expenses"
        case .notification: return "driver_notifications"
        case .inspection: return "inspections"
        case .equipment: return "equipment"
        case .customer: return "customers"
        case .message: return "driver_messages"
        }
    }

    /// Snapshot order: the driver record, trips, orders, expenses, notifications, inspections, units, customers, the driver's messages.
    var nextInSnapshot: ChangeEntity? {
        switch self {
        case .driver: return .trip
        case .trip: return .order
        case .order: return .expense
        case .expense: return .notification
        case .notification: return .inspection
        case .inspection: return .equipment
        case .equipment: return .customer
        case .customer: return .message
        case .message: return nil
        }
    }
}
