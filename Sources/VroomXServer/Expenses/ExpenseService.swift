import Foundation
import VroomXModels

/// Trip expenses (fuel, tolls, repairs, lodging, other) recorded by drivers
/// and dispatch: who may see and delete which, what a fuel fill records, and
/// when an expense spent offline still counts. The SQL is `ExpenseRepository`'s.
public struct ExpenseService: Sendable {
    let store: Store

    /// The device an expense's changes go to: the driver who recorded it,
    /// or for one dispatch recorded, the driver who holds its trip.
    static func audience(of expenseDriver: ID<Driver>?, tripDriver: ID<Driver>?) -> ID<Driver>? {
        expenseDriver ?? tripDriver
    }

    /// Expenses one trip holds at most: a real trip has tens; a client
    /// looping on the API cannot grow one without end (its page, its feed).
    static let maxExpensesPerTrip = 2_000

    /// Expenses of a trip the caller may see.
    public func list(trip: ID<Trip>, _ scope: Scope) async throws -> [Expense] {
        try await store.read { db in
            guard try await TripRepository.find(trip, scope, db) != nil else { throw AppError.notFound("Trip") }
            return try await ExpenseRepository.onTrip(trip, scope, db)
        }
    }

    public func documents(trip: ID<Trip>, _ scope: Scope, page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { db in
            guard try await TripRepository.find(trip, scope, db) != nil else { throw AppError.notFound("Trip") }
            return try await ExpenseRepository.documents(onTrip: trip, scope, page, db)
        }
    }

    /// Records an expense on one of the driver's trips. The id may be chosen
    /// by the client; sending the same expense again returns the stored one.
    /// Money a driver spent is a fact: an expense recorded offline on a trip
    /// dispatch has since given to another driver is kept on that trip, in
    /// the name of the driver who spent it, marked `after_reassignment` —
    /// when it is of a day they held the trip and arrives within a week.
    public func create(_ request: CreateExpenseRequest, _ scope: Scope) async throws -> Expense {
        if let refusal = ExpenseRules.amountProblem(request.amountCents) ?? ExpenseRules.dateProblem(request.date, now: store.now) {
            throw AppError(refusal)
        }
        let notes = try Validate.text(request.notes ?? "", FieldLimits.expenseNotes)
        return try await store.write(tenant: scope.tenant) { tx in
            var afterReassignment = false
            // Held from the first look, so concurrent expenses of one trip cannot all see room under the cap.
            var found = try await TripRepository.lock(request.tripID, scope, tx.db)
            if found == nil, let driver = scope.driverID,
               try await TripService.heldWhenSpent(request.tripID, driver: driver, day: request.date, tenant: scope.tenant, now: tx.now, tx.db) {
                found = try await TripRepository.lock(request.tripID, .dispatch(tenant: scope.tenant), tx.db)
                afterReassignment = true
            }
            guard let trip = found else { throw AppError.notFound("Trip") }
            let expense = Expense(id: request.id ?? ID(), tripID: trip.id, driverID: scope.driverID, category: request.category,
                                  amountCents: request.amountCents, date: request.date, notes: notes, fuel: request.fuel,
                                  afterReassignment: afterReassignment, createdAt: tx.now)
            if let fuel = expense.fuel {
                do {
                    try await store.fleet.checkFuel(fuel, category: expense.category, scope, tx.db)
                } catch let refusal as AppError {
                    // Sent again, an expense stays what it was, whatever became of its unit since.
                    if let existing = try await sameAsStored(expense, scope, tx) { return existing }
                    throw refusal
                }
            }
            // The insert reads the trip's kept count itself (after the lock: all of them). Nothing written is either the
            // same expense sent again (by the offline app, whose answer was lost), a trip at the cap, or an id taken.
            guard try await ExpenseRepository.insert(expense, belowCount: Self.maxExpensesPerTrip, tx) else {
                if let existing = try await sameAsStored(expense, scope, tx) { return existing }
                let recorded = try await ExpenseRepository.count(onTrip: trip.id, tenant: scope.tenant, tx.db)
                if recorded >= Self.maxExpensesPerTrip {
                    throw AppError(422, .validationFailed,
                                   "Trip \(trip.number) already has \(NumberText.grouped(recorded)) expenses, the most one trip holds. Ask dispatch to merge some.",
                                   field: "trip_id")
                }
                throw AppError.idTaken
            }
            tx.recordUpsert(.expense, id: expense.id.rawValue, document: try WireDocument.encode(expense),
                            visibleTo: Self.audience(of: expense.driverID, tripDriver: trip.driverID))
            if let fuel = expense.fuel, let odometer = fuel.odometerMiles,
               let unit = try await EquipmentRepository.find(fuel.equipmentID, scope, locking: true, tx.db) {
                // A fill's odometer is a reading: the same rules, and the truck's odometer follows it.
                let window = OdometerRule.fillWindow(expense.date, now: tx.now)
                _ = try await store.fleet.insertReading(ID(), unit: unit, miles: odometer, at: window.upperBound, within: window,
                                                        field: "fuel.odometer_miles", scope, tx)
            }
            return expense
        }
    }

    /// The stored expense with this one's id, when it is the same expense
    /// sent again by whoever recorded it; an id taken by a different expense
    /// (or by another driver's) is `already_exists`, never someone else's row.
    private func sameAsStored(_ expense: Expense, _ scope: Scope, _ tx: TenantTransaction) async throws -> Expense? {
        guard let existing = try await ExpenseRepository.find(expense.id, tenant: scope.tenant, tx.db) else { return nil }
        guard existing.driverID == scope.driverID, existing.tripID == expense.tripID, existing.category == expense.category,
              existing.amountCents == expense.amountCents, existing.date == expense.date,
              existing.notes == expense.notes, existing.fuel == expense.fuel else {
            throw AppError.idTaken
        }
        return existing
    }

    /// Deletes an expense: a driver their own (also on a trip dispatch has
    /// given away since), dispatch any.
    public func delete(_ id: ID<Expense>, _ scope: Scope) async throws {
        try await store.write(tenant: scope.tenant) { tx in
            guard let holders = try await ExpenseRepository.holders(of: id, tenant: scope.tenant, lockingTrip: true, tx.db) else {
                throw AppError.notFound("Expense")
            }
            if let driver = scope.driverID {
                guard holders.recordedBy == driver || (holders.recordedBy == nil && holders.tripDriver == driver) else {
                    throw AppError.notFound("Expense")
                }
                guard holders.recordedBy == driver else { throw AppError.forbidden("Only dispatch can delete an expense dispatch recorded.") }
            }
            // Its receipts' rows go with it; their files once this has committed.
            try await ReceiptRepository.trash(try await ReceiptRepository.keys(of: .expense(id), tx), tx)
            try await ExpenseRepository.delete(id, tx)
            tx.recordDelete(.expense, id: id.rawValue, visibleTo: Self.audience(of: holders.recordedBy, tripDriver: holders.tripDriver))
        }
    }
}

extension Store {
    /// Trip expenses: listing, recording (with fuel fills), deleting.
    public var expenses: ExpenseService { ExpenseService(store: self) }
}
