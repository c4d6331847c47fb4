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
            SELECT drift.*, c.id AS carrier_id, c.name AS carrier FROM (
                SELECT tenant_id, \(unsafeRaw: kept.keys), CAST(SUM(kept) AS BIGINT) AS kept, CAST(SUM(counted) AS BIGINT) AS counted FROM (
                    SELECT tenant_id, \(unsafeRaw: kept.keys), n AS kept, 0 AS counted FROM \(unsafeRaw: kept.counts)
                    UNION ALL SELECT tenant_id, \(unsafeRaw: kept.rowKeys), 0 AS kept, COUNT(*) AS counted FROM \(unsafeRaw: kept.table) r
                    WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = r.tenant_id)
                    GROUP BY tenant_id, \(unsafeRaw: kept.keys)
                ) AS tally GROUP BY tenant_id, \(unsafeRaw: kept.keys) HAVING SUM(kept) <> SUM(counted)
            ) AS drift LEFT JOIN tenants c ON c.id = drift.tenant_id
            ORDER BY c.name, drift.tenant_id, \(unsafeRaw: kept.keyColumns.map { "drift." + $0 }.joined(separator: ", "))
            """).map { row in
            let tenant = try row.string("tenant_id")
            let exists = try row.optionalString("carrier_id") != nil
            return CountDrift(kept: kept, tenant: tenant, tenantExists: exists,
                              carrier: exists ? try carrier(row) : "a carrier that does not exist (\(tenant))", status: try row.string("status"),
                              day: kept.day == nil ? nil : try row.string("day"), keptCount: try row.int64("kept"), rowCount: try row.int64("counted"))
        }
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
                let tables = (["orders", "trips"] + StatusCounts.all.map(\.counts)).joined(separator: ", ")
                try await db.execute("SET LOCAL lock_timeout = \(unsafeRaw: String(Int(Self.repairLockWait.components.seconds * 1000)))")
                do {
                    try await db.execute("LOCK TABLE \(unsafeRaw: tables) IN SHARE ROW EXCLUSIVE MODE")
                } catch let error as PostgresServerError where error.sqlState == "55P03" {
                    throw CountRepairBlocked(description: "another transaction held orders, trips or their counts for more than "
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
            return repaired
        }
    }

    /// How long a repair waits for its locks (and so keeps writers waiting behind it).
    static let repairLockWait = Duration.seconds(5)
}
