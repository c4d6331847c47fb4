import Foundation
import VroomXModels

/// Odometer readings (a unit's, a fill's) and the fuel a truck bought.
extension Store {
    // MARK: Odometer

    /// Records a reading. Readings of a unit increase with time: one lower
    /// than a reading taken before it (or higher than one taken after it,
    /// when a phone syncs late) is `odometer_decreased`. A driver records
    /// readings of their own units only; the same id again is the same reading.
    @discardableResult
    public func recordOdometer(_ request: RecordOdometerRequest, _ scope: Scope) async throws -> (reading: OdometerReading, unit: Equipment) {
        let miles = try Validate.number(request.miles, FieldLimits.readingMiles)
        return try await write(tenant: scope.tenant) { tx in
            let recordedAt = try Validate.pastInstant(request.recordedAt ?? tx.now, field: "recorded_at", now: tx.now)
            let readingID = request.id ?? ID()
            if let existing = try await tx.first("""
                SELECT \(OdometerReading.columns) FROM odometer_readings WHERE tenant_id = \(scope.tenant) AND id = \(readingID)
                """).map(OdometerReading.init(row:)) {
                guard existing.equipmentID == request.equipmentID, existing.miles == miles,
                      let unit = try await fetchEquipment(request.equipmentID, scope, tx.db) else {
                    throw AppError.idTaken
                }
                return (existing, unit)
            }
            guard let unit = try await fetchEquipment(request.equipmentID, scope, locking: true, tx.db) else { throw AppError.notFound("Unit") }
            return try await insertReading(readingID, unit: unit, miles: miles, at: recordedAt, field: "miles", scope, tx)
        }
    }

    /// A new reading of `unit` (locked by the caller), checked against the
    /// unit's other readings: no lower than one before it, no higher than
    /// one after it, no further than the unit can have driven since. The
    /// unit's odometer follows the newest reading. `field` names the number
    /// in a refusal (`miles`, or a fuel fill's `fuel.odometer_miles`).
    ///
    /// `window`: when only the day of the reading is known (a fuel fill), the
    /// span it lies in; readings inside it may be before or after this one,
    /// so it must be within a day's driving of each of them.
    func insertReading(_ id: ID<OdometerReading>, unit: Equipment, miles: Int, at recordedAt: Date, within window: ClosedRange<Date>? = nil,
                       field: String, _ scope: Scope, _ tx: TenantTransaction) async throws -> (reading: OdometerReading, unit: Equipment) {
        let span = window ?? recordedAt...recordedAt
        var known = OdometerRule.Neighbours()
        if window != nil, let inside = try await tx.first("""
            SELECT MIN(miles) AS low, MAX(miles) AS high FROM odometer_readings
            WHERE tenant_id = \(scope.tenant) AND equipment_id = \(unit.id) AND recorded_at > \(span.lowerBound) AND recorded_at <= \(span.upperBound)
            """), let low = try inside.optionalInt("low"), let high = try inside.optionalInt("high") {
            known.inside = (low, high)
        }
        if let before = try await tx.first("""
            SELECT miles, recorded_at FROM odometer_readings WHERE tenant_id = \(scope.tenant) AND equipment_id = \(unit.id)
            AND recorded_at <= \(span.lowerBound) ORDER BY miles DESC LIMIT 1
            """) {
            known.before = (try before.int("miles"), try before.date("recorded_at"))
        }
        known.after = try await tx.first("""
            SELECT miles FROM odometer_readings WHERE tenant_id = \(scope.tenant) AND equipment_id = \(unit.id)
            AND recorded_at > \(span.upperBound) ORDER BY miles LIMIT 1
            """)?.int("miles")
        if let refusal = OdometerRule.check(miles, unit: unit.unitNumber, in: span, field: field, known) { throw AppError(refusal) }
        let reading = OdometerReading(id: id, equipmentID: unit.id, miles: miles, recordedAt: recordedAt, driverID: scope.driverID)
        try await tx.execute("""
            INSERT INTO odometer_readings (id, tenant_id, equipment_id, miles, recorded_at, driver_id, created_at, doc)
            VALUES (\(reading.id), \(scope.tenant), \(unit.id), \(miles), \(recordedAt), \(scope.driverID), \(tx.now),
                    \(try WireDocument.encode(reading)))
            """, unique: AppError.idTaken)
        // A reading known to the day only may be older than the unit's latest: it never takes the odometer back.
        let notBehind = window == nil || miles >= (unit.odometerMiles ?? 0)
        guard unit.odometerAt.map({ recordedAt >= $0 }) ?? true, notBehind, unit.odometerMiles != miles || unit.odometerAt == nil else {
            return (reading, unit)
        }
        var edited = unit
        edited.odometerMiles = miles
        edited.odometerAt = recordedAt
        return (reading, try await saveEquipment(edited, from: unit, detailsChanged: false, statusChanged: false, tx))
    }

    public func odometerReadingDocuments(_ id: ID<Equipment>, tenant: ID<Tenant>, page: PageRequest) async throws -> DocumentPage {
        try await read { db in
            guard try await fetchEquipment(id, .dispatch(tenant: tenant), db) != nil else { throw AppError.notFound("Unit") }
            return try await documentPage(from: "odometer_readings", where: "tenant_id = \(tenant) AND equipment_id = \(id)",
                                          order: OdometerReading.order, page, db)
        }
    }

    // MARK: Fuel

    /// Fuel economy of a truck over a period (see `FuelReport`).
    public func fuelReport(_ id: ID<Equipment>, from: LocalDate, to: LocalDate, tenant: ID<Tenant>) async throws -> FuelReport {
        guard from <= to else { throw AppError(400, .invalidParameter, "to is before from.", field: "to") }
        return try await read { db in
            guard let unit = try await fetchEquipment(id, .dispatch(tenant: tenant), db) else { throw AppError.notFound("Unit") }
            guard unit.kind == .truck else { throw AppError(422, .validationFailed, "Fuel reports are for trucks; \(unit.unitNumber) is a trailer.", field: "id") }
            let fills = try await db.query("""
                SELECT \(Expense.columns) FROM trip_expenses
                WHERE tenant_id = \(tenant) AND fuel_equipment_id = \(id) AND expense_date >= \(from) AND expense_date <= \(to)
                LIMIT 100000
                """).map(Expense.init(row:)).compactMap { expense -> FuelReport.Fill? in
                    guard let fuel = expense.fuel else { return nil }
                    return FuelReport.Fill(date: expense.date, amountCents: expense.amountCents,
                                           gallons: fuel.unit.gallons(milli: fuel.quantityMilli), odometerMiles: fuel.odometerMiles)
                }
            return FuelReport.compute(id, from: from, to: to, fills: fills)
        }
    }

    /// A fuel purchase on an expense: a fuel expense, for a truck the caller
    /// may see (a driver: their own).
    func checkFuel(_ fuel: FuelPurchase, category: ExpenseCategory, _ scope: Scope, _ db: any SQLExecutor) async throws {
        if let refusal = ExpenseRules.fuelProblem(fuel, category: category) { throw AppError(refusal) }
        guard let unit = try await fetchEquipment(fuel.equipmentID, scope, db) else {
            throw AppError(422, .validationFailed, scope.driverID == nil ? "No such unit in this carrier." : "That truck is not assigned to you.",
                           field: "fuel.equipment_id")
        }
        guard unit.kind == .truck else { throw AppError.validation("fuel.equipment_id", "Fuel is bought for a truck, not a trailer.") }
    }
}
