import Foundation
import VroomXModels

/// Trips: a truck run carrying several orders, planned by dispatch.
extension Store {
    func tripsFilter(_ scope: Scope, status: TripStatus?) -> SQL {
        scope.filter() + (status.map { " AND status = \($0)" } ?? "")
    }

    public func trips(_ scope: Scope, status: TripStatus? = nil) async throws -> [Trip] {
        try await read { db in
            try await db.query("SELECT \(Trip.columns) FROM trips WHERE \(tripsFilter(scope, status: status)) ORDER BY \(Trip.order.sql)")
                .map(Trip.init(row:))
        }
    }

    /// A driver's trips planned or under way.
    public func openTrips(of driver: ID<Driver>, tenant: ID<Tenant>) async throws -> [Trip] {
        try await read { db in
            try await db.query("""
                SELECT \(Trip.columns) FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(driver)
                AND status IN (\(TripStatus.planned), \(TripStatus.inProgress)) ORDER BY \(Trip.order.sql)
                """).map(Trip.init(row:))
        }
    }

    public func tripDocuments(_ scope: Scope, status: TripStatus? = nil, page: PageRequest = .init()) async throws -> DocumentPage {
        try await read { db in
            try await documentPage(from: "trips", where: tripsFilter(scope, status: status), order: Trip.order, page, db)
        }
    }

    public func trip(_ id: ID<Trip>, _ scope: Scope) async throws -> Trip {
        guard let trip = try await read({ try await fetchTrip(id, scope, $0) }) else { throw AppError.notFound("Trip") }
        return trip
    }

    public func tripDocument(_ id: ID<Trip>, _ scope: Scope) async throws -> String {
        try await document("SELECT doc FROM trips WHERE \(scope.filter()) AND id = \(id)", notFound: "Trip")
    }

    func fetchTrip(_ id: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Trip? {
        try await db.first("SELECT \(Trip.columns) FROM trips WHERE \(scope.filter()) AND id = \(id)").map(Trip.init(row:))
    }

    /// Reads a trip and, on PostgreSQL, holds its row until the transaction
    /// ends, so changes to the trip and to what it carries (its status, its
    /// driver, orders joining it) happen one after the other. Whoever also
    /// locks a driver takes the trip first.
    func lockTrip(_ id: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Trip? {
        try await db.first("SELECT \(Trip.columns) FROM trips WHERE \(scope.filter()) AND id = \(id)\(Self.lockingRows(db))").map(Trip.init(row:))
    }

    public func createTrip(_ request: CreateTripRequest, tenant: ID<Tenant>) async throws -> Trip {
        let number = try Validate.name(request.number, FieldLimits.tripNumber)
        try Validate.dateRange(request.startDate, request.endDate, field: "end_date")
        let revenue = try Validate.cents(request.revenueCents, field: "revenue_cents")
        let miles = try Validate.number(request.miles, FieldLimits.tripMiles)
        let origin = try Validate.text(request.origin, FieldLimits.tripOrigin)
        let destination = try Validate.text(request.destination, FieldLimits.tripDestination)
        return try await write(tenant: tenant) { tx in
            try await claim(number, for: .trip, tx)
            var driver: Driver?
            if let driverID = request.driverID {
                driver = try await assignableDriver(driverID, tenant: tenant, tx.db)
            }
            let pay = try request.driverPayCents.map { try Validate.cents($0, field: "driver_pay_cents") }
                ?? driver.map { $0.payType.driverPay(rate: $0.payRate, revenueCents: revenue, miles: miles) } ?? 0
            let trip = Trip(id: ID(), number: number, driverID: driver?.id, status: .planned, startDate: request.startDate,
                            endDate: request.endDate, origin: origin, destination: destination, revenueCents: revenue,
                            driverPayCents: pay, miles: miles, version: 1, createdAt: tx.now, updatedAt: tx.now)
            let doc = try WireDocument.encode(trip)
            do {
                try await tx.execute("""
                    INSERT INTO trips (id, tenant_id, number, driver_id, status, start_date, end_date, origin, destination,
                                       revenue_cents, driver_pay_cents, miles, version, created_at, updated_at, doc)
                    VALUES (\(trip.id), \(tenant), \(trip.number), \(trip.driverID), \(trip.status), \(trip.startDate),
                            \(trip.endDate), \(trip.origin), \(trip.destination), \(trip.revenueCents), \(trip.driverPayCents),
                            \(trip.miles), 1, \(tx.now), \(tx.now), \(doc))
                    """)
            } catch DatabaseConstraintError.unique {
                throw AppError(409, .alreadyExists, "A trip numbered \(number) already exists.", field: "number")
            }
            tx.recordUpsert(.trip, id: trip.id.rawValue, document: doc, visibleTo: trip.driverID)
            try await rememberTripDriver(trip, tx)
            if let driver {
                try await notifyTripAssigned(trip, to: driver.id, tx)
            }
            return trip
        }
    }

    public func updateTrip(_ id: ID<Trip>, _ request: UpdateTripRequest, tenant: ID<Tenant>) async throws -> Trip {
        let scope = Scope.dispatch(tenant: tenant)
        let number = try request.number.map { try Validate.name($0, FieldLimits.tripNumber) }
        return try await write(tenant: tenant) { tx in
            // A new number is claimed before any row is locked (see `claim`).
            if let number { try await claim(number, for: .trip, except: id.rawValue, tx) }
            guard var trip = try await lockTrip(id, scope, tx.db) else { throw AppError.notFound("Trip") }
            let current = trip
            if let base = request.baseVersion {
                guard (1...trip.version).contains(base) else {
                    throw AppError.validation("base_version", "base_version is the version the edit started from: 1 to \(trip.version).")
                }
                guard base == trip.version else {
                    throw AppError(409, .conflict, "Trip \(trip.number) was changed after version \(base) (it is at \(trip.version)).",
                                   field: "base_version")
                }
            }
            if let number { trip.number = number }
            if let status = request.status, status != trip.status {
                guard trip.status.canTransition(to: status) else {
                    throw AppError.invalidTransition(from: trip.status.rawValue, to: status.rawValue)
                }
                let counts = try await tx.first("""
                    SELECT COALESCE(SUM(CASE WHEN status = 'picked_up' THEN 1 ELSE 0 END), 0) AS loaded,
                           COALESCE(SUM(CASE WHEN status IN ('new', 'assigned') THEN 1 ELSE 0 END), 0) AS waiting
                    FROM orders WHERE tenant_id = \(tenant) AND trip_id = \(id)
                    """)
                let vehicles = Trip.Vehicles(loaded: try counts?.int("loaded") ?? 0, waiting: try counts?.int("waiting") ?? 0)
                if let refusal = trip.statusRefusal(to: status, vehicles) {
                    throw AppError(409, .invalidTransition, refusal, field: "status")
                }
                trip.status = status
            }
            if let start = request.startDate { trip.startDate = start }
            if let end = request.endDate { trip.endDate = end }
            try Validate.dateRange(trip.startDate, trip.endDate, field: "end_date")
            if let origin = request.origin { trip.origin = try Validate.text(origin, FieldLimits.tripOrigin) }
            if let destination = request.destination { trip.destination = try Validate.text(destination, FieldLimits.tripDestination) }
            if let revenue = request.revenueCents { trip.revenueCents = try Validate.cents(revenue, field: "revenue_cents") }
            if let pay = request.driverPayCents { trip.driverPayCents = try Validate.cents(pay, field: "driver_pay_cents") }
            if let miles = request.miles { trip.miles = try Validate.number(miles, FieldLimits.tripMiles) }
            // Pay that followed the driver's terms follows new revenue and miles; pay set by hand stays.
            if request.driverPayCents == nil, trip.revenueCents != current.revenueCents || trip.miles != current.miles,
               let driverID = trip.driverID, let driver = try await fetchDriver(driverID, tenant: tenant, tx.db) {
                let terms = { (trip: Trip) in driver.payType.driverPay(rate: driver.payRate, revenueCents: trip.revenueCents, miles: trip.miles) }
                if current.driverPayCents == terms(current) { trip.driverPayCents = terms(trip) }
            }
            guard trip != current else { return current }
            // A finished or cancelled trip's figures are what pay and revenue were settled with.
            var details = trip
            details.status = current.status
            if !current.status.isOpen, details != current {
                throw AppError(409, .invalidTransition, "Trip \(current.number) is \(current.status.label); its details are settled and no longer change.")
            }
            do {
                trip = try await saveTrip(trip, tx)
            } catch DatabaseConstraintError.unique {
                throw AppError(409, .alreadyExists, "A trip numbered \(trip.number) already exists.", field: "number")
            }
            if trip.status == .cancelled, current.status != .cancelled {
                // Vehicles still waiting go back to the board, off the trip and its driver's list.
                let waiting = try await tx.query("""
                    SELECT \(Order.columns) FROM orders WHERE tenant_id = \(tenant) AND trip_id = \(id) AND status IN ('new', 'assigned')
                    """).map(Order.init(row:))
                for original in waiting {
                    var order = original
                    (order.tripID, order.driverID, order.status) = (nil, nil, .new)
                    _ = try await saveOrder(order, from: original, tx)
                }
            }
            if let driver = trip.driverID {
                let changes = DriverChangeNote.changes(from: current, to: trip)
                if trip.status != current.status {
                    try await insertNotification(.tripStatus(trip, also: changes), to: driver, tx)
                } else if !changes.isEmpty {
                    try await insertNotification(.tripChanged(trip, number: current.number, changes), to: driver, tx)
                }
            }
            return trip
        }
    }

    /// Gives a trip to a driver (or takes it back with nil). Its orders that
    /// are not yet on a truck follow it; a trip with picked-up vehicles
    /// cannot change hands, since the vehicles are on the old driver's truck.
    public func assignTrip(_ id: ID<Trip>, to driverID: ID<Driver>?, tenant: ID<Tenant>) async throws -> Trip {
        let scope = Scope.dispatch(tenant: tenant)
        return try await write(tenant: tenant) { tx in
            guard var trip = try await lockTrip(id, scope, tx.db) else { throw AppError.notFound("Trip") }
            let previous = trip.driverID
            if previous == driverID { return trip }
            guard trip.status.isOpen else {
                throw AppError.conflict("A \(trip.status.label) trip cannot be reassigned.")
            }
            var newDriver: Driver?
            if let driverID {
                newDriver = try await assignableDriver(driverID, tenant: tenant, tx.db)
            }
            if driverID == nil, trip.status == .inProgress {
                throw AppError.conflict("A trip in progress must keep a driver; reassign it instead.")
            }
            let orders = try await tx.query("SELECT \(Order.columns) FROM orders WHERE tenant_id = \(tenant) AND trip_id = \(id)")
                .map(Order.init(row:))
            if orders.contains(where: { $0.status == .pickedUp }) {
                throw AppError.conflict("Trip \(trip.number) has picked-up vehicles and cannot change driver.")
            }
            // Pay that followed the previous driver's terms (or none, with no driver) follows the new
            // driver's; pay dispatch set by hand stays.
            var previousTerms: Driver?
            if let previous { previousTerms = try await fetchDriver(previous, tenant: tenant, tx.db) }
            let defaultPay = { (driver: Driver?) in
                driver.map { $0.payType.driverPay(rate: $0.payRate, revenueCents: trip.revenueCents, miles: trip.miles) } ?? 0
            }
            if trip.driverPayCents == defaultPay(previousTerms) { trip.driverPayCents = defaultPay(newDriver) }
            trip.driverID = driverID
            trip = try await saveTrip(trip, tx)
            if let previous { tx.recordRevoke(.trip, id: trip.id.rawValue, from: previous) }

            for original in orders where original.status.isWaiting {
                var order = original
                order.driverID = driverID
                order.status = driverID == nil ? .new : .assigned
                _ = try await saveOrder(order, from: original, tx)
            }
            // The expenses dispatch recorded on the trip now belong on the new driver's device, not the old one's;
            // those a driver recorded stay with that driver.
            let expenses = try await tx.query("""
                SELECT id, doc FROM trip_expenses WHERE tenant_id = \(tenant) AND trip_id = \(id) AND driver_id IS NULL
                """)
            for expense in expenses {
                let expenseID = try expense.string("id")
                if let previous { tx.recordRevoke(.expense, id: expenseID, from: previous) }
                tx.recordUpsert(.expense, id: expenseID, document: try expense.string("doc"), visibleTo: driverID)
            }
            if let driverID { try await notifyTripAssigned(trip, to: driverID, tx) }
            // The driver it was taken from must not drive to its pickups.
            if let previous {
                try await insertNotification(.tripTakenOff(trip, to: driverID), to: previous, tx)
            }
            return trip
        }
    }

    /// Writes a trip's fields and document with the next version, if nobody
    /// changed the row since it was read; records the change.
    func saveTrip(_ trip: Trip, _ tx: TenantTransaction) async throws -> Trip {
        var saved = trip
        saved.version = trip.version + 1
        saved.updatedAt = tx.now
        let doc = try WireDocument.encode(saved)
        guard try await tx.first("""
            UPDATE trips SET number = \(saved.number), driver_id = \(saved.driverID), status = \(saved.status), start_date = \(saved.startDate),
                end_date = \(saved.endDate), origin = \(saved.origin), destination = \(saved.destination),
                revenue_cents = \(saved.revenueCents), driver_pay_cents = \(saved.driverPayCents), miles = \(saved.miles),
                version = \(saved.version), updated_at = \(saved.updatedAt), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(trip.id) AND version = \(trip.version)
            RETURNING id
            """) != nil else { throw WriteConflict() }
        tx.recordUpsert(.trip, id: saved.id.rawValue, document: doc, visibleTo: saved.driverID)
        try await rememberTripDriver(saved, tx)
        return saved
    }

    /// Notes that the trip's driver has held it: work they did on it while
    /// it was theirs (an expense spent offline) is theirs to record after
    /// dispatch gave the trip to someone else.
    func rememberTripDriver(_ trip: Trip, _ tx: TenantTransaction) async throws {
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

    /// How long after dispatch gave a trip away its previous driver's
    /// offline expenses on it are still taken: a phone a week without signal.
    static let lateExpenseWindow: TimeInterval = 7 * 86_400

    /// Whether an expense of `day` the driver recorded on a trip they no
    /// longer hold can be theirs: they held the trip on that day (a day of
    /// slack for time zones), and let go of it within the window.
    func heldWhenSpent(_ trip: ID<Trip>, driver: ID<Driver>, day: LocalDate, tenant: ID<Tenant>, now: Date,
                       _ db: any SQLExecutor) async throws -> Bool {
        guard let row = try await db.first("""
            SELECT first_assigned_at, released_at FROM trip_drivers WHERE tenant_id = \(tenant) AND trip_id = \(trip) AND driver_id = \(driver)
            """), let released = try row.optionalDate("released_at") else { return false }
        let assigned = try row.date("first_assigned_at")
        return now.timeIntervalSince(released) <= Self.lateExpenseWindow
            && day <= LocalDate(released).adding(days: 1) && day >= LocalDate(assigned).adding(days: -1)
    }

    func notifyTripAssigned(_ trip: Trip, to driver: ID<Driver>, _ tx: TenantTransaction) async throws {
        try await insertNotification(.tripAssigned(trip), to: driver, tx)
    }
}
