import Foundation
import GRDB
import VroomXModels

/// A file waiting to reach the server (seed 000's inspection upload queue):
/// a slot's file of an inspection, a photo of one of the driver's units, a
/// receipt of an expense, or the photo of a payment the driver collected.
/// Persisted so it survives the app being killed.
public struct UploadItem: Sendable, Hashable, Identifiable {
    public enum Status: String, Sendable { case pending, uploading, failed, completed }

    public let id: String
    /// The inspection the file is for, or nil for a unit's photo.
    public let inspectionID: VroomXModels.ID<Inspection>?
    /// The unit a photo is of, or nil for an inspection's file.
    public let equipmentID: VroomXModels.ID<Equipment>?
    /// The expense a receipt is of (slot `receipt`), or the payment a photo is of (slot `payment_photo`).
    public let paperID: String?
    public let slot: MediaSlot
    public let kind: MediaKind
    /// The app's own copy of the file.
    public let path: String
    public let size: Int64
    public let status: Status
    public let attempts: Int
    /// Bytes the server has acknowledged.
    public let sentBytes: Int64
    /// The tus upload on the server, once created.
    public let uploadURL: String?
    public let lastError: String?
    public let nextRetryAt: Date
    public let createdAt: Date
    /// The driver whose file it is.
    public let owner: String?
    /// When and where an inspection's photo was taken, sent with it.
    public let captured: MediaCapture?

    /// The slot unit photos are queued under (the server's name for it).
    static let unitPhotoSlot = MediaSlot("unit_photo")
    /// The slots of receipts and of collected payments' photos (the server's names).
    static let receiptSlot = MediaSlot("receipt")
    static let collectionPhotoSlot = MediaSlot("payment_photo")
    /// The slots of a problem's and a message's photos (the server's names).
    static let problemPhotoSlot = MediaSlot("problem_photo")
    static let messagePhotoSlot = MediaSlot("message_photo")

    /// The expense a queued receipt is of.
    public var expenseID: VroomXModels.ID<Expense>? { slot == Self.receiptSlot ? paperID.flatMap(VroomXModels.ID.init) : nil }
    /// The payment a queued photo is of.
    public var paymentID: VroomXModels.ID<InvoicePayment>? { slot == Self.collectionPhotoSlot ? paperID.flatMap(VroomXModels.ID.init) : nil }
    /// The problem at a stop a queued photo is of.
    public var problemID: VroomXModels.ID<StopProblem>? { slot == Self.problemPhotoSlot ? paperID.flatMap(VroomXModels.ID.init) : nil }
    /// The message a queued photo goes with.
    public var messageID: VroomXModels.ID<DriverMessage>? { slot == Self.messagePhotoSlot ? paperID.flatMap(VroomXModels.ID.init) : nil }

    public var progress: Double { size > 0 ? Double(sentBytes) / Double(size) : 0 }

    /// What the file is for, in the driver's words.
    public var about: String {
        if equipmentID != nil { return "unit photo" }
        if expenseID != nil { return "receipt" }
        if paymentID != nil { return "payment photo" }
        if problemID != nil { return "problem photo" }
        if messageID != nil { return "message photo" }
        return slot.rawValue
    }

    init(row: Row) {
        id = row["id"]
        inspectionID = (row["inspection_id"] as String?).flatMap(VroomXModels.ID<Inspection>.init)
        equipmentID = (row["equipment_id"] as String?).flatMap(VroomXModels.ID<Equipment>.init)
        paperID = row["paper_id"]
        slot = MediaSlot(row["slot"] as String)
        kind = MediaKind(rawValue: row["kind"]) ?? .photo
        path = row["path"]
        size = row["size"]
        status = Status(rawValue: row["status"]) ?? .pending
        attempts = row["attempts"]
        sentBytes = row["sent_bytes"]
        uploadURL = row["upload_url"]
        lastError = row["last_error"]
        nextRetryAt = Date(timeIntervalSince1970: row["next_retry_at"])
        createdAt = Date(timeIntervalSince1970: row["created_at"])
        owner = row["owner"]
        captured = (row["captured"] as String?).flatMap { try? CacheJSON.decode(MediaCapture.self, $0) }
    }
}

extension AppDatabase {
    /// Queues a file for a slot, replacing a queued file for the same slot
    /// that has not finished (the driver retook the photo). Returns the
    /// replaced item's file, for the caller to delete.
    func insertUpload(id: String, inspection: ID<Inspection>, slot: MediaSlot, path: String, size: Int64, now: Date,
                      captured: MediaCapture? = nil) throws -> String? {
        try writer.write { db in
            let replaced = try String.fetchOne(db, sql: "SELECT path FROM upload_queue WHERE inspection_id = ? AND slot = ?",
                                               arguments: [inspection.rawValue, slot.rawValue])
            try db.execute(sql: "DELETE FROM upload_queue WHERE inspection_id = ? AND slot = ?", arguments: [inspection.rawValue, slot.rawValue])
            try db.execute(sql: """
                INSERT INTO upload_queue (id, inspection_id, slot, kind, path, size, created_at, owner, captured)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, inspection.rawValue, slot.rawValue, slot.kind.rawValue, path, size, now.timeIntervalSince1970,
                                 try Self.ownerID(db), try captured.map(CacheJSON.encode)])
            return replaced
        }
    }

    /// Queues a photo of a unit (a unit keeps many; nothing is replaced).
    func insertUnitPhoto(id: String, unit: ID<Equipment>, path: String, size: Int64, now: Date) throws {
        try writer.write { db in
            try db.execute(sql: """
                INSERT INTO upload_queue (id, equipment_id, slot, kind, path, size, created_at, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, unit.rawValue, UploadItem.unitPhotoSlot.rawValue, MediaKind.photo.rawValue, path, size,
                                 now.timeIntervalSince1970, try Self.ownerID(db)])
        }
    }

    /// Queues a receipt of an expense, or the photo of a payment the driver collected.
    func insertPaperPhoto(id: String, paper: String, slot: MediaSlot, path: String, size: Int64, now: Date) throws {
        try writer.write { db in
            try db.execute(sql: """
                INSERT INTO upload_queue (id, paper_id, slot, kind, path, size, created_at, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, paper, slot.rawValue, MediaKind.photo.rawValue, path, size, now.timeIntervalSince1970, try Self.ownerID(db)])
        }
    }

    public func upload(_ id: String) throws -> UploadItem? {
        try reader.read { db in try Row.fetchOne(db, sql: "SELECT * FROM upload_queue WHERE id = ?", arguments: [id]).map(UploadItem.init(row:)) }
    }

    public func uploads(inspection: ID<Inspection>? = nil) throws -> [UploadItem] {
        try reader.read { db in try Self.uploads(inspection: inspection, db) }
    }

    static func uploads(inspection: ID<Inspection>?, _ db: Database) throws -> [UploadItem] {
        if let inspection {
            return try Row.decodeAll(db, sql: "SELECT * FROM upload_queue WHERE inspection_id = ? ORDER BY created_at",
                                     arguments: [inspection.rawValue], UploadItem.init(row:))
        }
        return try Row.decodeAll(db, sql: "SELECT * FROM upload_queue ORDER BY created_at", UploadItem.init(row:))
    }

    /// The signed-in driver's next file to send now: oldest first, not
    /// failed, not waiting for a retry, and of an inspection (expense,
    /// collected payment) the server already has — a file waits while its
    /// inspection's save (the expense, the collection) is unsent or
    /// failed and to be tried again (the server would answer "not found",
    /// which is no fault of the file). A change the server refused is not
    /// waited for: it will never go.
    /// `owner`: another driver whose files this phone hands over (nil: the signed-in driver).
    func nextDueUpload(now: Date, owner: String? = nil) throws -> UploadItem? {
        // The kind is written into the text, not bound: only then may SQLite use the partial index of inspection saves.
        try reader.read { db in
            try Row.fetchOne(db, sql: """
                SELECT * FROM upload_queue u WHERE u.owner IS ? AND u.status IN ('pending', 'uploading') AND u.next_retry_at <= ?
                AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_id = u.inspection_id AND o.kind = '\(MutationKind.saveInspection.rawValue)'
                                AND (o.status = 'pending' OR o.failure = 'transient'))
                AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.entity_id = u.paper_id
                                AND o.kind IN ('\(MutationKind.createExpense.rawValue)', '\(MutationKind.collectPayment.rawValue)',
                                               '\(MutationKind.reportStopProblem.rawValue)', '\(MutationKind.sendMessage.rawValue)')
                                AND (o.status = 'pending' OR o.failure = 'transient'))
                ORDER BY u.created_at LIMIT 1
                """, arguments: [try owner ?? Self.ownerID(db), now.timeIntervalSince1970])
                .map(UploadItem.init(row:))
        }
    }

    /// When the signed-in driver's next waiting file is due, if any is waiting.
    func nextUploadRetry() throws -> Date? {
        try reader.read { db in
            try Double.fetchOne(db, sql: """
                SELECT MIN(next_retry_at) FROM upload_queue WHERE owner IS ? AND status IN ('pending', 'uploading')
                """, arguments: [try Self.ownerID(db)]).map(Date.init(timeIntervalSince1970:))
        }
    }

    /// Forgets when and where a queued photo was taken (the server refused the stamp).
    func dropCapture(of id: String) throws {
        try writer.write { db in try db.execute(sql: "UPDATE upload_queue SET captured = NULL WHERE id = ?", arguments: [id]) }
    }

    func updateUpload(_ id: String, status: UploadItem.Status? = nil, sentBytes: Int64? = nil, uploadURL: String?? = nil,
                      lastError: String?? = nil, attempts: Int? = nil, nextRetryAt: Date? = nil) throws {
        try writer.write { db in
            var assignments: [String] = []
            var arguments: [(any DatabaseValueConvertible)?] = []
            if let status { assignments.append("status = ?"); arguments.append(status.rawValue) }
            if let sentBytes { assignments.append("sent_bytes = ?"); arguments.append(sentBytes) }
            if let uploadURL { assignments.append("upload_url = ?"); arguments.append(uploadURL) }
            if let lastError { assignments.append("last_error = ?"); arguments.append(lastError) }
            if let attempts { assignments.append("attempts = ?"); arguments.append(attempts) }
            if let nextRetryAt { assignments.append("next_retry_at = ?"); arguments.append(nextRetryAt.timeIntervalSince1970) }
            guard !assignments.isEmpty else { return }
            // A finished file stays finished: another process on the device may have been sending it
            // too, and its late failure (the copy it read was deleted once the file was done) is stale.
            try db.execute(sql: "UPDATE upload_queue SET \(assignments.joined(separator: ", ")) WHERE id = ? AND status <> 'completed'",
                           arguments: StatementArguments(arguments + [id as (any DatabaseValueConvertible)?]))
        }
    }

    /// Files of an inspection that are queued and not failed, as the media
    /// they will become (for checking an inspection locally).
    static func queuedMedia(of inspection: ID<Inspection>, _ db: Database) throws -> [InspectionMedia] {
        try uploads(inspection: inspection, db).filter { $0.status != .failed }.map {
            InspectionMedia(slot: $0.slot, kind: $0.kind, contentType: "", sizeBytes: $0.size, sha256: "", uploadedAt: $0.createdAt)
        }
    }

    /// The signed-in driver's files that have not reached the server.
    public func pendingUploadCount() throws -> Int {
        try reader.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM upload_queue WHERE owner IS ? AND status <> 'completed'",
                             arguments: [try Self.ownerID(db)]) ?? 0
        }
    }

    /// Makes every waiting file due now (the network came back, or the driver asked).
    func releaseUploadBackoff() throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE upload_queue SET next_retry_at = 0 WHERE status IN ('pending', 'uploading')")
        }
    }

    /// Forgets a failed file the driver gave up on (say, one the server
    /// refuses); returns the path of its copy for the caller to delete.
    func deleteFailedUpload(_ id: String) throws -> String? {
        try writer.write { db in
            let path = try String.fetchOne(db, sql: "SELECT path FROM upload_queue WHERE id = ? AND status = 'failed'", arguments: [id])
            try db.execute(sql: "DELETE FROM upload_queue WHERE id = ? AND status = 'failed'", arguments: [id])
            return path
        }
    }

    /// Puts a failed file back in the queue.
    public func retryUpload(_ id: String) throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE upload_queue SET status = 'pending', attempts = 0, next_retry_at = 0 WHERE id = ? AND status = 'failed'",
                           arguments: [id])
        }
    }
}

extension AppDatabase {
    public func inspection(_ id: ID<Inspection>) throws -> Inspection? {
        try reader.read { db in try Self.inspection(id, db) }
    }

    public func inspections(order: ID<Order>) throws -> [Inspection] {
        try reader.read { db in try Self.inspections(order: order, db) }
    }
}

/// An inspection the server will never take, kept with its files on the
/// phone (evidence of a vehicle's condition) until the driver exports or
/// discards it.
public struct HeldEvidence: Sendable, Hashable, Identifiable {
    public let inspection: Inspection
    public let reason: String
    public let heldAt: Date
    public let files: [UploadItem]
    /// The order's number, as the phone knew it (the order may be gone from it).
    public let orderNumber: String?

    public var id: ID<Inspection> { inspection.id }
    /// "the O-5004 pickup inspection".
    public var about: String { "the \(orderNumber ?? "order's") \(inspection.kind.rawValue) inspection" }
}

extension AppDatabase {
    /// The signed-in driver's held evidence, newest first.
    public func evidence() throws -> [HeldEvidence] {
        try reader.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM evidence WHERE owner IS ? ORDER BY held_at DESC", arguments: [try Self.ownerID(db)])
                .map { row in
                    let inspection = try CacheJSON.decode(Inspection.self, row["doc"])
                    return HeldEvidence(inspection: inspection, reason: row["reason"],
                                        heldAt: Date(timeIntervalSince1970: row["held_at"]),
                                        files: try Self.uploads(inspection: inspection.id, db).filter { $0.status == .failed },
                                        orderNumber: try row["subject"] ?? Self.order(inspection.orderID, db)?.number)
                }
        }
    }

    /// Forgets held evidence, as the driver decided: its files (returned for
    /// deletion) and its failed changes go.
    func discardEvidence(_ id: ID<Inspection>) throws -> [String] {
        try writer.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM evidence WHERE inspection_id = ?)", arguments: [id.rawValue]) == true
            else { return [] }
            // Kept files are the failed ones: files of the inspection taken up again (the order came back) stay queued.
            let files = try String.fetchAll(db, sql: "SELECT path FROM upload_queue WHERE inspection_id = ? AND status = 'failed'",
                                            arguments: [id.rawValue])
            try db.execute(sql: "DELETE FROM upload_queue WHERE inspection_id = ? AND status = 'failed'", arguments: [id.rawValue])
            try db.execute(sql: "DELETE FROM outbox WHERE entity_id = ? AND status = 'failed'", arguments: [id.rawValue])
            try db.execute(sql: "DELETE FROM evidence WHERE inspection_id = ?", arguments: [id.rawValue])
            return files
        }
    }
}
