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
    /// Changes that have not reached the server and still can.
    public internal(set) var unsyncedCount = 0
    /// Changes that failed: rejected by the server, or out of attempts.
    public internal(set) var failed: [OutboxEntry] = []

    private var observation: Task<Void, Never>?

    public init() {}

    /// Follows the outbox and the sync position in the database.
    func follow(_ database: AppDatabase) {
        observation?.cancel()
        let values = ValueObservation.tracking { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE status = 'pending' OR failure = 'transient'") ?? 0,
             try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE status = 'failed' ORDER BY seq").map(OutboxEntry.init(row:)),
             try Double.fetchOne(db, sql: "SELECT last_synced_at FROM sync_state"))
        }.values(in: database.reader)
        observation = Task { [weak self] in
            do {
                for try await (unsynced, failed, synced) in values {
                    self?.unsyncedCount = unsynced
                    self?.failed = failed
                    self?.lastSyncedAt = synced.map(Date.init(timeIntervalSince1970:))
                }
            } catch {}
        }
    }

    /// The offline banner (seed 000).
    public var offlineBanner: String? { isOnline ? nil : "You're offline — showing cached data" }
}
