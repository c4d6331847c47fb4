import Foundation
import VroomXModels

/// Inspections at pickup and delivery, and the media attached to them.
/// A driver reaches an inspection through its order (their own orders
/// only); dispatch sees the carrier's.
extension Store {
    /// Starts an inspection or updates it while it is open. Fields left out
    /// of the request keep their values.
    public func saveInspection(_ id: ID<Inspection>, _ request: SaveInspectionRequest, _ scope: Scope) async throws -> Inspection {
        if let problem = request.problem { throw AppError.validation(problem.field, problem.message) }
        let notes = try request.notes.map { try Validate.text($0, FieldLimits.inspectionNotes) }
        // Notes are stored as checked (line breaks and spaces as every text's).
        let damages = try request.damages.map { list in
            try list.enumerated().map { index, damage in
                var damage = damage
                damage.note = try Validate.text(damage.note, FieldLimits.damageNote, field: "damages[\(index)].note")
                return damage
            }
        }
        return try await write(tenant: scope.tenant) { tx in
            guard let order = try await OrderRepository.find(request.orderID, scope, tx.db) else { throw AppError.notFound("Order") }
            var inspection: Inspection
            if let existing = try await fetchInspection(id, tenant: scope.tenant, tx.db) {
                guard existing.orderID == order.id, existing.kind == request.kind else {
                    throw AppError.idTaken
                }
                guard existing.completedAt == nil else {
                    throw AppError(409, .inspectionCompleted, "This inspection is completed and can no longer change.")
                }
                inspection = existing
                inspection.version += 1
            } else {
                try Self.checkInspectable(order, kind: request.kind)
                if try await tx.first("""
                    SELECT id FROM inspections WHERE tenant_id = \(scope.tenant) AND order_id = \(order.id) AND kind = \(request.kind.rawValue)
                    """) != nil {
                    throw AppError(409, .alreadyExists, "This order already has a \(request.kind.rawValue) inspection.", field: "kind")
                }
                inspection = Inspection(id: id, orderID: order.id, driverID: scope.driverID ?? order.driverID, kind: request.kind,
                                        createdAt: tx.now, updatedAt: tx.now)
            }
            if let odometer = request.odometer { inspection.odometer = odometer }
            if let notes { inspection.notes = notes }
            if let position = request.position { inspection.position = position }
            if let damages { inspection.damages = damages }
            if let unavailable = request.customerUnavailable { inspection.customerUnavailable = unavailable }
            inspection.updatedAt = tx.now
            try await storeInspection(inspection, isNew: inspection.version == 1, visibleTo: order.driverID, tx)
            return inspection
        }
    }

    /// Completes an inspection once its required photos and the signature
    /// (or "customer not available") are in, and in the same transaction
    /// moves its order: a completed pickup inspection is the pickup, a
    /// completed delivery inspection the delivery, both at `occurredAt`.
    /// Completing again answers the completed inspection and changes nothing.
    public func completeInspection(_ id: ID<Inspection>, occurredAt: Date? = nil,
                                   _ scope: Scope) async throws -> (inspection: Inspection, order: Order) {
        try await write(tenant: scope.tenant) { tx in
            guard var inspection = try await fetchInspection(id, tenant: scope.tenant, tx.db),
                  case let (order, trip)? = try await orders.lockWithTrip(inspection.orderID, scope, tx) else { throw AppError.notFound("Inspection") }
            if inspection.completedAt != nil { return (inspection, order) }
            try Self.checkInspectable(order, kind: inspection.kind)
            try OrderService.checkTripCarries(trip, to: inspection.kind.completedStatus)
            if let reason = inspection.incompleteReason {
                throw AppError(422, .inspectionIncomplete, reason)
            }
            // The completion is the pickup (or delivery): it happened when the order says it did.
            do throws(OrderStatusRefusal) {
                inspection.completedAt = try order.eventTime(occurredAt, of: inspection.kind.completedStatus, now: tx.now)
            } catch {
                throw AppError(error)
            }
            inspection.updatedAt = tx.now
            inspection.version += 1
            try await storeInspection(inspection, isNew: false, visibleTo: order.driverID, tx)
            let moved = try await orders.changeStatus(order, to: inspection.kind.completedStatus, occurredAt: inspection.completedAt,
                                               by: scope.actor, tx)
            return (inspection, moved)
        }
    }

    /// A pickup inspection is made on an assigned order, a delivery
    /// inspection on one that was picked up.
    static func checkInspectable(_ order: Order, kind: Inspection.Kind) throws {
        if let refusal = InspectionRules.inspectable(order, kind: kind) { throw AppError(refusal) }
    }

    public func inspection(_ id: ID<Inspection>, _ scope: Scope) async throws -> Inspection {
        guard let inspection = try await read({ try await fetchVisibleInspection(id, scope, $0) }) else {
            throw AppError.notFound("Inspection")
        }
        return inspection
    }

    /// An inspection of an order the caller may see.
    func fetchVisibleInspection(_ id: ID<Inspection>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Inspection? {
        guard let inspection = try await fetchInspection(id, tenant: scope.tenant, db),
              try await OrderRepository.find(inspection.orderID, scope, db) != nil else { return nil }
        return inspection
    }

    public func orderInspectionDocuments(_ order: ID<Order>, _ scope: Scope) async throws -> DocumentPage {
        try await read { db in
            guard try await OrderRepository.find(order, scope, db) != nil else { throw AppError.notFound("Order") }
            let rows = try await db.documents("""
                SELECT doc FROM inspections WHERE tenant_id = \(scope.tenant) AND order_id = \(order) ORDER BY kind DESC
                """, limit: .max)
            return DocumentPage(joined: rows.joined, count: rows.count, nextCursor: nil)
        }
    }

    func fetchInspection(_ id: ID<Inspection>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Inspection? {
        guard let row = try await db.first("SELECT doc FROM inspections WHERE tenant_id = \(tenant) AND id = \(id)") else { return nil }
        return try WireJSON.decoder().decode(Inspection.self, from: Data(try row.string("doc").utf8))
    }

    func storeInspection(_ inspection: Inspection, isNew: Bool, visibleTo driver: ID<Driver>?, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(inspection)
        if isNew {
            try await tx.execute("""
                INSERT INTO inspections (id, tenant_id, order_id, driver_id, kind, odometer, notes, customer_unavailable,
                                         completed_at, version, created_at, updated_at, doc)
                VALUES (\(inspection.id), \(tx.tenant), \(inspection.orderID), \(inspection.driverID), \(inspection.kind.rawValue),
                        \(inspection.odometer), \(inspection.notes), \(inspection.customerUnavailable), \(inspection.completedAt),
                        \(inspection.version), \(inspection.createdAt), \(inspection.updatedAt), \(doc))
                """, unique: AppError.idTaken)
        } else {
            guard try await tx.first("""
                UPDATE inspections SET driver_id = \(inspection.driverID), odometer = \(inspection.odometer), notes = \(inspection.notes),
                    customer_unavailable = \(inspection.customerUnavailable), completed_at = \(inspection.completedAt),
                    version = \(inspection.version), updated_at = \(inspection.updatedAt), doc = \(doc)
                WHERE tenant_id = \(tx.tenant) AND id = \(inspection.id) AND version = \(inspection.version - 1) RETURNING id
                """) != nil else { throw WriteConflict() }
        }
        tx.recordUpsert(.inspection, id: inspection.id.rawValue, document: doc, visibleTo: driver)
    }

    /// An order that changed hands takes its inspections along (before
    /// pickup that is at most an unfinished pickup inspection): the
    /// previous driver's device drops them and the new driver continues.
    func handOverInspections(of order: Order, from previous: ID<Driver>?, _ tx: TenantTransaction) async throws {
        let rows = try await tx.query("SELECT doc FROM inspections WHERE tenant_id = \(tx.tenant) AND order_id = \(order.id)")
        for row in rows {
            var inspection = try WireJSON.decoder().decode(Inspection.self, from: Data(try row.string("doc").utf8))
            if let driver = order.driverID { inspection.driverID = driver }
            inspection.version += 1
            inspection.updatedAt = tx.now
            try await storeInspection(inspection, isNew: false, visibleTo: order.driverID, tx)
            if let previous { tx.recordRevoke(.inspection, id: inspection.id.rawValue, from: previous) }
        }
    }

    /// A stored file of an inspection the caller may see: its description
    /// and storage key.
    public func media(_ inspection: ID<Inspection>, slot: MediaSlot, _ scope: Scope) async throws -> (InspectionMedia, String) {
        try await read { db in
            guard let found = try await fetchInspection(inspection, tenant: scope.tenant, db),
                  try await OrderRepository.find(found.orderID, scope, db) != nil,
                  let media = found.media.first(where: { $0.slot == slot }),
                  let row = try await db.first("""
                    SELECT storage_key FROM inspection_media
                    WHERE tenant_id = \(scope.tenant) AND inspection_id = \(inspection) AND slot = \(slot.rawValue)
                    """) else { throw AppError.notFound("Media") }
            return (media, try row.string("storage_key"))
        }
    }

    /// Attaches a stored file to an open inspection (replacing the slot's
    /// previous file), in the transaction that finishes its upload. Returns
    /// the storage key of the file it replaced, if any.
    func attachMedia(_ media: InspectionMedia, key: String, to id: ID<Inspection>, _ scope: Scope,
                     _ tx: TenantTransaction) async throws -> String? {
        guard var inspection = try await fetchInspection(id, tenant: scope.tenant, tx.db),
              let order = try await OrderRepository.find(inspection.orderID, scope, tx.db) else { throw AppError.notFound("Inspection") }
        guard inspection.completedAt == nil else {
            throw AppError(409, .inspectionCompleted, "This inspection is completed and can no longer change.")
        }
        let replaced = try await tx.first("""
            DELETE FROM inspection_media WHERE tenant_id = \(tx.tenant) AND inspection_id = \(id) AND slot = \(media.slot.rawValue)
            RETURNING storage_key
            """)?.string("storage_key")
        try await tx.execute("""
            INSERT INTO inspection_media (tenant_id, inspection_id, slot, kind, content_type, size_bytes, sha256, storage_key, uploaded_at)
            VALUES (\(tx.tenant), \(id), \(media.slot.rawValue), \(media.kind.rawValue), \(media.contentType), \(media.sizeBytes),
                    \(media.sha256), \(key), \(media.uploadedAt))
            """)
        inspection.media.removeAll { $0.slot == media.slot }
        inspection.media.append(media)
        inspection.media.sort { $0.slot < $1.slot }
        inspection.version += 1
        inspection.updatedAt = tx.now
        try await storeInspection(inspection, isNew: false, visibleTo: order.driverID, tx)
        return replaced
    }
}
