import VroomXModels

extension Store {
    /// A carrier's kept count of one key (`StatusCounts`) that is not the
    /// number of its rows.
    struct CountDrift: Sendable {
        let kept: StatusCounts
        let tenant: String
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
    /// against the table's rows grouped the same way.
    static func countDrift(_ kept: StatusCounts, _ db: any SQLExecutor) async throws -> [CountDrift] {
        try await db.query("""
            SELECT drift.*, c.id AS carrier_id, c.name AS carrier FROM (
                SELECT tenant_id, \(unsafeRaw: kept.keys), CAST(SUM(kept) AS BIGINT) AS kept, CAST(SUM(counted) AS BIGINT) AS counted FROM (
                    SELECT tenant_id, \(unsafeRaw: kept.keys), n AS kept, 0 AS counted FROM \(unsafeRaw: kept.counts)
                    UNION ALL SELECT tenant_id, \(unsafeRaw: kept.rowKeys), 0 AS kept, COUNT(*) AS counted FROM \(unsafeRaw: kept.table)
                    GROUP BY tenant_id, \(unsafeRaw: kept.keys)
                ) AS tally GROUP BY tenant_id, \(unsafeRaw: kept.keys) HAVING SUM(kept) <> SUM(counted)
            ) AS drift JOIN tenants c ON c.id = drift.tenant_id
            ORDER BY c.name, c.id, \(unsafeRaw: kept.keyColumns.map { "drift." + $0 }.joined(separator: ", "))
            """).map { row in
            CountDrift(kept: kept, tenant: try row.string("tenant_id"), carrier: try carrier(row), status: try row.string("status"),
                       day: kept.day == nil ? nil : try row.string("day"), keptCount: try row.int64("kept"), rowCount: try row.int64("counted"))
        }
    }

    /// Counts again, from their rows, every kept count of a carrier whose
    /// counts drifted (a trigger dropped by hand, rows edited with triggers
    /// off), and says what it found. Writes wait meanwhile: on PostgreSQL the
    /// counted tables are locked against them, so no change made during the
    /// count is counted twice or missed.
    public func repairKeptCounts() async throws -> [String] {
        try await writeRows { db in
            if db.dialect == .postgres { try await db.execute("LOCK TABLE orders, trips IN SHARE MODE") }
            var repaired: [String] = []
            for kept in StatusCounts.all {
                let drift = try await Self.countDrift(kept, db)
                for tenant in Set(drift.map(\.tenant)).sorted() {
                    try await db.execute("DELETE FROM \(unsafeRaw: kept.counts) WHERE tenant_id = \(tenant)")
                    try await db.execute("""
                        INSERT INTO \(unsafeRaw: kept.counts) (tenant_id, \(unsafeRaw: kept.keys), n)
                        SELECT tenant_id, \(unsafeRaw: kept.rowKeys), COUNT(*) FROM \(unsafeRaw: kept.table) WHERE tenant_id = \(tenant)
                        GROUP BY tenant_id, \(unsafeRaw: kept.keys)
                        """)
                }
                repaired += drift.map { "\($0.description); counted again" }
            }
            return repaired
        }
    }
}
