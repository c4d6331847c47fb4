import Foundation
import VroomXModels

/// What drivers' phones report still holds work that has not reached
/// dispatch (waiting, refused, kept as evidence). Not part of the change
/// feed: it describes the phone, not the carrier's data.
extension Store {
    /// A driver's phones kept: a new one past these replaces the one heard from longest ago.
    static let backlogDevicesPerDriver = 3
    /// A report not renewed for this long is forgotten (the phone is gone).
    static let backlogRetention: TimeInterval = 30 * 86_400

    /// Stores a phone's report, replacing its last one; a report of nothing
    /// clears it. Every number and text is bounded, and so are the phones a
    /// driver has: the report comes from a client.
    public func reportBacklog(_ report: DeviceBacklog, _ scope: Scope) async throws {
        guard let driver = scope.driverID else { throw AppError.forbidden("Only a driver's phone reports its backlog.") }
        let device = report.deviceID
        guard (1...64).contains(device.utf8.count), device.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (48...57).contains($0)
            || (65...90).contains($0) || (97...122).contains($0) }) else {
            throw AppError.validation("device_id", "device_id is 1 to 64 letters, digits and dashes.")
        }
        let changes = try Validate.number(report.waitingChanges, FieldLimits.backlogCount)
        let files = try Validate.number(report.waitingFiles, FieldLimits.backlogCount, field: "waiting_files")
        guard (0...(1 << 44)).contains(report.fileBytes) else { throw AppError.validation("file_bytes", "file_bytes is 0 to 16 TiB.") }
        guard report.items.count <= DeviceBacklog.maxItems else {
            throw AppError.validation("items", "Report at most \(DeviceBacklog.maxItems) items.")
        }
        let now = self.now
        // Shown to dispatch as it came: nothing that turns text around or hides in it.
        func text(_ raw: String, _ field: String, max: Int, required: Bool = false) throws -> String {
            let text = try Validate.text(raw, field: field, max: max, required: required)
            guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .format && $0 != "\u{200D}" }) else {
                throw AppError.validation(field, "\(field) contains invisible or direction-changing characters.")
            }
            return text
        }
        let items = try report.items.enumerated().map { index, item in
            DeviceBacklog.Item(
                status: item.status,
                what: try text(item.what, "items[\(index)].what", max: DeviceBacklog.maxWhat, required: true),
                detail: try text(item.detail, "items[\(index)].detail", max: DeviceBacklog.maxDetail),
                reason: try text(item.reason, "items[\(index)].reason", max: DeviceBacklog.maxReason),
                madeAt: try item.madeAt.map { try Validate.pastInstant($0, field: "items[\(index)].made_at", now: now) })
        }
        let oldest = try report.oldestAt.map { try Validate.pastInstant($0, field: "oldest_at", now: now) }
        let clean = DeviceBacklog(deviceID: device, waitingChanges: changes, waitingFiles: files, fileBytes: report.fileBytes,
                                  oldestAt: oldest, items: items)
        try await write(tenant: scope.tenant) { tx in
            if clean.isEmpty {
                try await tx.execute("""
                    DELETE FROM device_backlogs WHERE tenant_id = \(tx.tenant) AND driver_id = \(driver) AND device_id = \(device)
                    """)
                return
            }
            let encoded = String(decoding: try JSONBody.encoder.encode(items), as: UTF8.self)
            try await tx.execute("""
                INSERT INTO device_backlogs (tenant_id, driver_id, device_id, changes, files, file_bytes, oldest_at, items, reported_at)
                VALUES (\(tx.tenant), \(driver), \(device), \(changes), \(files), \(clean.fileBytes), \(oldest), \(encoded), \(tx.now))
                ON CONFLICT (tenant_id, driver_id, device_id) DO UPDATE SET changes = excluded.changes, files = excluded.files,
                    file_bytes = excluded.file_bytes, oldest_at = excluded.oldest_at, items = excluded.items, reported_at = excluded.reported_at
                """)
            // A driver has a few phones, not thousands: those heard from longest ago make room.
            let phones = try await tx.query("""
                SELECT device_id FROM device_backlogs WHERE tenant_id = \(tx.tenant) AND driver_id = \(driver)
                ORDER BY reported_at DESC, device_id
                """).map { try $0.string("device_id") }
            for stale in phones.dropFirst(Self.backlogDevicesPerDriver) {
                try await tx.execute("""
                    DELETE FROM device_backlogs WHERE tenant_id = \(tx.tenant) AND driver_id = \(driver) AND device_id = \(stale)
                    """)
            }
        }
    }

    /// Forgets reports no phone has renewed for `backlogRetention`.
    public func pruneDeviceBacklogs() async throws {
        let cutoff = now.addingTimeInterval(-Self.backlogRetention)
        try await writeRows { db in try await db.execute("DELETE FROM device_backlogs WHERE reported_at < \(cutoff)") }
    }

    /// Every phone's last report in the carrier, newest first.
    public func deviceBacklogs(tenant: ID<Tenant>) async throws -> [ReportedBacklog] {
        try await read { db in
            try await db.query("""
                SELECT driver_id, device_id, changes, files, file_bytes, oldest_at, items, reported_at FROM device_backlogs
                WHERE tenant_id = \(tenant) AND reported_at >= \(now.addingTimeInterval(-Self.backlogRetention))
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
}
