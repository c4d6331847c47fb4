import VroomXModels

extension Store {
    /// A carrier's kept count of one key (`StatusCounts`) that is not the
    /// number of its rows.
    struct CountDrift: Sendable {
        let kept: StatusCounts
        let tenant: String
        let tenantExists: Bool
        /// The carrier as problems name it (`Store.carrier`).
        let carrier: String
        let status: String
        /// The pickup or start day, for the counts by day.
        let day: String?
        let keptCount: Int64
        let rowCount: Int64

        var description: String {
            let day = day.map { $0.isEmpty ? " without a day" : " on \($0)" } ?? ""
            return "\(carrier): \(kept.counts) counts \(keptCount) \(kept.table) \(status)\(day), and there are \(rowCount)"
        }
    }

    /// Every kept count that differs from the rows it counts: the counts'
    /// rows summed (PostgreSQL keeps a row a change until they are gathered)
    /// against the table's rows grouped the same way. Counts kept for a
    /// carrier that no longer exists are drift too; rows of one are a row
    /// problem (`rowProblems`), not counted here.
    static func countDrift(_ kept: StatusCounts, _ db: any SQLExecutor) async throws -> [CountDrift] {
        try await db.query("""
            SELECT drift.*, c.id AS carrier_id, c.name AS carrier FROM (\(driftTally(counts: kept.counts, of: kept.table, keys: kept.keys, rowKeys: kept.rowKeys))
            ) AS drift LEFT JOIN tenants c ON c.id = drift.tenant_id
            ORDER BY c.name, drift.tenant_id, \(unsafeRaw: kept.keyColumns.map { "drift." + $0 }.joined(separator: ", "))
            """).map { row in
            let (tenant, exists, carrier) = try driftCarrier(row)
            return CountDrift(kept: kept, tenant: tenant, tenantExists: exists, carrier: carrier, status: try row.string("status"),
                              day: kept.day == nil ? nil : try row.string("day"), keptCount: try row.int64("kept"), rowCount: try row.int64("counted"))
        }
    }

    /// A counts table's rows summed by key against its table's rows counted
    /// the same way (`rowKeys`, the table's values named as the counts'
    /// `keys`), where they differ: `tenant_id`, the keys, `kept`, `counted`.
    /// Rows of a carrier that no longer exists are a row problem, not counted.
    private static func driftTally(counts: String, of table: String, keys: String, rowKeys: String) -> SQL {
        """

                SELECT tenant_id, \(unsafeRaw: keys), CAST(SUM(kept) AS BIGINT) AS kept, CAST(SUM(counted) AS BIGINT) AS counted FROM (
                    SELECT tenant_id, \(unsafeRaw: keys), n AS kept, 0 AS counted FROM \(unsafeRaw: counts)
                    UNION ALL SELECT tenant_id, \(unsafeRaw: rowKeys), 0 AS kept, COUNT(*) AS counted FROM \(unsafeRaw: table) r
                    WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = r.tenant_id)
                    GROUP BY tenant_id, \(unsafeRaw: keys)
                ) AS tally GROUP BY tenant_id, \(unsafeRaw: keys) HAVING SUM(kept) <> SUM(counted)
            """
    }

    /// A drifted count's carrier: its id, whether it exists, and its name as problems give it.
    private static func driftCarrier(_ row: SQLRow) throws -> (tenant: String, exists: Bool, carrier: String) {
        let tenant = try row.string("tenant_id")
        let exists = try row.optionalString("carrier_id") != nil
        return (tenant, exists, exists ? try carrier(row) : "a carrier that does not exist (\(tenant))")
    }

    /// A repair found the counted tables locked by another transaction for
    /// longer than it waits; nothing was changed.
    public struct CountRepairBlocked: Error, CustomStringConvertible {
        public let description: String
    }

    /// Counts again, from their rows, every kept count of a carrier whose
    /// counts drifted (a trigger dropped by hand, rows edited with triggers
    /// off), drops those kept for a carrier that no longer exists, and says
    /// what it found. On PostgreSQL the counted tables and the counts are
    /// locked first (against writers, the gathering of counts and another
    /// repair), for at most `repairLockWait`: no change made meanwhile is
    /// counted twice or missed, and writers wait no longer than that for the
    /// lock. SQLite has one writer at a time anyway.
    public func repairKeptCounts() async throws -> [String] {
        try await writeRows { db in
            if db.dialect == .postgres {
                let tables = (["orders", "trips", "trip_expenses", "trip_expense_counts"] + StatusCounts.all.map(\.counts)).joined(separator: ", ")
                try await db.execute("SET LOCAL lock_timeout = \(unsafeRaw: String(Int(Self.repairLockWait.components.seconds * 1000)))")
                do {
                    try await db.execute("LOCK TABLE \(unsafeRaw: tables) IN SHARE ROW EXCLUSIVE MODE")
                } catch let error as PostgresServerError where error.sqlState == "55P03" {
                    throw CountRepairBlocked(description: "another transaction held orders, trips, expenses or their counts for more than "
                                             + "\(Self.repairLockWait.components.seconds) s; nothing was changed. Run it again.")
                }
            }
            var repaired: [String] = []
            for kept in StatusCounts.all {
                let drift = try await Self.countDrift(kept, db)
                for tenant in Set(drift.map(\.tenant)).sorted() {
                    try await db.execute("DELETE FROM \(unsafeRaw: kept.counts) WHERE tenant_id = \(tenant)")
                    guard drift.contains(where: { $0.tenant == tenant && $0.tenantExists }) else { continue }
                    try await db.execute("""
                        INSERT INTO \(unsafeRaw: kept.counts) (tenant_id, \(unsafeRaw: kept.keys), n)
                        SELECT tenant_id, \(unsafeRaw: kept.rowKeys), COUNT(*) FROM \(unsafeRaw: kept.table) WHERE tenant_id = \(tenant)
                        GROUP BY tenant_id, \(unsafeRaw: kept.keys)
                        """)
                }
                repaired += drift.map { $0.tenantExists ? "\($0.description); counted again" : "\($0.description); dropped" }
            }
            for drift in try await Self.expenseCountDrift(db) {
                try await db.execute("DELETE FROM trip_expense_counts WHERE tenant_id = \(drift.tenant) AND trip_id = \(drift.trip)")
                if drift.tenantExists {
                    try await db.execute("""
                        INSERT INTO trip_expense_counts (tenant_id, trip_id, n)
                        SELECT tenant_id, trip_id, COUNT(*) FROM trip_expenses WHERE tenant_id = \(drift.tenant) AND trip_id = \(drift.trip)
                        GROUP BY tenant_id, trip_id
                        """)
                }
                repaired.append(drift.tenantExists ? "\(drift.description); counted again" : "\(drift.description); dropped")
            }
            return repaired
        }
    }

    /// A trip whose kept count of expenses (`TripExpenseCounts`) is not the
    /// number of its expenses.
    struct ExpenseCountDrift: Sendable {
        let tenant: String
        let tenantExists: Bool
        let carrier: String
        let trip: String
        let tripNumber: String?
        let keptCount: Int64
        let rowCount: Int64

        var description: String {
            "\(carrier): trip_expense_counts counts \(keptCount) expenses on trip \(tripNumber ?? trip), and there are \(rowCount)"
        }
    }

    /// Every trip whose kept count of expenses differs from its expenses;
    /// counts kept for a carrier that no longer exists are drift too.
    static func expenseCountDrift(_ db: any SQLExecutor) async throws -> [ExpenseCountDrift] {
        try await db.query("""
            SELECT drift.*, c.id AS carrier_id, c.name AS carrier, t.number AS trip_number FROM (\(driftTally(counts: "trip_expense_counts", of: "trip_expenses", keys: "trip_id", rowKeys: "trip_id"))
            ) AS drift LEFT JOIN tenants c ON c.id = drift.tenant_id LEFT JOIN trips t ON t.tenant_id = drift.tenant_id AND t.id = drift.trip_id
            ORDER BY c.name, drift.tenant_id, t.number, drift.trip_id
            """).map { row in
            let (tenant, exists, carrier) = try driftCarrier(row)
            return ExpenseCountDrift(tenant: tenant, tenantExists: exists, carrier: carrier,
                                     trip: try row.string("trip_id"), tripNumber: try row.optionalString("trip_number"),
                                     keptCount: try row.int64("kept"), rowCount: try row.int64("counted"))
        }
    }

    /// How long a repair waits for its locks (and so keeps writers waiting behind it).
    static let repairLockWait = Duration.seconds(5)
}
