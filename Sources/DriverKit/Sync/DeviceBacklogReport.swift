import Foundation
import GRDB
import VroomXModels

/// What of a driver's work this phone still holds, told to dispatch: changes
/// and files on their way, refusals the driver has not dropped, inspections
/// kept as evidence — each in the driver's words, with its data and why.
/// Sent after a sync when it changed since the last report (and a report of
/// nothing once it all arrived, which clears it), so dispatch knows what is
/// on a phone before it arrives.
extension AppDatabase {
    /// This phone's id for its reports, made once.
    func deviceID() throws -> String {
        try writer.write { db in
            if let id = try String.fetchOne(db, sql: "SELECT device_id FROM device") { return id }
            let id = UUID().uuidString.lowercased()
            try db.execute(sql: "UPDATE device SET device_id = ?", arguments: [id])
            return id
        }
    }

    /// `owner`'s work on this phone, as dispatch is to see it.
    /// `now`: the server's time; no time in the report is later (a phone
    /// whose clock ran ahead stamped some changes in the future).
    func backlog(owner: String, now: Date) throws -> DeviceBacklog {
        let device = try deviceID()
        return try reader.read { db in
            let entries = try Row.decodeAll(db, sql: "SELECT * FROM outbox WHERE owner = ? ORDER BY seq", arguments: [owner], OutboxEntry.init(row:))
            let kept = Set(try String.fetchAll(db, sql: "SELECT inspection_id FROM evidence WHERE owner = ?", arguments: [owner]))
            let files = try Row.decodeAll(db, sql: "SELECT * FROM upload_queue WHERE owner = ? AND status <> 'completed' ORDER BY created_at",
                                         arguments: [owner], UploadItem.init(row:))
                .filter { !kept.contains($0.inspectionID?.rawValue ?? "") }
            let waiting = entries.filter(\.isUnsynced)
            var items: [DeviceBacklog.Item] = waiting.map { entry in
                DeviceBacklog.Item(status: .waiting, what: entry.description, detail: ChangeWords.detail(entry.mutation),
                                   reason: entry.failure == .transient ? "the server keeps failing on it: \(entry.errorMessage ?? "")"
                                                                       : "not yet sent", madeAt: min(entry.createdAt, now))
            }
            items += files.map { file in
                DeviceBacklog.Item(status: .waiting, what: (try? Self.words(for: file, db)) ?? file.about,
                                   detail: "\(file.size / 1024) KB, \(Int(file.progress * 100))% sent",
                                   reason: file.status == .failed ? "refused: \(file.lastError ?? "")" : "uploading",
                                   madeAt: min(file.createdAt, now))
            }
            items += entries.filter { $0.failure == .rejected && $0.errorCode != ErrorCode.dependencyFailed.rawValue }.map { entry in
                DeviceBacklog.Item(status: .refused, what: entry.description, detail: ChangeWords.detail(entry.mutation),
                                   reason: entry.refusal, madeAt: min(entry.createdAt, now))
            }
            for row in try Row.fetchAll(db, sql: "SELECT doc, reason, held_at, subject FROM evidence WHERE owner = ?", arguments: [owner]) {
                guard let inspection = try? CacheJSON.decode(Inspection.self, row["doc"]) else { continue }
                let number = try row["subject"] ?? Self.order(inspection.orderID, db)?.number ?? "an order"
                items.append(DeviceBacklog.Item(status: .kept, what: "the \(number) \(inspection.kind.rawValue) inspection and its photos",
                                                detail: "", reason: row["reason"], madeAt: min(inspection.createdAt, now)))
            }
            // A report the server refuses tells dispatch nothing: what the driver typed is made fit first
            // (a note with a control character, a clock reset to 1970), and long text is cut.
            func clip(_ text: String, _ limit: Int) -> String {
                var scalars = String.UnicodeScalarView()
                for scalar in text.unicodeScalars {
                    switch scalar.properties.generalCategory {
                    case .control where scalar != "\n" && scalar != "\t": scalars.append(" ")
                    case .format where scalar != "\u{200D}": continue
                    default: scalars.append(scalar)
                    }
                }
                let clean = String(scalars).trimmingCharacters(in: .whitespacesAndNewlines)
                return clean.unicodeScalars.count <= limit ? clean : String(String.UnicodeScalarView(clean.unicodeScalars.prefix(limit - 1))) + "…"
            }
            let earliest = Date(timeIntervalSince1970: 946_684_800)
            return DeviceBacklog(
                deviceID: device, waitingChanges: waiting.count, waitingFiles: files.count,
                fileBytes: files.reduce(0) { $0 + max(0, $1.size - $1.sentBytes) },
                oldestAt: (waiting.map(\.createdAt) + files.map(\.createdAt)).min().map { max(min($0, now), earliest) },
                items: items.prefix(DeviceBacklog.maxItems).map { item in
                    var item = item
                    item.what = clip(item.what, DeviceBacklog.maxWhat)
                    item.detail = clip(item.detail, DeviceBacklog.maxDetail)
                    item.reason = clip(item.reason, DeviceBacklog.maxReason)
                    if item.what.isEmpty { item.what = "a change" }
                    item.madeAt = item.madeAt.map { max($0, earliest) }
                    return item
                })
        }
    }

    /// The report to send for `owner`, or nil when the server already has it.
    func backlogToReport(owner: String, now: Date) throws -> (backlog: DeviceBacklog, encoded: String)? {
        let backlog = try backlog(owner: owner, now: now)
        let encoded = try CacheJSON.encode(backlog)
        let last = try reader.read { db in try String.fetchOne(db, sql: "SELECT report FROM backlog_reports WHERE owner = ?", arguments: [owner]) }
        // Never reported and nothing to say: the server has nothing for this phone either.
        if last == nil && backlog.isEmpty { return nil }
        return last == encoded ? nil : (backlog, encoded)
    }

    /// A report is on its way: until its answer comes, what the server has is
    /// unknown (a lost answer may hide a report it stored). Nothing compares
    /// equal to this, so the next look sends what the phone then holds, a
    /// report of nothing too.
    func backlogInDoubt(owner: String) throws {
        try writer.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO backlog_reports (owner, report) VALUES (?, ?)", arguments: [owner, Self.reportInDoubt])
        }
    }

    static let reportInDoubt = "in doubt"

    func backlogReported(owner: String, encoded: String, empty: Bool) throws {
        try writer.write { db in
            if empty {
                try db.execute(sql: "DELETE FROM backlog_reports WHERE owner = ?", arguments: [owner])
            } else {
                try db.execute(sql: "INSERT OR REPLACE INTO backlog_reports (owner, report) VALUES (?, ?)", arguments: [owner, encoded])
            }
        }
    }
}

extension APIClient {
    /// Tells the server what `owner`'s work on this phone looks like, when
    /// that changed since it was last told.
    func reportBacklog(of owner: String, _ database: AppDatabase) async throws {
        guard let (backlog, encoded) = try database.backlogToReport(owner: owner, now: serverClock.now) else { return }
        try database.backlogInDoubt(owner: owner)
        try await send(.reportDeviceBacklog, body: backlog)
        try database.backlogReported(owner: owner, encoded: encoded, empty: backlog.isEmpty)
    }
}
