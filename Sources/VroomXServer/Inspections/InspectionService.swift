import Foundation
import VroomXModels

/// Inspections at pickup and delivery, and the media attached to them.
/// A driver reaches an inspection through its order (their own orders
/// only); dispatch sees the carrier's. What may be inspected and when,
/// what completing one does; the SQL is `InspectionRepository`'s.
public struct InspectionService: Sendable {
    let store: Store

    /// Starts an inspection or updates it while it is open. Fields left out
    /// of the request keep their values.
    public func save(_ id: ID<Inspection>, _ request: SaveInspectionRequest, _ scope: Scope) async throws -> Inspection {
        if let problem = request.problem { throw AppError.validation(problem.field, problem.message) }
        let notes = try request.notes.map { try Validate.text($0, FieldLimits.inspectionNotes) }
        let signer = try request.signerName.map { try Validate.line($0, FieldLimits.signerName) }
        // Notes are stored as checked (line breaks and spaces as every text's).
        let damages = try request.damages.map { list in
            try list.enumerated().map { index, damage in
                var damage = damage
                damage.note = try Validate.text(damage.note, FieldLimits.damageNote, field: "damages[\(index)].note")
                return damage
            }
        }
        return try await store.write(tenant: scope.tenant) { tx in
            guard let order = try await OrderRepository.find(request.orderID, scope, tx.db) else { throw AppError.notFound("Order") }
            var inspection: Inspection
            if let existing = try await InspectionRepository.find(id, tenant: scope.tenant, tx.db) {
                guard existing.orderID == order.id, existing.kind == request.kind,
                      request.vehicleID == nil || request.vehicleID == existing.vehicleID else {
                    throw AppError.idTaken
                }
                guard existing.completedAt == nil else {
                    throw AppError(409, .inspectionCompleted, "This inspection is completed and can no longer change.")
                }
                inspection = existing
                inspection.version += 1
            } else {
                // Yesterday's apps name no vehicle: theirs is the order's first (their orders have one).
                guard let vehicle = InspectionRules.vehicle(of: order, request.vehicleID), let vehicleID = vehicle.id else {
                    throw AppError(422, .validationFailed, "Order \(order.number) has no such vehicle.", field: "vehicle_id")
                }
                let inspections = try await InspectionRepository.of(order.id, tenant: scope.tenant, tx.db)
                if inspections.contains(where: { $0.kind == request.kind && InspectionRules.vehicle(of: order, $0.vehicleID)?.id == vehicleID }) {
                    throw AppError(409, .alreadyExists, order.vehicles.count == 1 ? "This order already has a \(request.kind.rawValue) inspection."
                                   : "This vehicle already has a \(request.kind.rawValue) inspection.", field: "kind")
                }
                if let refusal = InspectionRules.inspectable(order, kind: request.kind, vehicle: vehicleID, inspections: inspections) {
                    throw AppError(refusal)
                }
                inspection = Inspection(id: id, orderID: order.id, driverID: scope.driverID ?? order.driverID, kind: request.kind,
                                        createdAt: tx.now, updatedAt: tx.now, vehicleID: vehicleID)
            }
            if let odometer = request.odometer { inspection.odometer = odometer }
            if let notes { inspection.notes = notes }
            if let position = request.position { inspection.position = position }
            if let damages { inspection.damages = damages }
            if let unavailable = request.customerUnavailable { inspection.customerUnavailable = unavailable }
            if let signer { inspection.signerName = signer.isEmpty ? nil : signer }
            inspection.updatedAt = tx.now
            try await InspectionRepository.store(inspection, isNew: inspection.version == 1, visibleTo: order.driverID, tx)
            return inspection
        }
    }

    /// Completes an inspection once its required photos and the signature
    /// (or "customer not available") are in: its vehicle is picked up (or
    /// delivered) at `occurredAt`. The first vehicle picked up picks the
    /// load up, the last delivered delivers it (`InspectionRules.move`), in
    /// the same transaction; once every vehicle of the stop is done, the
    /// customer's bill of lading goes, once.
    /// Completing again answers the completed inspection and changes nothing.
    public func complete(_ id: ID<Inspection>, occurredAt: Date? = nil,
                                   _ scope: Scope) async throws -> (inspection: Inspection, order: Order) {
        try await store.write(tenant: scope.tenant) { tx in
            guard var inspection = try await InspectionRepository.find(id, tenant: scope.tenant, tx.db),
                  case let (order, trip)? = try await store.orders.lockWithTrip(inspection.orderID, scope, tx) else { throw AppError.notFound("Inspection") }
            if inspection.completedAt != nil { return (inspection, order) }
            let before = try await InspectionRepository.of(order.id, tx)
            if let refusal = InspectionRules.inspectable(order, kind: inspection.kind, vehicle: inspection.vehicleID, inspections: before) {
                throw AppError(refusal)
            }
            guard InspectionRules.vehicle(of: order, inspection.vehicleID) != nil else {
                throw AppError(409, .invalidTransition, "Order \(order.number) no longer has this vehicle: dispatch took it off the order.",
                               field: "vehicle_id")
            }
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
            try await InspectionRepository.store(inspection, isNew: false, visibleTo: order.driverID, tx)
            let inspections = before.filter { $0.id != inspection.id } + [inspection]
            var moved = order
            if let status = InspectionRules.move(order, completing: inspection.kind, inspections: inspections) {
                moved = try await store.orders.changeStatus(order, to: status, occurredAt: inspection.completedAt, by: scope.actor, tx)
            }
            try await mailWhenDone(moved, inspection.kind, inspections: inspections, tx)
            return (inspection, moved)
        }
    }

    /// Once every vehicle of a stop is inspected, the customer gets the
    /// stop's bill of lading, once (`DocumentMailService` sends it after the
    /// commit), keyed on the stop's last completed inspection.
    func mailWhenDone(_ order: Order, _ kind: Inspection.Kind, inspections: [Inspection], _ tx: TenantTransaction) async throws {
        guard InspectionRules.remaining(order, kind, completed: inspections).isEmpty,
              let last = inspections.filter({ $0.kind == kind && $0.completedAt != nil && InspectionRules.vehicle(of: order, $0.vehicleID) != nil })
                .max(by: { ($0.completedAt ?? .distantPast, $0.updatedAt) < ($1.completedAt ?? .distantPast, $1.updatedAt) }),
              !(try await DocumentMailRepository.exists(order: order.id, kind: kind, tx)) else { return }
        var recipient: String?
        if let customer = order.customerID, let email = try await CustomerRepository.find(customer, tenant: tx.tenant, tx.db)?.email,
           !email.isEmpty {
            recipient = email
        }
        try await DocumentMailRepository.enqueue(order: order.id, inspection: last.id, kind: kind, recipient: recipient, tx)
    }

    public func inspection(_ id: ID<Inspection>, _ scope: Scope) async throws -> Inspection {
        guard let inspection = try await store.read({ try await visible(id, scope, $0) }) else {
            throw AppError.notFound("Inspection")
        }
        return inspection
    }

    /// An inspection of an order the caller may see.
    func visible(_ id: ID<Inspection>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Inspection? {
        guard let inspection = try await InspectionRepository.find(id, tenant: scope.tenant, db),
              try await OrderRepository.find(inspection.orderID, scope, db) != nil else { return nil }
        return inspection
    }

    public func documents(of order: ID<Order>, _ scope: Scope) async throws -> DocumentPage {
        try await store.read { db in
            guard try await OrderRepository.find(order, scope, db) != nil else { throw AppError.notFound("Order") }
            return try await InspectionRepository.documents(of: order, tenant: scope.tenant, db)
        }
    }

    /// An order that changed hands takes its inspections along (before
    /// pickup that is at most an unfinished pickup inspection): the
    /// previous driver's device drops them and the new driver continues.
    func handOver(of order: Order, from previous: ID<Driver>?, _ tx: TenantTransaction) async throws {
        // A completed inspection is signed for by the driver who made it: it keeps their name.
        for found in try await InspectionRepository.of(order.id, tx) where found.completedAt == nil {
            var inspection = found
            if let driver = order.driverID { inspection.driverID = driver }
            inspection.version += 1
            inspection.updatedAt = tx.now
            try await InspectionRepository.store(inspection, isNew: false, visibleTo: order.driverID, tx)
            if let previous { tx.recordRevoke(.inspection, id: inspection.id.rawValue, from: previous) }
        }
    }

    /// A stored file of an inspection the caller may see: its description
    /// and storage key.
    public func media(_ inspection: ID<Inspection>, slot: MediaSlot, _ scope: Scope) async throws -> (InspectionMedia, String) {
        try await store.read { db in
            guard let found = try await InspectionRepository.find(inspection, tenant: scope.tenant, db),
                  try await OrderRepository.find(found.orderID, scope, db) != nil,
                  let media = found.media.first(where: { $0.slot == slot }),
                  let key = try await InspectionRepository.mediaKey(of: inspection, slot: slot, tenant: scope.tenant, db) else {
                throw AppError.notFound("Media")
            }
            return (media, key)
        }
    }

    /// Attaches a stored file to an open inspection (replacing the slot's
    /// previous file), in the transaction that finishes its upload. Returns
    /// the storage key of the file it replaced, if any.
    func attach(_ media: InspectionMedia, key: String, to id: ID<Inspection>, _ scope: Scope,
                     _ tx: TenantTransaction) async throws -> String? {
        guard var inspection = try await InspectionRepository.find(id, tenant: scope.tenant, tx.db),
              let order = try await OrderRepository.find(inspection.orderID, scope, tx.db) else { throw AppError.notFound("Inspection") }
        guard inspection.completedAt == nil else {
            throw AppError(409, .inspectionCompleted, "This inspection is completed and can no longer change.")
        }
        let replaced = try await InspectionRepository.replaceMedia(media, key: key, of: id, tx)
        inspection.media.removeAll { $0.slot == media.slot }
        inspection.media.append(media)
        inspection.media.sort { $0.slot < $1.slot }
        inspection.version += 1
        inspection.updatedAt = tx.now
        try await InspectionRepository.store(inspection, isNew: false, visibleTo: order.driverID, tx)
        return replaced
    }
}

extension Store {
    /// Inspections at pickup and delivery, and their media.
    public var inspections: InspectionService { InspectionService(store: self) }
}
