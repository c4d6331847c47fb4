import Foundation
import VroomXModels

/// The carrier's trucks and trailers. Dispatch manages the fleet; a driver
/// sees the units assigned to them (through `scope.filter()`: the table's
/// `driver_id` is the assigned driver) and records their odometer.
extension Store {
    // MARK: Reads

    public func equipmentDocuments(_ scope: Scope, kind: EquipmentKind? = nil, status: EquipmentStatus? = nil,
                                   page: PageRequest = .init()) async throws -> DocumentPage {
        var filter = scope.filter()
        if let kind { filter = filter + " AND kind = \(kind)" }
        if let status { filter = filter + " AND status = \(status)" }
        return try await read { db in try await documentPage(from: "equipment", where: filter, order: Equipment.order, page, db) }
    }

    public func equipmentDocument(_ id: ID<Equipment>, _ scope: Scope) async throws -> String {
        try await document("SELECT doc FROM equipment WHERE \(scope.filter()) AND id = \(id)", notFound: "Unit")
    }

    public func equipment(_ id: ID<Equipment>, _ scope: Scope) async throws -> Equipment {
        try await read { db in
            guard let unit = try await fetchEquipment(id, scope, db) else { throw AppError.notFound("Unit") }
            return unit
        }
    }

    /// Every unit of the carrier with its papers (the console's fleet page).
    public func fleet(tenant: ID<Tenant>) async throws -> [Equipment] {
        try await read { db in
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
    }

    /// The units given to a driver, with their papers (not their photos).
    public func units(of driver: ID<Driver>, tenant: ID<Tenant>) async throws -> [Equipment] {
        try await read { db in
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
    }

    /// A unit with its papers; on PostgreSQL its row stays locked until the
    /// transaction ends when `locking`.
    func fetchEquipment(_ id: ID<Equipment>, _ scope: Scope, locking: Bool = false, _ db: any SQLExecutor) async throws -> Equipment? {
        let lock: SQL = locking ? Self.lockingRows(db) : ""
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

    // MARK: Dispatch edits

    public func createEquipment(_ fields: EquipmentFields, tenant: ID<Tenant>) async throws -> Equipment {
        try await write(tenant: tenant) { tx in try await insertEquipment(fields, tx) }
    }

    func insertEquipment(_ fields: EquipmentFields, _ tx: TenantTransaction) async throws -> Equipment {
        guard let kind = fields.kind else { throw AppError.validation("kind", "kind is required: truck or trailer.") }
        var unit = Equipment(id: ID(), kind: kind, unitNumber: "", createdAt: tx.now, updatedAt: tx.now)
        try FleetRules.apply(fields, to: &unit, now: tx.now)
        try await tx.execute("""
            INSERT INTO equipment (id, tenant_id, kind, unit_number, unit_key, make, model, year, vin, plate, plate_state, status,
                                   trailer_type, capacity_cars, gvwr_pounds, fuel_type, notes, created_at, updated_at, doc)
            VALUES (\(unit.id), \(tx.tenant), \(unit.kind), \(unit.unitNumber), \(FleetRules.key(unit.unitNumber)), \(unit.make),
                    \(unit.model), \(unit.year), \(unit.vin), \(unit.plate), \(unit.plateState), \(unit.status),
                    \(unit.specs.trailerType), \(unit.specs.capacityCars), \(unit.specs.gvwrPounds), \(unit.specs.fuelType),
                    \(unit.notes), \(tx.now), \(tx.now), \(try WireDocument.encode(unit)))
            """, unique: FleetRules.unitNumberTaken(unit.unitNumber))
        tx.recordUpsert(.equipment, id: unit.id.rawValue, document: try WireDocument.encode(unit), visibleTo: nil)
        return unit
    }

    /// Changes the fields given. With a `base_version`, a field group
    /// (details, status) someone else changed since then is a `conflict`;
    /// odometer readings and assignment never conflict with an edit.
    public func updateEquipment(_ id: ID<Equipment>, _ fields: EquipmentFields, tenant: ID<Tenant>) async throws -> Equipment {
        try await write(tenant: tenant) { tx in
            guard let current = try await fetchEquipment(id, .dispatch(tenant: tenant), locking: true, tx.db) else {
                throw AppError.notFound("Unit")
            }
            if let kind = fields.kind, kind != current.kind {
                throw AppError.validation("kind", "A unit's kind cannot change; add a new unit instead.")
            }
            var edited = current
            try FleetRules.apply(fields, to: &edited, now: tx.now)
            let detailsChanged = FleetRules.details(of: edited) != FleetRules.details(of: current)
            let statusChanged = edited.status != current.status
            if let base = fields.baseVersion {
                guard (1...current.version).contains(base) else {
                    throw AppError.validation("base_version", "base_version is the version the edit started from: 1 to \(current.version).")
                }
                let versions = try await equipmentFieldVersions(id, tx)
                if detailsChanged, versions.details > base {
                    throw AppError(409, .conflict, "Someone else changed unit \(current.unitNumber) since version \(base); it is now version \(current.version).",
                                   field: "base_version")
                }
                if statusChanged, versions.status > base {
                    throw AppError(409, .conflict, "Someone else changed the status of unit \(current.unitNumber) since version \(base).",
                                   field: "status")
                }
            }
            guard detailsChanged || statusChanged else { return current }
            if edited.status == .retired, current.driverID != nil { edited.driverID = nil }
            return try await saveEquipment(edited, from: current, detailsChanged: detailsChanged, statusChanged: statusChanged, tx)
        }
    }

    /// Moves several units to one status: all of them, or none when one is
    /// not the carrier's.
    public func setEquipmentStatus(_ change: EquipmentStatusChange, tenant: ID<Tenant>) async throws -> [Equipment] {
        guard !change.ids.isEmpty, change.ids.count <= 500 else { throw AppError.validation("ids", "Give 1 to 500 unit ids.") }
        let positions = Dictionary(change.ids.enumerated().map { ($0.element, $0.offset) }) { first, _ in first }
        return try await write(tenant: tenant) { tx in
            var saved: [Equipment] = []
            for (id, position) in positions.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {  // one lock order for every writer
                guard let current = try await fetchEquipment(id, .dispatch(tenant: tenant), locking: true, tx.db) else {
                    throw AppError(422, .validationFailed, "ids[\(position)] is not a unit of this carrier.", field: "ids[\(position)]")
                }
                guard current.status != change.status else { saved.append(current); continue }
                var edited = current
                edited.status = change.status
                if edited.status == .retired { edited.driverID = nil }
                saved.append(try await saveEquipment(edited, from: current, detailsChanged: false, statusChanged: true, tx))
            }
            return saved.sorted { FleetRules.key($0.unitNumber) < FleetRules.key($1.unitNumber) }
        }
    }

    /// Gives a unit to a driver (taking back the unit of the same kind they
    /// had), or takes it back. Retired units cannot be assigned.
    public func assignEquipment(_ id: ID<Equipment>, to driver: ID<Driver>?, tenant: ID<Tenant>) async throws -> Equipment {
        try await write(tenant: tenant) { tx in
            guard let current = try await fetchEquipment(id, .dispatch(tenant: tenant), locking: true, tx.db) else {
                throw AppError.notFound("Unit")
            }
            guard current.driverID != driver else { return current }
            if let driver {
                guard current.status != .retired else {
                    throw AppError(409, .invalidTransition, "Unit \(current.unitNumber) is retired; it cannot be assigned.", field: "driver_id")
                }
                _ = try await assignableDriver(driver, tenant: tenant, tx.db)
                if let previousID = try await tx.first("""
                    SELECT id FROM equipment WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND kind = \(current.kind)
                    """).map({ try $0.id("id", as: Equipment.self) }),
                   let previous = try await fetchEquipment(previousID, .dispatch(tenant: tenant), locking: true, tx.db) {
                    var released = previous
                    released.driverID = nil
                    _ = try await saveEquipment(released, from: previous, detailsChanged: false, statusChanged: false, tx)
                }
            }
            var edited = current
            edited.driverID = driver
            return try await saveEquipment(edited, from: current, detailsChanged: false, statusChanged: false, tx)
        }
    }

    /// Writes a unit changed from `previous` (version + 1, its document) and
    /// records it for dispatch and its driver; a driver it was taken from
    /// drops it.
    @discardableResult
    func saveEquipment(_ unit: Equipment, from previous: Equipment, detailsChanged: Bool, statusChanged: Bool,
                       _ tx: TenantTransaction) async throws -> Equipment {
        var unit = unit
        unit.version = previous.version + 1
        unit.updatedAt = tx.now
        let doc = try WireDocument.encode(unit)
        let details: SQL = detailsChanged ? ", details_version = \(unit.version)" : ""
        let status: SQL = statusChanged ? ", status_version = \(unit.version)" : ""
        guard try await tx.first("""
            UPDATE equipment SET unit_number = \(unit.unitNumber), unit_key = \(FleetRules.key(unit.unitNumber)), make = \(unit.make),
                model = \(unit.model), year = \(unit.year), vin = \(unit.vin), plate = \(unit.plate), plate_state = \(unit.plateState),
                status = \(unit.status), trailer_type = \(unit.specs.trailerType), capacity_cars = \(unit.specs.capacityCars),
                gvwr_pounds = \(unit.specs.gvwrPounds), fuel_type = \(unit.specs.fuelType), notes = \(unit.notes),
                driver_id = \(unit.driverID), odometer_miles = \(unit.odometerMiles), odometer_at = \(unit.odometerAt),
                version = \(unit.version), updated_at = \(tx.now), doc = \(doc)\(details)\(status)
            WHERE tenant_id = \(tx.tenant) AND id = \(unit.id) AND version = \(previous.version) RETURNING id
            """, unique: FleetRules.unitNumberTaken(unit.unitNumber)) != nil else { throw WriteConflict() }
        tx.recordUpsert(.equipment, id: unit.id.rawValue, document: doc, visibleTo: unit.driverID)
        if let old = previous.driverID, old != unit.driverID { tx.recordRevoke(.equipment, id: unit.id.rawValue, from: old) }
        return unit
    }

    /// The unit as stored again after its papers changed (its document
    /// embeds them): a new version for everyone who sees it.
    func resaveEquipment(_ id: ID<Equipment>, _ tx: TenantTransaction) async throws -> Equipment {
        guard let unit = try await fetchEquipment(id, .dispatch(tenant: tx.tenant), locking: true, tx.db) else {
            throw AppError.notFound("Unit")
        }
        return try await saveEquipment(unit, from: unit, detailsChanged: false, statusChanged: false, tx)
    }

    private func equipmentFieldVersions(_ id: ID<Equipment>, _ tx: TenantTransaction) async throws -> (details: Int, status: Int) {
        guard let row = try await tx.first("""
            SELECT details_version, status_version FROM equipment WHERE tenant_id = \(tx.tenant) AND id = \(id)
            """) else { throw AppError.notFound("Unit") }
        return (try row.int("details_version"), try row.int("status_version"))
    }

    // MARK: Papers

    public func addEquipmentDocument(_ id: ID<Equipment>, _ request: AddEquipmentDocumentRequest, tenant: ID<Tenant>) async throws -> Equipment {
        let number = try Validate.text(request.number ?? "", FieldLimits.documentNumber)
        let notes = try Validate.text(request.notes ?? "", FieldLimits.documentNotes)
        return try await write(tenant: tenant) { tx in
            guard try await fetchEquipment(id, .dispatch(tenant: tenant), locking: true, tx.db) != nil else { throw AppError.notFound("Unit") }
            guard try await tx.first("""
                SELECT COUNT(*) AS papers FROM equipment_documents WHERE tenant_id = \(tenant) AND equipment_id = \(id)
                """)?.int("papers") ?? 0 < FleetRules.maxDocuments else {
                throw AppError.validation("kind", "A unit keeps at most \(FleetRules.maxDocuments) documents; delete old ones first.")
            }
            try await tx.execute("""
                INSERT INTO equipment_documents (id, tenant_id, equipment_id, kind, number, expires_on, notes, created_at)
                VALUES (\(ID<EquipmentDocument>()), \(tenant), \(id), \(request.kind), \(number), \(request.expiresOn), \(notes), \(tx.now))
                """)
            return try await resaveEquipment(id, tx)
        }
    }

    public func deleteEquipmentDocument(_ id: ID<Equipment>, document: ID<EquipmentDocument>, tenant: ID<Tenant>) async throws -> Equipment {
        try await write(tenant: tenant) { tx in
            guard try await fetchEquipment(id, .dispatch(tenant: tenant), locking: true, tx.db) != nil else { throw AppError.notFound("Unit") }
            guard try await tx.first("""
                DELETE FROM equipment_documents WHERE tenant_id = \(tenant) AND equipment_id = \(id) AND id = \(document) RETURNING id
                """) != nil else { throw AppError.notFound("Document") }
            return try await resaveEquipment(id, tx)
        }
    }

    /// Papers that have run out or run out within `days`, soonest first.
    public func expiringDocuments(within days: Int, tenant: ID<Tenant>) async throws -> [ExpiringDocument] {
        let until = LocalDate(now.addingTimeInterval(TimeInterval(days) * 86_400))
        return try await read { db in
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
    }

    /// Tells dispatch, once per document, that a paper runs out within
    /// `days`: the document is marked and its unit sent again through the
    /// feed (the console lists it). Returns how many were noticed.
    @discardableResult
    public func noticeExpiringDocuments(within days: Int = 30) async throws -> Int {
        let until = LocalDate(now.addingTimeInterval(TimeInterval(days) * 86_400))
        var noticed = 0
        // Carrier by carrier, a bounded share each: one carrier's thousands of papers never hold back another's.
        for tenant in try await tenants() {
            let due = try await read { db in
                try await db.query("""
                    SELECT d.equipment_id, d.id FROM equipment_documents d
                    JOIN equipment e ON e.tenant_id = d.tenant_id AND e.id = d.equipment_id
                    WHERE d.tenant_id = \(tenant.id) AND d.expiry_notice_at IS NULL AND d.expires_on IS NOT NULL
                    AND d.expires_on <= \(until) AND e.status <> 'retired'
                    ORDER BY d.expires_on LIMIT 500
                    """).map { (try $0.id("equipment_id", as: Equipment.self), try $0.id("id", as: EquipmentDocument.self)) }
            }
            for (unit, papers) in Dictionary(grouping: due, by: \.0) {
                noticed += try await write(tenant: tenant.id) { tx in
                    var marked = 0
                    for (_, paper) in papers {
                        if try await tx.first("""
                            UPDATE equipment_documents SET expiry_notice_at = \(tx.now)
                            WHERE tenant_id = \(tenant.id) AND id = \(paper) AND expiry_notice_at IS NULL RETURNING id
                            """) != nil { marked += 1 }
                    }
                    if marked > 0 { _ = try await resaveEquipment(unit, tx) }
                    return marked
                }
            }
        }
        return noticed
    }

    // MARK: Photos

    /// A photo of a unit the scope sees, and where its bytes are stored.
    public func unitPhoto(_ id: ID<Equipment>, photo: ID<EquipmentPhoto>, _ scope: Scope) async throws -> (photo: EquipmentPhoto, key: String) {
        try await read { db in
            guard try await db.first("SELECT id FROM equipment WHERE \(scope.filter()) AND id = \(id)") != nil,
                  let row = try await db.first("""
                      SELECT \(EquipmentPhoto.columns), storage_key FROM equipment_photos
                      WHERE tenant_id = \(scope.tenant) AND equipment_id = \(id) AND id = \(photo)
                      """) else { throw AppError.notFound("Photo") }
            return (try EquipmentPhoto(row: row), try row.string("storage_key"))
        }
    }

    /// A unit the scope may add photos to, and has room for another.
    func checkRoomForPhoto(of id: ID<Equipment>, _ scope: Scope, _ tx: TenantTransaction) async throws {
        guard try await tx.first("SELECT id FROM equipment WHERE \(scope.filter()) AND id = \(id)") != nil else {
            throw AppError.notFound("Unit")
        }
        let photos = try await tx.first("""
            SELECT COUNT(*) AS photos FROM equipment_photos WHERE tenant_id = \(tx.tenant) AND equipment_id = \(id)
            """)?.int("photos") ?? 0
        guard photos < EquipmentPhoto.maxPerUnit else {
            throw AppError(422, .validationFailed, "A unit keeps at most \(EquipmentPhoto.maxPerUnit) photos; delete old ones first.",
                           field: "photos")
        }
    }

    /// Attaches a finished upload as a photo of a unit (a new version of
    /// the unit for everyone who sees it).
    func addPhoto(_ photo: EquipmentPhoto, key: String, to id: ID<Equipment>, _ scope: Scope, _ tx: TenantTransaction) async throws {
        guard try await fetchEquipment(id, scope, locking: true, tx.db) != nil else { throw AppError.notFound("Unit") }
        try await checkRoomForPhoto(of: id, scope, tx)
        try await tx.execute("""
            INSERT INTO equipment_photos (id, tenant_id, equipment_id, content_type, size_bytes, sha256, storage_key, uploaded_by, uploaded_at)
            VALUES (\(photo.id), \(tx.tenant), \(id), \(photo.contentType), \(photo.sizeBytes), \(photo.sha256), \(key),
                    \(photo.uploadedBy), \(photo.uploadedAt))
            """)
        _ = try await resaveEquipment(id, tx)
    }

    /// Removes a photo: dispatch any, a driver only one they took of their
    /// own unit. Returns the unit and where the photo's bytes were, for the
    /// caller to remove once this has committed.
    public func deleteUnitPhoto(_ id: ID<Equipment>, photo: ID<EquipmentPhoto>, user: ID<User>,
                                _ scope: Scope) async throws -> (unit: Equipment, key: String) {
        try await write(tenant: scope.tenant) { tx in
            guard try await fetchEquipment(id, scope, locking: true, tx.db) != nil else { throw AppError.notFound("Unit") }
            let takenBy: SQL = scope.driverID == nil ? "" : " AND uploaded_by = \(user)"
            guard let key = try await tx.first("""
                DELETE FROM equipment_photos WHERE tenant_id = \(tx.tenant) AND equipment_id = \(id) AND id = \(photo)\(takenBy)
                RETURNING storage_key
                """).map({ try $0.string("storage_key") }) else { throw AppError.notFound("Photo") }
            return (try await resaveEquipment(id, tx), key)
        }
    }
}

/// A paper running out, with its unit.
public struct ExpiringDocument: Codable, Sendable, Hashable {
    public var equipmentID: ID<Equipment>
    public var unitNumber: String
    public var document: EquipmentDocument

    enum CodingKeys: String, CodingKey {
        case document
        case equipmentID = "equipment_id"
        case unitNumber = "unit_number"
    }
}
