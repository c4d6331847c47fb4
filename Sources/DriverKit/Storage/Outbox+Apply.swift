import Foundation
import GRDB
import VroomXModels

/// A change's effect on the phone's cache, by the shared rules, before it
/// is queued: the driver sees it at once, and what the server would refuse
/// anyway is refused here.
extension AppDatabase {
    /// The change's effect on the cache, as the driver expects to see it.
    /// Throws `LocalRejection` for what the server would refuse anyway.
    static func applyLocally(_ mutation: Mutation, now: Date, _ db: Database) throws -> Bool {
        switch mutation.payload {
        case .updateOrderStatus(let change):
            guard let order = try order(change.orderID, db) else { throw LocalRejection(code: .notFound, message: "This order is not on your device.") }
            guard let moved = try moved(order, to: change.status, at: change.occurredAt, now: now) else { return false }
            if let refusal = InspectionRules.required(toMark: change.status, order: order, completed: try inspections(order: order.id, db)) {
                throw LocalRejection(refusal)
            }
            try storeMoved(moved, db)
        case .updateOrderETA(let change):
            guard let order = try order(change.orderID, db) else { throw LocalRejection(code: .notFound, message: "This order is not on your device.") }
            let changed: Order
            do throws(ETARefusal) {
                changed = try order.applyingETAs(pickup: change.pickupETA, delivery: change.deliveryETA, now: now)
            } catch {
                throw LocalRejection(error)
            }
            try store(.order(changed), db)
        case .createExpense(let request):
            guard try exists("trips", request.tripID.rawValue, db) else {
                throw LocalRejection(code: .notFound, message: "This trip is not on your device.")
            }
            guard let id = request.id else { throw LocalRejection(code: .validationFailed, message: "An offline expense needs its id.") }
            if let refusal = ExpenseRules.amountProblem(request.amountCents) ?? ExpenseRules.dateProblem(request.date, now: now) {
                throw LocalRejection(refusal)
            }
            if let notes = request.notes, !FieldLimits.expenseNotes.allows(notes) { throw LocalRejection(FieldLimits.expenseNotes.refusal()) }
            let driver = try driverID(db)
            if let fuel = request.fuel {
                if let refusal = ExpenseRules.fuelProblem(fuel, category: request.category) { throw LocalRejection(refusal) }
                guard var truck = try unit(fuel.equipmentID, db), truck.kind == .truck else {
                    throw LocalRejection(code: .validationFailed, message: "That truck is not assigned to you.")
                }
                // A fill's odometer is a reading: the server's rule, against the last reading the phone has seen.
                if let miles = fuel.odometerMiles {
                    let window = OdometerRule.fillWindow(request.date, now: now)
                    if let refusal = OdometerRule.check(miles, unit: truck.unitNumber, in: window, field: "fuel.odometer_miles",
                                                        .init(last: truck.odometerMiles, at: truck.odometerAt, window: window)) {
                        throw LocalRejection(refusal)
                    }
                    if truck.odometerAt.map({ window.upperBound >= $0 }) ?? true, miles >= (truck.odometerMiles ?? 0) {
                        truck.odometerMiles = miles
                        truck.odometerAt = window.upperBound
                        try store(.equipment(truck), db)
                    }
                }
            }
            let expense = Expense(id: id, tripID: request.tripID, driverID: driver, category: request.category,
                                  amountCents: request.amountCents, date: request.date, notes: request.notes ?? "", fuel: request.fuel,
                                  createdAt: now)
            try store(.expense(expense), db)
        case .deleteExpense(let reference):
            guard try exists("expenses", reference.expenseID.rawValue, db) else {
                throw LocalRejection(code: .notFound, message: "This expense is not on your device.")
            }
            try remove(.expense, id: reference.expenseID.rawValue, db)
        case .markNotificationRead(let reference):
            let found: [DriverNotification] = try docs(db, "SELECT doc FROM notifications WHERE id = ?", [reference.notificationID.rawValue])
            // Opened from a push before its row synced: queued all the same (it survives the app being
            // killed), and shown read once the row arrives (pending changes are laid over what is pulled).
            guard var notification = found.first else { return true }
            if notification.readAt != nil { return false }
            notification.readAt = reference.readAt ?? now
            try store(.notification(notification), db)
        case .saveInspection(let save):
            try applyInspectionSave(save, now: now, db)
        case .completeInspection(let reference):
            guard var inspection = try Self.inspection(reference.inspectionID, db) else {
                throw LocalRejection(code: .notFound, message: "This inspection is not on your device.")
            }
            guard let order = try order(inspection.orderID, db) else {
                throw LocalRejection(code: .notFound, message: "This order is not on your device.")
            }
            let completesNow = inspection.completedAt == nil
            let others = try inspections(order: order.id, db).filter { $0.id != inspection.id }
            if completesNow {
                if let refusal = InspectionRules.inspectable(order, kind: inspection.kind, vehicle: inspection.vehicleID, inspections: others) {
                    throw LocalRejection(refusal)
                }
                // Files still on their way count: the completion waits for them before it is sent.
                var withQueued = inspection
                withQueued.media += try queuedMedia(of: inspection.id, db).filter { queued in !inspection.media.contains { $0.slot == queued.slot } }
                if let reason = withQueued.incompleteReason { throw LocalRejection(code: .inspectionIncomplete, message: reason) }
                do throws(OrderStatusRefusal) {
                    inspection.completedAt = try order.eventTime(reference.occurredAt, of: inspection.kind.completedStatus, now: now)
                } catch {
                    throw LocalRejection(error)
                }
                try store(.inspection(inspection), db)
            }
            // The first vehicle picked up picks the load up, the last delivered delivers it, as on the server;
            // another vehicle's completion is its own (the change still goes).
            guard let status = InspectionRules.move(order, completing: inspection.kind, inspections: others + [inspection]),
                  let moved = try moved(order, to: status, at: inspection.completedAt, now: now) else { return completesNow }
            try storeMoved(moved, db)
        case .recordOdometer(let reading):
            guard var unit = try unit(reading.equipmentID, db) else {
                throw LocalRejection(code: .notFound, message: "This unit is not assigned to you.")
            }
            let at = reading.recordedAt ?? now
            guard FieldLimits.readingMiles.allows(reading.miles) else { throw LocalRejection(FieldLimits.readingMiles.refusal()) }
            // The same rule as the server's, against what the phone knows: the last reading it has seen.
            if let refusal = OdometerRule.check(reading.miles, unit: unit.unitNumber, in: at...at, field: "miles",
                                                .init(last: unit.odometerMiles, at: unit.odometerAt, window: at...at)) {
                throw LocalRejection(refusal)
            }
            if unit.odometerAt.map({ at >= $0 }) ?? true {
                unit.odometerMiles = reading.miles
                unit.odometerAt = at
                try store(.equipment(unit), db)
            }
        case .recordLocations:
            break  // Positions are not shown from the cache; arrivals they make come back through the feed.
        case .collectPayment(let request):
            // The same checks as the server's, against the order as the phone has it (its pickup or delivery may still be queued).
            guard let order = try order(request.orderID, db) else { throw LocalRejection(code: .notFound, message: "This order is not on your device.") }
            guard order.status == .pickedUp || order.status == .delivered else {
                throw LocalRejection(code: .invalidTransition, message: InvoiceRules.notCollectable(order))
            }
            let earlier = try collections(order: order.id, db).filter(\.counts)
            guard earlier.count < InvoiceRules.collectionsPerOrder else {
                throw LocalRejection(code: .conflict, message: "Order \(order.number) has \(InvoiceRules.collectionsPerOrder) collections recorded, the most one takes: ask dispatch.")
            }
            if let refusal = InvoiceRules.collectionProblem(amountCents: request.amountCents, method: request.method, order: order,
                                                            collectedCents: earlier.reduce(0) { $0 + $1.amountCents }) {
                throw LocalRejection(refusal)
            }
            if let reference = request.reference, !FieldLimits.paymentReference.allows(reference) {
                throw LocalRejection(FieldLimits.paymentReference.refusal())
            }
            if let reference = request.reference?.lowercased(), !reference.isEmpty, earlier.contains(where: { $0.reference.lowercased() == reference }) {
                throw LocalRejection(code: .alreadyExists, message: "\(request.method.label) \(request.reference ?? "") is recorded for order \(order.number) already.")
            }
        case .sendMessage(let request):
            let body = TextLimit.normalized(request.body)
            guard !body.isEmpty else { throw LocalRejection(code: .validationFailed, message: "Write something to send.") }
            guard FieldLimits.driverMessage.allows(body) else {
                throw LocalRejection(code: .validationFailed, message: "A message is at most \(FieldLimits.driverMessage.max) characters.")
            }
            if let trip = request.tripID, try !exists("trips", trip.rawValue, db) {
                throw LocalRejection(code: .notFound, message: "This trip is not on your device.")
            }
            if let wanted = request.orderID, try order(wanted, db) == nil {
                throw LocalRejection(code: .notFound, message: "This order is not on your device.")
            }
            // Shown at once as sent; the server's copy (with when dispatch read it) replaces it.
            guard try !exists("messages", request.id.rawValue, db) else { return true }
            guard let driver = try driverID(db) else { throw LocalRejection(code: .notFound, message: "Sign in again to write to dispatch.") }
            try store(.message(DriverMessage(id: request.id, driverID: driver, tripID: request.tripID, orderID: request.orderID,
                                             body: body, sentAt: request.sentAt ?? now, createdAt: now)), db)
        case .acknowledgeNotification(let reference):
            let found: [DriverNotification] = try docs(db, "SELECT doc FROM notifications WHERE id = ?", [reference.notificationID.rawValue])
            guard var notification = found.first else { throw LocalRejection(code: .notFound, message: "This message is not on your device.") }
            guard notification.type == .urgent else {
                throw LocalRejection(code: .invalidTransition, message: "Only an urgent message is answered “Got it”.")
            }
            if notification.acknowledgedAt != nil { return false }
            notification.acknowledgedAt = reference.readAt ?? now
            if notification.readAt == nil { notification.readAt = notification.acknowledgedAt }
            try store(.notification(notification), db)
        case .reportStopProblem(let request):
            guard var order = try order(request.orderID, db) else { throw LocalRejection(code: .notFound, message: "This order is not on your device.") }
            if order.problems.contains(where: { $0.id == request.id }) { return false }
            if let refusal = order.problemRefusal(request.kind, at: request.stop) { throw LocalRejection(refusal) }
            let note = TextLimit.normalized(request.note ?? "")
            guard FieldLimits.stopProblemNote.allows(note) else { throw LocalRejection(FieldLimits.stopProblemNote.refusal()) }
            order.problems.append(StopProblem(id: request.id, stop: request.stop, kind: request.kind, note: note,
                                              reportedAt: order.problemTime(request.reportedAt, at: request.stop, now: now)))
            try store(.order(order), db)
        case .startTrip(let reference):
            guard var trip = try trip(reference.tripID, db) else { throw LocalRejection(code: .notFound, message: "This trip is not on your device.") }
            switch trip.status {
            case .inProgress: return false
            case .completed, .cancelled:
                throw LocalRejection(code: .invalidTransition, message: "Trip \(trip.number) is \(trip.status.label); it cannot start again.")
            case .planned:
                if let running = try trips(db).first(where: { $0.id != trip.id && $0.status == .inProgress }) {
                    throw LocalRejection(code: .conflict, message: TripRules.oneUnderWay(running: running.number, starting: trip.number))
                }
                trip.status = .inProgress
                try store(.trip(trip), db)
            }
        }
        return true
    }

    /// An order the driver moved, and its trip under way once a vehicle is
    /// picked up, as the server does: the road is recorded from the pickup
    /// on, even with no signal.
    static func storeMoved(_ order: Order, _ db: Database) throws {
        try store(.order(order), db)
        guard order.status == .pickedUp, let id = order.tripID, var trip = try trip(id, db), trip.status == .planned else { return }
        trip.status = .inProgress
        try store(.trip(trip), db)
    }

    /// The order after a driver's move, by the rule the server applies
    /// (nil: it already has that status).
    static func moved(_ order: Order, to status: OrderStatus, at reported: Date?, now: Date) throws -> Order? {
        do throws(OrderStatusRefusal) {
            return try order.applying(status, reportedAt: reported, by: .driver, now: now)
        } catch {
            throw LocalRejection(error)
        }
    }

    static func inspections(order: ID<Order>, _ db: Database) throws -> [Inspection] {
        try docs(db, "SELECT doc FROM inspections WHERE order_id = ? ORDER BY id", [order.rawValue])
    }

    /// The order a queued change is about, if any (an inspection's through the inspection).
    static func orderID(of mutation: Mutation, _ db: Database) throws -> ID<Order>? {
        switch mutation.payload {
        case .updateOrderStatus(let change): return change.orderID
        case .updateOrderETA(let change): return change.orderID
        case .saveInspection(let save): return save.inspection.orderID
        case .completeInspection(let reference): return try inspection(reference.inspectionID, db)?.orderID
        case .collectPayment(let request): return request.orderID
        case .reportStopProblem(let request): return request.orderID
        case .createExpense, .deleteExpense, .markNotificationRead, .recordOdometer, .recordLocations, .startTrip, .sendMessage,
             .acknowledgeNotification: return nil
        }
    }

    static func applyInspectionSave(_ save: InspectionSave, now: Date, _ db: Database) throws {
        let request = save.inspection
        if let problem = request.problem { throw LocalRejection(problem.refusal) }
        var inspection: Inspection
        if let existing = try Self.inspection(save.inspectionID, db) {
            guard existing.completedAt == nil else {
                throw LocalRejection(code: .inspectionCompleted, message: "This inspection is completed and can no longer change.")
            }
            inspection = existing
        } else {
            guard let order = try order(request.orderID, db) else {
                throw LocalRejection(code: .notFound, message: "This order is not on your device.")
            }
            if let refusal = InspectionRules.inspectable(order, kind: request.kind, vehicle: request.vehicleID,
                                                         inspections: try inspections(order: order.id, db)) {
                throw LocalRejection(refusal)
            }
            guard let vehicle = InspectionRules.vehicle(of: order, request.vehicleID) else {
                throw LocalRejection(code: .validationFailed, message: "Order \(order.number) no longer has this vehicle.")
            }
            inspection = Inspection(id: save.inspectionID, orderID: order.id, driverID: try driverID(db), kind: request.kind,
                                    createdAt: now, updatedAt: now, vehicleID: vehicle.id)
        }
        if let odometer = request.odometer { inspection.odometer = odometer }
        if let notes = request.notes { inspection.notes = notes }
        if let position = request.position { inspection.position = position }
        if let damages = request.damages { inspection.damages = damages }
        if let unavailable = request.customerUnavailable { inspection.customerUnavailable = unavailable }
        if let signer = request.signerName {
            let printed = TextLimit.normalized(signer)
            inspection.signerName = printed.isEmpty ? nil : printed
        }
        inspection.updatedAt = now
        try store(.inspection(inspection), db)
    }

    static func inspection(_ id: ID<Inspection>, _ db: Database) throws -> Inspection? {
        let found: [Inspection] = try docs(db, "SELECT doc FROM inspections WHERE id = ?", [id.rawValue])
        return found.first
    }

    static func exists(_ table: String, _ id: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM \(table) WHERE id = ?)"), arguments: [id]) ?? false
    }

    /// Cancels the creation of an expense that never left the device (not
    /// while a batch holding it is on its way: its answer may be a success).
    static func dropUnsentCreate(of expense: ID<Expense>, owner: String, _ db: Database) throws -> Bool {
        try db.execute(sql: """
            DELETE FROM outbox WHERE entity_id = ? AND kind = ? AND owner = ? AND sending_since IS NULL AND maybe_applied = 0
                AND (status = 'pending' OR failure = 'transient')
            """, arguments: [expense.rawValue, MutationKind.createExpense.rawValue, owner])
        return db.changesCount > 0
    }
}
