import Foundation
import VroomXModels

/// Orders: one vehicle to pick up and deliver.
extension Store {
    func ordersFilter(_ scope: Scope, trip: ID<Trip>?, status: OrderStatus?) -> SQL {
        var filter = scope.filter()
        if let trip { filter = filter + " AND trip_id = \(trip)" }
        if let status { filter = filter + " AND status = \(status)" }
        return filter
    }

    public func orders(_ scope: Scope, trip: ID<Trip>? = nil, status: OrderStatus? = nil) async throws -> [Order] {
        try await read { db in
            try await db.query("""
                SELECT \(Order.columns) FROM orders WHERE \(ordersFilter(scope, trip: trip, status: status)) ORDER BY \(Order.order.sql)
                """).map(Order.init(row:))
        }
    }

    /// The vehicles still to move on the carrier's trips under way (waiting
    /// or on the truck): what the map shows, without reading every order.
    func ordersAhead(tenant: ID<Tenant>) async throws -> [Order] {
        try await read { db in
            try await db.query("""
                SELECT \(Order.columns) FROM orders WHERE tenant_id = \(tenant) AND status IN ('assigned', 'picked_up')
                AND trip_id IN (SELECT id FROM trips WHERE tenant_id = \(tenant) AND status = 'in_progress') ORDER BY \(Order.order.sql)
                """).map(Order.init(row:))
        }
    }

    public func orderDocuments(_ scope: Scope, trip: ID<Trip>? = nil, status: OrderStatus? = nil,
                               page: PageRequest = .init()) async throws -> DocumentPage {
        try await read { db in
            try await documentPage(from: "orders", where: ordersFilter(scope, trip: trip, status: status), order: Order.order, page, db)
        }
    }

    public func order(_ id: ID<Order>, _ scope: Scope) async throws -> Order {
        guard let order = try await read({ try await fetchOrder(id, scope, $0) }) else { throw AppError.notFound("Order") }
        return order
    }

    public func orderDocument(_ id: ID<Order>, _ scope: Scope) async throws -> String {
        try await document("SELECT doc FROM orders WHERE \(scope.filter()) AND id = \(id)", notFound: "Order")
    }

    /// An order the caller may see; on PostgreSQL its row stays locked
    /// until the transaction ends when `locking`.
    func fetchOrder(_ id: ID<Order>, _ scope: Scope, locking: Bool = false, _ db: any SQLExecutor) async throws -> Order? {
        let lock: SQL = locking ? Self.lockingRows(db) : ""
        return try await db.first("SELECT \(Order.columns) FROM orders WHERE \(scope.filter()) AND id = \(id)\(lock)").map(Order.init(row:))
    }

    /// Orders of a trip the caller may see: a driver sees their own trip,
    /// and of its orders only those still theirs (a delivered order of a
    /// trip reassigned since stays with the driver who carried it).
    public func tripOrderDocuments(_ trip: ID<Trip>, _ scope: Scope, page: PageRequest = .init()) async throws -> DocumentPage {
        try await read { db in
            guard try await TripRepository.find(trip, scope, db) != nil else { throw AppError.notFound("Trip") }
            return try await documentPage(from: "orders", where: ordersFilter(scope, trip: trip, status: nil), order: Order.order, page, db)
        }
    }

    public func createOrder(_ request: CreateOrderRequest, tenant: ID<Tenant>) async throws -> Order {
        let valid = try ValidOrder(request, now: now)
        return try await write(tenant: tenant) { tx in try await insertOrder(valid, tenant: tenant, tx) }
    }

    /// Many orders in one transaction: all of them, or (the first refusal
    /// thrown, with the index of its order) none. A file of thousands takes
    /// longer than a request's database deadline on PostgreSQL (a few
    /// milliseconds an order), so it has `importDeadline`.
    func createOrders(_ requests: [ValidOrder], tenant: ID<Tenant>) async throws -> Int {
        try await DatabaseDeadline.allowing(Self.importDeadline) {
            try await write(tenant: tenant) { tx in try await insertOrders(requests, tenant: tenant, tx) }
        }
    }

    static let importDeadline: Duration = .seconds(120)

    /// Many orders in one transaction, each checked as `createOrder` checks
    /// one (for tools and benchmarks; the console's import names every bad line).
    public func createOrders(_ requests: [CreateOrderRequest], tenant: ID<Tenant>) async throws -> Int {
        let now = self.now
        return try await createOrders(try requests.map { try ValidOrder($0, now: now) }, tenant: tenant)
    }

    private func insertOrders(_ requests: [ValidOrder], tenant: ID<Tenant>, _ tx: TenantTransaction) async throws -> Int {
        // Rows are locked in the order one order's write takes them, but for the whole file at once: the number
        // claim, every trip named (by id), then their drivers. Taken as each line came, a later line's trip would be
        // locked after an earlier line's driver, while an edit of that trip holds it and waits for the driver.
        try await takeClaimTurn(for: .order, tx)
        let tripIDs = Set(requests.compactMap(\.tripID)).sorted { $0.rawValue < $1.rawValue }
        var drivers: Set<ID<Driver>> = []
        for tripID in tripIDs {
            if let driver = try await TripRepository.lock(tripID, .dispatch(tenant: tenant), tx.db)?.driverID { drivers.insert(driver) }
        }
        for driver in drivers.sorted(by: { $0.rawValue < $1.rawValue }) { _ = try await lockDriver(driver, tenant: tenant, tx.db) }
        for (index, order) in requests.enumerated() {
            do {
                _ = try await insertOrder(order, tenant: tenant, tx)
            } catch let error as AppError {
                throw BatchRefusal(index: index, error: error)
            }
        }
        return requests.count
    }

    struct BatchRefusal: Error {
        let index: Int
        let error: AppError
    }

    /// What the database would refuse of a batch of new orders, every one
    /// of them (a number the carrier already has, ignoring case; a trip that
    /// is gone, closed, or whose driver is deactivated), by index. Read
    /// before writing, so an import names all its bad lines at once; the
    /// write checks again, for what changes meanwhile.
    func refusals(ofNew requests: [ValidOrder], tenant: ID<Tenant>) async throws -> [BatchRefusal] {
        try await read { db in
            var refusals: [BatchRefusal] = []
            for start in stride(from: 0, to: requests.count, by: 400) {
                let chunk = requests.indices[start..<min(start + 400, requests.count)]
                let wanted = SQL.joined(chunk.map { "(CAST(\($0) AS BIGINT), CAST(\(requests[$0].number) AS TEXT))" }, separator: ", ")
                for row in try await db.query("""
                    WITH wanted (position, number) AS (VALUES \(wanted))
                    SELECT wanted.position AS position, wanted.number AS wanted, o.number AS held
                    FROM wanted JOIN orders o ON o.tenant_id = \(tenant) AND lower(o.number) = lower(wanted.number)
                    """) {
                    refusals.append(BatchRefusal(index: try row.int("position"),
                                                 error: NumberedWork.order.taken(try row.string("wanted"), heldAs: try row.string("held"))))
                }
            }
            var tripRefusals: [ID<Trip>: AppError] = [:]
            for tripID in Set(requests.compactMap(\.tripID)) {
                guard let trip = try await TripRepository.find(tripID, .dispatch(tenant: tenant), db) else {
                    tripRefusals[tripID] = AppError(422, .validationFailed, "No such trip in this carrier.", field: "trip_id")
                    continue
                }
                do {
                    try Self.checkTakesOrders(trip)
                } catch let error as AppError {
                    tripRefusals[tripID] = error
                    continue
                }
                if let driverID = trip.driverID, let driver = try await fetchDriver(driverID, tenant: tenant, db), driver.deactivatedAt != nil {
                    tripRefusals[tripID] = AppError(422, .validationFailed, "Trip \(trip.number) is \(driver.name)'s, who is deactivated; reactivate them first.",
                                                    field: "trip_id")
                }
            }
            for (index, request) in requests.enumerated() {
                if let tripID = request.tripID, let error = tripRefusals[tripID] { refusals.append(BatchRefusal(index: index, error: error)) }
            }
            return refusals.sorted { $0.index < $1.index }
        }
    }

    /// An order request checked field by field (before any write).
    struct ValidOrder: Sendable {
        let number: String
        let tripID: ID<Trip>?
        let vehicle: Vehicle
        let pickup: Stop
        let delivery: Stop
        let revenue: Int
        let terms: String

        init(_ request: CreateOrderRequest, now: Date) throws {
            self = try Problems.first { ValidOrder(request, now: now, &$0) }
        }

        /// Every rule for a new order, each refusal kept in `problems`.
        init(_ request: CreateOrderRequest, now: Date, _ problems: inout Problems) {
            number = problems.check(request.number) { try Validate.name(request.number, FieldLimits.orderNumber) }
            tripID = request.tripID
            vehicle = Validate.vehicle(request.vehicle, acceptVINWarning: request.acceptVINWarning ?? false, now: now, &problems)
            let (pickup, delivery) = (Validate.stop(request.pickup, field: "pickup", &problems),
                                      Validate.stop(request.delivery, field: "delivery", &problems))
            (self.pickup, self.delivery) = (pickup, delivery)
            problems.check(()) { try Validate.stops(pickup: pickup, delivery: delivery) }
            revenue = problems.check(request.revenueCents) { try Validate.cents(request.revenueCents, field: "revenue_cents") }
            terms = problems.check(request.paymentTerms ?? "") {
                try Validate.text(request.paymentTerms ?? "", FieldLimits.paymentTerms)
            }
        }
    }

    private func insertOrder(_ valid: ValidOrder, tenant: ID<Tenant>, _ tx: TenantTransaction) async throws -> Order {
        let (number, vehicle, pickup, delivery, revenue, terms) = (valid.number, valid.vehicle, valid.pickup, valid.delivery, valid.revenue, valid.terms)
        // Claimed before any row is locked (see `claim`); an import's later orders hold the claim already.
        try await claim(number, for: .order, tx)
        var trip: Trip?
        if let tripID = valid.tripID {
            guard let found = try await TripRepository.lock(tripID, .dispatch(tenant: tenant), tx.db) else {
                throw AppError(422, .validationFailed, "No such trip in this carrier.", field: "trip_id")
            }
            try Self.checkTakesOrders(found)
            // The order goes to the trip's driver: held too, so they cannot be deactivated meanwhile.
            if let driver = found.driverID { _ = try await assignableDriver(driver, tenant: tenant, tx.db) }
            trip = found
        }
        let driver = trip?.driverID
        let order = Order(id: ID(), number: number, tripID: trip?.id, driverID: driver, vehicle: vehicle, pickup: pickup,
                          delivery: delivery, status: driver == nil ? .new : .assigned, actualPickupDate: nil,
                          actualDeliveryDate: nil, pickupETA: nil, deliveryETA: nil, revenueCents: revenue,
                          paymentTerms: terms, version: 1, createdAt: tx.now, updatedAt: tx.now)
        let doc = try WireDocument.encode(order)
        do {
            try await tx.execute("""
                INSERT INTO orders (id, tenant_id, number, trip_id, driver_id, vehicle_year, vehicle_make, vehicle_model,
                    vehicle_vin, vehicle_color, pickup_name, pickup_address, pickup_contact_name, pickup_contact_phone,
                    pickup_window_start, pickup_window_end, delivery_name, delivery_address, delivery_contact_name,
                    delivery_contact_phone, delivery_window_start, delivery_window_end, status, revenue_cents,
                    payment_terms, version, created_at, updated_at, doc, pickup_latitude, pickup_longitude, pickup_radius_m,
                    delivery_latitude, delivery_longitude, delivery_radius_m)
                VALUES (\(order.id), \(tenant), \(order.number), \(order.tripID), \(order.driverID), \(vehicle.year),
                    \(vehicle.make), \(vehicle.model), \(vehicle.vin), \(vehicle.color), \(pickup.name), \(pickup.address),
                    \(pickup.contactName), \(pickup.contactPhone), \(pickup.windowStart), \(pickup.windowEnd),
                    \(delivery.name), \(delivery.address), \(delivery.contactName), \(delivery.contactPhone),
                    \(delivery.windowStart), \(delivery.windowEnd), \(order.status), \(revenue), \(terms), 1,
                    \(tx.now), \(tx.now), \(doc), \(pickup.location?.latitude), \(pickup.location?.longitude),
                    \(pickup.geofenceRadiusMeters), \(delivery.location?.latitude), \(delivery.location?.longitude),
                    \(delivery.geofenceRadiusMeters))
                """)
        } catch DatabaseConstraintError.unique {
            throw AppError(409, .alreadyExists, "An order numbered \(number) already exists.", field: "number")
        }
        tx.recordUpsert(.order, id: order.id.rawValue, document: doc, visibleTo: driver)
        try await recordStatusEvent(order, occurredAt: tx.now, tx)
        if let driver, let trip {
            try await notifyOrderAssigned(order, trip: trip, to: driver, tx)
        }
        return order
    }

    /// Dispatch edits: any fields, and a status change through the state
    /// machine. With `base_version` (the version an edit form was filled
    /// from), details someone else changed since are a `conflict` rather than
    /// silently overwritten; a driver's status or ETA changes meanwhile are not.
    public func updateOrder(_ id: ID<Order>, _ request: UpdateOrderRequest, tenant: ID<Tenant>) async throws -> Order {
        let scope = Scope.dispatch(tenant: tenant)
        return try await write(tenant: tenant) { tx in
            // Locked as every status change locks (the trip, then the order): a pickup set here and the trip's
            // cancellation happen one after the other.
            guard case let (locked, trip)? = try await lockOrderWithTrip(id, scope, tx) else { throw AppError.notFound("Order") }
            var order = locked
            if let base = request.baseVersion, !(1...order.version).contains(base) {
                throw AppError.validation("base_version", "base_version is the version the edit started from: 1 to \(order.version).")
            }
            if let base = request.baseVersion, base < order.version, try await fieldVersions(id, tx).details > base {
                throw AppError(409, .conflict, "Someone else changed order \(order.number) since version \(base); it is now version \(order.version).",
                               field: "base_version")
            }
            var edited = try Problems.first { Self.edited(order, by: request, now: tx.now, &$0) }
            if edited != order {
                let before = order
                order = try await saveOrder(edited, from: order, tx)
                let changes = DriverChangeNote.changes(from: before, to: order)
                if let driver = order.driverID, !changes.isEmpty, order.status != .delivered, order.status != .cancelled {
                    try await insertNotification(.orderChanged(order, changes), to: driver, tx)
                }
            }
            if let status = request.status {
                if order.status != status { try Self.checkTripCarries(trip, to: status) }
                order = try await changeStatus(order, to: status, occurredAt: nil, by: .dispatcher, tx)
            }
            return order
        }
    }

    /// The order with a dispatcher's edits of its details applied, each
    /// refusal kept in `problems` (the console shows them all at once).
    static func edited(_ order: Order, by request: UpdateOrderRequest, now: Date, _ problems: inout Problems) -> Order {
        var edited = order
        if let vehicle = request.vehicle {
            // A VIN already saved was confirmed when it was: only a new one is questioned.
            let savedVIN = vehicle.vin.trimmingCharacters(in: .whitespaces).uppercased() == order.vehicle.vin
            edited.vehicle = Validate.vehicle(vehicle, acceptVINWarning: savedVIN || request.acceptVINWarning == true, now: now, &problems)
        }
        if let pickup = request.pickup { edited.pickup = Validate.stop(pickup, field: "pickup", &problems) }
        if let delivery = request.delivery { edited.delivery = Validate.stop(delivery, field: "delivery", &problems) }
        // Checked when a stop changes: an edit of anything else never fails on older stops.
        if edited.pickup != order.pickup || edited.delivery != order.delivery {
            problems.check(()) { try Validate.stops(pickup: edited.pickup, delivery: edited.delivery) }
        }
        if let eta = request.pickupETA { problems.check(()) { try checkETA(eta, field: "pickup_eta", now: now) }; edited.pickupETA = eta }
        if let eta = request.deliveryETA { problems.check(()) { try checkETA(eta, field: "delivery_eta", now: now) }; edited.deliveryETA = eta }
        if let revenue = request.revenueCents { edited.revenueCents = problems.check(revenue) { try Validate.cents(revenue, field: "revenue_cents") } }
        if let terms = request.paymentTerms {
            edited.paymentTerms = problems.check(terms) { try Validate.text(terms, FieldLimits.paymentTerms) }
        }
        return edited
    }

    /// Writes an order's fields and document with the next version, if
    /// nobody changed the row since it was read; records the change. When
    /// the order changed hands, the previous driver's device drops it.
    func saveOrder(_ order: Order, from original: Order, _ tx: TenantTransaction) async throws -> Order {
        precondition(order.id == original.id && order.version == original.version)
        var saved = order
        // An arrival belongs to the driver who made it at the place the stop was: a new driver or a moved stop starts over.
        // So does an ETA: it told when that driver's truck would be there (the ETA history keeps it).
        if saved.driverID != original.driverID {
            (saved.arrivedAtPickup, saved.arrivedAtDelivery) = (nil, nil)
            (saved.pickupETA, saved.deliveryETA) = (nil, nil)
        }
        if saved.pickup.location != original.pickup.location || saved.pickup.geofenceRadiusMeters != original.pickup.geofenceRadiusMeters {
            saved.arrivedAtPickup = nil
        }
        if saved.delivery.location != original.delivery.location
            || saved.delivery.geofenceRadiusMeters != original.delivery.geofenceRadiusMeters {
            saved.arrivedAtDelivery = nil
        }
        saved.version = order.version + 1
        saved.updatedAt = tx.now
        let doc = try WireDocument.encode(saved)
        // The version at which each field a driver edits last changed (for the conflict rule).
        func fieldVersion(_ changed: Bool, _ column: String) -> SQL { changed ? "\(saved.version)" : "\(unsafeRaw: column)" }
        let statusVersion = fieldVersion(saved.status != original.status, "status_version")
        let pickupVersion = fieldVersion(saved.pickupETA != original.pickupETA, "pickup_eta_version")
        let deliveryVersion = fieldVersion(saved.deliveryETA != original.deliveryETA, "delivery_eta_version")
        let detailsVersion = fieldVersion(saved.vehicle != original.vehicle || saved.pickup != original.pickup
            || saved.delivery != original.delivery || saved.revenueCents != original.revenueCents
            || saved.paymentTerms != original.paymentTerms, "details_version")
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
                arrived_at_delivery = \(saved.arrivedAtDelivery)
            WHERE tenant_id = \(tx.tenant) AND id = \(order.id) AND version = \(order.version)
            RETURNING id
            """) != nil else { throw WriteConflict() }
        if let previousDriver = original.driverID, previousDriver != saved.driverID {
            tx.recordRevoke(.order, id: saved.id.rawValue, from: previousDriver)
        }
        tx.recordUpsert(.order, id: saved.id.rawValue, document: doc, visibleTo: saved.driverID)
        if saved.status != original.status {
            let occurredAt = switch saved.status {
            case .pickedUp: saved.actualPickupDate
            case .delivered: saved.actualDeliveryDate
            default: nil as Date?
            }
            try await recordStatusEvent(saved, occurredAt: occurredAt ?? tx.now, tx)
        }
        if saved.driverID != original.driverID {
            try await handOverInspections(of: saved, from: original.driverID, tx)
        }
        if saved.pickupETA != original.pickupETA || saved.deliveryETA != original.deliveryETA {
            try await recordETAEvent(saved, from: original, tx)
        }
        return saved
    }

    /// One line of an order's ETA history: the ETAs as they stand after a
    /// change, who made it, and whose truck they were for — or, when a
    /// reassignment cleared them, the previous driver's last ETAs.
    private func recordETAEvent(_ order: Order, from original: Order, _ tx: TenantTransaction) async throws {
        let cleared = order.driverID != original.driverID && order.pickupETA == nil && order.deliveryETA == nil
        let (driver, pickup, delivery) = cleared ? (original.driverID, original.pickupETA, original.deliveryETA)
                                                 : (order.driverID, order.pickupETA, order.deliveryETA)
        try await tx.execute("""
            INSERT INTO order_eta_events (id, tenant_id, order_id, driver_id, user_id, pickup_eta, delivery_eta, cleared, recorded_at)
            VALUES (\(UUID().uuidString.lowercased()), \(tx.tenant), \(order.id), \(driver), \(tx.actingUser), \(pickup), \(delivery),
                    \(cleared ? 1 : 0), \(tx.now))
            """)
    }

    /// One line of an order's status history: the status it reached, when
    /// it happened (a driver offline reports it later), and who acted.
    private func recordStatusEvent(_ order: Order, occurredAt: Date, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO order_events (id, tenant_id, order_id, status, user_id, occurred_at, recorded_at)
            VALUES (\(UUID().uuidString.lowercased()), \(tx.tenant), \(order.id), \(order.status), \(tx.actingUser),
                    \(occurredAt), \(tx.now))
            """)
    }

    func notifyOrderAssigned(_ order: Order, trip: Trip?, to driver: ID<Driver>, _ tx: TenantTransaction) async throws {
        try await insertNotification(.orderAssigned(order, trip: trip), to: driver, tx)
    }
}
