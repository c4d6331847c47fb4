import Foundation
import VroomXModels

extension GeoPosition {
    static let columns: SQL = "recorded_at, latitude, longitude, accuracy_m, speed_mps, heading"

    init(row: SQLRow) throws {
        self.init(latitude: try row.double("latitude"), longitude: try row.double("longitude"),
                  accuracyMeters: try row.double("accuracy_m"), recordedAt: try row.date("recorded_at"),
                  speedMetersPerSecond: try row.optionalDouble("speed_mps"), heading: try row.optionalDouble("heading"))
    }
}

/// Drivers' positions in the database — breadcrumbs, the last known
/// position of each driver, what a trip's track reads — and the trips and
/// orders a batch of positions is judged against: the SQL and the row
/// mapping, nothing else.
enum LocationRepository {
    /// The driver's trip under way, if any (`trips_under_way`).
    static func tripUnderWay(of driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> ID<Trip>? {
        try await db.first(tripUnderWayQuery(of: driver, tenant: tenant))?.id("id")
    }

    static func tripUnderWayQuery(of driver: ID<Driver>, tenant: ID<Tenant>) -> SQL {
        "SELECT id FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND status = 'in_progress' ORDER BY start_date, id LIMIT 1"
    }

    /// The driver's last completed trip and when it ended.
    static func lastCompletedTrip(of driver: ID<Driver>, tenant: ID<Tenant>,
                                  _ db: any SQLExecutor) async throws -> (trip: ID<Trip>, endedAt: Date)? {
        guard let row = try await db.first("""
            SELECT id, updated_at FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND status = 'completed'
            ORDER BY updated_at DESC LIMIT 1
            """) else { return nil }
        return (try row.id("id"), try row.date("updated_at"))
    }

    /// The driver's orders on trips under way with a stop still to arrive
    /// at near a batch of fixes: every one with a stop whose widest fence
    /// could hold one of them (a yard with hundreds of vehicles waiting has
    /// them all), up to 10,000.
    static func arrivalCandidates(driver: ID<Driver>, tenant: ID<Tenant>, near fixes: [GeoPosition],
                                  _ db: any SQLExecutor) async throws -> [Order] {
        try await db.query(arrivalCandidatesQuery(driver: driver, tenant: tenant, near: fixes)).map(Order.init(row:))
    }

    /// From the driver's trips under way (`trips_under_way`) to their orders (`orders_by_trip`), in that order
    /// (SQLite's CROSS JOIN). Asked for the orders first, SQLite read every order of the carrier, in id order, on
    /// every batch of positions.
    static func arrivalCandidatesQuery(driver: ID<Driver>, tenant: ID<Tenant>, near fixes: [GeoPosition]) -> SQL {
        var nearby: SQL = ""
        if let box = ArrivalBox(around: fixes) {
            nearby = """
                AND ((o.pickup_latitude BETWEEN \(box.south) AND \(box.north) AND o.pickup_longitude BETWEEN \(box.west) AND \(box.east))
                  OR (o.delivery_latitude BETWEEN \(box.south) AND \(box.north) AND o.delivery_longitude BETWEEN \(box.west) AND \(box.east)))
                """
        }
        return """
            SELECT \(Order.columns) FROM (
                SELECT o.* FROM trips t CROSS JOIN orders o
                WHERE t.tenant_id = \(tenant) AND t.driver_id = \(driver) AND t.status = 'in_progress'
                AND o.tenant_id = t.tenant_id AND o.trip_id = t.id AND o.driver_id = \(driver) AND o.status IN ('assigned', 'picked_up')
                AND (o.pickup_latitude IS NOT NULL OR o.delivery_latitude IS NOT NULL) \(nearby)) AS near
            ORDER BY id LIMIT 10000
            """
    }

    /// The driver's orders whose truck arrived at a stop and was not seen
    /// leaving, changed since `since` (the partial index `orders_on_site`).
    static func onSite(driver: ID<Driver>, tenant: ID<Tenant>, since: Date, _ db: any SQLExecutor) async throws -> [Order] {
        try await db.query("""
            SELECT \(Order.columns) FROM orders
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND updated_at > \(since) AND (\(unsafeRaw: Schema.onSite))
            ORDER BY updated_at LIMIT 10000
            """).map(Order.init(row:))
    }

    /// The box of latitudes and longitudes around some fixes that holds
    /// every fence (its exit radius, at the largest radius a stop may have)
    /// one of them is inside; nil when it would cross a pole or the 180th
    /// meridian (then every open order is looked at).
    struct ArrivalBox {
        let south, north, west, east: Double

        init?(around fixes: [GeoPosition]) {
            guard let minLat = fixes.map(\.point.latitude).min(), let maxLat = fixes.map(\.point.latitude).max(),
                  let minLon = fixes.map(\.point.longitude).min(), let maxLon = fixes.map(\.point.longitude).max() else { return nil }
            // Metres to degrees, a little generously: 111,000 m a degree of latitude, fewer of longitude away from the equator.
            let reach = LocationRules.exitRadius(Double(LocationRules.radiusRange.upperBound)) * 1.1
            let latitudeMargin = reach / 111_000
            let widest = max(abs(minLat), abs(maxLat)) + latitudeMargin
            guard widest < 89 else { return nil }
            let longitudeMargin = reach / (111_000 * cos(widest * .pi / 180))
            guard minLon - longitudeMargin > -180, maxLon + longitudeMargin < 180 else { return nil }
            (south, north, west, east) = (minLat - latitudeMargin, maxLat + latitudeMargin, minLon - longitudeMargin, maxLon + longitudeMargin)
        }
    }

    /// Inserts the fixes the table does not have yet; returns how many.
    static func insertFixes(_ fixes: [GeoPosition], driver: ID<Driver>, trip: ID<Trip>?, _ tx: TenantTransaction) async throws -> Int {
        var stored = 0
        for chunk in fixes.chunks(of: fixesPerStatement(tx.dialect)) {
            let values = SQL.joined(chunk.map { fix in
                "(\(tx.tenant), \(driver), \(fix.recordedAt), \(trip), \(fix.latitude), \(fix.longitude), \(fix.accuracyMeters), \(fix.speedMetersPerSecond), \(fix.heading), \(tx.now))"
            }, separator: ", ")
            stored += try await tx.query("""
                INSERT INTO location_fixes (tenant_id, driver_id, recorded_at, trip_id, latitude, longitude, accuracy_m, speed_mps, heading, received_at)
                VALUES \(values)
                ON CONFLICT (tenant_id, driver_id, recorded_at) DO NOTHING
                RETURNING recorded_at
                """).count
        }
        return stored
    }

    /// Rows an insert of fixes holds (ten values each). SQLite keeps statements of up to `maxCachedBinds` values
    /// prepared: preparing one of twenty rows each batch cost more than the inserting (510,000 instructions). A
    /// PostgreSQL statement is a round trip: a hundred rows, within both databases' parameter limits.
    static func fixesPerStatement(_ dialect: SQLDialect) -> Int {
        dialect == .sqlite ? SQLiteConnection.maxCachedBinds / 10 : 100
    }

    /// Moves the driver's last known position forward (never back).
    static func advancePosition(of driver: ID<Driver>, to newest: GeoPosition, trip: ID<Trip>, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO driver_positions (tenant_id, driver_id, recorded_at, trip_id, latitude, longitude, accuracy_m, speed_mps, heading)
            VALUES (\(tx.tenant), \(driver), \(newest.recordedAt), \(trip), \(newest.latitude), \(newest.longitude),
                    \(newest.accuracyMeters), \(newest.speedMetersPerSecond), \(newest.heading))
            ON CONFLICT (tenant_id, driver_id) DO UPDATE SET recorded_at = excluded.recorded_at, trip_id = excluded.trip_id,
                latitude = excluded.latitude, longitude = excluded.longitude, accuracy_m = excluded.accuracy_m,
                speed_mps = excluded.speed_mps, heading = excluded.heading
            WHERE driver_positions.recorded_at < excluded.recorded_at
            """)
    }

    /// A driver's stored fixes within a span, in time order, at most `limit`.
    static func fixes(of driver: ID<Driver>, tenant: ID<Tenant>, in span: ClosedRange<Date>, limit: Int,
                      _ db: any SQLExecutor) async throws -> [GeoPosition] {
        try await db.query("""
            SELECT \(GeoPosition.columns) FROM location_fixes
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND recorded_at BETWEEN \(span.lowerBound) AND \(span.upperBound)
            ORDER BY recorded_at LIMIT \(limit)
            """).map(GeoPosition.init(row:))
    }

    /// Each driver's last known position, newest first (deactivated drivers left out).
    static func positions(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [DriverPosition] {
        try await db.query("""
            SELECT p.driver_id, p.trip_id, d.name, p.recorded_at, p.latitude, p.longitude, p.accuracy_m, p.speed_mps, p.heading
            FROM driver_positions p JOIN drivers d ON d.tenant_id = p.tenant_id AND d.id = p.driver_id
            WHERE p.tenant_id = \(tenant) AND d.deactivated_at IS NULL
            ORDER BY p.recorded_at DESC LIMIT 5000
            """).map { row in
            DriverPosition(driverID: try row.id("driver_id"), driverName: try row.string("name"), tripID: try row.optionalID("trip_id"),
                           fix: try GeoPosition(row: row))
        }
    }

    /// A driver's latest fixes, newest first.
    static func latestFixes(of driver: ID<Driver>, tenant: ID<Tenant>, limit: Int, _ db: any SQLExecutor) async throws -> [GeoPosition] {
        try await db.query("""
            SELECT \(GeoPosition.columns) FROM location_fixes WHERE tenant_id = \(tenant) AND driver_id = \(driver)
            ORDER BY recorded_at DESC LIMIT \(limit)
            """).map(GeoPosition.init(row:))
    }

    /// How many fixes a trip has, and its first and last (milliseconds).
    static func trackSpan(of trip: ID<Trip>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> (count: Int, first: Int64?, last: Int64?) {
        let span = try await db.first("""
            SELECT COUNT(*) AS fixes, MIN(recorded_at) AS first, MAX(recorded_at) AS last FROM location_fixes
            WHERE tenant_id = \(tenant) AND trip_id = \(trip)
            """)
        return (try span?.int("fixes") ?? 0, try span?.optionalInt64("first"), try span?.optionalInt64("last"))
    }

    /// The first fix of each slice of `slice` milliseconds from `first`, in time order, at most `limit`.
    static func sampledTrack(of trip: ID<Trip>, tenant: ID<Tenant>, first: Int64, slice: Int64, limit: Int,
                             _ db: any SQLExecutor) async throws -> [GeoPosition] {
        try await db.query("""
            SELECT \(GeoPosition.columns) FROM location_fixes WHERE tenant_id = \(tenant) AND trip_id = \(trip)
            AND recorded_at IN (SELECT MIN(recorded_at) FROM location_fixes WHERE tenant_id = \(tenant) AND trip_id = \(trip)
                                GROUP BY (recorded_at - \(first)) / \(slice))
            ORDER BY recorded_at LIMIT \(limit)
            """).map(GeoPosition.init(row:))
    }

    static func trackFixes(_ trip: ID<Trip>, tenant: ID<Tenant>, since: Date?, limit: Int, newest: Bool = false,
                                   _ db: any SQLExecutor) async throws -> [GeoPosition] {
        try await db.query("""
            SELECT \(GeoPosition.columns) FROM location_fixes WHERE tenant_id = \(tenant) AND trip_id = \(trip)
            AND recorded_at >= \(since ?? Date(timeIntervalSince1970: 0)) ORDER BY recorded_at \(unsafeRaw: newest ? "DESC" : "ASC") LIMIT \(limit)
            """).map(GeoPosition.init(row:))
    }

    /// Those of `trips` with a breadcrumb recorded since `since`, in one read of `location_fixes_by_trip`.
    static func tripsWithFixes(_ trips: [ID<Trip>], since: Date, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Set<ID<Trip>> {
        guard !trips.isEmpty else { return [] }
        return Set(try await db.query("""
            SELECT t.id FROM trips t WHERE t.tenant_id = \(tenant) AND t.id IN (\(SQL.list(trips)))
            AND EXISTS (SELECT 1 FROM location_fixes f WHERE f.tenant_id = t.tenant_id AND f.trip_id = t.id AND f.recorded_at >= \(since))
            """).map { try $0.id("id") })
    }

    /// Deletes up to 10,000 breadcrumbs recorded before `cutoff`; how many went.
    static func pruneFixes(before cutoff: Date, _ db: any SQLExecutor) async throws -> Int {
        try await db.query("""
            DELETE FROM location_fixes WHERE (tenant_id, driver_id, recorded_at) IN (\(prunable(before: cutoff)))
            RETURNING recorded_at
            """).count
    }

    /// The keys of up to 10,000 breadcrumbs recorded before `cutoff`, from the index by age. (Dropping that index
    /// and going driver by driver through the key measured no faster ingest: its entries are appended at one end.)
    static func prunable(before cutoff: Date) -> SQL {
        "SELECT tenant_id, driver_id, recorded_at FROM location_fixes WHERE recorded_at < \(cutoff) LIMIT 10000"
    }
}
