import Foundation
import GRDB
import VroomXModels

/// A queued offline change.
public struct OutboxEntry: Sendable, Hashable, Identifiable {
    public enum Status: String, Sendable { case pending, failed }
    public enum Failure: String, Sendable {
        /// Could not be delivered after the maximum attempts; can be retried.
        case transient
        /// The server refused it; its truth is back in the cache.
        case rejected
    }

    public let id: ID<Mutation>
    public let seq: Int64
    public let mutation: Mutation
    public let createdAt: Date
    public let attempts: Int
    public let status: Status
    public let failure: Failure?
    public let errorCode: String?
    public let errorMessage: String?
    public let nextAttemptAt: Date
    /// The driver whose change it is.
    public let owner: String?
    /// Set while a batch holding it is on its way to the server.
    public let sendingSince: Date?
    /// What the change is, in the driver's words, as the phone saw it when
    /// the change was made ("your pickup ETA for O-5005").
    public let about: String?
    /// The number of the order or trip it is about ("O-5005"), as the phone knew it.
    public let subject: String?
    /// The order it is about, as the phone knew it when the change was made
    /// (an inspection's rows may be gone from the phone since: another
    /// driver signed in, or a snapshot began).
    let orderID: VroomXModels.ID<Order>?

    /// Work that has not reached the server and still can.
    public var isUnsynced: Bool { status == .pending || failure == .transient }

    init(row: Row) throws {
        id = ID(row["id"] as String)!
        seq = row["seq"]
        mutation = try CacheJSON.decode(Mutation.self, row["mutation"])
        createdAt = Date(timeIntervalSince1970: row["created_at"])
        attempts = row["attempts"]
        status = Status(rawValue: row["status"])!
        failure = (row["failure"] as String?).flatMap(Failure.init(rawValue:))
        errorCode = row["error_code"]
        errorMessage = row["error_message"]
        nextAttemptAt = Date(timeIntervalSince1970: row["next_attempt_at"])
        owner = row["owner"]
        sendingSince = (row["sending_since"] as Double?).map(Date.init(timeIntervalSince1970:))
        about = row["about"]
        subject = row["subject"]
        orderID = (row["order_id"] as String?).flatMap(VroomXModels.ID<Order>.init)
    }

    /// A refusal as the driver reads it: what the change was and what
    /// happened, never "update_order_eta 23438981: Order not found.".
    public var refusal: String { ChangeWords.refusal(self) }

    /// What the change is, in words, for lists of waiting work.
    public var description: String { about ?? "a \(mutation.kind.subject) change" }
}

/// Why a change was refused on the device itself (nothing was queued).
public struct LocalRejection: Error, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String
    public var description: String { message }

    public init(code: ErrorCode, message: String) {
        self.code = code
        self.message = message
    }

    /// A shared rule's refusal, as the driver sees it.
    init(_ refusal: Refusal) {
        self.init(code: refusal.code, message: refusal.message)
    }

    init(_ refusal: ETARefusal) { self.init(refusal.refusal) }

    init(_ refusal: OrderStatusRefusal) { self.init(refusal.refusal) }
}

/// Why an unsent change is not sent now.
public enum OutboxHold: Sendable, Hashable {
    /// It failed and waits out its backoff (or the server's Retry-After).
    case backoff(until: Date)
    /// An earlier change to the same row has not gone yet.
    case earlierChangeToSameRow
    /// An earlier change about the same order has not gone yet.
    case earlierChangeToSameOrder
    /// A completed inspection waits for its files.
    case filesUploading
}

extension AppDatabase {
    /// Applies a change to the cache and queues it, in one transaction.
    /// Returns false when there was nothing to do (e.g. the order already
    /// has that status), in which case nothing is queued.
    @discardableResult
    public func enqueue(_ mutation: Mutation, now: Date) throws -> Bool {
        try enqueue(mutation, now: now, stamp: nil)
    }

    /// `stamp`: how `now` was known (nil: a clock the server confirmed).
    func enqueue(_ mutation: Mutation, now: Date, stamp: ClockStamp?) throws -> Bool {
        try writer.write { db in
            guard let owner = try Self.ownerID(db) else {
                throw LocalRejection(code: .missingToken, message: "You are signed out.")
            }
            // Described before it applies: completing an inspection moves its order on.
            let (about, subject) = (try ChangeWords.about(mutation, db), try ChangeWords.subject(mutation, db))
            let order = try Self.orderID(of: mutation, db)
            guard try Self.applyLocally(mutation, now: now, db) else { return false }
            // Deleting an expense that never left the device cancels both.
            if case .deleteExpense(let reference) = mutation.payload,
               try Self.dropUnsentCreate(of: reference.expenseID, owner: owner, db) {
                return true
            }
            try db.cachedStatement(sql: """
                INSERT INTO outbox (id, kind, entity_id, mutation, created_at, owner, about, subject, order_id,
                                    stamp_verified, stamp_uptime, stamp_boot)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [mutation.id.rawValue, mutation.kind.rawValue, mutation.entityID,
                                 try CacheJSON.encode(mutation), now.timeIntervalSince1970, owner, about, subject, order?.rawValue,
                                 stamp?.verified ?? true, stamp?.secondsSinceBoot, stamp?.bootID])
            return true
        }
    }

    /// The change's effect on the cache, as the driver expects to see it.
    /// Throws `LocalRejection` for what the server would refuse anyway.
    static func applyLocally(_ mutation: Mutation, now: Date, _ db: Database) throws -> Bool {
        switch mutation.payload {
        case .updateOrderStatus(let change):
            guard let order = try order(change.orderID, db) else { throw LocalRejection(code: .notFound, message: "This order is not on your device.") }
            guard let moved = try moved(order, to: change.status, at: change.occurredAt, now: now) else { return false }
            let completed = try inspections(order: order.id, db).filter { $0.completedAt != nil }.map(\.kind)
            if let refusal = InspectionRules.required(toMark: change.status, order: order, completed: completed.contains) {
                throw LocalRejection(refusal)
            }
            try store(.order(moved), db)
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
            if inspection.completedAt == nil {
                if let refusal = InspectionRules.inspectable(order, kind: inspection.kind) { throw LocalRejection(refusal) }
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
            // The completed inspection is the pickup (or delivery), as on the server.
            guard order.status == inspection.kind.orderStatus,
                  let moved = try moved(order, to: inspection.kind.completedStatus, at: inspection.completedAt, now: now) else { return false }
            try store(.order(moved), db)
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
        }
        return true
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
        case .createExpense, .deleteExpense, .markNotificationRead, .recordOdometer, .recordLocations: return nil
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
            if let refusal = InspectionRules.inspectable(order, kind: request.kind) { throw LocalRejection(refusal) }
            inspection = Inspection(id: save.inspectionID, orderID: order.id, driverID: try driverID(db), kind: request.kind,
                                    createdAt: now, updatedAt: now)
        }
        if let odometer = request.odometer { inspection.odometer = odometer }
        if let notes = request.notes { inspection.notes = notes }
        if let position = request.position { inspection.position = position }
        if let damages = request.damages { inspection.damages = damages }
        if let unavailable = request.customerUnavailable { inspection.customerUnavailable = unavailable }
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

    /// The driver's changes that feed entries say the server applied leave
    /// the outbox: their effect is in the rows just stored, and laying them
    /// over those rows again would hide what came after them (dispatch's
    /// later edit, the driver's own later delete). An answer that still
    /// arrives for one is ignored (`settle` skips what is no longer queued).
    static func forgetApplied(_ changes: [Change], _ db: Database) throws {
        for mutation in Set(changes.compactMap(\.mutation)) {
            try db.cachedStatement(sql: "DELETE FROM outbox WHERE id = ?").execute(arguments: [mutation.rawValue])
        }
    }

    /// Re-applies pending changes over rows the server just sent (all of
    /// them after a snapshot reset). A change the new state no longer allows
    /// is left to the server to refuse; the cache shows the server's truth.
    static func overlayPending(touching ids: Set<String>, reset: Bool, _ db: Database) throws {
        guard reset || !ids.isEmpty else { return }
        let pending = try pendingEntries(db)
        for entry in pending {
            let order = try entry.orderID ?? orderID(of: entry.mutation, db)
            let touched = reset || ids.contains(entry.mutation.entityID) || order.map { ids.contains($0.rawValue) } == true
                || entry.mutation.fuelUnit.map { ids.contains($0) } == true
            if touched { _ = try? applyLocally(entry.mutation, now: entry.createdAt, db) }
        }
    }

    /// The signed-in driver's changes still to reach the server.
    static func pendingEntries(_ db: Database) throws -> [OutboxEntry] {
        try Row.fetchAll(db, sql: """
            SELECT * FROM outbox WHERE owner IS ? AND (status = 'pending' OR failure = 'transient') ORDER BY seq
            """, arguments: [try ownerID(db)]).map(OutboxEntry.init(row:))
    }

    // MARK: Reading the outbox

    public func outbox() throws -> [OutboxEntry] {
        try reader.read { db in try Row.fetchAll(db, sql: "SELECT * FROM outbox ORDER BY seq").map(OutboxEntry.init(row:)) }
    }

    /// The signed-in driver's changes that are due now, oldest first.
    public func dueEntries(now: Date, limit: Int = 500, owner: String? = nil) throws -> [OutboxEntry] {
        Array(try unsentSchedule(now: now, owner: owner).filter { $0.hold == nil }.map(\.entry).prefix(limit))
    }

    /// The signed-in driver's unsent changes, oldest first, each with what
    /// holds it back (nil: due now) — the one rule the sync engine sends by
    /// and the app explains waiting work with. A change waits out its
    /// backoff; a later change to the same row, or about the same order,
    /// waits for the earlier one; a completion waits for its files.
    /// `owner`: another driver whose work this phone hands over (nil: the signed-in driver).
    public func unsentSchedule(now: Date, owner: String? = nil) throws -> [(entry: OutboxEntry, hold: OutboxHold?)] {
        try reader.read { db in
            let unsent = try Row.fetchAll(db, sql: """
                SELECT * FROM outbox WHERE owner IS ? AND (status = 'pending' OR failure = 'transient') ORDER BY seq
                """, arguments: [try owner ?? Self.ownerID(db)]).map(OutboxEntry.init(row:))
            // Files kept as evidence will not go: a completion (of the inspection taken up again) does not wait for them.
            let waiting = try Set(String.fetchAll(db, sql: """
                SELECT DISTINCT inspection_id FROM upload_queue WHERE status <> 'completed' AND inspection_id IS NOT NULL
                AND NOT (status = 'failed' AND inspection_id IN (SELECT inspection_id FROM evidence))
                """))
            var heldOrders: Set<ID<Order>> = []
            var heldEntities: Set<String> = []
            var schedule: [(entry: OutboxEntry, hold: OutboxHold?)] = []
            for entry in unsent {
                let entity = entry.mutation.entityID
                // The order as the change was made about: its inspection may no longer be on the phone.
                let order = entry.mutation.kind == .updateOrderETA ? nil : try entry.orderID ?? Self.orderID(of: entry.mutation, db)
                // One on its way from another process may go again: the server applies it once.
                var hold: OutboxHold?
                if heldEntities.contains(entity) {
                    hold = .earlierChangeToSameRow
                } else if let order, heldOrders.contains(order) {
                    hold = .earlierChangeToSameOrder
                } else if case .completeInspection(let reference) = entry.mutation.payload, waiting.contains(reference.inspectionID.rawValue) {
                    hold = .filesUploading
                } else if entry.nextAttemptAt > now {
                    hold = .backoff(until: entry.nextAttemptAt)
                }
                if hold != nil {
                    // Whatever comes after it for the same row (or order) waits with it.
                    heldEntities.insert(entity)
                    if let order { heldOrders.insert(order) }
                }
                schedule.append((entry, hold))
            }
            return schedule
        }
    }

    /// The signed-in driver's changes and files that have not reached the server.
    public func unsyncedCount() throws -> Int {
        try reader.read(Self.unsyncedCount)
    }

    static func unsyncedCount(_ db: Database) throws -> Int {
        // Files kept on purpose as evidence of an inspection the server will not take are not waiting to go.
        try Int.fetchOne(db, sql: """
            SELECT (SELECT COUNT(*) FROM outbox WHERE owner IS ?1 AND (status = 'pending' OR failure = 'transient'))
                 + (SELECT COUNT(*) FROM upload_queue WHERE owner IS ?1 AND status <> 'completed'
                        AND (inspection_id IS NULL OR inspection_id NOT IN (SELECT inspection_id FROM evidence)))
            """, arguments: [try ownerID(db)]) ?? 0
    }

    /// Marks changes as on their way (a batch was sent); cleared when its
    /// answer is settled or the send fails.
    func markSending(_ ids: [ID<Mutation>], at date: Date) throws {
        try writer.write { db in
            for id in ids {
                try db.execute(sql: "UPDATE outbox SET sending_since = ? WHERE id = ?", arguments: [date.timeIntervalSince1970, id.rawValue])
            }
        }
    }

    /// Whether a change of the signed-in driver went out once without an answer and still waits.
    func hasUnansweredSends() throws -> Bool {
        try reader.read { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM outbox WHERE owner IS ? AND maybe_applied = 1 AND (status = 'pending' OR failure = 'transient'))
                """, arguments: [try Self.ownerID(db)]) ?? false
        }
    }

    /// When the signed-in driver's next waiting change is due, if one waits.
    func nextAttempt() throws -> Date? {
        try reader.read { db in
            try Double.fetchOne(db, sql: """
                SELECT MIN(next_attempt_at) FROM outbox WHERE owner IS ? AND (status = 'pending' OR failure = 'transient')
                    AND next_attempt_at > 0
                """, arguments: [try Self.ownerID(db)]).map(Date.init(timeIntervalSince1970:))
        }
    }

    /// These changes are no longer on their way (the send failed).
    /// `unanswered`: no answer came, so the server may have applied them.
    func clearSending(_ ids: [ID<Mutation>], unanswered: Bool) throws {
        try writer.write { db in
            for id in ids {
                try db.execute(sql: "UPDATE outbox SET sending_since = NULL, maybe_applied = maybe_applied OR ? WHERE id = ?",
                               arguments: [unanswered, id.rawValue])
            }
        }
    }

    /// Marks left by a send that never finished (the app was killed), older
    /// than any request lasts.
    func clearStaleSending(now: Date) throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE outbox SET sending_since = NULL, maybe_applied = 1 WHERE sending_since < ?",
                           arguments: [now.addingTimeInterval(-120).timeIntervalSince1970])
        }
    }

    // MARK: Settling entries

    /// The server answered the batch: applied entries leave the outbox and
    /// their confirmed rows are stored; rejected ones stay, marked failed
    /// with the reason, and the server's row replaces the local guess. A
    /// change the server failed on (`internal_error`) is not a refusal: it
    /// waits and is sent again. What a refused inspection had on the phone is
    /// kept as evidence, never deleted.
    ///
    /// `intoCache` false: the changes are another driver's, handed over by
    /// this phone; their rows are theirs, not the signed-in driver's cache.
    public func settle(_ results: [MutationResult], now: Date, retryDelay: (Int) -> TimeInterval, maxAttempts: Int,
                       intoCache: Bool = true) throws {
        try writer.write { db in
            var touched: Set<String> = []
            for result in results {
                guard let entry = try Row.fetchOne(db, sql: "SELECT * FROM outbox WHERE id = ?", arguments: [result.id.rawValue])
                    .map(OutboxEntry.init(row:)) else { continue }
                // Answered: applied (it leaves) or not applied (refused, or failed on the server and rolled back).
                try db.execute(sql: "UPDATE outbox SET sending_since = NULL, maybe_applied = 0 WHERE id = ?", arguments: [entry.id.rawValue])
                touched.insert(entry.mutation.entityID)
                switch result.outcome {
                case .applied:
                    try db.execute(sql: "DELETE FROM outbox WHERE id = ?", arguments: [result.id.rawValue])
                    if intoCache, let row = result.row { try Self.storeAnswered(row, db) }
                    if case .recordLocations(let batch) = entry.mutation.payload, let positions = result.positions {
                        try Self.storePositionReport(entry.id, sent: batch.fixes.count, positions, now: now, db)
                    }
                case .rejected where result.code == .internalError || result.code == .unavailable:
                    let attempts = entry.attempts + 1
                    try Self.recordFailure(entry.id, attempts: attempts, error: result.message ?? "The server could not apply it.",
                                           retryAt: now.addingTimeInterval(retryDelay(attempts)), maxAttempts: maxAttempts, db)
                case .rejected:
                    try db.execute(sql: """
                        UPDATE outbox SET status = 'failed', failure = 'rejected', error_code = ?, error_message = ? WHERE id = ?
                        """, arguments: [result.code?.rawValue, result.message, result.id.rawValue])
                    if !intoCache {
                        // Another driver's refusal stays on the phone with its reason, for them (and dispatch) to see.
                    } else {
                        // The server's row replaces the local guess (for a refused fill-up, the truck and its odometer).
                        if let row = result.row { try Self.storeAnswered(row, db) }
                        switch entry.mutation.payload {
                        case .createExpense(let request):
                            // What the server never created goes from the device too.
                            if let id = request.id { try Self.remove(.expense, id: id.rawValue, db) }
                            if let unit = request.fuel?.equipmentID { touched.insert(unit.rawValue) }
                        case .saveInspection(let save) where result.row == nil:
                            try Self.holdEvidence(save.inspectionID, reason: result.message ?? "The server refused this inspection.",
                                                  refused: entry.id, now: now, db)
                        default: break
                        }
                    }
                }
                if intoCache, let order = result.order {
                    try Self.storeAnswered(.order(order), db)
                    touched.insert(order.id.rawValue)
                }
            }
            if intoCache { try Self.overlayPending(touching: touched, reset: false, db) }
        }
    }

    /// An inspection the server will never take (it refused to start it,
    /// or the order went to another driver) while its files are still on
    /// the phone: photos of a vehicle that may be on the truck. It moves out
    /// of the cache into `evidence`, its files stay (failed, with the
    /// reason, counted as unsynced), and its later changes are marked
    /// failed too — kept until the driver exports or discards them.
    static func holdEvidence(_ id: ID<Inspection>, reason: String, refused: ID<Mutation>?, now: Date, _ db: Database) throws {
        let held = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM evidence WHERE inspection_id = ?)", arguments: [id.rawValue]) ?? false
        let files = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM upload_queue WHERE inspection_id = ? AND status <> 'completed'",
                                     arguments: [id.rawValue]) ?? 0
        if held {
            // Kept already (a later change of the same inspection was refused with it): nothing more to keep.
        } else if files > 0, let doc = try String.fetchOne(db, sql: "SELECT doc FROM inspections WHERE id = ?", arguments: [id.rawValue]),
           let order = try String.fetchOne(db, sql: "SELECT order_id FROM inspections WHERE id = ?", arguments: [id.rawValue]) {
            // The order's number, as the phone knows it or knew it when the inspection was made (it may be gone now).
            let number = try Self.order(ID(order)!, db)?.number ?? String.fetchOne(db, sql: """
                SELECT subject FROM outbox WHERE entity_id = ? AND subject IS NOT NULL ORDER BY seq LIMIT 1
                """, arguments: [id.rawValue])
            try db.execute(sql: """
                INSERT OR REPLACE INTO evidence (inspection_id, order_id, owner, doc, reason, held_at, subject)
                VALUES (?, ?, (SELECT user_id FROM account), ?, ?, ?, ?)
                """, arguments: [id.rawValue, order, doc, reason, now.timeIntervalSince1970, number])
            try db.execute(sql: """
                UPDATE upload_queue SET status = 'failed', last_error = ? WHERE inspection_id = ? AND status <> 'completed'
                """, arguments: ["Kept on this device: \(reason) Export it or discard it.", id.rawValue])
        } else {
            try db.execute(sql: "DELETE FROM upload_queue WHERE inspection_id = ?", arguments: [id.rawValue])
        }
        try db.execute(sql: "DELETE FROM inspections WHERE id = ?", arguments: [id.rawValue])
        try db.execute(sql: """
            UPDATE outbox SET status = 'failed', failure = 'rejected', error_code = ?, error_message = ?
            WHERE entity_id = ? AND id IS NOT ? AND (status = 'pending' OR failure = 'transient')
            """, arguments: [ErrorCode.dependencyFailed.rawValue, "Not sent: the inspection was refused (\(reason))",
                             id.rawValue, refused?.rawValue])
    }

    /// A send failed for a reason that may pass (offline, server error):
    /// each entry counts an attempt and waits until `retryAt`. After
    /// `maxAttempts` the driver is shown the failure, and the change keeps
    /// being retried on its schedule: it is dropped only by the driver.
    public func recordFailedAttempt(_ ids: [ID<Mutation>], error: String, retryAt: Date, maxAttempts: Int) throws {
        try writer.write { db in
            for id in ids {
                let attempts = try Int.fetchOne(db, sql: "SELECT attempts FROM outbox WHERE id = ?", arguments: [id.rawValue]) ?? 0
                try Self.recordFailure(id, attempts: attempts + 1, error: error, retryAt: retryAt, maxAttempts: maxAttempts, db)
            }
        }
    }

    static func recordFailure(_ id: ID<Mutation>, attempts: Int, error: String, retryAt: Date, maxAttempts: Int, _ db: Database) throws {
        try db.execute(sql: """
            UPDATE outbox SET attempts = ?, error_message = ?, next_attempt_at = ?, sending_since = NULL,
                status = CASE WHEN ? >= ? THEN 'failed' ELSE status END,
                failure = CASE WHEN ? >= ? THEN 'transient' ELSE failure END
            WHERE id = ? AND (status = 'pending' OR failure = 'transient')
            """, arguments: [attempts, error, retryAt.timeIntervalSince1970, attempts, maxAttempts, attempts, maxAttempts, id.rawValue])
    }

    /// Makes every waiting change due now. Backoff paces automatic retries;
    /// when the network returns, a session starts or the driver asks to
    /// sync, waiting longer helps nobody.
    public func releaseBackoff() throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE outbox SET next_attempt_at = 0 WHERE status = 'pending' OR failure = 'transient'")
        }
    }

    /// Sends a failed change again now (the driver asked to).
    public func retry(_ id: ID<Mutation>) throws {
        try writer.write { db in
            try db.execute(sql: """
                UPDATE outbox SET status = 'pending', failure = NULL, attempts = 0, next_attempt_at = 0, error_code = NULL
                WHERE id = ? AND failure = 'transient'
                """, arguments: [id.rawValue])
        }
    }

    /// Drops a failed change, as the driver decided (a refusal they have
    /// seen, or a change they give up). Never one still on its way.
    public func discard(_ id: ID<Mutation>) throws {
        try writer.write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE id = ? AND status = 'failed' AND sending_since IS NULL", arguments: [id.rawValue])
        }
    }
}

extension Mutation {
    /// The id of the truck a fill-up reads the odometer of: the change lays
    /// its reading over that unit's row too.
    var fuelUnit: String? {
        if case .createExpense(let request) = payload, let fuel = request.fuel, fuel.odometerMiles != nil { return fuel.equipmentID.rawValue }
        return nil
    }

    /// The id of the row the change is about.
    public var entityID: String {
        switch payload {
        case .updateOrderStatus(let change): return change.orderID.rawValue
        case .updateOrderETA(let change): return change.orderID.rawValue
        case .createExpense(let request): return request.id?.rawValue ?? ""
        case .deleteExpense(let reference): return reference.expenseID.rawValue
        case .markNotificationRead(let reference): return reference.notificationID.rawValue
        case .saveInspection(let save): return save.inspectionID.rawValue
        case .completeInspection(let reference): return reference.inspectionID.rawValue
        case .recordOdometer(let reading): return reading.equipmentID.rawValue
        case .recordLocations(let batch): return batch.id?.rawValue ?? "positions"
        }
    }
}
