import Foundation
import GRDB
import VroomXModels

/// How a change was stamped: by a clock the server had confirmed, or by a
/// device clock nobody could vouch for (set by hand, or changed, and no
/// answer heard since) — then also when it was made by the device's
/// seconds since boot, which nobody sets, so it can be corrected before it
/// is first sent.
struct ClockStamp: Sendable {
    var verified: Bool
    var secondsSinceBoot: TimeInterval
    var bootID: String?

    init(_ clock: ServerClock) {
        verified = clock.isKnown
        secondsSinceBoot = clock.secondsSinceBoot
        bootID = clock.bootID
    }
}

extension Mutation {
    /// The same change with every time the device stamped moved by `shift`
    /// (when a pickup, a read or a reading happened; where the phone was).
    /// Times the driver typed (an ETA, an expense's day) are theirs and stay.
    func shiftingStamps(by shift: TimeInterval) -> Mutation {
        var shifted = self
        func move(_ date: Date?) -> Date? { date.map { $0.addingTimeInterval(shift) } }
        switch payload {
        case .updateOrderStatus(var change):
            change.occurredAt = move(change.occurredAt)
            shifted.payload = .updateOrderStatus(change)
        case .completeInspection(var reference):
            reference.occurredAt = move(reference.occurredAt)
            shifted.payload = .completeInspection(reference)
        case .markNotificationRead(var reference):
            reference.readAt = move(reference.readAt)
            shifted.payload = .markNotificationRead(reference)
        case .recordOdometer(var reading):
            reading.recordedAt = move(reading.recordedAt)
            shifted.payload = .recordOdometer(reading)
        case .recordLocations(var batch):
            batch.fixes = batch.fixes.map { fix in
                var moved = fix
                moved.recordedAt = fix.recordedAt.addingTimeInterval(shift)
                return moved
            }
            shifted.payload = .recordLocations(batch)
        case .saveInspection(var save):
            if var position = save.inspection.position {
                position.recordedAt = position.recordedAt.addingTimeInterval(shift)
                save.inspection.position = position
            }
            shifted.payload = .saveInspection(save)
        case .sendMessage(var request):
            request.sentAt = move(request.sentAt)
            shifted.payload = .sendMessage(request)
        case .acknowledgeNotification(var reference):
            reference.readAt = move(reference.readAt)
            shifted.payload = .acknowledgeNotification(reference)
        case .reportStopProblem(var request):
            request.reportedAt = move(request.reportedAt)
            shifted.payload = .reportStopProblem(request)
        case .updateOrderETA, .createExpense, .deleteExpense, .collectPayment, .startTrip:
            break
        }
        return shifted
    }
}

extension AppDatabase {
    /// Whether changes of `owner` (nil: the signed-in driver) still wait for
    /// their stamps to be corrected.
    func hasUnverifiedStamps(owner: String?) throws -> Bool {
        try reader.read { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM outbox WHERE owner IS ? AND stamp_verified = 0 AND (status = 'pending' OR failure = 'transient'))
                """, arguments: [try owner ?? Self.ownerID(db)]) ?? false
        }
    }

    /// Corrects the times of changes stamped while the device clock was not
    /// known, now that it is: a change made `elapsed` seconds ago (by the
    /// seconds since boot) happened at `serverNow - elapsed`. Only while no
    /// send of it can have been applied — after that, it must go again
    /// exactly as it went.
    /// A change made before the device restarted cannot be measured so and
    /// goes as it was stamped (the server keeps its times within bounds).
    func correctStamps(owner: String?, serverNow: Date, secondsSinceBoot: TimeInterval, bootID: String?) throws {
        try writer.write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT * FROM outbox WHERE owner IS ? AND stamp_verified = 0 AND (status = 'pending' OR failure = 'transient')
                """, arguments: [try owner ?? Self.ownerID(db)])
            for row in rows {
                let entry = try OutboxEntry(row: row)
                // Never applied anywhere: not on its way, and no send of it went unanswered (an answered
                // failure applied nothing and stored nothing, so the corrected change is still the first).
                let untouched = entry.sendingSince == nil && !(row["maybe_applied"] as Bool)
                let sameBoot = bootID != nil && (row["stamp_boot"] as String?) == bootID
                if untouched, sameBoot, let madeAt = row["stamp_uptime"] as Double?, secondsSinceBoot >= madeAt {
                    let shift = serverNow.addingTimeInterval(madeAt - secondsSinceBoot).timeIntervalSince(entry.createdAt)
                    // Whole-second headers make the clock good to a second or two: smaller shifts are noise.
                    if abs(shift) >= 2 {
                        try db.execute(sql: "UPDATE outbox SET mutation = ?, created_at = ? WHERE id = ?",
                                       arguments: [try CacheJSON.encode(entry.mutation.shiftingStamps(by: shift)),
                                                   entry.createdAt.addingTimeInterval(shift).timeIntervalSince1970, entry.id.rawValue])
                    }
                }
                try db.execute(sql: "UPDATE outbox SET stamp_verified = 1 WHERE id = ?", arguments: [entry.id.rawValue])
            }
        }
    }
}
