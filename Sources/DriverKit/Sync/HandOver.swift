import Foundation
import Logging
import VroomXModels

/// Work done on a phone reaches dispatch as soon as that phone has signal,
/// whoever is signed in next. When another driver signs in while the one
/// before still has changes or files on the phone, that driver's session is
/// parked (kept in the secure store under a key of its own) instead of
/// forgotten; this sends their changes and files in their name, tells
/// dispatch what still waits ("work waiting on a device"), and once nothing
/// of theirs is left to send, ends that session on the server and on the
/// phone. The signed-in driver never sees, counts or sends it.
public actor HandOver {
    let database: AppDatabase
    let secureStore: any SecureStore
    let transport: any HTTPTransport
    let baseURL: String
    let network: any NetworkMonitor
    let serverClock: ServerClock
    let clock: @Sendable () -> Date
    let sync: SyncEngine
    let uploads: UploadQueue
    let logger: Logger
    private var current: Task<Void, Never>?
    private var again = false

    init(database: AppDatabase, secureStore: any SecureStore, transport: any HTTPTransport, baseURL: String,
         network: any NetworkMonitor, serverClock: ServerClock, clock: @escaping @Sendable () -> Date,
         sync: SyncEngine, uploads: UploadQueue, logger: Logger) {
        self.database = database
        self.secureStore = secureStore
        self.transport = transport
        self.baseURL = baseURL
        self.network = network
        self.serverClock = serverClock
        self.clock = clock
        self.sync = sync
        self.uploads = uploads
        self.logger = logger
    }

    /// Where a driver's session is parked while the phone hands over their work.
    static func key(for owner: String) -> String { "session.parked.\(owner)" }

    /// Hands over soon (requests during a run coalesce into one more); never waits.
    func requestRun() {
        if current != nil {
            again = true
            return
        }
        current = Task { await self.runLoop() }
    }

    /// Hands over now and waits for it (a terminal command that exits after).
    public func runNow() async {
        if let current {
            again = true
            await current.value
            return
        }
        let task = Task { await self.runLoop() }
        current = task
        await task.value
    }

    private func runLoop() async {
        repeat {
            again = false
            await runOnce()
        } while again
        current = nil
    }

    private func runOnce() async {
        guard network.isOnline, let owners = try? database.ownersToHandOver() else { return }
        for owner in owners {
            let credentials = CredentialStore(secureStore: secureStore, transport: transport, baseURL: baseURL, clock: clock,
                                              key: Self.key(for: owner))
            // Without a parked session the work waits for that driver to sign in here again.
            guard await credentials.hasSession else { continue }
            let api = APIClient(baseURL: baseURL, transport: transport, credentials: credentials, network: network, serverClock: serverClock)
            do {
                try await sync.push(owner: owner, via: api)
                while await uploads.processDue(owner: owner, via: api) {}
                // Completions that waited for their files go now.
                try await sync.push(owner: owner, via: api)
                try await api.reportBacklog(of: owner, database)
                guard try database.unsyncedCount(owner: owner) == 0 else { continue }
                // All of it arrived: the session this phone kept for it ends.
                if let refresh = await credentials.current?.refreshToken {
                    try await api.send(.logout, body: LogoutRequest(refreshToken: refresh))
                }
                await credentials.clear()
                logger.info("handed over a previous driver's work", metadata: ["owner": "\(owner)"])
            } catch {
                logger.debug("hand-over step failed", metadata: ["owner": "\(owner)", "error": "\(error)"])
            }
        }
    }
}

extension AppDatabase {
    /// Drivers other than the signed-in one with work on this phone still to
    /// send, or whose last report to dispatch is still to be cleared.
    func ownersToHandOver() throws -> [String] {
        try reader.read { db in
            try String.fetchAll(db, sql: """
                SELECT o.user_id FROM owners o WHERE o.user_id IS NOT ? AND (
                    EXISTS (SELECT 1 FROM outbox x WHERE x.owner = o.user_id AND (x.status = 'pending' OR x.failure = 'transient'))
                    OR EXISTS (SELECT 1 FROM upload_queue u WHERE u.owner = o.user_id AND u.status IN ('pending', 'uploading'))
                    OR EXISTS (SELECT 1 FROM backlog_reports r WHERE r.owner = o.user_id))
                ORDER BY o.user_id
                """, arguments: [try Self.ownerID(db)])
        }
    }

    /// `owner`'s changes and files still to reach the server (refused ones
    /// and kept evidence are not: they will not go).
    func unsyncedCount(owner: String) throws -> Int {
        try reader.read { db in
            try Int.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM outbox WHERE owner = ?1 AND (status = 'pending' OR failure = 'transient'))
                     + (SELECT COUNT(*) FROM upload_queue WHERE owner = ?1 AND status IN ('pending', 'uploading')
                        AND (inspection_id IS NULL OR inspection_id NOT IN (SELECT inspection_id FROM evidence)))
                """, arguments: [owner]) ?? 0
        }
    }
}
