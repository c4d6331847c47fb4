import Foundation
import VroomXModels

// Drivers' positions: breadcrumbs stored once each, the last known position,
// and the geofenced arrivals they make at pickup and delivery stops.

extension GeoPosition {
    static let columns: SQL = "recorded_at, latitude, longitude, accuracy_m, speed_mps, heading"

    init(row: SQLRow) throws {
        self.init(latitude: try row.double("latitude"), longitude: try row.double("longitude"),
                  accuracyMeters: try row.double("accuracy_m"), recordedAt: try row.date("recorded_at"),
                  speedMetersPerSecond: try row.optionalDouble("speed_mps"), heading: try row.optionalDouble("heading"))
    }
}

extension Store {
    /// How far around a batch the stored fixes are read again to judge an
    /// arrival: a stay begun before the batch, or continued by fixes that
    /// arrived before it (a phone that was offline sends late).
    static let arrivalLookback: TimeInterval = 2 * 3600
    /// Fixes are kept one per second at most, so the window around a batch
    /// (its span plus the lookback each side) holds at most this many.
    static let arrivalFixLimit = Int(LocationRules.maxBatchSpan + 2 * arrivalLookback) + LocationRules.maxFixesPerBatch

    /// Stores a driver's fixes (one per second: a batch sent again adds
    /// nothing), moves their last position forward, and marks the stops of
    /// their orders they have arrived at. Fixes are judged in the order they
    /// were recorded, whenever they arrive. Positions belong to a trip: with
    /// none under way, only fixes recorded before the driver's last trip
    /// ended are kept (a phone that was offline); the rest are left out.
    public func recordLocations(_ request: RecordLocationsRequest, _ scope: Scope) async throws -> RecordLocationsResult {
        guard let driver = scope.driverID else { throw AppError.forbidden("Only a driver records positions.") }
        guard !request.fixes.isEmpty else { throw AppError.validation("fixes", "Send at least one position.") }
        guard request.fixes.count <= LocationRules.maxFixesPerBatch else {
            throw AppError.validation("fixes", "Send at most \(LocationRules.maxFixesPerBatch) positions at a time.")
        }
        let now = self.now
        var usable: [Date: GeoPosition] = [:]
        var dropped = 0, repeated = 0, future = 0
        let oldest = now.addingTimeInterval(-locationRetention)
        for (index, raw) in request.fixes.enumerated() {
            // A fix stamped ahead of the server's clock is left out and counted, never the whole batch refused:
            // a phone whose clock runs fast would otherwise lose every batch that holds one.
            if raw.recordedAt > now.addingTimeInterval(LocationRules.futureSkew) { future += 1; continue }
            // Nor is a batch refused for a fix stamped by a clock reset to 1970: that fix is left out.
            if raw.recordedAt < oldest { dropped += 1; continue }
            var fix = try Self.validFix(raw, field: "fixes[\(index)]", now: now)
            // Older than what is kept, or too inaccurate to say where the truck is.
            if !LocationRules.isUsable(fix) || fix.recordedAt < oldest { dropped += 1; continue }
            fix.recordedAt = LocationRules.second(of: fix.recordedAt)
            if usable[fix.recordedAt] != nil { repeated += 1 } else { usable[fix.recordedAt] = fix }
        }
        var fixes = usable.values.sorted { $0.recordedAt < $1.recordedAt }
        // A batch spans a few hours at most (arrivals are judged over it): the newest hours are kept, older fixes left out.
        if let last = fixes.last {
            let before = fixes.count
            fixes.removeAll { last.recordedAt.timeIntervalSince($0.recordedAt) > LocationRules.maxBatchSpan }
            dropped += before - fixes.count
        }
        // Who, which trip, which fences: read before the write, which then only stores (the writer is shared;
        // a deactivation racing this batch at worst keeps its positions).
        let placement = try await read { db in try await self.placement(of: driver, tenant: scope.tenant, db) }
        guard placement.active else { throw AppError.accountDeactivated }
        if let endedAt = placement.tripEndedAt {
            // Recorded while that trip ran, sent after it ended: they are that trip's.
            let before = fixes.count
            fixes.removeAll { $0.recordedAt > endedAt }
            dropped += before - fixes.count
        }
        guard let newest = fixes.last, let trip = placement.trip else {
            return RecordLocationsResult(stored: 0, duplicates: repeated, dropped: dropped + fixes.count, future: future, arrivals: [])
        }
        let mayArrive = placement.fences.contains { $0.touches(fixes) }
        return try await write(tenant: scope.tenant) { tx in
            let stored = try await insertFixes(fixes, driver: driver, trip: trip, tx)
            try await tx.execute("""
                INSERT INTO driver_positions (tenant_id, driver_id, recorded_at, trip_id, latitude, longitude, accuracy_m, speed_mps, heading)
                VALUES (\(tx.tenant), \(driver), \(newest.recordedAt), \(trip), \(newest.latitude), \(newest.longitude),
                        \(newest.accuracyMeters), \(newest.speedMetersPerSecond), \(newest.heading))
                ON CONFLICT (tenant_id, driver_id) DO UPDATE SET recorded_at = excluded.recorded_at, trip_id = excluded.trip_id,
                    latitude = excluded.latitude, longitude = excluded.longitude, accuracy_m = excluded.accuracy_m,
                    speed_mps = excluded.speed_mps, heading = excluded.heading
                WHERE driver_positions.recorded_at < excluded.recorded_at
                """)
            let arrivals = stored > 0 && mayArrive ? try await markArrivals(driver: driver, batch: fixes, tx) : []
            return RecordLocationsResult(stored: stored, duplicates: fixes.count - stored + repeated, dropped: dropped, future: future,
                                         arrivals: arrivals)
        }
    }

    struct Placement {
        var active: Bool
        /// The trip under way, or else the last one completed.
        var trip: ID<Trip>?
        /// When that last trip ended (nil while one is under way).
        var tripEndedAt: Date?
        /// The fences of stops the driver may still arrive at.
        var fences: [Geofence]
    }

    private func placement(of driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Placement {
        guard let me = try await DriverRepository.find(driver, tenant: tenant, db), me.deactivatedAt == nil else {
            return Placement(active: false, trip: nil, tripEndedAt: nil, fences: [])
        }
        if let underWay = try await db.first("""
            SELECT id FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND status = 'in_progress' ORDER BY start_date, id LIMIT 1
            """) {
            let fences = try await Self.arrivalCandidates(driver: driver, tenant: tenant, db).flatMap { order in
                Self.stopsToArrive(order).compactMap { Geofence(order.stop($0)) }
            }
            return Placement(active: true, trip: try underWay.id("id"), tripEndedAt: nil, fences: fences)
        }
        if let ended = try await db.first("""
            SELECT id, updated_at FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND status = 'completed'
            ORDER BY updated_at DESC LIMIT 1
            """) {
            return Placement(active: true, trip: try ended.id("id"), tripEndedAt: try ended.date("updated_at"), fences: [])
        }
        return Placement(active: true, trip: nil, tripEndedAt: nil, fences: [])
    }

    /// The driver's orders on trips under way with a stop still to arrive at.
    static func arrivalCandidates(driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Order] {
        try await db.query("""
            SELECT \(Order.columns) FROM orders
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND status IN ('assigned', 'picked_up')
            AND (pickup_latitude IS NOT NULL OR delivery_latitude IS NOT NULL)
            AND trip_id IN (SELECT id FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND status = 'in_progress')
            ORDER BY id LIMIT 200
            """).map(Order.init(row:))
    }

    /// A pickup until the vehicle is delivered, a delivery once it is on the truck.
    static func stopsToArrive(_ order: Order) -> [StopKind] {
        order.status == .assigned ? [.pickup] : [.pickup, .delivery]
    }

    static func validFix(_ fix: GeoPosition, field: String, now: Date) throws -> GeoPosition {
        _ = try Validate.point(fix.point, field: field)
        guard let accuracy = fix.accuracyMeters, accuracy.isFinite, (0...100_000).contains(accuracy) else {
            throw AppError.validation("\(field).accuracy_meters", "\(field).accuracy_meters is metres, 0 to 100000.")
        }
        if let speed = fix.speedMetersPerSecond, !(speed.isFinite && (0...150).contains(speed)) {
            throw AppError.validation("\(field).speed_meters_per_second", "\(field).speed_meters_per_second is 0 to 150.")
        }
        if let heading = fix.heading, !(heading.isFinite && (0...360).contains(heading)) {
            throw AppError.validation("\(field).heading", "\(field).heading is degrees, 0 to 360.")
        }
        var valid = fix
        valid.recordedAt = try Validate.pastInstant(fix.recordedAt, field: "\(field).recorded_at", now: now, skew: LocationRules.futureSkew)
        return valid
    }

    /// Inserts the fixes the table does not have yet; returns how many.
    private func insertFixes(_ fixes: [GeoPosition], driver: ID<Driver>, trip: ID<Trip>?, _ tx: TenantTransaction) async throws -> Int {
        var stored = 0
        // A few hundred rows per statement keeps within both databases' parameter limits.
        for chunk in stride(from: 0, to: fixes.count, by: 100).map({ fixes[$0..<min($0 + 100, fixes.count)] }) {
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

    /// The stops of the driver's orders on trips under way that this batch
    /// may have reached (a pickup until the vehicle is delivered, a delivery
    /// once it is on the truck): each is judged on the stored fixes around
    /// the batch, in time order, counting only fixes from shortly before the
    /// order was made (a driver already waiting at the yard when dispatch
    /// enters it) on. An arrival already marked moves earlier when a late batch shows
    /// the stay began before it.
    private func markArrivals(driver: ID<Driver>, batch: [GeoPosition], _ tx: TenantTransaction) async throws -> [StopArrival] {
        guard let first = batch.first, let last = batch.last else { return [] }
        let open = try await Self.arrivalCandidates(driver: driver, tenant: tx.tenant, tx.db)
        var around: [GeoPosition]?
        var arrivals: [StopArrival] = []
        for var order in open {
            let original = order
            for kind in Self.stopsToArrive(order) {
                let marked = order.arrived(at: kind)
                if let marked, first.recordedAt >= marked { continue }
                guard let fence = Geofence(order.stop(kind)), fence.touches(batch) else { continue }
                if around == nil {
                    around = try await tx.query("""
                        SELECT \(GeoPosition.columns) FROM location_fixes
                        WHERE tenant_id = \(tx.tenant) AND driver_id = \(driver)
                        AND recorded_at BETWEEN \(first.recordedAt.addingTimeInterval(-Self.arrivalLookback))
                            AND \(last.recordedAt.addingTimeInterval(Self.arrivalLookback))
                        ORDER BY recorded_at LIMIT \(Self.arrivalFixLimit)
                        """).map(GeoPosition.init(row:))
                }
                let since = (around ?? batch).filter { $0.recordedAt >= order.createdAt.addingTimeInterval(-LocationRules.arrivalLeadTime) }
                guard let arrivedAt = fence.arrival(in: since), marked.map({ arrivedAt < $0 }) ?? true else { continue }
                if kind == .pickup { order.arrivedAtPickup = arrivedAt } else { order.arrivedAtDelivery = arrivedAt }
                arrivals.append(StopArrival(orderID: order.id, stop: kind, arrivedAt: arrivedAt))
            }
            // One save per order: its version moves once, and the feed tells dispatch (and the driver).
            if order != original { _ = try await orders.save(order, from: original, tx) }
        }
        return arrivals
    }

    /// Each driver's last known position, newest first.
    public func positions(tenant: ID<Tenant>) async throws -> [DriverPosition] {
        try await read { db in
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
    }

    /// A trip's breadcrumbs in time order, at most `LocationRules.maxTrackPoints`.
    public func track(of tripID: ID<Trip>, tenant: ID<Tenant>) async throws -> TripTrack {
        try await read { db in
            guard let trip = try await db.first("SELECT driver_id FROM trips WHERE tenant_id = \(tenant) AND id = \(tripID)") else {
                throw AppError.notFound("Trip")
            }
            let span = try await db.first("""
                SELECT COUNT(*) AS fixes, MIN(recorded_at) AS first, MAX(recorded_at) AS last FROM location_fixes
                WHERE tenant_id = \(tenant) AND trip_id = \(tripID)
                """)
            let count = try span?.int("fixes") ?? 0
            guard count > LocationRules.maxTrackPoints, let first = try span?.int64("first"), let last = try span?.int64("last") else {
                let fixes = try await Self.trackFixes(tripID, tenant: tenant, since: nil, limit: LocationRules.maxTrackPoints, db)
                return TripTrack(tripID: tripID, driverID: try trip.optionalID("driver_id"), fixes: fixes, truncated: false)
            }
            // Too many to send: the first fix of each of evenly spaced slices of time, start to end.
            let slice = max(1, (last - first) / Int64(LocationRules.maxTrackPoints) + 1)
            let fixes = try await db.query("""
                SELECT \(GeoPosition.columns) FROM location_fixes WHERE tenant_id = \(tenant) AND trip_id = \(tripID)
                AND recorded_at IN (SELECT MIN(recorded_at) FROM location_fixes WHERE tenant_id = \(tenant) AND trip_id = \(tripID)
                                    GROUP BY (recorded_at - \(first)) / \(slice))
                ORDER BY recorded_at LIMIT \(LocationRules.maxTrackPoints + 1)
                """).map(GeoPosition.init(row:))
            return TripTrack(tripID: tripID, driverID: try trip.optionalID("driver_id"), fixes: Array(fixes.prefix(LocationRules.maxTrackPoints)),
                             truncated: true)
        }
    }

    /// A trip's latest fixes since an instant (the map's last day), at most 2,000, in time order.
    public func track(of tripID: ID<Trip>, tenant: ID<Tenant>, since: Date) async throws -> [GeoPosition] {
        try await read { db in try await Self.trackFixes(tripID, tenant: tenant, since: since, limit: 2_000, newest: true, db).reversed() }
    }

    private static func trackFixes(_ trip: ID<Trip>, tenant: ID<Tenant>, since: Date?, limit: Int, newest: Bool = false,
                                   _ db: any SQLExecutor) async throws -> [GeoPosition] {
        try await db.query("""
            SELECT \(GeoPosition.columns) FROM location_fixes WHERE tenant_id = \(tenant) AND trip_id = \(trip)
            AND recorded_at >= \(since ?? Date(timeIntervalSince1970: 0)) ORDER BY recorded_at \(unsafeRaw: newest ? "DESC" : "ASC") LIMIT \(limit)
            """).map(GeoPosition.init(row:))
    }

    /// Where an order's driver is against its next stop: distance, and an
    /// arrival computed from the last position and recent speed (none
    /// without a position of the last 6 hours or the stop's coordinates).
    public func progress(of id: ID<Order>, tenant: ID<Tenant>) async throws -> OrderProgress {
        let order = try await orders.order(id, .dispatch(tenant: tenant))
        let next = order.nextStop
        var progress = OrderProgress(orderID: order.id, nextStop: next, position: nil, distanceMeters: nil, computedETA: nil,
                                     driverETA: next == .pickup ? order.pickupETA : next == .delivery ? order.deliveryETA : nil,
                                     arrivedAtPickup: order.arrivedAtPickup, arrivedAtDelivery: order.arrivedAtDelivery)
        guard let driver = order.driverID, next != nil else { return progress }
        let recent = try await read { db in
            try await db.query("""
                SELECT \(GeoPosition.columns) FROM location_fixes WHERE tenant_id = \(tenant) AND driver_id = \(driver)
                ORDER BY recorded_at DESC LIMIT 60
                """).map(GeoPosition.init(row:))
        }
        guard let position = recent.first, now.timeIntervalSince(position.recordedAt) < 6 * 3600 else { return progress }
        progress.position = position
        guard let next, let target = order.stop(next).location else { return progress }
        progress.distanceMeters = position.point.distance(to: target)
        guard order.arrived(at: next) == nil else { return progress }  // there already: nothing to estimate
        let lastHalfHour = recent.filter { position.recordedAt.timeIntervalSince($0.recordedAt) <= 1800 }
        progress.computedETA = ComputedETA.estimate(from: position, to: target, recentSpeed: ComputedETA.recentSpeed(lastHalfHour), now: now)
        return progress
    }

    /// Deletes breadcrumbs recorded before the retention (last positions stay).
    public func pruneLocationFixes(olderThan retention: TimeInterval) async throws {
        let cutoff = now.addingTimeInterval(-retention)
        // In slices, so a large backlog never holds the writer for long.
        while try await writeRows({ db in
            try await db.query("""
                DELETE FROM location_fixes WHERE (tenant_id, driver_id, recorded_at) IN (
                    SELECT tenant_id, driver_id, recorded_at FROM location_fixes WHERE recorded_at < \(cutoff) LIMIT 10000)
                RETURNING recorded_at
                """).count
        }) == 10_000 {}
    }
}
