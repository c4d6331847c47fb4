import Foundation
import GRDB
import VroomXModels

/// What the server did with batches of positions the phone sent: how many
/// reached dispatch and how many it left out, and why — so the driver is
/// told the truth, not how many the phone recorded.
public struct PositionReport: Sendable, Hashable {
    /// Batches the server has answered for.
    public var batches = 0
    public var sent = 0
    /// Stored now, or already there (a batch sent again).
    public var reached = 0
    /// Too inaccurate, too old, or recorded after the trip ended.
    public var dropped = 0
    /// Stamped ahead of the server's clock.
    public var future = 0

    public var leftOut: Int { dropped + future }
}

extension AppDatabase {
    /// Reports are kept a week: long enough for any drive to read its own.
    static let positionReportAge: TimeInterval = 7 * 86_400

    static func storePositionReport(_ id: ID<Mutation>, sent: Int, _ result: RecordLocationsResult, now: Date, _ db: Database) throws {
        try db.execute(sql: """
            INSERT OR REPLACE INTO position_reports (mutation_id, sent, stored, duplicates, dropped, future, settled_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [id.rawValue, sent, result.stored, result.duplicates, result.dropped, result.future, now.timeIntervalSince1970])
        try db.execute(sql: "DELETE FROM position_reports WHERE settled_at < ?",
                       arguments: [now.addingTimeInterval(-positionReportAge).timeIntervalSince1970])
    }

    /// What the server said of the batches it answered since `date` (by this device's clock).
    public func positionReport(settledSince date: Date) throws -> PositionReport {
        let ids = try reader.read { db in
            try String.fetchAll(db, sql: "SELECT mutation_id FROM position_reports WHERE settled_at >= ?", arguments: [date.timeIntervalSince1970])
        }
        return try positionReport(for: ids.compactMap { ID<Mutation>($0) })
    }

    /// What the server said of these batches (those it has answered).
    public func positionReport(for batches: [ID<Mutation>]) throws -> PositionReport {
        try reader.read { db in
            var report = PositionReport()
            for id in batches {
                guard let row = try Row.fetchOne(db, sql: "SELECT * FROM position_reports WHERE mutation_id = ?", arguments: [id.rawValue])
                else { continue }
                report.batches += 1
                report.sent += row["sent"] as Int
                report.reached += (row["stored"] as Int) + (row["duplicates"] as Int)
                report.dropped += row["dropped"]
                report.future += row["future"]
            }
            return report
        }
    }
}
