import Foundation
import VroomXModels

/// The carrier's trucks and trailers. Dispatch manages the fleet; a driver
/// sees the units assigned to them (through `scope.filter()`: the table's
/// `driver_id` is the assigned driver) and records their odometer. The
/// policy and the transactions; the SQL is `EquipmentRepository`'s.
public struct FleetService: Sendable {
    let store: Store

    // MARK: Reads

    public func documents(_ scope: Scope, kind: EquipmentKind? = nil, status: EquipmentStatus? = nil,
                          page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { try await EquipmentRepository.documents(scope, kind: kind, status: status, page, $0) }
    }

    public func document(_ id: ID<Equipment>, _ scope: Scope) async throws -> String {
        guard let doc = try await store.read({ try await EquipmentRepository.document(id, scope, $0) }) else { throw AppError.notFound("Unit") }
        return doc
    }

    public func unit(_ id: ID<Equipment>, _ scope: Scope) async throws -> Equipment {
        guard let unit = try await store.read({ try await EquipmentRepository.find(id, scope, $0) }) else { throw AppError.notFound("Unit") }
        return unit
    }

    /// Every unit of the carrier with its papers (the console's fleet page).
    public func all(tenant: ID<Tenant>) async throws -> [Equipment] {
        try await store.read { try await EquipmentRepository.all(tenant: tenant, $0) }
    }

    /// The units given to a driver, with their papers (not their photos).
    public func units(of driver: ID<Driver>, tenant: ID<Tenant>) async throws -> [Equipment] {
        try await store.read { try await EquipmentRepository.assigned(to: driver, tenant: tenant, $0) }
    }

    // MARK: Dispatch edits

    public func create(_ fields: EquipmentFields, tenant: ID<Tenant>) async throws -> Equipment {
        try await store.write(tenant: tenant) { tx in try await insert(fields, tx) }
    }

    func insert(_ fields: EquipmentFields, _ tx: TenantTransaction) async throws -> Equipment {
        guard let kind = fields.kind else { throw AppError.validation("kind", "kind is required: truck or trailer.") }
        var unit = Equipment(id: ID(), kind: kind, unitNumber: "", createdAt: tx.now, updatedAt: tx.now)
        try FleetRules.apply(fields, to: &unit, now: tx.now)
        try await EquipmentRepository.insert(unit, tx)
        return unit
    }

    /// Changes the fields given. With a `base_version`, a field group
    /// (details, status) someone else changed since then is a `conflict`;
    /// odometer readings and assignment never conflict with an edit.
    public func update(_ id: ID<Equipment>, _ fields: EquipmentFields, tenant: ID<Tenant>) async throws -> Equipment {
        try await store.write(tenant: tenant) { tx in
            guard let current = try await EquipmentRepository.find(id, .dispatch(tenant: tenant), locking: true, tx.db) else {
                throw AppError.notFound("Unit")
            }
            if let kind = fields.kind, kind != current.kind {
                throw AppError.validation("kind", "A unit's kind cannot change; add a new unit instead.")
            }
            let edit = try FleetRules.edit(current, with: fields, now: tx.now)
            if let base = fields.baseVersion {
                try Validate.baseVersion(base, current: current.version)
                let versions = try await EquipmentRepository.fieldVersions(id, tx)
                if edit.detailsChanged, versions.details > base {
                    throw AppError(409, .conflict, "Someone else changed unit \(current.unitNumber) since version \(base); it is now version \(current.version).",
                                   field: "base_version")
                }
                if edit.statusChanged, versions.status > base {
                    throw AppError(409, .conflict, "Someone else changed the status of unit \(current.unitNumber) since version \(base).",
                                   field: "status")
                }
            }
            guard edit.changed else { return current }
            return try await save(edit.unit, from: current, detailsChanged: edit.detailsChanged, statusChanged: edit.statusChanged, tx)
        }
    }

    /// Moves several units to one status: all of them, or none when one is
    /// not the carrier's.
    public func setStatus(_ change: EquipmentStatusChange, tenant: ID<Tenant>) async throws -> [Equipment] {
        guard !change.ids.isEmpty, change.ids.count <= 500 else { throw AppError.validation("ids", "Give 1 to 500 unit ids.") }
        let positions = Dictionary(change.ids.enumerated().map { ($0.element, $0.offset) }) { first, _ in first }
        return try await store.write(tenant: tenant) { tx in
            var saved: [Equipment] = []
            for (id, position) in positions.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {  // one lock order for every writer
                guard let current = try await EquipmentRepository.find(id, .dispatch(tenant: tenant), locking: true, tx.db) else {
                    throw AppError(422, .validationFailed, "ids[\(position)] is not a unit of this carrier.", field: "ids[\(position)]")
                }
                guard current.status != change.status else { saved.append(current); continue }
                var edited = current
                edited.status = change.status
                if edited.status == .retired { edited.driverID = nil }
                saved.append(try await save(edited, from: current, detailsChanged: false, statusChanged: true, tx))
            }
            return saved.sorted { FleetRules.key($0.unitNumber) < FleetRules.key($1.unitNumber) }
        }
    }

    /// Gives a unit to a driver (taking back the unit of the same kind they
    /// had), or takes it back. Retired units cannot be assigned.
    public func assign(_ id: ID<Equipment>, to driver: ID<Driver>?, tenant: ID<Tenant>) async throws -> Equipment {
        try await store.write(tenant: tenant) { tx in
            guard let current = try await EquipmentRepository.find(id, .dispatch(tenant: tenant), locking: true, tx.db) else {
                throw AppError.notFound("Unit")
            }
            guard current.driverID != driver else { return current }
            if let driver {
                guard current.status != .retired else {
                    throw AppError(409, .invalidTransition, "Unit \(current.unitNumber) is retired; it cannot be assigned.", field: "driver_id")
                }
                _ = try await store.people.assignableDriver(driver, tenant: tenant, tx.db)
                if let previousID = try await EquipmentRepository.held(by: driver, kind: current.kind, tenant: tenant, tx.db),
                   let previous = try await EquipmentRepository.find(previousID, .dispatch(tenant: tenant), locking: true, tx.db) {
                    var released = previous
                    released.driverID = nil
                    _ = try await save(released, from: previous, detailsChanged: false, statusChanged: false, tx)
                }
            }
            var edited = current
            edited.driverID = driver
            return try await save(edited, from: current, detailsChanged: false, statusChanged: false, tx)
        }
    }

    /// Writes a unit changed from `previous` as its next version.
    @discardableResult
    func save(_ unit: Equipment, from previous: Equipment, detailsChanged: Bool, statusChanged: Bool,
              _ tx: TenantTransaction) async throws -> Equipment {
        var unit = unit
        unit.version = previous.version + 1
        unit.updatedAt = tx.now
        try await EquipmentRepository.update(unit, from: previous, detailsChanged: detailsChanged, statusChanged: statusChanged, tx)
        return unit
    }

    /// The unit as stored again after its papers or photos changed (its
    /// document embeds them): a new version for everyone who sees it.
    func resave(_ id: ID<Equipment>, _ tx: TenantTransaction) async throws -> Equipment {
        guard let unit = try await EquipmentRepository.find(id, .dispatch(tenant: tx.tenant), locking: true, tx.db) else {
            throw AppError.notFound("Unit")
        }
        return try await save(unit, from: unit, detailsChanged: false, statusChanged: false, tx)
    }

    // MARK: Papers

    public func addPaper(_ id: ID<Equipment>, _ request: AddEquipmentDocumentRequest, tenant: ID<Tenant>) async throws -> Equipment {
        let number = try Validate.text(request.number ?? "", FieldLimits.documentNumber)
        let notes = try Validate.text(request.notes ?? "", FieldLimits.documentNotes)
        return try await store.write(tenant: tenant) { tx in
            guard try await EquipmentRepository.find(id, .dispatch(tenant: tenant), locking: true, tx.db) != nil else {
                throw AppError.notFound("Unit")
            }
            guard try await EquipmentRepository.paperCount(of: id, tx) < FleetRules.maxDocuments else {
                throw AppError.validation("kind", "A unit keeps at most \(FleetRules.maxDocuments) documents; delete old ones first.")
            }
            try await EquipmentRepository.insertPaper(of: id, kind: request.kind, number: number, expiresOn: request.expiresOn, notes: notes, tx)
            return try await resave(id, tx)
        }
    }

    public func deletePaper(_ id: ID<Equipment>, document: ID<EquipmentDocument>, tenant: ID<Tenant>) async throws -> Equipment {
        try await store.write(tenant: tenant) { tx in
            guard try await EquipmentRepository.find(id, .dispatch(tenant: tenant), locking: true, tx.db) != nil else {
                throw AppError.notFound("Unit")
            }
            guard try await EquipmentRepository.deletePaper(document, of: id, tx) else { throw AppError.notFound("Document") }
            return try await resave(id, tx)
        }
    }

    /// Papers that have run out or run out within `days`, soonest first.
    public func expiringPapers(within days: Int, tenant: ID<Tenant>) async throws -> [ExpiringDocument] {
        let until = LocalDate(store.now.addingTimeInterval(TimeInterval(days) * 86_400))
        return try await store.read { try await EquipmentRepository.papers(expiringBy: until, tenant: tenant, $0) }
    }

    /// Tells dispatch, once per document, that a paper runs out within
    /// `days`: the document is marked and its unit sent again through the
    /// feed (the console lists it). Returns how many were noticed.
    @discardableResult
    public func noticeExpiringPapers(within days: Int = 30) async throws -> Int {
        let until = LocalDate(store.now.addingTimeInterval(TimeInterval(days) * 86_400))
        var noticed = 0
        // Carrier by carrier, a bounded share each: one carrier's thousands of papers never hold back another's.
        for tenant in try await store.people.tenants() {
            let due = try await store.read { try await EquipmentRepository.papersToNotice(by: until, tenant: tenant.id, limit: 500, $0) }
            for (unit, papers) in Dictionary(grouping: due, by: \.unit) {
                noticed += try await store.write(tenant: tenant.id) { tx in
                    var marked = 0
                    for (_, paper) in papers where try await EquipmentRepository.markNoticed(paper, tx) { marked += 1 }
                    if marked > 0 { _ = try await resave(unit, tx) }
                    return marked
                }
            }
        }
        return noticed
    }

    // MARK: Photos

    /// A photo of a unit the scope sees, and where its bytes are stored.
    public func photo(_ id: ID<Equipment>, photo: ID<EquipmentPhoto>, _ scope: Scope) async throws -> (photo: EquipmentPhoto, key: String) {
        guard let found = try await store.read({ try await EquipmentRepository.photo(photo, of: id, scope, $0) }) else {
            throw AppError.notFound("Photo")
        }
        return found
    }

    /// A unit the scope may add photos to, and has room for another.
    func checkRoomForPhoto(of id: ID<Equipment>, _ scope: Scope, _ tx: TenantTransaction) async throws {
        guard try await EquipmentRepository.exists(id, scope, tx.db) else { throw AppError.notFound("Unit") }
        guard try await EquipmentRepository.photoCount(of: id, tx) < EquipmentPhoto.maxPerUnit else {
            throw AppError(422, .validationFailed, "A unit keeps at most \(EquipmentPhoto.maxPerUnit) photos; delete old ones first.",
                           field: "photos")
        }
    }

    /// Attaches a finished upload as a photo of a unit (a new version of
    /// the unit for everyone who sees it).
    func addPhoto(_ photo: EquipmentPhoto, key: String, to id: ID<Equipment>, _ scope: Scope, _ tx: TenantTransaction) async throws {
        guard try await EquipmentRepository.find(id, scope, locking: true, tx.db) != nil else { throw AppError.notFound("Unit") }
        try await checkRoomForPhoto(of: id, scope, tx)
        try await EquipmentRepository.insertPhoto(photo, key: key, of: id, tx)
        _ = try await resave(id, tx)
    }

    /// Removes a photo: dispatch any, a driver only one they took of their
    /// own unit. Returns the unit and where the photo's bytes were, for the
    /// caller to remove once this has committed.
    public func deletePhoto(_ id: ID<Equipment>, photo: ID<EquipmentPhoto>, user: ID<User>,
                            _ scope: Scope) async throws -> (unit: Equipment, key: String) {
        try await store.write(tenant: scope.tenant) { tx in
            guard try await EquipmentRepository.find(id, scope, locking: true, tx.db) != nil else { throw AppError.notFound("Unit") }
            guard let key = try await EquipmentRepository.deletePhoto(photo, of: id, takenBy: scope.driverID == nil ? nil : user, tx) else {
                throw AppError.notFound("Photo")
            }
            // Its bytes go once this has committed (`UnitPhotoController`), or with the trash if this request's own commit is still to come.
            try await ReceiptRepository.trash([key], tx)
            return (try await resave(id, tx), key)
        }
    }
}

extension Store {
    /// The fleet: units, their papers, photos, odometer and fuel.
    public var fleet: FleetService { FleetService(store: self) }
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
