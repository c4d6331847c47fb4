import Foundation
import VroomXModels

/// Odometer readings (a unit's, a fill's) and the fuel a truck bought.
extension FleetService {
    /// Records a reading. Readings of a unit increase with time: one lower
    /// than a reading taken before it (or higher than one taken after it,
    /// when a phone syncs late) is `odometer_decreased`. A driver records
    /// readings of their own units only; the same id again is the same reading.
    @discardableResult
    public func recordOdometer(_ request: RecordOdometerRequest, _ scope: Scope) async throws -> (reading: OdometerReading, unit: Equipment) {
        let miles = try Validate.number(request.miles, FieldLimits.readingMiles)
        return try await store.write(tenant: scope.tenant) { tx in
            let recordedAt = try Validate.pastInstant(request.recordedAt ?? tx.now, field: "recorded_at", now: tx.now)
            let readingID = request.id ?? ID()
            if let existing = try await EquipmentRepository.reading(readingID, tenant: scope.tenant, tx.db) {
                guard existing.equipmentID == request.equipmentID, existing.miles == miles,
                      let unit = try await EquipmentRepository.find(request.equipmentID, scope, tx.db) else {
                    throw AppError.idTaken
                }
                return (existing, unit)
            }
            guard let unit = try await EquipmentRepository.find(request.equipmentID, scope, locking: true, tx.db) else {
                throw AppError.notFound("Unit")
            }
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
        let known = try await EquipmentRepository.neighbours(of: unit.id, around: span, inside: window != nil, tenant: scope.tenant, tx.db)
        if let refusal = OdometerRule.check(miles, unit: unit.unitNumber, in: span, field: field, known) { throw AppError(refusal) }
        let reading = OdometerReading(id: id, equipmentID: unit.id, miles: miles, recordedAt: recordedAt, driverID: scope.driverID)
        try await EquipmentRepository.insertReading(reading, tx)
        // A reading known to the day only may be older than the unit's latest: it never takes the odometer back.
        let notBehind = window == nil || miles >= (unit.odometerMiles ?? 0)
        guard unit.odometerAt.map({ recordedAt >= $0 }) ?? true, notBehind, unit.odometerMiles != miles || unit.odometerAt == nil else {
            return (reading, unit)
        }
        var edited = unit
        edited.odometerMiles = miles
        edited.odometerAt = recordedAt
        return (reading, try await save(edited, from: unit, detailsChanged: false, statusChanged: false, tx))
    }

    public func odometerReadings(_ id: ID<Equipment>, tenant: ID<Tenant>, page: PageRequest) async throws -> DocumentPage {
        try await store.read { db in
            guard try await EquipmentRepository.find(id, .dispatch(tenant: tenant), db) != nil else { throw AppError.notFound("Unit") }
            return try await EquipmentRepository.readings(of: id, tenant: tenant, page, db)
        }
    }

    /// Fuel economy of a truck over a period (see `FuelReport`).
    public func fuelReport(_ id: ID<Equipment>, from: LocalDate, to: LocalDate, tenant: ID<Tenant>) async throws -> FuelReport {
        guard from <= to else { throw AppError(400, .invalidParameter, "to is before from.", field: "to") }
        return try await store.read { db in
            guard let unit = try await EquipmentRepository.find(id, .dispatch(tenant: tenant), db) else { throw AppError.notFound("Unit") }
            guard unit.kind == .truck else {
                throw AppError(422, .validationFailed, "Fuel reports are for trucks; \(unit.unitNumber) is a trailer.", field: "id")
            }
            let fills = try await EquipmentRepository.fuelFills(of: id, from: from, to: to, tenant: tenant, db)
            return FuelReport.compute(id, from: from, to: to, fills: fills)
        }
    }

    /// A fuel purchase on an expense: a fuel expense, for a truck the caller
    /// may see (a driver: their own).
    func checkFuel(_ fuel: FuelPurchase, category: ExpenseCategory, _ scope: Scope, _ db: any SQLExecutor) async throws {
        if let refusal = ExpenseRules.fuelProblem(fuel, category: category) { throw AppError(refusal) }
        guard let unit = try await EquipmentRepository.find(fuel.equipmentID, scope, db) else {
            throw AppError(422, .validationFailed, scope.driverID == nil ? "No such unit in this carrier." : "That truck is not assigned to you.",
                           field: "fuel.equipment_id")
        }
        guard unit.kind == .truck else { throw AppError.validation("fuel.equipment_id", "Fuel is bought for a truck, not a trailer.") }
    }
}
