import Foundation
import VroomXModels

/// Phones' reports of their backlog in the database: the SQL and the row
/// mapping, nothing else.
enum DeviceBacklogRepository {
    static func delete(driver: ID<Driver>, device: String, _ tx: TenantTransaction) async throws {
        try await tx.execute("DELETE FROM device_backlogs WHERE tenant_id = \(tx.tenant) AND driver_id = \(driver) AND device_id = \(device)")
    }

    /// Stores a phone's report in place of its last one.
    static func upsert(_ report: DeviceBacklog, driver: ID<Driver>, _ tx: TenantTransaction) async throws {
        let items = try WireJSON.string(report.items)
        try await tx.execute("""
            INSERT INTO device_backlogs (tenant_id, driver_id, device_id, changes, files, file_bytes, oldest_at, items, reported_at)
            VALUES (\(tx.tenant), \(driver), \(report.deviceID), \(report.waitingChanges), \(report.waitingFiles), \(report.fileBytes),
                    \(report.oldestAt), \(items), \(tx.now))
            ON CONFLICT (tenant_id, driver_id, device_id) DO UPDATE SET changes = excluded.changes, files = excluded.files,
                file_bytes = excluded.file_bytes, oldest_at = excluded.oldest_at, items = excluded.items, reported_at = excluded.reported_at
            """)
    }

    /// A driver's phones that reported, heard from most recently first.
    static func devices(of driver: ID<Driver>, _ tx: TenantTransaction) async throws -> [String] {
        try await tx.query("""
            SELECT device_id FROM device_backlogs WHERE tenant_id = \(tx.tenant) AND driver_id = \(driver)
            ORDER BY reported_at DESC, device_id
            """).map { try $0.string("device_id") }
    }

    static func deleteReported(before cutoff: Date, _ db: any SQLExecutor) async throws {
        try await db.execute("DELETE FROM device_backlogs WHERE reported_at < \(cutoff)")
    }

    /// Every phone's report in the carrier since `since`, newest first.
    static func reports(tenant: ID<Tenant>, since: Date, _ db: any SQLExecutor) async throws -> [ReportedBacklog] {
        try await db.query("""
            SELECT driver_id, device_id, changes, files, file_bytes, oldest_at, items, reported_at FROM device_backlogs
            WHERE tenant_id = \(tenant) AND reported_at >= \(since)
            ORDER BY reported_at DESC, driver_id, device_id
            """).map { row in
            let items = (try? JSONBody.decoder.decode([DeviceBacklog.Item].self, from: Data(try row.string("items").utf8))) ?? []
            return ReportedBacklog(
                driverID: try row.id("driver_id"),
                backlog: DeviceBacklog(deviceID: try row.string("device_id"), waitingChanges: try row.int("changes"),
                                       waitingFiles: try row.int("files"), fileBytes: Int64(try row.int("file_bytes")),
                                       oldestAt: try row.optionalDate("oldest_at"), items: items),
                reportedAt: try row.date("reported_at"))
        }
    }
}
