import Foundation
import GRDB
import Observation
import VroomXModels

/// What the app shows about syncing: online or not, what is waiting, what
/// failed and why, when it last succeeded (seed 000's banners).
@MainActor @Observable
public final class SyncStatus {
    public internal(set) var isOnline = true
    public internal(set) var isSyncing = false
    public internal(set) var realtimeConnected = false
    public internal(set) var lastSyncedAt: Date?
    public internal(set) var lastError: String?
    /// Changes and files that have not reached the server.
    public internal(set) var unsyncedCount = 0
    /// Inspection files still on the device, with their progress.
    public internal(set) var pendingUploads: [UploadItem] = []
    /// Changes that failed: rejected by the server, or out of attempts.
    public internal(set) var failed: [OutboxEntry] = []

    /// The server no longer serves this version of the app: nothing goes
    /// through until it is updated, and everything queued waits for that.
    public internal(set) var updateRequired = false
    /// The oldest version the server accepts, when it said.
    public internal(set) var requiredAppVersion: AppVersion?

    private var observation: Task<Void, Never>?

    public init() {}

    /// Follows the outbox, the upload queue and the sync position in the database.
    func follow(_ database: AppDatabase) {
        observation?.cancel()
        let values = ValueObservation.tracking { db in
            let owner = try AppDatabase.ownerID(db)
            return (try AppDatabase.unsyncedCount(db),
                    try Row.decodeAll(db, sql: "SELECT * FROM outbox WHERE owner IS ? AND status = 'failed' ORDER BY seq", arguments: [owner], OutboxEntry.init(row:)),
                    try Double.fetchOne(db, sql: "SELECT last_synced_at FROM sync_state"),
                    try Row.decodeAll(db, sql: "SELECT * FROM upload_queue WHERE owner IS ? AND status <> 'completed' ORDER BY created_at",
                                      arguments: [owner], UploadItem.init(row:)))
        }.values(in: database.reader)
        observation = Task { [weak self] in
            do {
                for try await (unsynced, failed, synced, uploads) in values {
                    self?.unsyncedCount = unsynced
                    self?.pendingUploads = uploads
                    self?.failed = failed
                    self?.lastSyncedAt = synced.map(Date.init(timeIntervalSince1970:))
                }
            } catch {}
        }
    }

    /// The server answered that this app is too old (`AppVersionTransport`).
    func requireUpdate(_ minimum: AppVersion?) {
        updateRequired = true
        requiredAppVersion = minimum
    }

    /// What the "Update the app" screen says.
    public var updateMessage: String {
        "This version of VroomX is too old for your carrier's server. Update the app"
            + (requiredAppVersion.map { " to version \($0) or later" } ?? "")
            + ": everything waiting on this phone stays here and is sent once the app is updated."
    }

    /// The driver closed the error banner; the next failure shows again.
    public func dismissError() { lastError = nil }

    /// The offline banner (seed 000).
    public var offlineBanner: String? { isOnline ? nil : "You're offline — showing cached data" }
}
