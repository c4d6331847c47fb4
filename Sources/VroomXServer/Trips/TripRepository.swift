import Foundation
import VroomXModels

/// Trips in the database: the SQL and the row mapping, nothing else. Callers
/// pass the connection or transaction; policy lives in `TripService`.
enum TripRepository {
    static func filter(_ scope: Scope, status: TripStatus?) -> SQL {
        guard let status else { return scope.filter() }
        // An open status also names the condition of `trips_open`: SQLite reads a partial index only for a query
        // that repeats its condition (else all the carrier's trips were read for the few under way).
        let open: SQL = status == .planned || status == .inProgress ? " AND \(unsafeRaw: Schema.tripOpen)" : ""
        return scope.filter() + " AND status = \(status)" + open
    }

    static func all(_ scope: Scope, status: TripStatus?, _ db: any SQLExecutor) async throws -> [Trip] {
        try await db.query("SELECT \(Trip.columns) FROM trips WHERE \(filter(scope, status: status)) ORDER BY \(Trip.order.sql)")
            .map(Trip.init(row:))
    }

    static func some(_ ids: [ID<Trip>], tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Trip] {
        var found: [Trip] = []
        for chunk in ids.chunks(of: 400) {
            found += try await db.query("SELECT \(Trip.columns) FROM trips WHERE tenant_id = \(tenant) AND id IN (\(SQL.list(chunk)))")
                .map(Trip.init(row:))
        }
        return found
    }

    /// The carrier's trips whose numbers are these in any letter case (`lower`, as numbers are kept distinct),
    /// from the index `trips_by_folded_number`.
    /// Each trip once, however many of the numbers name it.
    static func numbered(_ numbers: [String], tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Trip] {
        var found: [ID<Trip>: Trip] = [:]
        for chunk in numbers.chunks(of: 400) {
            let lowered = SQL.joined(chunk.map { "lower(\($0))" }, separator: ", ")
            for trip in try await db.query("SELECT \(Trip.columns) FROM trips WHERE tenant_id = \(tenant) AND lower(number) IN (\(lowered))")
                .map(Trip.init(row:)) {
                found[trip.id] = trip
            }
        }
        return Array(found.values)
    }

    /// The carrier's trips planned or under way (as many as it runs at once, not all it ever ran).
    static func open(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Trip] {
        try await db.query(openQuery(tenant: tenant)).map(Trip.init(row:))
    }

    /// A carrier's open trips in order, read in the order of the index `trips_open`.
    static func openQuery(tenant: ID<Tenant>) -> SQL {
        "SELECT \(Trip.columns) FROM trips WHERE tenant_id = \(tenant) AND \(unsafeRaw: Schema.tripOpen) ORDER BY \(Trip.order.sql)"
    }

    /// A driver's trips planned or under way.
    static func open(of driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Trip] {
        try await db.query("""
            SELECT \(Trip.columns) FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(driver)
            AND status IN (\(TripStatus.planned), \(TripStatus.inProgress)) ORDER BY \(Trip.order.sql)
            """).map(Trip.init(row:))
    }

    static func documents(_ scope: Scope, status: TripStatus?, _ page: PageRequest, _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "trips", where: filter(scope, status: status), order: Trip.order, page, db)
    }

    /// A trip's stored document, as clients receive it.
    static func document(_ id: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> String? {
        try await db.first("SELECT doc FROM trips WHERE \(scope.filter()) AND id = \(id)")?.string("doc")
    }

    static func find(_ id: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Trip? {
        try await db.first("SELECT \(Trip.columns) FROM trips WHERE \(scope.filter()) AND id = \(id)").map(Trip.init(row:))
    }

    /// Reads a trip and, on PostgreSQL, holds its row until the transaction
    /// ends, so changes to the trip and to what it carries (its status, its
    /// driver, orders joining it) happen one after the other. Whoever also
    /// locks a driver takes the trip first.
    static func lock(_ id: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Trip? {
        try await db.first("SELECT \(Trip.columns) FROM trips WHERE \(scope.filter()) AND id = \(id)\(Store.lockingRows(db))")
            .map(Trip.init(row:))
    }

    /// How many of a trip's orders are on the truck, wait for pickup, and are delivered.
    static func vehicles(of trip: ID<Trip>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Trip.Vehicles {
        let counts = try await db.first("""
            SELECT COALESCE(SUM(CASE WHEN status = 'picked_up' THEN 1 ELSE 0 END), 0) AS loaded,
                   COALESCE(SUM(CASE WHEN status IN ('new', 'assigned') THEN 1 ELSE 0 END), 0) AS waiting,
                   COALESCE(SUM(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END), 0) AS delivered
            FROM orders WHERE tenant_id = \(tenant) AND trip_id = \(trip)
            """)
        return Trip.Vehicles(loaded: try counts?.int("loaded") ?? 0, waiting: try counts?.int("waiting") ?? 0,
                             delivered: try counts?.int("delivered") ?? 0)
    }

    /// The vehicles a trip's orders carry, cancelled ones left out (`TripService.carried` on rows at hand: an
    /// order's list of vehicles, or its one vehicle when the list is empty).
    static func vehiclesCarried(on trip: ID<Trip>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Int {
        let listed: SQL = db.dialect == .postgres ? "GREATEST(1, json_array_length(vehicles::json))" : "MAX(1, json_array_length(vehicles))"
        return try await db.first("""
            SELECT CAST(COALESCE(SUM(CASE WHEN status <> 'cancelled' THEN \(listed) ELSE 0 END), 0) AS BIGINT) AS carried
            FROM orders WHERE tenant_id = \(tenant) AND trip_id = \(trip)
            """)?.int("carried") ?? 0
    }

    /// What a trip's orders earn: their prices, cancelled ones left out (`TripService.revenue(of:)` on rows at hand).
    static func ordersRevenue(of trip: ID<Trip>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Int {
        let sum = try await db.first("""
            SELECT CAST(COALESCE(SUM(CASE WHEN status <> 'cancelled' THEN revenue_cents ELSE 0 END), 0) AS BIGINT) AS earned
            FROM orders WHERE tenant_id = \(tenant) AND trip_id = \(trip)
            """)?.int("earned") ?? 0
        return min(sum, MoneyFormat.largestCents)
    }

    /// Writes a new trip (a taken number is `DatabaseConstraintError.unique`) and records the change.
    static func insert(_ trip: Trip, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(trip)
        try await tx.execute("""
            INSERT INTO trips (id, tenant_id, number, driver_id, status, start_date, end_date, origin, destination,
                               revenue_cents, driver_pay_cents, miles, version, created_at, updated_at, doc, revenue_set_by_hand)
            VALUES (\(trip.id), \(tx.tenant), \(trip.number), \(trip.driverID), \(trip.status), \(trip.startDate),
                    \(trip.endDate), \(trip.origin), \(trip.destination), \(trip.revenueCents), \(trip.driverPayCents),
                    \(trip.miles), \(trip.version), \(trip.createdAt), \(trip.updatedAt), \(doc), \(trip.revenueSetByHand ? 1 : 0))
            """)
        tx.recordUpsert(.trip, id: trip.id.rawValue, document: doc, visibleTo: trip.driverID)
    }

    /// Writes a trip's new state (already at its next version) if nobody
    /// changed the row since `previous`; records the change.
    static func update(_ saved: Trip, from previous: Trip, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(saved)
        guard try await tx.first("""
            UPDATE trips SET number = \(saved.number), driver_id = \(saved.driverID), status = \(saved.status), start_date = \(saved.startDate),
                end_date = \(saved.endDate), origin = \(saved.origin), destination = \(saved.destination),
                revenue_cents = \(saved.revenueCents), revenue_set_by_hand = \(saved.revenueSetByHand ? 1 : 0), driver_pay_cents = \(saved.driverPayCents), miles = \(saved.miles),
                version = \(saved.version), updated_at = \(saved.updatedAt), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(previous.id) AND version = \(previous.version)
            RETURNING id
            """) != nil else { throw WriteConflict() }
        tx.recordUpsert(.trip, id: saved.id.rawValue, document: doc, visibleTo: saved.driverID)
    }

    /// Notes that the trip's driver holds it now, and that whoever held it before let go.
    static func rememberDriver(of trip: Trip, _ tx: TenantTransaction) async throws {
        // Whoever held it before lets go of it now (the driver it stays with keeps holding it).
        let others: SQL = trip.driverID.map { " AND driver_id <> \($0)" } ?? ""
        try await tx.execute("""
            UPDATE trip_drivers SET released_at = \(tx.now)
            WHERE tenant_id = \(tx.tenant) AND trip_id = \(trip.id) AND released_at IS NULL\(others)
            """)
        guard let driver = trip.driverID else { return }
        try await tx.execute("""
            INSERT INTO trip_drivers (tenant_id, trip_id, driver_id, first_assigned_at) VALUES (\(tx.tenant), \(trip.id), \(driver), \(tx.now))
            ON CONFLICT (tenant_id, trip_id, driver_id) DO UPDATE SET released_at = NULL
            """)
    }

    /// When a driver first held a trip and when they let go of it (nil: never held, or holds it still).
    static func holding(_ trip: ID<Trip>, driver: ID<Driver>, tenant: ID<Tenant>,
                        _ db: any SQLExecutor) async throws -> (assigned: Date, released: Date)? {
        guard let row = try await db.first("""
            SELECT first_assigned_at, released_at FROM trip_drivers WHERE tenant_id = \(tenant) AND trip_id = \(trip) AND driver_id = \(driver)
            """), let released = try row.optionalDate("released_at") else { return nil }
        return (try row.date("first_assigned_at"), released)
    }

    /// The expenses dispatch recorded on a trip (a driver's own stay with that driver): id and document.
    static func dispatchExpenses(of trip: ID<Trip>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [(id: String, doc: String)] {
        try await db.query("""
            SELECT id, doc FROM trip_expenses WHERE tenant_id = \(tenant) AND trip_id = \(trip) AND driver_id IS NULL
            """).map { (try $0.string("id"), try $0.string("doc")) }
    }
}
