import Foundation

extension Schema {
    /// Sync, push, inspections, the console, the fleet.
    static let migrations2to9: [Migration] = [
        Migration(version: 2, name: "sync", sql: """
            CREATE TABLE idempotency_keys (
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                user_id TEXT NOT NULL,
                key TEXT NOT NULL,
                request_hash TEXT NOT NULL,
                status BIGINT NOT NULL,
                body TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (tenant_id, user_id, key)
            );
            CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

            ALTER TABLE orders ADD COLUMN status_version BIGINT NOT NULL DEFAULT 1;
            ALTER TABLE orders ADD COLUMN pickup_eta_version BIGINT NOT NULL DEFAULT 1;
            ALTER TABLE orders ADD COLUMN delivery_eta_version BIGINT NOT NULL DEFAULT 1;

            CREATE INDEX change_log_for_dispatch ON change_log (tenant_id, dispatch_visible, seq);
            CREATE INDEX change_log_by_age ON change_log (committed_at);
            """),

        Migration(version: 3, name: "push", sql: """
            CREATE TABLE push_queue (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                notification_id TEXT NOT NULL,
                device_token TEXT NOT NULL,
                payload TEXT NOT NULL,
                priority BIGINT NOT NULL CHECK (priority IN (5, 10)),
                collapse_id TEXT,
                expires_at BIGINT NOT NULL,
                status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'failed')),
                attempts BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                next_attempt_at BIGINT NOT NULL,
                last_error TEXT,
                created_at BIGINT NOT NULL,
                UNIQUE (notification_id, device_token)
            );
            CREATE INDEX push_queue_due ON push_queue (status, next_attempt_at);
            CREATE INDEX push_queue_by_token ON push_queue (device_token);
            """),

        Migration(version: 4, name: "inspections", sql: """
            CREATE TABLE inspections (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                order_id TEXT NOT NULL,
                driver_id TEXT,
                kind TEXT NOT NULL CHECK (kind IN ('pickup', 'delivery')),
                odometer BIGINT CHECK (odometer IS NULL OR odometer BETWEEN 0 AND 10000000),
                notes TEXT NOT NULL DEFAULT '' CHECK (length(notes) <= 4000),
                customer_unavailable BIGINT NOT NULL DEFAULT 0 CHECK (customer_unavailable IN (0, 1)),
                completed_at BIGINT,
                version BIGINT NOT NULL DEFAULT 1 CHECK (version >= 1),
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                UNIQUE (tenant_id, order_id, kind),
                FOREIGN KEY (tenant_id, order_id) REFERENCES orders (tenant_id, id),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
            );

            CREATE TABLE inspection_media (
                tenant_id TEXT NOT NULL,
                inspection_id TEXT NOT NULL,
                slot TEXT NOT NULL CHECK (length(slot) BETWEEN 1 AND 32),
                kind TEXT NOT NULL CHECK (kind IN ('photo', 'video', 'signature')),
                content_type TEXT NOT NULL,
                size_bytes BIGINT NOT NULL CHECK (size_bytes > 0),
                sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
                storage_key TEXT NOT NULL,
                uploaded_at BIGINT NOT NULL,
                PRIMARY KEY (tenant_id, inspection_id, slot),
                FOREIGN KEY (tenant_id, inspection_id) REFERENCES inspections (tenant_id, id) ON DELETE CASCADE
            );

            CREATE TABLE uploads (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                inspection_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                slot TEXT NOT NULL CHECK (length(slot) BETWEEN 1 AND 32),
                kind TEXT NOT NULL CHECK (kind IN ('photo', 'video', 'signature')),
                length BIGINT NOT NULL CHECK (length > 0),
                received BIGINT NOT NULL DEFAULT 0 CHECK (received >= 0 AND received <= length),
                metadata TEXT NOT NULL DEFAULT '' CHECK (length(metadata) <= 4096),
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                completed_at BIGINT,
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, inspection_id) REFERENCES inspections (tenant_id, id) ON DELETE CASCADE,
                FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX uploads_by_expiry ON uploads (expires_at);
            """,
            // The change log learns the new entity. SQLite cannot change a
            // CHECK constraint, so the table is rebuilt there.
            sqlite: ChangeLogEntities.sqlite("v4", ["driver", "trip", "order", "expense", "notification", "inspection"]),
            postgres: ChangeLogEntities.postgres(["driver", "trip", "order", "expense", "notification", "inspection"])),

        Migration(version: 5, name: "hardening", sql: """
            ALTER TABLE uploads ADD COLUMN storage_key TEXT;
            ALTER TABLE uploads ADD COLUMN sha256 TEXT CHECK (sha256 IS NULL OR length(sha256) = 64);
            ALTER TABLE uploads ADD COLUMN content_type TEXT;
            CREATE INDEX uploads_open_by_user ON uploads (tenant_id, user_id, completed_at);
            CREATE INDEX inspection_media_by_tenant ON inspection_media (tenant_id);
            ALTER TABLE device_tokens ADD COLUMN session_id TEXT;
            ALTER TABLE device_tokens ADD COLUMN installation_hash TEXT;
            CREATE INDEX device_tokens_by_session ON device_tokens (session_id);
            ALTER TABLE refresh_tokens ADD COLUMN grace_uses BIGINT NOT NULL DEFAULT 0
            """),

        // The dispatch console: a browser session (cookie) belongs to a
        // sign-in session, so revoking that ends both; the board's indexes.
        Migration(version: 6, name: "console", sql: """
            CREATE TABLE console_sessions (
                token_hash TEXT PRIMARY KEY CHECK (length(token_hash) = 64),
                session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                user_id TEXT NOT NULL,
                csrf_token TEXT NOT NULL CHECK (length(csrf_token) >= 32),
                created_at BIGINT NOT NULL,
                last_used_at BIGINT NOT NULL CHECK (last_used_at >= created_at),
                FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX console_sessions_by_session ON console_sessions (session_id);
            CREATE INDEX orders_board ON orders (tenant_id, status, pickup_window_start, id);
            CREATE INDEX driver_notifications_sent ON driver_notifications (tenant_id, created_at)
            """),

        // Who moved an order and when; drivers who left (deactivated, their
        // history kept) and when each was last seen; the version at which an
        // order's dispatch-edited details last changed (for edit conflicts).
        Migration(version: 7, name: "people", sql: """
            CREATE TABLE order_events (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                order_id TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('new', 'assigned', 'picked_up', 'delivered', 'cancelled')),
                user_id TEXT,
                occurred_at BIGINT NOT NULL,
                recorded_at BIGINT NOT NULL,
                FOREIGN KEY (tenant_id, order_id) REFERENCES orders (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX order_events_by_order ON order_events (tenant_id, order_id, recorded_at);
            ALTER TABLE drivers ADD COLUMN deactivated_at BIGINT;
            ALTER TABLE drivers ADD COLUMN last_seen_at BIGINT;
            ALTER TABLE orders ADD COLUMN details_version BIGINT NOT NULL DEFAULT 1;
            UPDATE orders SET details_version = version
            """),

        // Uploads resume on any instance: the storage's handle for an upload
        // in progress (an S3 multipart upload id), and a lease that lets one
        // request of any instance write to an upload at a time.
        Migration(version: 8, name: "shared uploads", sql: """
            ALTER TABLE uploads ADD COLUMN storage_handle TEXT;
            ALTER TABLE uploads ADD COLUMN lease_token TEXT;
            ALTER TABLE uploads ADD COLUMN lease_until BIGINT
            """),

        // The carrier's fleet: trucks and trailers (one of each per driver
        // at a time), their papers, odometer readings that only go up, and
        // fuel bought for a truck on a fuel expense.
        Migration(version: 9, name: "fleet", sql: """
            CREATE TABLE equipment (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('truck', 'trailer')),
                unit_number TEXT NOT NULL CHECK (length(unit_number) BETWEEN 1 AND 32),
                unit_key TEXT NOT NULL,
                make TEXT NOT NULL DEFAULT '' CHECK (length(make) <= 100),
                model TEXT NOT NULL DEFAULT '' CHECK (length(model) <= 100),
                year BIGINT CHECK (year BETWEEN 1900 AND 2100),
                vin TEXT NOT NULL DEFAULT '' CHECK (length(vin) <= 17),
                plate TEXT NOT NULL DEFAULT '' CHECK (length(plate) <= 16),
                plate_state TEXT NOT NULL DEFAULT '' CHECK (length(plate_state) <= 2),
                trailer_type TEXT CHECK (trailer_type IN ('open', 'enclosed')),
                capacity_cars BIGINT CHECK (capacity_cars BETWEEN 1 AND 20),
                gvwr_pounds BIGINT CHECK (gvwr_pounds BETWEEN 1 AND 200000),
                fuel_type TEXT CHECK (fuel_type IN ('diesel', 'gasoline', 'electric', 'other')),
                notes TEXT NOT NULL DEFAULT '' CHECK (length(notes) <= 2000),
                status TEXT NOT NULL CHECK (status IN ('active', 'in_shop', 'out_of_service', 'retired')),
                driver_id TEXT,
                odometer_miles BIGINT CHECK (odometer_miles BETWEEN 0 AND 9999999),
                odometer_at BIGINT,
                version BIGINT NOT NULL DEFAULT 1 CHECK (version >= 1),
                details_version BIGINT NOT NULL DEFAULT 1,
                status_version BIGINT NOT NULL DEFAULT 1,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                UNIQUE (tenant_id, unit_key),
                CHECK (driver_id IS NULL OR status <> 'retired'),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
            );
            CREATE UNIQUE INDEX equipment_one_per_driver ON equipment (tenant_id, driver_id, kind) WHERE driver_id IS NOT NULL;

            CREATE TABLE equipment_documents (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                equipment_id TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('registration', 'insurance', 'annual_inspection', 'ifta_decal', 'permit', 'other')),
                number TEXT NOT NULL DEFAULT '' CHECK (length(number) <= 64),
                expires_on TEXT CHECK (expires_on LIKE '____-__-__'),
                notes TEXT NOT NULL DEFAULT '' CHECK (length(notes) <= 2000),
                expiry_notice_at BIGINT,
                created_at BIGINT NOT NULL,
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, equipment_id) REFERENCES equipment (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX equipment_documents_by_unit ON equipment_documents (tenant_id, equipment_id);
            CREATE INDEX equipment_documents_expiring ON equipment_documents (expiry_notice_at, expires_on);

            CREATE TABLE odometer_readings (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                equipment_id TEXT NOT NULL,
                miles BIGINT NOT NULL CHECK (miles BETWEEN 0 AND 9999999),
                recorded_at BIGINT NOT NULL,
                driver_id TEXT,
                created_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, equipment_id) REFERENCES equipment (tenant_id, id) ON DELETE CASCADE,
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
            );
            CREATE INDEX odometer_readings_by_unit ON odometer_readings (tenant_id, equipment_id, recorded_at);

            ALTER TABLE trip_expenses ADD COLUMN fuel_equipment_id TEXT;
            ALTER TABLE trip_expenses ADD COLUMN fuel_quantity_milli BIGINT CHECK (fuel_quantity_milli BETWEEN 1 AND 2000000);
            ALTER TABLE trip_expenses ADD COLUMN fuel_unit TEXT CHECK (fuel_unit IN ('gal', 'l'));
            ALTER TABLE trip_expenses ADD COLUMN fuel_odometer_miles BIGINT CHECK (fuel_odometer_miles BETWEEN 0 AND 9999999);
            CREATE INDEX trip_expenses_by_fuel_unit ON trip_expenses (tenant_id, fuel_equipment_id, expense_date)
            """,
            // The change log learns the new entity (see version 4).
            sqlite: ChangeLogEntities.sqlite("v9", ["driver", "trip", "order", "expense", "notification", "inspection", "equipment"]),
            postgres: ChangeLogEntities.postgres(["driver", "trip", "order", "expense", "notification", "inspection", "equipment"])),
        // Where drivers are: breadcrumbs (one per driver and instant, so an
        // upload sent twice stores each fix once), each driver's last
        // position, and the stops' coordinates, fences and arrivals.
    ]
}
