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
            let subject = try ChangeWords.subject(mutation, db)
            let about = try ChangeWords.about(mutation, subject: subject, db)
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
        try unsentEntries(owner: ownerID(db), db)
    }

    /// `owner`'s changes still to reach the server, oldest first.
    static func unsentEntries(owner: String?, _ db: Database) throws -> [OutboxEntry] {
        try Row.decodeAll(db, sql: """
            SELECT * FROM outbox WHERE owner IS ? AND (status = 'pending' OR failure = 'transient') ORDER BY seq
            """, arguments: [owner], OutboxEntry.init(row:))
    }

    // MARK: Reading the outbox

    public func outbox() throws -> [OutboxEntry] {
        try reader.read { db in try Row.decodeAll(db, sql: "SELECT * FROM outbox ORDER BY seq", OutboxEntry.init(row:)) }
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
            let unsent = try Self.unsentEntries(owner: owner ?? Self.ownerID(db), db)
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
            let update = try db.cachedStatement(sql: "UPDATE outbox SET sending_since = ? WHERE id = ?")
            for id in ids { try update.execute(arguments: [date.timeIntervalSince1970, id.rawValue]) }
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
        case .collectPayment(let request): return request.id.rawValue
        case .startTrip(let reference): return reference.tripID.rawValue
        case .sendMessage(let request): return request.id.rawValue
        case .acknowledgeNotification(let reference): return reference.notificationID.rawValue
        case .reportStopProblem(let request): return request.id.rawValue  // its photos wait for it by this id
        }
    }
}
