import Foundation
import VroomXModels

/// What drivers' phones report still holds work that has not reached
/// dispatch (waiting, refused, kept as evidence). Not part of the change
/// feed: it describes the phone, not the carrier's data. The SQL is
/// `DeviceBacklogRepository`'s.
public struct DeviceBacklogService: Sendable {
    let store: Store

    /// A driver's phones kept: a new one past these replaces the one heard from longest ago.
    static let backlogDevicesPerDriver = 3
    /// A report not renewed for this long is forgotten (the phone is gone).
    static let backlogRetention: TimeInterval = 30 * 86_400

    /// Stores a phone's report, replacing its last one; a report of nothing
    /// clears it. Every number and text is bounded, and so are the phones a
    /// driver has: the report comes from a client.
    public func report(_ report: DeviceBacklog, _ scope: Scope) async throws {
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
        let now = store.now
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
        try await store.write(tenant: scope.tenant) { tx in
            if clean.isEmpty {
                try await DeviceBacklogRepository.delete(driver: driver, device: device, tx)
                return
            }
            try await DeviceBacklogRepository.upsert(clean, driver: driver, tx)
            // A driver has a few phones, not thousands: those heard from longest ago make room.
            for stale in try await DeviceBacklogRepository.devices(of: driver, tx).dropFirst(Self.backlogDevicesPerDriver) {
                try await DeviceBacklogRepository.delete(driver: driver, device: stale, tx)
            }
        }
    }

    /// Forgets reports no phone has renewed for `backlogRetention`.
    public func prune() async throws {
        let cutoff = store.now.addingTimeInterval(-Self.backlogRetention)
        try await store.writeRows { try await DeviceBacklogRepository.deleteReported(before: cutoff, $0) }
    }

    /// Every phone's last report in the carrier, newest first.
    public func reports(tenant: ID<Tenant>) async throws -> [ReportedBacklog] {
        let since = store.now.addingTimeInterval(-Self.backlogRetention)
        return try await store.read { try await DeviceBacklogRepository.reports(tenant: tenant, since: since, $0) }
    }
}

extension Store {
    /// What drivers' phones report holding back.
    public var deviceBacklogs: DeviceBacklogService { DeviceBacklogService(store: self) }
}
