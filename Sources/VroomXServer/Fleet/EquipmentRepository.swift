import Foundation
import VroomXModels

/// Trucks and trailers in the database, with their papers, photos and
/// odometer readings: the SQL and the row mapping, nothing else. Policy
/// lives in `FleetService`.
enum EquipmentRepository {
    static func filter(_ scope: Scope, kind: EquipmentKind?, status: EquipmentStatus?) -> SQL {
        var filter = scope.filter()
        if let kind { filter = filter + " AND kind = \(kind)" }
        if let status { filter = filter + " AND status = \(status)" }
        return filter
    }

    static func documents(_ scope: Scope, kind: EquipmentKind?, status: EquipmentStatus?, _ page: PageRequest,
                          _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "equipment", where: filter(scope, kind: kind, status: status), order: Equipment.order, page, db)
    }

    /// A unit's stored document, as clients receive it.
    static func document(_ id: ID<Equipment>, _ scope: Scope, _ db: any SQLExecutor) async throws -> String? {
        try await db.first("SELECT doc FROM equipment WHERE \(scope.filter()) AND id = \(id)")?.string("doc")
    }

    /// A unit's odometer readings as stored documents, newest first.
    static func readings(of id: ID<Equipment>, tenant: ID<Tenant>, _ page: PageRequest, _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "odometer_readings", where: "tenant_id = \(tenant) AND equipment_id = \(id)",
                                     order: OdometerReading.order, page, db)
    }

    /// Every unit of the carrier with its papers and photos.
    static func all(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Equipment] {
        let documents = Dictionary(grouping: try await db.query("""
            SELECT \(EquipmentDocument.columns) FROM equipment_documents WHERE tenant_id = \(tenant) ORDER BY expires_on, id
            """).map { (try $0.id("equipment_id", as: Equipment.self), try EquipmentDocument(row: $0)) }, by: \.0)
        let photos = Dictionary(grouping: try await db.query("""
            SELECT \(EquipmentPhoto.columns) FROM equipment_photos WHERE tenant_id = \(tenant) ORDER BY uploaded_at, id
            """).map { (try $0.id("equipment_id", as: Equipment.self), try EquipmentPhoto(row: $0)) }, by: \.0)
        return try await db.query("SELECT \(Equipment.columns) FROM equipment WHERE tenant_id = \(tenant) ORDER BY unit_key")
            .map { row in
                var unit = try Equipment(row: row)
                unit.documents = documents[unit.id]?.map(\.1) ?? []
                unit.photos = photos[unit.id]?.map(\.1) ?? []
                return unit
            }
    }

    /// The units given to a driver, with their papers (not their photos).
    static func assigned(to driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Equipment] {
        let units = try await db.query("""
            SELECT \(Equipment.columns) FROM equipment WHERE tenant_id = \(tenant) AND driver_id = \(driver) ORDER BY unit_key
            """).map(Equipment.init(row:))
        guard !units.isEmpty else { return [] }
        let documents = Dictionary(grouping: try await db.query("""
            SELECT \(EquipmentDocument.columns) FROM equipment_documents
            WHERE tenant_id = \(tenant) AND equipment_id IN (\(SQL.list(units.map(\.id)))) ORDER BY expires_on, id
            """).map { (try $0.id("equipment_id", as: Equipment.self), try EquipmentDocument(row: $0)) }, by: \.0)
        return units.map { unit in
            var unit = unit
            unit.documents = documents[unit.id]?.map(\.1) ?? []
            return unit
        }
    }

    /// The ids of the units given to a driver.
    static func ids(assignedTo driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [ID<Equipment>] {
        try await db.query("SELECT id FROM equipment WHERE tenant_id = \(tenant) AND driver_id = \(driver)").map { try $0.id("id") }
    }

    /// Every unit's number and kind, by its key (the number ignoring case).
    static func kinds(tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [String: (number: String, kind: String)] {
        var kinds: [String: (number: String, kind: String)] = [:]
        for row in try await db.query("SELECT unit_key, unit_number, kind FROM equipment WHERE tenant_id = \(tenant)") {
            kinds[try row.string("unit_key")] = (try row.string("unit_number"), try row.string("kind"))
        }
        return kinds
    }

    /// The unit the carrier numbers so (ignoring case, as numbers are unique).
    static func id(ofUnit number: String, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> ID<Equipment>? {
        try await db.first("SELECT id FROM equipment WHERE tenant_id = \(tenant) AND unit_key = \(FleetRules.key(number))")
            .map { try $0.id("id", as: Equipment.self) }
    }

    /// The unit of a kind a driver holds, if any.
    static func held(by driver: ID<Driver>, kind: EquipmentKind, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> ID<Equipment>? {
        try await db.first("""
            SELECT id FROM equipment WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND kind = \(kind)
            """).map { try $0.id("id", as: Equipment.self) }
    }

    /// A unit with its papers and photos; on PostgreSQL its row stays locked
    /// until the transaction ends when `locking`.
    static func find(_ id: ID<Equipment>, _ scope: Scope, locking: Bool = false, _ db: any SQLExecutor) async throws -> Equipment? {
        let lock: SQL = locking ? Store.lockingRows(db) : ""
        guard var unit = try await db.first("""
            SELECT \(Equipment.columns) FROM equipment WHERE \(scope.filter()) AND id = \(id)\(lock)
            """).map(Equipment.init(row:)) else { return nil }
        unit.documents = try await db.query("""
            SELECT \(EquipmentDocument.columns) FROM equipment_documents
            WHERE tenant_id = \(scope.tenant) AND equipment_id = \(id) ORDER BY expires_on, id
            """).map(EquipmentDocument.init(row:))
        unit.photos = try await db.query("""
            SELECT \(EquipmentPhoto.columns) FROM equipment_photos
            WHERE tenant_id = \(scope.tenant) AND equipment_id = \(id) ORDER BY uploaded_at, id
            """).map(EquipmentPhoto.init(row:))
        return unit
    }

    /// Whether the scope sees the unit (without reading it).
    static func exists(_ id: ID<Equipment>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Bool {
        try await db.first("SELECT id FROM equipment WHERE \(scope.filter()) AND id = \(id)") != nil
    }

    /// Writes a new unit and records the change.
    static func insert(_ unit: Equipment, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO equipment (id, tenant_id, kind, unit_number, unit_key, make, model, year, vin, plate, plate_state, status,
                                   trailer_type, capacity_cars, gvwr_pounds, fuel_type, notes, created_at, updated_at, doc)
            VALUES (\(unit.id), \(tx.tenant), \(unit.kind), \(unit.unitNumber), \(FleetRules.key(unit.unitNumber)), \(unit.make),
                    \(unit.model), \(unit.year), \(unit.vin), \(unit.plate), \(unit.plateState), \(unit.status),
                    \(unit.specs.trailerType), \(unit.specs.capacityCars), \(unit.specs.gvwrPounds), \(unit.specs.fuelType),
                    \(unit.notes), \(unit.createdAt), \(unit.updatedAt), \(try WireDocument.encode(unit)))
            """, unique: FleetRules.unitNumberTaken(unit.unitNumber))
        tx.recordUpsert(.equipment, id: unit.id.rawValue, document: try WireDocument.encode(unit), visibleTo: nil)
    }

    /// Writes a unit's new state (already at its next version) if nobody
    /// changed it since `previous`; records it for dispatch and its driver,
    /// and a driver it was taken from drops it.
    static func update(_ unit: Equipment, from previous: Equipment, detailsChanged: Bool, statusChanged: Bool,
                       _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(unit)
        let details: SQL = detailsChanged ? ", details_version = \(unit.version)" : ""
        let status: SQL = statusChanged ? ", status_version = \(unit.version)" : ""
        guard try await tx.first("""
            UPDATE equipment SET unit_number = \(unit.unitNumber), unit_key = \(FleetRules.key(unit.unitNumber)), make = \(unit.make),
                model = \(unit.model), year = \(unit.year), vin = \(unit.vin), plate = \(unit.plate), plate_state = \(unit.plateState),
                status = \(unit.status), trailer_type = \(unit.specs.trailerType), capacity_cars = \(unit.specs.capacityCars),
                gvwr_pounds = \(unit.specs.gvwrPounds), fuel_type = \(unit.specs.fuelType), notes = \(unit.notes),
                driver_id = \(unit.driverID), odometer_miles = \(unit.odometerMiles), odometer_at = \(unit.odometerAt),
                version = \(unit.version), updated_at = \(unit.updatedAt), doc = \(doc)\(details)\(status)
            WHERE tenant_id = \(tx.tenant) AND id = \(unit.id) AND version = \(previous.version) RETURNING id
            """, unique: FleetRules.unitNumberTaken(unit.unitNumber)) != nil else { throw WriteConflict() }
        tx.recordUpsert(.equipment, id: unit.id.rawValue, document: doc, visibleTo: unit.driverID)
        if let old = previous.driverID, old != unit.driverID { tx.recordRevoke(.equipment, id: unit.id.rawValue, from: old) }
    }

    /// The versions at which a unit's details and its status last changed.
    static func fieldVersions(_ id: ID<Equipment>, _ tx: TenantTransaction) async throws -> (details: Int, status: Int) {
        guard let row = try await tx.first("""
            SELECT details_version, status_version FROM equipment WHERE tenant_id = \(tx.tenant) AND id = \(id)
            """) else { throw AppError.notFound("Unit") }
        return (try row.int("details_version"), try row.int("status_version"))
    }

    // MARK: Papers

    static func paperCount(of id: ID<Equipment>, _ tx: TenantTransaction) async throws -> Int {
        try await tx.first("SELECT COUNT(*) AS papers FROM equipment_documents WHERE tenant_id = \(tx.tenant) AND equipment_id = \(id)")?
            .int("papers") ?? 0
    }

    static func insertPaper(of id: ID<Equipment>, kind: EquipmentDocumentKind, number: String, expiresOn: LocalDate?, notes: String,
                            _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO equipment_documents (id, tenant_id, equipment_id, kind, number, expires_on, notes, created_at)
            VALUES (\(ID<EquipmentDocument>()), \(tx.tenant), \(id), \(kind), \(number), \(expiresOn), \(notes), \(tx.now))
            """)
    }

    /// Removes a paper; false when the unit has no such paper.
    static func deletePaper(_ document: ID<EquipmentDocument>, of id: ID<Equipment>, _ tx: TenantTransaction) async throws -> Bool {
        try await tx.first("""
            DELETE FROM equipment_documents WHERE tenant_id = \(tx.tenant) AND equipment_id = \(id) AND id = \(document) RETURNING id
            """) != nil
    }

    /// Papers of units in service that run out by `until`, soonest first.
    static func papers(expiringBy until: LocalDate, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [ExpiringDocument] {
        try await db.query("""
            SELECT d.id, d.equipment_id, d.kind, d.number, d.expires_on, d.notes, d.expiry_notice_at, d.created_at, e.unit_number
            FROM equipment_documents d JOIN equipment e ON e.tenant_id = d.tenant_id AND e.id = d.equipment_id
            WHERE d.tenant_id = \(tenant) AND d.expires_on IS NOT NULL AND d.expires_on <= \(until) AND e.status <> 'retired'
            ORDER BY d.expires_on, e.unit_key, d.id LIMIT 1000
            """).map { row in
                ExpiringDocument(equipmentID: try row.id("equipment_id"), unitNumber: try row.string("unit_number"),
                                 document: try EquipmentDocument(row: row))
            }
    }

    /// Papers running out by `until` that dispatch was not told of yet (at most `limit`), with their units.
    static func papersToNotice(by until: LocalDate, tenant: ID<Tenant>, limit: Int,
                               _ db: any SQLExecutor) async throws -> [(unit: ID<Equipment>, paper: ID<EquipmentDocument>)] {
        try await db.query("""
            SELECT d.equipment_id, d.id FROM equipment_documents d
            JOIN equipment e ON e.tenant_id = d.tenant_id AND e.id = d.equipment_id
            WHERE d.tenant_id = \(tenant) AND d.expiry_notice_at IS NULL AND d.expires_on IS NOT NULL
            AND d.expires_on <= \(until) AND e.status <> 'retired'
            ORDER BY d.expires_on LIMIT \(limit)
            """).map { (try $0.id("equipment_id", as: Equipment.self), try $0.id("id", as: EquipmentDocument.self)) }
    }

    /// Marks a paper noticed; false when it already was.
    static func markNoticed(_ paper: ID<EquipmentDocument>, _ tx: TenantTransaction) async throws -> Bool {
        try await tx.first("""
            UPDATE equipment_documents SET expiry_notice_at = \(tx.now)
            WHERE tenant_id = \(tx.tenant) AND id = \(paper) AND expiry_notice_at IS NULL RETURNING id
            """) != nil
    }

    // MARK: Photos

    /// A photo of a unit the scope sees, and where its bytes are stored.
    static func photo(_ photo: ID<EquipmentPhoto>, of id: ID<Equipment>, _ scope: Scope,
                      _ db: any SQLExecutor) async throws -> (photo: EquipmentPhoto, key: String)? {
        guard try await exists(id, scope, db), let row = try await db.first("""
            SELECT \(EquipmentPhoto.columns), storage_key FROM equipment_photos
            WHERE tenant_id = \(scope.tenant) AND equipment_id = \(id) AND id = \(photo)
            """) else { return nil }
        return (try EquipmentPhoto(row: row), try row.string("storage_key"))
    }

    static func photoCount(of id: ID<Equipment>, _ tx: TenantTransaction) async throws -> Int {
        try await tx.first("SELECT COUNT(*) AS photos FROM equipment_photos WHERE tenant_id = \(tx.tenant) AND equipment_id = \(id)")?
            .int("photos") ?? 0
    }

    static func insertPhoto(_ photo: EquipmentPhoto, key: String, of id: ID<Equipment>, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO equipment_photos (id, tenant_id, equipment_id, content_type, size_bytes, sha256, storage_key, uploaded_by, uploaded_at)
            VALUES (\(photo.id), \(tx.tenant), \(id), \(photo.contentType), \(photo.sizeBytes), \(photo.sha256), \(key),
                    \(photo.uploadedBy), \(photo.uploadedAt))
            """)
    }

    /// Removes a photo (only one `takenBy` uploaded, when given); where its bytes were, or nil when there is no such photo.
    static func deletePhoto(_ photo: ID<EquipmentPhoto>, of id: ID<Equipment>, takenBy user: ID<User>?,
                            _ tx: TenantTransaction) async throws -> String? {
        let takenBy: SQL = user.map { " AND uploaded_by = \($0)" } ?? ""
        return try await tx.first("""
            DELETE FROM equipment_photos WHERE tenant_id = \(tx.tenant) AND equipment_id = \(id) AND id = \(photo)\(takenBy)
            RETURNING storage_key
            """).map { try $0.string("storage_key") }
    }

    // MARK: Odometer readings

    static func reading(_ id: ID<OdometerReading>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> OdometerReading? {
        try await db.first("""
            SELECT \(OdometerReading.columns) FROM odometer_readings WHERE tenant_id = \(tenant) AND id = \(id)
            """).map(OdometerReading.init(row:))
    }

    /// What the unit's readings say around `span`: the highest before it, the lowest after it, the range inside it (when asked).
    static func neighbours(of unit: ID<Equipment>, around span: ClosedRange<Date>, inside: Bool, tenant: ID<Tenant>,
                           _ db: any SQLExecutor) async throws -> OdometerRule.Neighbours {
        var known = OdometerRule.Neighbours()
        if inside, let row = try await db.first("""
            SELECT MIN(miles) AS low, MAX(miles) AS high FROM odometer_readings
            WHERE tenant_id = \(tenant) AND equipment_id = \(unit) AND recorded_at > \(span.lowerBound) AND recorded_at <= \(span.upperBound)
            """), let low = try row.optionalInt("low"), let high = try row.optionalInt("high") {
            known.inside = (low, high)
        }
        if let before = try await db.first("""
            SELECT miles, recorded_at FROM odometer_readings WHERE tenant_id = \(tenant) AND equipment_id = \(unit)
            AND recorded_at <= \(span.lowerBound) ORDER BY miles DESC LIMIT 1
            """) {
            known.before = (try before.int("miles"), try before.date("recorded_at"))
        }
        known.after = try await db.first("""
            SELECT miles FROM odometer_readings WHERE tenant_id = \(tenant) AND equipment_id = \(unit)
            AND recorded_at > \(span.upperBound) ORDER BY miles LIMIT 1
            """)?.int("miles")
        return known
    }

    static func insertReading(_ reading: OdometerReading, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO odometer_readings (id, tenant_id, equipment_id, miles, recorded_at, driver_id, created_at, doc)
            VALUES (\(reading.id), \(tx.tenant), \(reading.equipmentID), \(reading.miles), \(reading.recordedAt), \(reading.driverID),
                    \(tx.now), \(try WireDocument.encode(reading)))
            """, unique: AppError.idTaken)
    }

    /// A truck's fuel fills of a period (from fuel expenses).
    static func fuelFills(of id: ID<Equipment>, from: LocalDate, to: LocalDate, tenant: ID<Tenant>,
                          _ db: any SQLExecutor) async throws -> [FuelReport.Fill] {
        try await db.query("""
            SELECT \(Expense.columns) FROM trip_expenses
            WHERE tenant_id = \(tenant) AND fuel_equipment_id = \(id) AND expense_date >= \(from) AND expense_date <= \(to)
            LIMIT 100000
            """).map(Expense.init(row:)).compactMap { expense -> FuelReport.Fill? in
                guard let fuel = expense.fuel else { return nil }
                return FuelReport.Fill(date: expense.date, amountCents: expense.amountCents,
                                       gallons: fuel.unit.gallons(milli: fuel.quantityMilli), odometerMiles: fuel.odometerMiles)
            }
    }
}
