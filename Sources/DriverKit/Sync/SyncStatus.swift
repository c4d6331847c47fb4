import Foundation
import GRDB
import Observation

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

    private var observation: Task<Void, Never>?

    public init() {}

    /// Follows the outbox, the upload queue and the sync position in the database.
    func follow(_ database: AppDatabase) {
        observation?.cancel()
        let values = ValueObservation.tracking { db in
            let owner = try AppDatabase.ownerID(db)
            return (try AppDatabase.unsyncedCount(db),
                    try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE owner IS ? AND status = 'failed' ORDER BY seq", arguments: [owner])
                        .map(OutboxEntry.init(row:)),
                    try Double.fetchOne(db, sql: "SELECT last_synced_at FROM sync_state"),
                    try Row.fetchAll(db, sql: "SELECT * FROM upload_queue WHERE owner IS ? AND status <> 'completed' ORDER BY created_at",
                                     arguments: [owner]).map(UploadItem.init(row:)))
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

    /// The driver closed the error banner; the next failure shows again.
    public func dismissError() { lastError = nil }

    /// The offline banner (seed 000).
    public var offlineBanner: String? { isOnline ? nil : "You're offline — showing cached data" }
}
