import Foundation
import VroomXModels

/// Trip expenses (fuel, tolls, repairs, lodging, other) recorded by drivers.
extension Store {
    /// The expenses of a trip the caller sees: dispatch every one; a driver
    /// those they recorded and those dispatch recorded on their trip —
    /// never another driver's (amounts, notes and fuel are theirs).
    func expensesFilter(trip: ID<Trip>, _ scope: Scope) -> SQL {
        "tenant_id = \(scope.tenant) AND trip_id = \(trip)" + (scope.driverID.map { " AND (driver_id = \($0) OR driver_id IS NULL)" } ?? "")
    }

    /// Which expenses a driver sees, for queries over many trips (`x` is the
    /// expense): their own, and dispatch's on the trips they hold.
    static func expensesVisible(to driver: ID<Driver>, tenant: ID<Tenant>) -> SQL {
        """
         AND (x.driver_id = \(driver) OR (x.driver_id IS NULL AND x.trip_id IN
             (SELECT t.id FROM trips t WHERE t.tenant_id = \(tenant) AND t.driver_id = \(driver))))
        """
    }

    /// The device an expense's changes go to: the driver who recorded it,
    /// or for one dispatch recorded, the driver who holds its trip.
    static func audience(of expenseDriver: ID<Driver>?, tripDriver: ID<Driver>?) -> ID<Driver>? {
        expenseDriver ?? tripDriver
    }

    /// Expenses of a trip the caller may see.
    public func expenses(trip: ID<Trip>, _ scope: Scope) async throws -> [Expense] {
        try await read { db in
            guard try await TripRepository.find(trip, scope, db) != nil else { throw AppError.notFound("Trip") }
            return try await db.query("""
                SELECT \(Expense.columns) FROM trip_expenses WHERE \(expensesFilter(trip: trip, scope))
                ORDER BY \(Expense.order.sql)
                """).map(Expense.init(row:))
        }
    }

    public func expenseDocuments(trip: ID<Trip>, _ scope: Scope, page: PageRequest = .init()) async throws -> DocumentPage {
        try await read { db in
            guard try await TripRepository.find(trip, scope, db) != nil else { throw AppError.notFound("Trip") }
            return try await documentPage(from: "trip_expenses", where: expensesFilter(trip: trip, scope),
                                          order: Expense.order, page, db)
        }
    }

    /// Records an expense on one of the driver's trips. The id may be chosen
    /// by the client; sending the same expense again returns the stored one.
    /// Money a driver spent is a fact: an expense recorded offline on a trip
    /// dispatch has since given to another driver is kept on that trip, in
    /// the name of the driver who spent it, marked `after_reassignment` —
    /// when it is of a day they held the trip and arrives within a week.
    public func createExpense(_ request: CreateExpenseRequest, _ scope: Scope) async throws -> Expense {
        if let refusal = ExpenseRules.amountProblem(request.amountCents) ?? ExpenseRules.dateProblem(request.date, now: now) {
            throw AppError(refusal)
        }
        let amount = request.amountCents
        let notes = try Validate.text(request.notes ?? "", FieldLimits.expenseNotes)
        return try await write(tenant: scope.tenant) { tx in
            var afterReassignment = false
            var found = try await TripRepository.find(request.tripID, scope, tx.db)
            if found == nil, let driver = scope.driverID,
               try await TripService.heldWhenSpent(request.tripID, driver: driver, day: request.date, tenant: scope.tenant, now: tx.now, tx.db) {
                found = try await TripRepository.find(request.tripID, .dispatch(tenant: scope.tenant), tx.db)
                afterReassignment = true
            }
            guard let trip = found else { throw AppError.notFound("Trip") }
            // Held while counting, so concurrent expenses of one trip cannot all see room under the cap.
            _ = try await TripRepository.lock(trip.id, .dispatch(tenant: scope.tenant), tx.db)
            let recorded = try await tx.first("""
                SELECT COUNT(*) AS n FROM trip_expenses WHERE tenant_id = \(scope.tenant) AND trip_id = \(trip.id)
                """)?.int("n") ?? 0
            if recorded >= Self.maxExpensesPerTrip, try await !isStored(request.id, scope, tx) {
                throw AppError(422, .validationFailed,
                               "Trip \(trip.number) already has \(NumberText.grouped(recorded)) expenses, the most one trip holds. Ask dispatch to merge some.",
                               field: "trip_id")
            }
            let expense = Expense(id: request.id ?? ID(), tripID: trip.id, driverID: scope.driverID, category: request.category,
                                  amountCents: amount, date: request.date, notes: notes, fuel: request.fuel,
                                  afterReassignment: afterReassignment, createdAt: tx.now)
            if let fuel = expense.fuel {
                do {
                    try await fleet.checkFuel(fuel, category: expense.category, scope, tx.db)
                } catch let refusal as AppError {
                    // Sent again, an expense stays what it was, whatever became of its unit since.
                    if let existing = try await existingExpense(expense, scope, tx) { return existing }
                    throw refusal
                }
            }
            let doc = try WireDocument.encode(expense)
            // An expense sent again (by the offline app, whose answer was lost) finds its row taken: the same content is the same expense.
            guard try await tx.first("""
                INSERT INTO trip_expenses (id, tenant_id, trip_id, driver_id, category, amount_cents, expense_date, notes,
                                           created_at, doc, fuel_equipment_id, fuel_quantity_milli, fuel_unit, fuel_odometer_miles,
                                           after_reassignment)
                VALUES (\(expense.id), \(scope.tenant), \(trip.id), \(expense.driverID), \(expense.category), \(amount),
                        \(expense.date), \(notes), \(tx.now), \(doc), \(expense.fuel?.equipmentID), \(expense.fuel?.quantityMilli),
                        \(expense.fuel?.unit), \(expense.fuel?.odometerMiles), \(afterReassignment ? 1 : 0))
                ON CONFLICT (id) DO NOTHING
                RETURNING id
                """) != nil else {
                guard let existing = try await existingExpense(expense, scope, tx) else {
                    throw AppError.idTaken
                }
                return existing
            }
            tx.recordUpsert(.expense, id: expense.id.rawValue, document: doc,
                            visibleTo: Self.audience(of: expense.driverID, tripDriver: trip.driverID))
            if let fuel = expense.fuel, let odometer = fuel.odometerMiles,
               let unit = try await EquipmentRepository.find(fuel.equipmentID, scope, locking: true, tx.db) {
                // A fill's odometer is a reading: the same rules, and the truck's odometer follows it.
                let window = OdometerRule.fillWindow(expense.date, now: tx.now)
                _ = try await fleet.insertReading(ID(), unit: unit, miles: odometer, at: window.upperBound, within: window,
                                            field: "fuel.odometer_miles", scope, tx)
            }
            return expense
        }
    }

    /// An expense the caller may see, its trip's row and then the
    /// expense's held until the transaction ends (PostgreSQL).
    func lockExpense(_ id: ID<Expense>, trip: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Expense? {
        guard try await TripRepository.lock(trip, .dispatch(tenant: scope.tenant), db) != nil else { return nil }
        let visible: SQL = scope.driverID.map { Self.expensesVisible(to: $0, tenant: scope.tenant) } ?? ""
        return try await db.first("""
            SELECT \(Expense.columns) FROM trip_expenses x
            WHERE x.tenant_id = \(scope.tenant) AND x.id = \(id) AND x.trip_id = \(trip)\(visible)\(Self.lockingRows(db))
            """).map(Expense.init(row:))
    }

    /// Expenses one trip holds at most: a real trip has tens; a client
    /// looping on the API cannot grow one without end (its page, its feed).
    static let maxExpensesPerTrip = 2_000

    /// Whether an expense with this id is already stored (then sending it
    /// again is not a new one, whatever the count).
    private func isStored(_ id: ID<Expense>?, _ scope: Scope, _ tx: TenantTransaction) async throws -> Bool {
        guard let id else { return false }
        return try await tx.first("SELECT id FROM trip_expenses WHERE tenant_id = \(scope.tenant) AND id = \(id)") != nil
    }

    /// The stored expense with this one's id, when it is the same expense
    /// sent again by whoever recorded it; an id taken by a different expense
    /// (or by another driver's) is `already_exists`, never someone else's row.
    private func existingExpense(_ expense: Expense, _ scope: Scope, _ tx: TenantTransaction) async throws -> Expense? {
        guard let existing = try await tx.first("""
            SELECT \(Expense.columns) FROM trip_expenses WHERE tenant_id = \(scope.tenant) AND id = \(expense.id)
            """).map(Expense.init(row:)) else { return nil }
        guard existing.driverID == scope.driverID, existing.tripID == expense.tripID, existing.category == expense.category,
              existing.amountCents == expense.amountCents, existing.date == expense.date,
              existing.notes == expense.notes, existing.fuel == expense.fuel else {
            throw AppError.idTaken
        }
        return existing
    }

    /// Deletes an expense: a driver their own (also on a trip dispatch has
    /// given away since), dispatch any.
    public func deleteExpense(_ id: ID<Expense>, _ scope: Scope) async throws {
        try await write(tenant: scope.tenant) { tx in
            guard let row = try await tx.first("""
                SELECT e.driver_id, t.driver_id AS trip_driver_id FROM trip_expenses e
                JOIN trips t ON t.tenant_id = e.tenant_id AND t.id = e.trip_id
                WHERE e.tenant_id = \(scope.tenant) AND e.id = \(id)
                """) else { throw AppError.notFound("Expense") }
            let tripDriver: ID<Driver>? = try row.optionalID("trip_driver_id")
            let recordedBy: ID<Driver>? = try row.optionalID("driver_id")
            if let driver = scope.driverID {
                guard recordedBy == driver || (recordedBy == nil && tripDriver == driver) else { throw AppError.notFound("Expense") }
                guard recordedBy == driver else {
                    throw AppError.forbidden("Only dispatch can delete an expense dispatch recorded.")
                }
            }
            try await tx.execute("DELETE FROM trip_expenses WHERE tenant_id = \(scope.tenant) AND id = \(id)")
            tx.recordDelete(.expense, id: id.rawValue, visibleTo: Self.audience(of: recordedBy, tripDriver: tripDriver))
        }
    }
}
