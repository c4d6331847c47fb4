import Foundation

extension Schema {
    /// Location, unit photos, search, reconciled driver work, accounts per carrier.
    static let migrations10to16: [Migration] = [
        Migration(version: 10, name: "location", sql: """
            CREATE TABLE location_fixes (
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                driver_id TEXT NOT NULL,
                recorded_at BIGINT NOT NULL,
                trip_id TEXT,
                latitude DOUBLE PRECISION NOT NULL CHECK (latitude BETWEEN -90 AND 90),
                longitude DOUBLE PRECISION NOT NULL CHECK (longitude BETWEEN -180 AND 180),
                accuracy_m DOUBLE PRECISION NOT NULL CHECK (accuracy_m >= 0),
                speed_mps DOUBLE PRECISION,
                heading DOUBLE PRECISION,
                received_at BIGINT NOT NULL,
                PRIMARY KEY (tenant_id, driver_id, recorded_at),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
            );
            CREATE INDEX location_fixes_by_trip ON location_fixes (tenant_id, trip_id, recorded_at);
            CREATE INDEX location_fixes_by_age ON location_fixes (recorded_at);

            CREATE TABLE driver_positions (
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                driver_id TEXT NOT NULL,
                recorded_at BIGINT NOT NULL,
                trip_id TEXT,
                latitude DOUBLE PRECISION NOT NULL,
                longitude DOUBLE PRECISION NOT NULL,
                accuracy_m DOUBLE PRECISION NOT NULL,
                speed_mps DOUBLE PRECISION,
                heading DOUBLE PRECISION,
                PRIMARY KEY (tenant_id, driver_id),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
            );

            ALTER TABLE orders ADD COLUMN pickup_latitude DOUBLE PRECISION CHECK (pickup_latitude BETWEEN -90 AND 90);
            ALTER TABLE orders ADD COLUMN pickup_longitude DOUBLE PRECISION CHECK (pickup_longitude BETWEEN -180 AND 180);
            ALTER TABLE orders ADD COLUMN pickup_radius_m BIGINT CHECK (pickup_radius_m BETWEEN 25 AND 5000);
            ALTER TABLE orders ADD COLUMN delivery_latitude DOUBLE PRECISION CHECK (delivery_latitude BETWEEN -90 AND 90);
            ALTER TABLE orders ADD COLUMN delivery_longitude DOUBLE PRECISION CHECK (delivery_longitude BETWEEN -180 AND 180);
            ALTER TABLE orders ADD COLUMN delivery_radius_m BIGINT CHECK (delivery_radius_m BETWEEN 25 AND 5000);
            ALTER TABLE orders ADD COLUMN arrived_at_pickup BIGINT;
            ALTER TABLE orders ADD COLUMN arrived_at_delivery BIGINT
            """),

        // Photos of a unit, uploaded as inspection photos are: an upload now
        // goes to an inspection's slot or to a unit, never both. SQLite cannot
        // drop a NOT NULL, so the uploads table is rebuilt there.
        Migration(version: 11, name: "unit photos", sql: """
            CREATE TABLE equipment_photos (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                equipment_id TEXT NOT NULL,
                content_type TEXT NOT NULL,
                size_bytes BIGINT NOT NULL CHECK (size_bytes > 0),
                sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
                storage_key TEXT NOT NULL,
                uploaded_by TEXT NOT NULL,
                uploaded_at BIGINT NOT NULL,
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, equipment_id) REFERENCES equipment (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX equipment_photos_by_unit ON equipment_photos (tenant_id, equipment_id, uploaded_at)
            """,
            sqlite: """
            CREATE TABLE uploads_v11 (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                inspection_id TEXT,
                equipment_id TEXT,
                user_id TEXT NOT NULL,
                slot TEXT NOT NULL CHECK (length(slot) BETWEEN 1 AND 32),
                kind TEXT NOT NULL CHECK (kind IN ('photo', 'video', 'signature')),
                length BIGINT NOT NULL CHECK (length > 0),
                received BIGINT NOT NULL DEFAULT 0 CHECK (received >= 0 AND received <= length),
                metadata TEXT NOT NULL DEFAULT '' CHECK (length(metadata) <= 4096),
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                completed_at BIGINT,
                storage_key TEXT,
                sha256 TEXT CHECK (sha256 IS NULL OR length(sha256) = 64),
                content_type TEXT,
                storage_handle TEXT,
                lease_token TEXT,
                lease_until BIGINT,
                UNIQUE (tenant_id, id),
                CHECK ((inspection_id IS NULL) <> (equipment_id IS NULL)),
                FOREIGN KEY (tenant_id, inspection_id) REFERENCES inspections (tenant_id, id) ON DELETE CASCADE,
                FOREIGN KEY (tenant_id, equipment_id) REFERENCES equipment (tenant_id, id) ON DELETE CASCADE,
                FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
            );
            INSERT INTO uploads_v11 (id, tenant_id, inspection_id, user_id, slot, kind, length, received, metadata, created_at,
                                     expires_at, completed_at, storage_key, sha256, content_type, storage_handle, lease_token, lease_until)
                SELECT id, tenant_id, inspection_id, user_id, slot, kind, length, received, metadata, created_at,
                       expires_at, completed_at, storage_key, sha256, content_type, storage_handle, lease_token, lease_until
                FROM uploads;
            DROP TABLE uploads;
            ALTER TABLE uploads_v11 RENAME TO uploads;
            CREATE INDEX uploads_by_expiry ON uploads (expires_at);
            CREATE INDEX uploads_open_by_user ON uploads (tenant_id, user_id, completed_at)
            """,
            postgres: """
            ALTER TABLE uploads ALTER COLUMN inspection_id DROP NOT NULL;
            ALTER TABLE uploads ADD COLUMN equipment_id TEXT;
            ALTER TABLE uploads ADD FOREIGN KEY (tenant_id, equipment_id) REFERENCES equipment (tenant_id, id) ON DELETE CASCADE;
            ALTER TABLE uploads ADD CHECK ((inspection_id IS NULL) <> (equipment_id IS NULL))
            """),

        // Which of a driver's offline changes made each feed entry: a device
        // that sees its own change in the feed knows the server applied it,
        // even when the answer to the batch never came back. (No CHECK: on
        // PostgreSQL it would scan the whole log under an exclusive lock.)
        Migration(version: 12, name: "mutation in feed", sql: """
            ALTER TABLE change_log ADD COLUMN mutation_id TEXT
            """),

        // Trip and order numbers are unique ignoring capitals (`Store.claim`):
        // the check looks numbers up folded (the number itself in the index
        // too, so SQLite does not prefer reading all of a carrier's numbers
        // from the exact one). Not unique indexes: lookalikes saved before
        // the rule stay as they are.
        Migration(version: 13, name: "folded numbers", sql: """
            CREATE INDEX trips_by_folded_number ON trips (tenant_id, lower(number), number);
            CREATE INDEX orders_by_folded_number ON orders (tenant_id, lower(number), number)
            """),

        // A driver's work reconciled when the world changed under it: every
        // driver a trip has had (an expense spent offline on a trip dispatch
        // gave away since is still that driver's to record); an expense so
        // recorded is marked; a read receipt keeps when the message was read
        // on the phone and when the server learnt it; the ETAs drivers and
        // dispatch gave, kept when a reassignment clears them; and the work
        // each phone reports still waiting on it, for dispatch to see.
        Migration(version: 14, name: "reconciled driver work", sql: """
            CREATE TABLE trip_drivers (
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                trip_id TEXT NOT NULL,
                driver_id TEXT NOT NULL,
                first_assigned_at BIGINT NOT NULL,
                released_at BIGINT,
                PRIMARY KEY (tenant_id, trip_id, driver_id),
                FOREIGN KEY (tenant_id, trip_id) REFERENCES trips (tenant_id, id) ON DELETE CASCADE,
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id) ON DELETE CASCADE
            );
            INSERT INTO trip_drivers (tenant_id, trip_id, driver_id, first_assigned_at)
                SELECT tenant_id, id, driver_id, updated_at FROM trips WHERE driver_id IS NOT NULL;
            ALTER TABLE trip_expenses ADD COLUMN after_reassignment BIGINT NOT NULL DEFAULT 0;
            ALTER TABLE driver_notifications ADD COLUMN read_received_at BIGINT;
            UPDATE driver_notifications SET read_received_at = read_at WHERE read_at IS NOT NULL;
            CREATE TABLE order_eta_events (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                order_id TEXT NOT NULL,
                driver_id TEXT,
                user_id TEXT,
                pickup_eta BIGINT,
                delivery_eta BIGINT,
                cleared BIGINT NOT NULL DEFAULT 0 CHECK (cleared IN (0, 1)),
                recorded_at BIGINT NOT NULL,
                FOREIGN KEY (tenant_id, order_id) REFERENCES orders (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX order_eta_events_by_order ON order_eta_events (tenant_id, order_id, recorded_at);
            CREATE TABLE device_backlogs (
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                driver_id TEXT NOT NULL,
                device_id TEXT NOT NULL CHECK (length(device_id) BETWEEN 1 AND 64),
                changes BIGINT NOT NULL CHECK (changes >= 0),
                files BIGINT NOT NULL CHECK (files >= 0),
                file_bytes BIGINT NOT NULL CHECK (file_bytes >= 0),
                oldest_at BIGINT,
                items TEXT NOT NULL CHECK (length(items) <= 262144),
                reported_at BIGINT NOT NULL,
                PRIMARY KEY (tenant_id, driver_id, device_id),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX device_backlogs_by_age ON device_backlogs (reported_at)
            """),

        // The board's search through a text index, kept in step with the
        // orders in the same transaction: SQLite's FTS5 with trigrams (fed by
        // triggers, reading its text through a view so it can be rebuilt),
        // PostgreSQL's pg_trgm over a generated column. A word matches as a
        // substring of one field (`OrderSearch.text` joins them with line
        // breaks, which no searched word contains).
        Migration(version: 15, name: "order search", sql: "", sqlite: OrderSearch.sqliteIndex(OrderSearch.firstColumns),
                  postgres: "CREATE EXTENSION IF NOT EXISTS pg_trgm;\n" + OrderSearch.postgresIndex(OrderSearch.firstColumns)),

        // Accounts per carrier: an email is unique within a carrier, not
        // across carriers, so a person can drive for a second carrier (and
        // adding a driver reveals nothing about other carriers). SQLite
        // cannot drop a UNIQUE constraint: the table is rebuilt, with the
        // foreign keys that point at it left alone (`rebuildsReferencedTable`).
        Migration(version: 16, name: "accounts per carrier", sql: "", sqlite: """
            CREATE TABLE users_per_carrier (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                email TEXT NOT NULL CHECK (email = lower(email) AND email LIKE '%_@_%' AND length(email) <= 254),
                role TEXT NOT NULL CHECK (role IN ('dispatcher', 'driver')),
                pin_hash TEXT,
                pin_failed_attempts BIGINT NOT NULL DEFAULT 0 CHECK (pin_failed_attempts BETWEEN 0 AND 5),
                created_at BIGINT NOT NULL,
                UNIQUE (tenant_id, id),
                UNIQUE (tenant_id, email)
            );
            INSERT INTO users_per_carrier (id, tenant_id, email, role, pin_hash, pin_failed_attempts, created_at)
                SELECT id, tenant_id, email, role, pin_hash, pin_failed_attempts, created_at FROM users;
            DROP TABLE users;
            ALTER TABLE users_per_carrier RENAME TO users;
            CREATE INDEX users_by_email ON users (email)
            """, postgres: """
            ALTER TABLE users DROP CONSTRAINT users_email_key;
            ALTER TABLE users ADD CONSTRAINT users_tenant_id_email_key UNIQUE (tenant_id, email);
            CREATE INDEX users_by_email ON users (email)
            """, rebuildsReferencedTable: true),
    ]
}
