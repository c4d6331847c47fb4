import Foundation
import VroomXModels

/// Drivers' positions: breadcrumbs stored once each, the last known
/// position, and the geofenced arrivals they make at pickup and delivery
/// stops; a trip's track and an order's progress for dispatch. What a batch
/// keeps and what counts as an arrival; the SQL is `LocationRepository`'s.
public struct LocationService: Sendable {
    let store: Store

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
    public func record(_ request: RecordLocationsRequest, _ scope: Scope) async throws -> RecordLocationsResult {
        guard let driver = scope.driverID else { throw AppError.forbidden("Only a driver records positions.") }
        guard !request.fixes.isEmpty else { throw AppError.validation("fixes", "Send at least one position.") }
        guard request.fixes.count <= LocationRules.maxFixesPerBatch else {
            throw AppError.validation("fixes", "Send at most \(LocationRules.maxFixesPerBatch) positions at a time.")
        }
        let now = store.now
        var usable: [Date: GeoPosition] = [:]
        var dropped = 0, repeated = 0, future = 0
        let oldest = now.addingTimeInterval(-store.locationRetention)
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
        let placement = try await store.read { db in try await self.placement(of: driver, tenant: scope.tenant, near: fixes, db) }
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
        let mayDepart = placement.onSite.contains { $0.leftBy(fixes) }
        let result = try await store.write(tenant: scope.tenant) { tx in
            let stored = try await LocationRepository.insertFixes(fixes, driver: driver, trip: trip, tx)
            try await LocationRepository.advancePosition(of: driver, to: newest, trip: trip, tx)
            let arrivals = stored > 0 && mayArrive ? try await markArrivals(driver: driver, batch: fixes, tx) : []
            if stored > 0, mayDepart || !arrivals.isEmpty { try await markDepartures(driver: driver, batch: fixes, tx) }
            return RecordLocationsResult(stored: stored, duplicates: fixes.count - stored + repeated, dropped: dropped, future: future,
                                         arrivals: arrivals)
        }
        ServerMetrics.locationFixes.increment(by: result.stored)
        return result
    }

    struct Placement {
        var active: Bool
        /// The trip under way, or else the last one completed.
        var trip: ID<Trip>?
        /// When that last trip ended (nil while one is under way).
        var tripEndedAt: Date?
        /// The fences of stops the driver may still arrive at.
        var fences: [Geofence]
        /// The fences of stops the truck arrived at and has not left.
        var onSite: [Geofence] = []
    }

    private func placement(of driver: ID<Driver>, tenant: ID<Tenant>, near fixes: [GeoPosition], _ db: any SQLExecutor) async throws -> Placement {
        guard let me = try await DriverRepository.find(driver, tenant: tenant, db), me.deactivatedAt == nil else {
            return Placement(active: false, trip: nil, tripEndedAt: nil, fences: [])
        }
        if let underWay = try await LocationRepository.tripUnderWay(of: driver, tenant: tenant, db) {
            let fences = try await LocationRepository.arrivalCandidates(driver: driver, tenant: tenant, near: fixes, db).flatMap { order in
                Self.stopsToArrive(order).compactMap { Geofence(order.stop($0)) }
            }
            return Placement(active: true, trip: underWay, tripEndedAt: nil, fences: fences, onSite: try await onSite(driver, tenant: tenant, db))
        }
        if let ended = try await LocationRepository.lastCompletedTrip(of: driver, tenant: tenant, db) {
            return Placement(active: true, trip: ended.trip, tripEndedAt: ended.endedAt, fences: [],
                             onSite: try await onSite(driver, tenant: tenant, db))
        }
        return Placement(active: true, trip: nil, tripEndedAt: nil, fences: [])
    }

    /// The fences of the stops the driver's truck is at (arrived, not seen leaving).
    private func onSite(_ driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Geofence] {
        try await LocationRepository.onSite(driver: driver, tenant: tenant, since: store.now.addingTimeInterval(-Self.onSiteFor), db)
            .flatMap { order in StopKind.allCases.filter { order.arrived(at: $0) != nil && order.departed(from: $0) == nil }
                .compactMap { Geofence(order.stop($0)) } }
    }

    /// How long after its last change an order is still looked at for the
    /// truck leaving a stop (a phone that stopped sending at the stop).
    static let onSiteFor: TimeInterval = 2 * 86_400

    /// Marks when the truck left the stops it arrived at: the first fix
    /// beyond the fence after which it stayed out (`Geofence.departure`),
    /// judged on the stored fixes around the batch.
    private func markDepartures(driver: ID<Driver>, batch: [GeoPosition], _ tx: TenantTransaction) async throws {
        guard let first = batch.first, let last = batch.last else { return }
        let orders = try await LocationRepository.onSite(driver: driver, tenant: tx.tenant, since: tx.now.addingTimeInterval(-Self.onSiteFor), tx.db)
        guard !orders.isEmpty else { return }
        let span = first.recordedAt.addingTimeInterval(-Self.arrivalLookback)...last.recordedAt.addingTimeInterval(Self.arrivalLookback)
        let around = try await LocationRepository.fixes(of: driver, tenant: tx.tenant, in: span, limit: Self.arrivalFixLimit, tx.db)
        for var order in orders {
            let original = order
            for kind in StopKind.allCases where order.departed(from: kind) == nil {
                guard let arrived = order.arrived(at: kind), let fence = Geofence(order.stop(kind)),
                      let departed = fence.departure(after: arrived, in: around) else { continue }
                if kind == .pickup { order.departedPickupAt = departed } else { order.departedDeliveryAt = departed }
            }
            if order != original { _ = try await store.orders.save(order, from: original, tx) }
        }
    }

    /// A pickup until the vehicle is delivered, a delivery once it is on the truck.
    static func stopsToArrive(_ order: Order) -> [StopKind] {
        order.status == .assigned ? [.pickup] : [.pickup, .delivery]
    }

    static func validFix(_ fix: GeoPosition, field: String, now: Date) throws -> GeoPosition {
        _ = try Validate.point(fix.point, field: field)
        guard let accuracy = fix.accuracyMeters, FieldLimits.fixAccuracy.allows(accuracy) else {
            throw AppError.validation("\(field).accuracy_meters", "\(field).accuracy_meters is metres, 0 to 100000.")
        }
        if let speed = fix.speedMetersPerSecond, !FieldLimits.fixSpeed.allows(speed) {
            throw AppError.validation("\(field).speed_meters_per_second", "\(field).speed_meters_per_second is 0 to 150.")
        }
        if let heading = fix.heading, !FieldLimits.fixHeading.allows(heading) {
            throw AppError.validation("\(field).heading", "\(field).heading is degrees, 0 to 360.")
        }
        var valid = fix
        valid.recordedAt = try Validate.pastInstant(fix.recordedAt, field: "\(field).recorded_at", now: now, skew: LocationRules.futureSkew)
        return valid
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
        let open = try await LocationRepository.arrivalCandidates(driver: driver, tenant: tx.tenant, near: batch, tx.db)
        var around: [GeoPosition]?
        var arrivals: [StopArrival] = []
        for var order in open {
            let original = order
            for kind in Self.stopsToArrive(order) {
                let marked = order.arrived(at: kind)
                if let marked, first.recordedAt >= marked { continue }
                guard let fence = Geofence(order.stop(kind)), fence.touches(batch) else { continue }
                if around == nil {
                    let span = first.recordedAt.addingTimeInterval(-Self.arrivalLookback)...last.recordedAt.addingTimeInterval(Self.arrivalLookback)
                    around = try await LocationRepository.fixes(of: driver, tenant: tx.tenant, in: span, limit: Self.arrivalFixLimit, tx.db)
                }
                let since = (around ?? batch).filter { $0.recordedAt >= order.createdAt.addingTimeInterval(-LocationRules.arrivalLeadTime) }
                guard let arrivedAt = fence.arrival(in: since), marked.map({ arrivedAt < $0 }) ?? true else { continue }
                if kind == .pickup { order.arrivedAtPickup = arrivedAt } else { order.arrivedAtDelivery = arrivedAt }
                arrivals.append(StopArrival(orderID: order.id, stop: kind, arrivedAt: arrivedAt))
            }
            // One save per order: its version moves once, and the feed tells dispatch (and the driver).
            if order != original { _ = try await store.orders.save(order, from: original, tx) }
        }
        return arrivals
    }

    /// Each driver's last known position, newest first.
    public func positions(tenant: ID<Tenant>) async throws -> [DriverPosition] {
        try await store.read { try await LocationRepository.positions(tenant: tenant, $0) }
    }

    /// A trip's breadcrumbs in time order, at most `LocationRules.maxTrackPoints`.
    public func track(of tripID: ID<Trip>, tenant: ID<Tenant>) async throws -> TripTrack {
        try await store.read { db in
            guard let trip = try await TripRepository.find(tripID, .dispatch(tenant: tenant), db) else { throw AppError.notFound("Trip") }
            let span = try await LocationRepository.trackSpan(of: tripID, tenant: tenant, db)
            guard span.count > LocationRules.maxTrackPoints, let first = span.first, let last = span.last else {
                let fixes = try await LocationRepository.trackFixes(tripID, tenant: tenant, since: nil, limit: LocationRules.maxTrackPoints, db)
                return TripTrack(tripID: tripID, driverID: trip.driverID, fixes: fixes, truncated: false)
            }
            // Too many to send: the first fix of each of evenly spaced slices of time, start to end.
            let slice = max(1, (last - first) / Int64(LocationRules.maxTrackPoints) + 1)
            let fixes = try await LocationRepository.sampledTrack(of: tripID, tenant: tenant, first: first, slice: slice,
                                                                  limit: LocationRules.maxTrackPoints + 1, db)
            return TripTrack(tripID: tripID, driverID: trip.driverID, fixes: Array(fixes.prefix(LocationRules.maxTrackPoints)),
                             truncated: true)
        }
    }

    /// Those of `trips` a driver shared a position on since `since` (the others have no track to read).
    func tripsWithFixes(_ trips: [ID<Trip>], since: Date, tenant: ID<Tenant>) async throws -> Set<ID<Trip>> {
        try await store.read { try await LocationRepository.tripsWithFixes(trips, since: since, tenant: tenant, $0) }
    }

    /// A trip's latest fixes since an instant (the map's last day), at most 2,000, in time order.
    public func track(of tripID: ID<Trip>, tenant: ID<Tenant>, since: Date) async throws -> [GeoPosition] {
        try await store.read { db in
            try await LocationRepository.trackFixes(tripID, tenant: tenant, since: since, limit: 2_000, newest: true, db).reversed()
        }
    }

    /// Where an order's driver is against its next stop: distance, and an
    /// arrival computed from the last position and recent speed (none
    /// without a position of the last 6 hours or the stop's coordinates).
    public func progress(of id: ID<Order>, tenant: ID<Tenant>) async throws -> OrderProgress {
        let order = try await store.orders.order(id, .dispatch(tenant: tenant))
        let next = order.nextStop
        var progress = OrderProgress(orderID: order.id, nextStop: next, position: nil, distanceMeters: nil, computedETA: nil,
                                     driverETA: next == .pickup ? order.pickupETA : next == .delivery ? order.deliveryETA : nil,
                                     arrivedAtPickup: order.arrivedAtPickup, arrivedAtDelivery: order.arrivedAtDelivery)
        guard let driver = order.driverID, next != nil else { return progress }
        let recent = try await store.read { try await LocationRepository.latestFixes(of: driver, tenant: tenant, limit: 60, $0) }
        guard let position = recent.first, store.now.timeIntervalSince(position.recordedAt) < 6 * 3600 else { return progress }
        progress.position = position
        guard let next, let target = order.stop(next).location else { return progress }
        progress.distanceMeters = position.point.distance(to: target)
        progress.computedETA = Self.computedETA(of: order, recent: recent, now: store.now)
        return progress
    }

    /// When the truck reaches the order's next stop, from its latest fixes
    /// (newest first) and recent speed: nil without a position of the last
    /// 6 hours, without the stop's coordinates, or once there.
    static func computedETA(of order: Order, recent: [GeoPosition], now: Date) -> Date? {
        guard let next = order.nextStop, order.arrived(at: next) == nil, let target = order.stop(next).location,
              let position = recent.first, now.timeIntervalSince(position.recordedAt) < 6 * 3600 else { return nil }
        let lastHalfHour = recent.filter { position.recordedAt.timeIntervalSince($0.recordedAt) <= 1800 }
        return ComputedETA.estimate(from: position, to: target, recentSpeed: ComputedETA.recentSpeed(lastHalfHour), now: now)
    }

    /// Deletes breadcrumbs recorded before the retention (last positions stay).
    public func pruneFixes(olderThan retention: TimeInterval) async throws {
        let cutoff = store.now.addingTimeInterval(-retention)
        // In slices, so a large backlog never holds the writer for long.
        while try await store.writeRows({ try await LocationRepository.pruneFixes(before: cutoff, $0) }) == 10_000 {}
    }
}

extension Store {
    /// Drivers' positions, arrivals, tracks and orders' progress.
    public var location: LocationService { LocationService(store: self) }
}
