import Foundation
import VroomXModels

/// Orders in the database: the SQL and the row mapping, nothing else.
/// Callers pass the connection or transaction; policy lives in `OrderService`.
enum OrderRepository {
    static func filter(_ scope: Scope, trip: ID<Trip>?, status: OrderStatus?, customer: ID<Customer>? = nil) -> SQL {
        var filter = scope.filter()
        if let trip { filter = filter + " AND trip_id = \(trip)" }
        if let customer { filter = filter + " AND customer_id = \(customer)" }
        if let status { filter = filter + " AND status = \(status)" }
        return filter
    }

    static func all(_ scope: Scope, trip: ID<Trip>?, status: OrderStatus?, _ db: any SQLExecutor) async throws -> [Order] {
        try await db.query("""
            SELECT \(Order.columns) FROM orders WHERE \(filter(scope, trip: trip, status: status)) ORDER BY \(Order.order.sql)
            """).map(Order.init(row:))
    }

    /// The vehicles still to move on the carrier's trips under way (waiting or on the truck).
    /// Newest first (`Order.order`), sorted here: SQLite's sorter copied every column of every row, a third of the
    /// query. Their positions are sorted, not the orders (large structs moved at every step).
    static func ahead(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [OrderAhead] {
        let orders = try await db.query(aheadQuery(tenant: tenant)).map(OrderAhead.init(row:))
        return orders.indices.sorted { a, b in
            orders[a].createdAt != orders[b].createdAt ? orders[a].createdAt > orders[b].createdAt : orders[a].id < orders[b].id
        }.map { orders[$0] }
    }

    /// From the trips under way (`trips_open`) to their orders (`orders_by_trip`), in that order (SQLite's CROSS JOIN;
    /// PostgreSQL chooses the same): read from the statuses first, as SQLite chose, it went through every assigned and
    /// picked-up order of the carrier.
    static func aheadQuery(tenant: ID<Tenant>) -> SQL {
        """
        SELECT \(OrderAhead.columns) FROM (
            SELECT o.* FROM trips t CROSS JOIN orders o
            WHERE t.tenant_id = \(tenant) AND t.\(unsafeRaw: Schema.tripOpen) AND t.status = 'in_progress'
            AND o.tenant_id = t.tenant_id AND o.trip_id = t.id AND o.status IN ('assigned', 'picked_up')) AS ahead
        """
    }

    static func documents(_ scope: Scope, trip: ID<Trip>?, status: OrderStatus?, customer: ID<Customer>?, _ page: PageRequest,
                          _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "orders", where: filter(scope, trip: trip, status: status, customer: customer), order: Order.order,
                                     page, db)
    }

    /// An order's stored document, as clients receive it.
    static func document(_ id: ID<Order>, _ scope: Scope, _ db: any SQLExecutor) async throws -> String? {
        try await db.first("SELECT doc FROM orders WHERE \(scope.filter()) AND id = \(id)")?.string("doc")
    }

    /// An order the caller may see; on PostgreSQL its row stays locked
    /// until the transaction ends when `locking`.
    static func find(_ id: ID<Order>, _ scope: Scope, locking: Bool = false, _ db: any SQLExecutor) async throws -> Order? {
        let lock: SQL = locking ? Store.lockingRows(db) : ""
        return try await db.first("SELECT \(Order.columns) FROM orders WHERE \(scope.filter()) AND id = \(id)\(lock)").map(Order.init(row:))
    }

    static func ofCustomer(_ customer: ID<Customer>, open: Bool, limit: Int?, tenant: ID<Tenant>,
                           _ db: any SQLExecutor) async throws -> [Order] {
        let statuses: [OrderStatus] = open ? [.new, .assigned, .pickedUp] : [.delivered, .cancelled]
        let order: SQL = open ? "pickup_window_start IS NULL, pickup_window_start, number" : "created_at DESC, id"
        let limited: SQL = limit.map { " LIMIT \($0)" } ?? ""
        return try await db.query("""
            SELECT \(Order.columns) FROM orders WHERE tenant_id = \(tenant) AND customer_id = \(customer)
            AND status IN (\(SQL.list(statuses))) ORDER BY \(order)\(limited)
            """).map(Order.init(row:))
    }

    /// A trip's orders, of the given statuses (all when nil).
    static func onTrip(_ trip: ID<Trip>, statuses: [OrderStatus]? = nil, tenant: ID<Tenant>,
                       _ db: any SQLExecutor) async throws -> [Order] {
        let which: SQL = statuses.map { " AND status IN (\(SQL.list($0)))" } ?? ""
        return try await db.query("SELECT \(Order.columns) FROM orders WHERE tenant_id = \(tenant) AND trip_id = \(trip)\(which)")
            .map(Order.init(row:))
    }

    /// Of the numbers wanted (by position in a batch), those the carrier
    /// already has, ignoring case, with the number as it is held.
    static func taken(_ numbers: [(position: Int, number: String)], tenant: ID<Tenant>,
                      _ db: any SQLExecutor) async throws -> [(position: Int, wanted: String, held: String)] {
        var taken: [(position: Int, wanted: String, held: String)] = []
        for start in stride(from: 0, to: numbers.count, by: 400) {
            let chunk = numbers[start..<min(start + 400, numbers.count)]
            let wanted = SQL.joined(chunk.map { "(CAST(\($0.position) AS BIGINT), CAST(\($0.number) AS TEXT))" }, separator: ", ")
            for row in try await db.query("""
                WITH wanted (position, number) AS (VALUES \(wanted))
                SELECT wanted.position AS position, wanted.number AS wanted, o.number AS held
                FROM wanted JOIN orders o ON o.tenant_id = \(tenant) AND lower(o.number) = lower(wanted.number)
                """) {
                taken.append((try row.int("position"), try row.string("wanted"), try row.string("held")))
            }
        }
        return taken
    }

    /// Writes a new order (a taken number is `DatabaseConstraintError.unique`) and records the change.
    static func insert(_ order: Order, _ tx: TenantTransaction) async throws {
        let (vehicle, pickup, delivery) = (order.vehicle, order.pickup, order.delivery)
        let doc = try WireDocument.encode(order)
        try await tx.execute("""
            INSERT INTO orders (id, tenant_id, number, trip_id, driver_id, vehicle_year, vehicle_make, vehicle_model,
                vehicle_vin, vehicle_color, pickup_name, pickup_address, pickup_contact_name, pickup_contact_phone,
                pickup_window_start, pickup_window_end, delivery_name, delivery_address, delivery_contact_name,
                delivery_contact_phone, delivery_window_start, delivery_window_end, status, revenue_cents,
                payment_terms, version, created_at, updated_at, doc, pickup_latitude, pickup_longitude, pickup_radius_m,
                delivery_latitude, delivery_longitude, delivery_radius_m, customer_id, external_load_id, vehicles, vehicle_search)
            VALUES (\(order.id), \(tx.tenant), \(order.number), \(order.tripID), \(order.driverID), \(vehicle.year),
                \(vehicle.make), \(vehicle.model), \(vehicle.vin), \(vehicle.color), \(pickup.name), \(pickup.address),
                \(pickup.contactName), \(pickup.contactPhone), \(pickup.windowStart), \(pickup.windowEnd),
                \(delivery.name), \(delivery.address), \(delivery.contactName), \(delivery.contactPhone),
                \(delivery.windowStart), \(delivery.windowEnd), \(order.status), \(order.revenueCents), \(order.paymentTerms),
                \(order.version), \(order.createdAt), \(order.updatedAt), \(doc), \(pickup.location?.latitude),
                \(pickup.location?.longitude), \(pickup.geofenceRadiusMeters), \(delivery.location?.latitude),
                \(delivery.location?.longitude), \(delivery.geofenceRadiusMeters), \(order.customerID), \(order.externalLoadID),
                \(try WireDocument.encode(order.vehicles)), \(vehicleSearch(order.vehicles)))
            """)
        tx.recordUpsert(.order, id: order.id.rawValue, document: doc, visibleTo: order.driverID)
    }

    /// Writes the new state of an order read at `original`'s version, if
    /// nobody changed the row since; records the change (the previous
    /// driver's device drops an order that changed hands).
    static func update(_ saved: Order, from original: Order, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(saved)
        // The version at which each field a driver edits last changed (for the conflict rule).
        func fieldVersion(_ changed: Bool, _ column: String) -> SQL { changed ? "\(saved.version)" : "\(unsafeRaw: column)" }
        let statusVersion = fieldVersion(saved.status != original.status, "status_version")
        let pickupVersion = fieldVersion(saved.pickupETA != original.pickupETA, "pickup_eta_version")
        let deliveryVersion = fieldVersion(saved.deliveryETA != original.deliveryETA, "delivery_eta_version")
        let detailsVersion = fieldVersion(saved.vehicles != original.vehicles || saved.pickup != original.pickup
            || saved.delivery != original.delivery || saved.revenueCents != original.revenueCents
            || saved.paymentTerms != original.paymentTerms || saved.customerID != original.customerID
            || saved.externalLoadID != original.externalLoadID, "details_version")
        let (vehicle, pickup, delivery) = (saved.vehicle, saved.pickup, saved.delivery)
        guard try await tx.first("""
            UPDATE orders SET trip_id = \(saved.tripID), driver_id = \(saved.driverID), vehicle_year = \(vehicle.year),
                vehicle_make = \(vehicle.make), vehicle_model = \(vehicle.model), vehicle_vin = \(vehicle.vin),
                vehicle_color = \(vehicle.color), pickup_name = \(pickup.name), pickup_address = \(pickup.address),
                pickup_contact_name = \(pickup.contactName), pickup_contact_phone = \(pickup.contactPhone),
                pickup_window_start = \(pickup.windowStart), pickup_window_end = \(pickup.windowEnd),
                delivery_name = \(delivery.name), delivery_address = \(delivery.address),
                delivery_contact_name = \(delivery.contactName), delivery_contact_phone = \(delivery.contactPhone),
                delivery_window_start = \(delivery.windowStart), delivery_window_end = \(delivery.windowEnd),
                status = \(saved.status), actual_pickup_at = \(saved.actualPickupDate),
                actual_delivery_at = \(saved.actualDeliveryDate), pickup_eta = \(saved.pickupETA),
                delivery_eta = \(saved.deliveryETA), revenue_cents = \(saved.revenueCents),
                payment_terms = \(saved.paymentTerms), version = \(saved.version), updated_at = \(saved.updatedAt), doc = \(doc),
                status_version = \(statusVersion), pickup_eta_version = \(pickupVersion), delivery_eta_version = \(deliveryVersion),
                details_version = \(detailsVersion), pickup_latitude = \(pickup.location?.latitude),
                pickup_longitude = \(pickup.location?.longitude), pickup_radius_m = \(pickup.geofenceRadiusMeters),
                delivery_latitude = \(delivery.location?.latitude), delivery_longitude = \(delivery.location?.longitude),
                delivery_radius_m = \(delivery.geofenceRadiusMeters), arrived_at_pickup = \(saved.arrivedAtPickup),
                arrived_at_delivery = \(saved.arrivedAtDelivery), departed_at_pickup = \(saved.departedPickupAt),
                departed_at_delivery = \(saved.departedDeliveryAt), problems = \(try WireDocument.encode(saved.problems)),
                dry_run = \(saved.hadDryRun ? 1 : 0), customer_id = \(saved.customerID),
                external_load_id = \(saved.externalLoadID), vehicles = \(try WireDocument.encode(saved.vehicles)),
                vehicle_search = \(vehicleSearch(saved.vehicles))
            WHERE tenant_id = \(tx.tenant) AND id = \(original.id) AND version = \(original.version)
            RETURNING id
            """) != nil else { throw WriteConflict() }
        if let previousDriver = original.driverID, previousDriver != saved.driverID {
            tx.recordRevoke(.order, id: saved.id.rawValue, from: previousDriver)
        }
        tx.recordUpsert(.order, id: saved.id.rawValue, document: doc, visibleTo: saved.driverID)
    }

    // MARK: Alerts to dispatch

    /// Marks the order alerted of a trouble this far along (`Timeliness.rank`):
    /// false when an alert told of it, or of one further along, already.
    static func markAlerted(_ id: ID<Order>, rank: Int, text: String, _ tx: TenantTransaction) async throws -> Bool {
        try await tx.first("""
            UPDATE orders SET risk_alerted_at = \(tx.now), risk_alert = \(String(text.prefix(300))), risk_rank = \(rank)
            WHERE tenant_id = \(tx.tenant) AND id = \(id) AND risk_rank < \(rank) RETURNING id
            """) != nil
    }

    /// Lets a new trouble alert again (dispatch moved a window); the last
    /// alert stays in the order's story.
    static func clearAlert(_ id: ID<Order>, _ tx: TenantTransaction) async throws {
        try await tx.execute("UPDATE orders SET risk_rank = 0 WHERE tenant_id = \(tx.tenant) AND id = \(id) AND risk_rank > 0")
    }

    /// How many orders were alerted after `since` (still open).
    static func alertCount(tenant: ID<Tenant>, since: Date, _ db: any SQLExecutor) async throws -> Int {
        try await db.first("""
            SELECT COUNT(*) AS n FROM orders WHERE tenant_id = \(tenant) AND risk_alerted_at > \(since) AND status IN ('new', 'assigned', 'picked_up')
            """)?.int("n") ?? 0
    }

    /// The alert that told dispatch of the order, if one did.
    static func alert(of id: ID<Order>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> (at: Date, text: String)? {
        guard let row = try await db.first("""
            SELECT risk_alerted_at, risk_alert FROM orders WHERE tenant_id = \(tenant) AND id = \(id) AND risk_alerted_at IS NOT NULL
            """) else { return nil }
        return (try row.date("risk_alerted_at"), try row.string("risk_alert"))
    }

    /// The order alerted last since `since`, with its number and the alert.
    static func latestAlert(tenant: ID<Tenant>, since: Date, _ db: any SQLExecutor) async throws -> (id: ID<Order>, number: String, at: Date, text: String)? {
        guard let row = try await db.first("""
            SELECT id, number, risk_alerted_at, risk_alert FROM orders
            WHERE tenant_id = \(tenant) AND risk_alerted_at > \(since) AND status IN ('new', 'assigned', 'picked_up')
            ORDER BY risk_alerted_at DESC, id DESC LIMIT 1
            """) else { return nil }
        return (try row.id("id"), try row.string("number"), try row.date("risk_alerted_at"), try row.string("risk_alert"))
    }

    /// The ids of the open orders whose next window's last day is `day` or
    /// earlier and whose trouble could still get further than alerts told,
    /// in id order: read from the indexes `orders_pickup_due` and
    /// `orders_delivery_due` (each arm repeats its index's condition), not
    /// from every order of the carrier.
    static func dueForAlert(by day: LocalDate, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [ID<Order>] {
        try await db.query(dueForAlertQuery(by: day, tenant: tenant)).map { try $0.id("id") }
    }

    static func dueForAlertQuery(by day: LocalDate, tenant: ID<Tenant>) -> SQL {
        """
        SELECT id FROM orders WHERE tenant_id = \(tenant) AND \(pickupDue(by: day))
        UNION
        SELECT id FROM orders WHERE tenant_id = \(tenant) AND \(deliveryDue(by: day))
        ORDER BY id
        """
    }

    private static func pickupDue(by day: LocalDate) -> SQL {
        "\(unsafeRaw: Schema.pickupWatched) AND \(unsafeRaw: Schema.pickupEnds) <= \(day)"
    }

    private static func deliveryDue(by day: LocalDate) -> SQL {
        "\(unsafeRaw: Schema.deliveryWatched) AND \(unsafeRaw: Schema.deliveryEnds) <= \(day)"
    }

    /// Those of these orders of the carrier still due by `day` (a page of
    /// `dueForAlert`'s, read a while later: dispatch may have moved a window
    /// since), each with how far along its trouble the last alert told
    /// (`Timeliness.rank`, 0 when none did).
    static func withAlertRank(_ ids: [ID<Order>], dueBy day: LocalDate, tenant: ID<Tenant>,
                              _ db: any SQLExecutor) async throws -> [(order: Order, alerted: Int)] {
        guard !ids.isEmpty else { return [] }
        return try await db.query("""
            SELECT \(Order.columns), risk_rank FROM orders
            WHERE tenant_id = \(tenant) AND id IN (\(SQL.list(ids))) AND ((\(pickupDue(by: day))) OR (\(deliveryDue(by: day))))
            ORDER BY id
            """).map { (try Order(row: $0), try $0.int("risk_rank")) }
    }

    /// What the board's search finds of a load beyond its first vehicle
    /// (whose VIN, make and model have columns of their own): the other
    /// vehicles, and every lot or buyer number.
    static func vehicleSearch(_ vehicles: [Vehicle]) -> String {
        let others = vehicles.dropFirst().map { [$0.vin, $0.make, $0.model].filter { !$0.isEmpty }.joined(separator: " ") }
        return (others + vehicles.compactMap(\.lotNumber)).filter { !$0.isEmpty }.joined(separator: "\n")
    }

    /// When the order last reached `status` (by its history), if it did.
    static func reached(_ status: OrderStatus, _ order: ID<Order>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Date? {
        try await db.first("""
            SELECT MAX(occurred_at) AS reached FROM order_events WHERE tenant_id = \(tenant) AND order_id = \(order) AND status = \(status)
            """)?.optionalDate("reached")
    }

    /// One line of an order's status history: the status it reached, when
    /// it happened (a driver offline reports it later), and who acted.
    static func insertStatusEvent(_ order: Order, occurredAt: Date, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO order_events (id, tenant_id, order_id, status, user_id, occurred_at, recorded_at)
            VALUES (\(UUID().uuidString.lowercased()), \(tx.tenant), \(order.id), \(order.status), \(tx.actingUser),
                    \(occurredAt), \(tx.now))
            """)
    }

    /// One line of an order's ETA history: the ETAs, whose truck they were for, and whether a reassignment cleared them.
    static func insertETAEvent(_ order: ID<Order>, driver: ID<Driver>?, pickup: Date?, delivery: Date?, cleared: Bool,
                               _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO order_eta_events (id, tenant_id, order_id, driver_id, user_id, pickup_eta, delivery_eta, cleared, recorded_at)
            VALUES (\(UUID().uuidString.lowercased()), \(tx.tenant), \(order), \(driver), \(tx.actingUser), \(pickup), \(delivery),
                    \(cleared ? 1 : 0), \(tx.now))
            """)
    }

    struct FieldVersions {
        let status: Int
        let pickupETA: Int
        let deliveryETA: Int
        /// Vehicle, stops, revenue and terms: what dispatch edits as a whole.
        let details: Int
    }

    /// The version at which each part of an order last changed.
    static func fieldVersions(_ id: ID<Order>, _ tx: TenantTransaction) async throws -> FieldVersions {
        guard let row = try await tx.first("""
            SELECT status_version, pickup_eta_version, delivery_eta_version, details_version
            FROM orders WHERE tenant_id = \(tx.tenant) AND id = \(id)
            """) else { throw AppError.notFound("Order") }
        return FieldVersions(status: try row.int("status_version"), pickupETA: try row.int("pickup_eta_version"),
                             deliveryETA: try row.int("delivery_eta_version"), details: try row.int("details_version"))
    }
}
