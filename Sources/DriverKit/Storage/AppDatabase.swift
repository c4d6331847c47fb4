import Foundation
import GRDB
import VroomXModels

/// The driver app's local database: the cache of what the server sent, the
/// signed-in account, the sync cursor and the outbox of offline mutations.
/// One type owns the writer and its migrations; each write method is named
/// for its intent and is one transaction, so "change the cache and queue
/// the mutation" can never half-happen.
public struct AppDatabase: Sendable {
    let writer: any DatabaseWriter

    /// Reads go through a read-only view of the same database.
    public var reader: any DatabaseReader { writer }

    public init(_ writer: any DatabaseWriter) throws {
        self.writer = writer
        try Self.migrator.migrate(writer)
    }

    /// The database file in `directory` (created if needed), in WAL mode.
    public static func open(directory: URL) throws -> AppDatabase {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        // Another process may be writing (a second terminal command, an app
        // extension): wait for its transaction rather than fail the driver's change.
        configuration.busyMode = .timeout(15)
        // WAL with synchronous=NORMAL: a commit is written to the log without an fsync (checkpoints still
        // sync). A change the driver made survives the app being killed or crashing; only a power cut or
        // kernel panic within moments of it could roll it back, never corrupt the file. On Apple platforms
        // a plain fsync does not flush the drive's cache either (that takes F_FULLFSYNC), so FULL's extra
        // sync per commit bought little there, at half the speed of every tap that queues a change.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        let pool = try DatabasePool(path: directory.appendingPathComponent("driver.sqlite").path, configuration: configuration)
        return try AppDatabase(pool)
    }

    /// An in-memory database (previews, benchmarks).
    public static func inMemory() throws -> AppDatabase {
        try AppDatabase(DatabaseQueue())
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE device (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    onboarded INTEGER NOT NULL DEFAULT 0,
                    used_before INTEGER NOT NULL DEFAULT 0,
                    last_email TEXT,
                    push_token TEXT
                );
                INSERT INTO device (id) VALUES (1);

                CREATE TABLE account (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    user_id TEXT NOT NULL,
                    driver_id TEXT,
                    tenant_id TEXT NOT NULL,
                    email TEXT NOT NULL,
                    driver_doc TEXT,
                    pin_set INTEGER NOT NULL DEFAULT 0,
                    server_pin_pending INTEGER NOT NULL DEFAULT 0,
                    registered_push_token TEXT,
                    signed_in_at REAL NOT NULL
                );

                CREATE TABLE sync_state (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    cursor INTEGER NOT NULL DEFAULT 0,
                    snapshot_after TEXT,
                    last_synced_at REAL
                );
                INSERT INTO sync_state (id) VALUES (1);

                CREATE TABLE trips (
                    id TEXT PRIMARY KEY,
                    start_date TEXT,
                    created_at REAL NOT NULL,
                    doc TEXT NOT NULL
                );
                CREATE INDEX trips_by_start ON trips (start_date DESC, created_at DESC);

                CREATE TABLE orders (
                    id TEXT PRIMARY KEY,
                    trip_id TEXT,
                    created_at REAL NOT NULL,
                    doc TEXT NOT NULL
                );
                CREATE INDEX orders_by_trip ON orders (trip_id);
                CREATE INDEX orders_by_created ON orders (created_at DESC);

                CREATE TABLE expenses (
                    id TEXT PRIMARY KEY,
                    trip_id TEXT NOT NULL,
                    expense_date TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    doc TEXT NOT NULL
                );
                CREATE INDEX expenses_by_trip ON expenses (trip_id);

                CREATE TABLE notifications (
                    id TEXT PRIMARY KEY,
                    created_at REAL NOT NULL,
                    unread INTEGER NOT NULL,
                    doc TEXT NOT NULL
                );
                CREATE INDEX notifications_by_created ON notifications (created_at DESC);

                CREATE TABLE outbox (
                    seq INTEGER PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL,
                    entity_id TEXT NOT NULL,
                    mutation TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'failed')),
                    failure TEXT CHECK (failure IN ('transient', 'rejected')),
                    error_code TEXT,
                    error_message TEXT,
                    next_attempt_at REAL NOT NULL DEFAULT 0
                );
                """)
        }
        migrator.registerMigration("v2-inspections") { db in
            try db.execute(sql: """
                CREATE TABLE inspections (
                    id TEXT PRIMARY KEY,
                    order_id TEXT NOT NULL,
                    doc TEXT NOT NULL
                );
                CREATE INDEX inspections_by_order ON inspections (order_id);

                CREATE TABLE upload_queue (
                    id TEXT PRIMARY KEY,
                    inspection_id TEXT NOT NULL,
                    slot TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('photo', 'video', 'signature')),
                    path TEXT NOT NULL,
                    size INTEGER NOT NULL CHECK (size > 0),
                    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'uploading', 'failed', 'completed')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    sent_bytes INTEGER NOT NULL DEFAULT 0,
                    upload_url TEXT,
                    last_error TEXT,
                    next_retry_at REAL NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL,
                    UNIQUE (inspection_id, slot)
                );
                """)
        }
        migrator.registerMigration("v3-owners") { db in
            // Whose work each queued change and file is, and whose rows the cache holds: another
            // driver signing in on this phone never sees or sends them; they wait for their owner.
            try db.execute(sql: """
                ALTER TABLE device ADD COLUMN cache_owner TEXT;
                ALTER TABLE outbox ADD COLUMN owner TEXT;
                ALTER TABLE outbox ADD COLUMN sending_since REAL;
                ALTER TABLE upload_queue ADD COLUMN owner TEXT;
                CREATE TABLE owners (user_id TEXT PRIMARY KEY, email TEXT NOT NULL);
                UPDATE device SET cache_owner = (SELECT user_id FROM account);
                UPDATE outbox SET owner = (SELECT user_id FROM account);
                UPDATE upload_queue SET owner = (SELECT user_id FROM account);
                INSERT INTO owners (user_id, email) SELECT user_id, email FROM account;
                CREATE INDEX outbox_by_owner ON outbox (owner, status, next_attempt_at);
                -- Inspections the server will never take (refused, or the order went to another driver)
                -- whose files were still on the phone: kept as evidence until the driver exports or
                -- discards them.
                CREATE TABLE evidence (
                    inspection_id TEXT PRIMARY KEY,
                    order_id TEXT NOT NULL,
                    owner TEXT,
                    doc TEXT NOT NULL,
                    reason TEXT NOT NULL,
                    held_at REAL NOT NULL
                );
                """)
        }
        migrator.registerMigration("v4-clock") { db in
            // The server's clock minus the device's, as last learnt, and the device clock's reading of
            // the boot moment then: a new process (each terminal command) starts corrected, unless the
            // device clock has been set since (the boot moment it reads has moved).
            try db.execute(sql: """
                ALTER TABLE device ADD COLUMN clock_skew REAL;
                ALTER TABLE device ADD COLUMN clock_boot REAL;
                """)
        }
        migrator.registerMigration("v5-fleet") { db in
            // The trucks and trailers assigned to the driver.
            try db.execute(sql: "CREATE TABLE equipment (id TEXT PRIMARY KEY, unit_number TEXT NOT NULL, doc TEXT NOT NULL)")
        }
        migrator.registerMigration("v6-location") { db in
            // Whether the driver shares their position while a trip is under way (they can pause it).
            try db.execute(sql: "ALTER TABLE device ADD COLUMN location_sharing INTEGER NOT NULL DEFAULT 1")
        }
        migrator.registerMigration("v7-unit-photos") { db in
            // A queued file is for an inspection's slot or a photo of one of the driver's units
            // (SQLite cannot drop a NOT NULL, so the table is rebuilt).
            try db.execute(sql: """
                CREATE TABLE upload_queue_v7 (
                    id TEXT PRIMARY KEY,
                    inspection_id TEXT,
                    equipment_id TEXT,
                    slot TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('photo', 'video', 'signature')),
                    path TEXT NOT NULL,
                    size INTEGER NOT NULL CHECK (size > 0),
                    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'uploading', 'failed', 'completed')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    sent_bytes INTEGER NOT NULL DEFAULT 0,
                    upload_url TEXT,
                    last_error TEXT,
                    next_retry_at REAL NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL,
                    owner TEXT,
                    UNIQUE (inspection_id, slot),
                    CHECK ((inspection_id IS NULL) <> (equipment_id IS NULL))
                );
                INSERT INTO upload_queue_v7 (id, inspection_id, slot, kind, path, size, status, attempts, sent_bytes, upload_url,
                                             last_error, next_retry_at, created_at, owner)
                    SELECT id, inspection_id, slot, kind, path, size, status, attempts, sent_bytes, upload_url,
                           last_error, next_retry_at, created_at, owner FROM upload_queue;
                DROP TABLE upload_queue;
                ALTER TABLE upload_queue_v7 RENAME TO upload_queue;
                """)
        }
        migrator.registerMigration("v8-onboarding") { db in
            // Where a driver left the first-run screens, a code asked for (to resume at the code
            // screen after the app was closed), and whether they answered the Face ID offer.
            try db.execute(sql: """
                ALTER TABLE device ADD COLUMN onboarding_step TEXT;
                ALTER TABLE device ADD COLUMN pending_code_email TEXT;
                ALTER TABLE device ADD COLUMN pending_code_at REAL;
                ALTER TABLE device ADD COLUMN biometrics_offered INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.registerMigration("v9-outbox-maybe-applied") { db in
            // A send of the change got no answer (the network dropped it, or the app was killed):
            // the server may have applied it, so deleting its expense can no longer cancel it.
            try db.execute(sql: "ALTER TABLE outbox ADD COLUMN maybe_applied INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v10-outbox-indexes") { db in
            // Every queued change wrote a page of the index by owner and status, a sixth of its commit, and
            // nearly every row matches it: the outbox is read in `seq` order without it. What stays indexed
            // is what few rows match, so a queued expense or status writes no index page for it: failed
            // changes (followed after every change to the outbox), and inspection saves (which a file
            // waits for, asked for each file sent).
            try db.execute(sql: """
                DROP INDEX IF EXISTS outbox_by_owner;
                CREATE INDEX outbox_failed ON outbox (owner, seq) WHERE status = 'failed';
                CREATE INDEX outbox_inspection_saves ON outbox (entity_id) WHERE kind = 'save_inspection';
                """)
        }
        migrator.registerMigration("v11-reconciled") { db in
            // What each queued change is, in the driver's words, kept from when it was made: a refusal
            // that comes back after dispatch took the order off the phone can still name it.
            // What the server did with each batch of positions: how many reached dispatch, how many it left out.
            // This phone's id, and what it last told the server still waits on it, per driver.
            // How each change was stamped: by a clock the server confirmed, or else when by seconds since boot.
            // The order each change is about, kept: its inspection's row may leave the phone before it is sent.
            try db.execute(sql: """
                ALTER TABLE outbox ADD COLUMN about TEXT;
                ALTER TABLE outbox ADD COLUMN subject TEXT;
                ALTER TABLE device ADD COLUMN device_id TEXT;
                ALTER TABLE evidence ADD COLUMN subject TEXT;
                ALTER TABLE outbox ADD COLUMN order_id TEXT;
                ALTER TABLE outbox ADD COLUMN stamp_verified INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE outbox ADD COLUMN stamp_uptime REAL;
                ALTER TABLE outbox ADD COLUMN stamp_boot TEXT;
                CREATE TABLE backlog_reports (owner TEXT PRIMARY KEY, report TEXT NOT NULL);
                CREATE TABLE position_reports (
                    mutation_id TEXT PRIMARY KEY, sent INTEGER NOT NULL, stored INTEGER NOT NULL, duplicates INTEGER NOT NULL,
                    dropped INTEGER NOT NULL, future INTEGER NOT NULL, settled_at REAL NOT NULL);
                """)
        }
        migrator.registerMigration("v12-receipts") { db in
            // A queued file may also be a receipt of an expense or the photo of a payment the driver
            // collected (`paper_id`, the kind its slot names): exactly one target (the table is rebuilt for the CHECK).
            try db.execute(sql: """
                CREATE TABLE upload_queue_v12 (
                    id TEXT PRIMARY KEY,
                    inspection_id TEXT,
                    equipment_id TEXT,
                    paper_id TEXT,
                    slot TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('photo', 'video', 'signature')),
                    path TEXT NOT NULL,
                    size INTEGER NOT NULL CHECK (size > 0),
                    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'uploading', 'failed', 'completed')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    sent_bytes INTEGER NOT NULL DEFAULT 0,
                    upload_url TEXT,
                    last_error TEXT,
                    next_retry_at REAL NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL,
                    owner TEXT,
                    UNIQUE (inspection_id, slot),
                    CHECK ((inspection_id IS NOT NULL) + (equipment_id IS NOT NULL) + (paper_id IS NOT NULL) = 1)
                );
                INSERT INTO upload_queue_v12 (id, inspection_id, equipment_id, slot, kind, path, size, status, attempts, sent_bytes, upload_url,
                                              last_error, next_retry_at, created_at, owner)
                    SELECT id, inspection_id, equipment_id, slot, kind, path, size, status, attempts, sent_bytes, upload_url,
                           last_error, next_retry_at, created_at, owner FROM upload_queue;
                DROP TABLE upload_queue;
                ALTER TABLE upload_queue_v12 RENAME TO upload_queue;
                """)
        }
        migrator.registerMigration("v13-collections") { db in
            // Money the driver collected that reached dispatch (the server keeps it on the invoice, which the
            // phone does not hold): the order's screen lists it with what still waits in the outbox.
            try db.execute(sql: """
                CREATE TABLE collections (
                    id TEXT PRIMARY KEY,
                    order_id TEXT NOT NULL,
                    amount_cents INTEGER NOT NULL,
                    method TEXT NOT NULL,
                    reference TEXT NOT NULL DEFAULT '',
                    collected_on TEXT,
                    recorded_at REAL NOT NULL,
                    owner TEXT
                );
                CREATE INDEX collections_by_order ON collections (order_id);
                """)
        }
        migrator.registerMigration("v14-earnings") { db in
            // The driver's settlements as the server last sent them (per signed-in driver), to read with no signal.
            try db.execute(sql: "CREATE TABLE earnings (owner TEXT PRIMARY KEY, doc TEXT NOT NULL, fetched_at REAL NOT NULL)")
            // Statements opened once, to open again with no signal.
            try db.execute(sql: "CREATE TABLE statements (settlement_id TEXT PRIMARY KEY, owner TEXT, pdf BLOB NOT NULL)")
        }
        migrator.registerMigration("v15-messages") { db in
            // What the driver wrote to dispatch, as sent (pending) or as the server keeps it.
            try db.execute(sql: "CREATE TABLE messages (id TEXT PRIMARY KEY, sent_at REAL NOT NULL, doc TEXT NOT NULL)")
        }
        migrator.registerMigration("v16-capture") { db in
            // When and where an inspection's photo was taken (MediaCapture as JSON), sent with its upload.
            try db.execute(sql: "ALTER TABLE upload_queue ADD COLUMN captured TEXT")
        }
        migrator.registerMigration("v17-numbers") { db in
            // Every queued change is described by its trip's or order's number: read from a column,
            // not parsed out of the cached document each time.
            try db.execute(sql: """
                ALTER TABLE trips ADD COLUMN number TEXT;
                UPDATE trips SET number = json_extract(doc, '$.number');
                ALTER TABLE orders ADD COLUMN number TEXT;
                UPDATE orders SET number = json_extract(doc, '$.number');
                """)
        }
        return migrator
    }
}

/// JSON for cached rows: the shared wire format.
enum CacheJSON {
    static let encoder = WireJSON.encoder()
    static let decoder = WireJSON.decoder()

    static func encode<T: Encodable>(_ value: T) throws -> String {
        try WireJSON.string(value)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try decoder.decode(T.self, from: Data(text.utf8))
    }
}
