import Foundation
import VroomXModels

/// Trip expenses in the database: the SQL and the row mapping, nothing else.
enum ExpenseRepository {
    /// The expenses of a trip the caller sees: dispatch every one; a driver
    /// those they recorded and those dispatch recorded on their trip —
    /// never another driver's (amounts, notes and fuel are theirs).
    static func filter(trip: ID<Trip>, _ scope: Scope) -> SQL {
        "tenant_id = \(scope.tenant) AND trip_id = \(trip)" + (scope.driverID.map { " AND (driver_id = \($0) OR driver_id IS NULL)" } ?? "")
    }

    /// Which expenses a driver sees, for queries over many trips (`x` is the
    /// expense): their own, and dispatch's on the trips they hold.
    static func visible(to driver: ID<Driver>, tenant: ID<Tenant>) -> SQL {
        """
         AND (x.driver_id = \(driver) OR (x.driver_id IS NULL AND x.trip_id IN
             (SELECT t.id FROM trips t WHERE t.tenant_id = \(tenant) AND t.driver_id = \(driver))))
        """
    }

    static func documents(onTrip trip: ID<Trip>, _ scope: Scope, _ page: PageRequest, _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "trip_expenses", where: filter(trip: trip, scope), order: Expense.order, page, db)
    }

    static func onTrip(_ trip: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> [Expense] {
        try await db.query("SELECT \(Expense.columns) FROM trip_expenses WHERE \(filter(trip: trip, scope)) ORDER BY \(Expense.order.sql)")
            .map(Expense.init(row:))
    }

    static func find(_ id: ID<Expense>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Expense? {
        try await db.first("SELECT \(Expense.columns) FROM trip_expenses WHERE tenant_id = \(tenant) AND id = \(id)").map(Expense.init(row:))
    }

    /// An expense the caller may see, its trip's row and then the
    /// expense's held until the transaction ends (PostgreSQL).
    static func lock(_ id: ID<Expense>, trip: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Expense? {
        guard try await TripRepository.lock(trip, .dispatch(tenant: scope.tenant), db) != nil else { return nil }
        let visible: SQL = scope.driverID.map { Self.visible(to: $0, tenant: scope.tenant) } ?? ""
        return try await db.first("""
            SELECT \(Expense.columns) FROM trip_expenses x
            WHERE x.tenant_id = \(scope.tenant) AND x.id = \(id) AND x.trip_id = \(trip)\(visible)\(Store.lockingRows(db))
            """).map(Expense.init(row:))
    }

    static func count(onTrip trip: ID<Trip>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Int {
        try await db.first("SELECT n FROM trip_expense_counts WHERE tenant_id = \(tenant) AND trip_id = \(trip)")?.int("n") ?? 0
    }

    /// Writes a new expense while its trip has fewer than `cap` expenses;
    /// false when it has that many or the id is taken already (nothing written).
    static func insert(_ expense: Expense, belowCount cap: Int, _ tx: TenantTransaction) async throws -> Bool {
        let doc = try WireDocument.encode(expense)
        // SQLite reads ON after a SELECT's WHERE as the conflict clause only because the WHERE is there.
        return try await tx.first("""
            INSERT INTO trip_expenses (id, tenant_id, trip_id, driver_id, category, amount_cents, expense_date, notes,
                                       created_at, doc, fuel_equipment_id, fuel_quantity_milli, fuel_unit, fuel_odometer_miles,
                                       after_reassignment)
            SELECT \(expense.id), \(tx.tenant), \(expense.tripID), \(expense.driverID), \(expense.category), \(expense.amountCents),
                   \(expense.date), \(expense.notes), \(expense.createdAt), \(doc), \(expense.fuel?.equipmentID),
                   \(expense.fuel?.quantityMilli), \(expense.fuel?.unit), \(expense.fuel?.odometerMiles), \(expense.afterReassignment ? 1 : 0)
            WHERE COALESCE((SELECT n FROM trip_expense_counts WHERE tenant_id = \(tx.tenant) AND trip_id = \(expense.tripID)), 0) < \(cap)
            ON CONFLICT (id) DO NOTHING
            RETURNING id
            """) != nil
    }

    /// Who recorded an expense, and who holds its trip (nil when there is no such expense). `lockingTrip`, for a
    /// delete: the trip's row is locked before the expense's, as recording an expense locks it, so a delete
    /// changes the trip's count (`TripExpenseCounts`) in the same order and neither waits for the other in a cycle.
    static func holders(of id: ID<Expense>, tenant: ID<Tenant>, lockingTrip: Bool = false,
                        _ db: any SQLExecutor) async throws -> (recordedBy: ID<Driver>?, tripDriver: ID<Driver>?)? {
        guard let row = try await db.first("""
            SELECT e.driver_id, t.driver_id AS trip_driver_id FROM trip_expenses e
            JOIN trips t ON t.tenant_id = e.tenant_id AND t.id = e.trip_id
            WHERE e.tenant_id = \(tenant) AND e.id = \(id)\(lockingTrip ? Store.lockingRows(db, of: "t") : "")
            """) else { return nil }
        return (try row.optionalID("driver_id"), try row.optionalID("trip_driver_id"))
    }

    static func delete(_ id: ID<Expense>, _ tx: TenantTransaction) async throws {
        try await tx.execute("DELETE FROM trip_expenses WHERE tenant_id = \(tx.tenant) AND id = \(id)")
    }
}
