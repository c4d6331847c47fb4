import Foundation
import GRDB
import VroomXModels

/// The server's answers to queued changes: applied, refused (with the
/// evidence kept), or failed and retried.
extension AppDatabase {
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
                guard let entry = try Row.decodeFirst(db, sql: "SELECT * FROM outbox WHERE id = ?", arguments: [result.id.rawValue],
                                                      OutboxEntry.init(row:)) else { continue }
                // Answered: applied (it leaves) or not applied (refused, or failed on the server and rolled back).
                if result.outcome != .applied {
                    try db.cachedStatement(sql: "UPDATE outbox SET sending_since = NULL, maybe_applied = 0 WHERE id = ?")
                        .execute(arguments: [entry.id.rawValue])
                }
                touched.insert(entry.mutation.entityID)
                switch result.outcome {
                case .applied:
                    try db.cachedStatement(sql: "DELETE FROM outbox WHERE id = ?").execute(arguments: [result.id.rawValue])
                    if intoCache, let row = result.row { try Self.storeAnswered(row, db) }
                    if case .recordLocations(let batch) = entry.mutation.payload, let positions = result.positions {
                        try Self.storePositionReport(entry.id, sent: batch.fixes.count, positions, now: now, db)
                    }
                    if intoCache, case .collectPayment(let request) = entry.mutation.payload { try Self.storeCollection(request, now: now, db) }
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
