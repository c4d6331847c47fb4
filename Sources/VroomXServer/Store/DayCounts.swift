import VroomXModels

/// Where the row `offset` rows into a list sorted by a date stands, from the
/// list's counts by day (`StatusCounts.orderDays`, `.tripDays`), added up in
/// the database: the page there is read from its day on, stepping over at
/// most that day's rows, not every row before it.
struct DayCounts {
    /// The day it falls on, and how many of that day's rows come before it; nil past every dated row.
    var start: (day: String, within: Int)?
    /// The list's rows with a date, and without one (they come last either way).
    var dated: Int
    var undated: Int

    /// `statuses` is the list's condition on the counts' `status`; the days are
    /// walked `ascending` or newest first.
    static func position(_ offset: Int, in kept: StatusCounts, _ statuses: SQL, ascending: Bool, tenant: ID<Tenant>,
                         _ db: any SQLExecutor) async throws -> DayCounts {
        let direction: SQL = ascending ? "ASC" : "DESC"
        let counts: SQL = "FROM \(unsafeRaw: kept.counts) WHERE tenant_id = \(tenant) AND " + statuses
        let totals = try await db.first("""
            SELECT CAST(COALESCE(SUM(CASE WHEN day <> '' THEN n ELSE 0 END), 0) AS BIGINT) AS dated,
                   CAST(COALESCE(SUM(CASE WHEN day = '' THEN n ELSE 0 END), 0) AS BIGINT) AS undated \(counts)
            """)
        var position = DayCounts(dated: try totals?.int("dated") ?? 0, undated: try totals?.int("undated") ?? 0)
        guard offset < position.dated else { return position }
        if let row = try await db.first("""
            SELECT day, CAST(running - n AS BIGINT) AS before FROM (
                SELECT day, n, SUM(n) OVER (ORDER BY day \(direction) ROWS UNBOUNDED PRECEDING) AS running FROM (
                    SELECT day, SUM(n) AS n \(counts) AND day <> '' GROUP BY day
                ) AS days
            ) AS tally WHERE running > \(offset) ORDER BY day \(direction) LIMIT 1
            """) {
            position.start = (try row.string("day"), max(0, offset - (try row.int("before"))))
        }
        return position
    }
}
