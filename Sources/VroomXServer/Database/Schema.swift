import Foundation

/// The schema, as numbered migrations. The SQL is shared by both backends:
/// ids and calendar dates are TEXT, instants are BIGINT epoch milliseconds,
/// money is BIGINT cents. Rules the data must obey are constraints, so no
/// code path can write a row that breaks them.
///
/// Rows the API serves also keep their wire JSON in `doc`, written in the
/// same statement as their columns. Reads answer with those bytes instead of
/// decoding columns and encoding JSON again (the dominant cost of a list
/// request); the columns remain the truth for queries and constraints, and
/// a test checks that both always agree.
///
/// Every tenant-owned table has `UNIQUE (tenant_id, id)`, and references
/// between tenant-owned rows are composite `(tenant_id, x_id)` foreign keys:
/// a row can never point at another carrier's row, whatever the code does.
enum Schema {
    static let migrations: [Migration] = [
        Migration(version: 1, name: "core", sql: """
            CREATE TABLE tenants (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
                change_seq BIGINT NOT NULL DEFAULT 0 CHECK (change_seq >= 0),
                change_floor BIGINT NOT NULL DEFAULT 0 CHECK (change_floor >= 0 AND change_floor <= change_seq),
                created_at BIGINT NOT NULL
            );

            CREATE TABLE users (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                email TEXT NOT NULL UNIQUE CHECK (email = lower(email) AND email LIKE '%_@_%' AND length(email) <= 254),
                role TEXT NOT NULL CHECK (role IN ('dispatcher', 'driver')),
                pin_hash TEXT,
                pin_failed_attempts BIGINT NOT NULL DEFAULT 0 CHECK (pin_failed_attempts BETWEEN 0 AND 5),
                created_at BIGINT NOT NULL,
                UNIQUE (tenant_id, id)
            );

            CREATE TABLE drivers (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                user_id TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
                phone TEXT NOT NULL DEFAULT '' CHECK (length(phone) <= 40),
                pay_type TEXT NOT NULL CHECK (pay_type IN ('percentage', 'per_mile', 'per_trip')),
                pay_rate BIGINT NOT NULL CHECK (pay_rate >= 0),
                version BIGINT NOT NULL DEFAULT 1 CHECK (version >= 1),
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
            );

            CREATE TABLE trips (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                number TEXT NOT NULL CHECK (length(number) BETWEEN 1 AND 64),
                driver_id TEXT,
                status TEXT NOT NULL CHECK (status IN ('planned', 'in_progress', 'completed', 'cancelled')),
                start_date TEXT CHECK (start_date LIKE '____-__-__'),
                end_date TEXT CHECK (end_date LIKE '____-__-__'),
                origin TEXT NOT NULL DEFAULT '' CHECK (length(origin) <= 500),
                destination TEXT NOT NULL DEFAULT '' CHECK (length(destination) <= 500),
                revenue_cents BIGINT NOT NULL CHECK (revenue_cents >= 0),
                driver_pay_cents BIGINT NOT NULL CHECK (driver_pay_cents >= 0),
                miles BIGINT NOT NULL CHECK (miles >= 0),
                version BIGINT NOT NULL DEFAULT 1 CHECK (version >= 1),
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                UNIQUE (tenant_id, number),
                CHECK (end_date IS NULL OR start_date IS NULL OR end_date >= start_date),
                CHECK (status = 'planned' OR status = 'cancelled' OR driver_id IS NOT NULL),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
            );

            CREATE TABLE orders (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                number TEXT NOT NULL CHECK (length(number) BETWEEN 1 AND 64),
                trip_id TEXT,
                driver_id TEXT,
                vehicle_year BIGINT CHECK (vehicle_year BETWEEN 1900 AND 2100),
                vehicle_make TEXT NOT NULL DEFAULT '' CHECK (length(vehicle_make) <= 100),
                vehicle_model TEXT NOT NULL DEFAULT '' CHECK (length(vehicle_model) <= 100),
                vehicle_vin TEXT NOT NULL DEFAULT '' CHECK (length(vehicle_vin) <= 17),
                vehicle_color TEXT NOT NULL DEFAULT '' CHECK (length(vehicle_color) <= 50),
                pickup_name TEXT NOT NULL DEFAULT '',
                pickup_address TEXT NOT NULL CHECK (length(pickup_address) BETWEEN 1 AND 500),
                pickup_contact_name TEXT NOT NULL DEFAULT '',
                pickup_contact_phone TEXT NOT NULL DEFAULT '',
                pickup_window_start TEXT CHECK (pickup_window_start LIKE '____-__-__'),
                pickup_window_end TEXT CHECK (pickup_window_end LIKE '____-__-__'),
                delivery_name TEXT NOT NULL DEFAULT '',
                delivery_address TEXT NOT NULL CHECK (length(delivery_address) BETWEEN 1 AND 500),
                delivery_contact_name TEXT NOT NULL DEFAULT '',
                delivery_contact_phone TEXT NOT NULL DEFAULT '',
                delivery_window_start TEXT CHECK (delivery_window_start LIKE '____-__-__'),
                delivery_window_end TEXT CHECK (delivery_window_end LIKE '____-__-__'),
                status TEXT NOT NULL CHECK (status IN ('new', 'assigned', 'picked_up', 'delivered', 'cancelled')),
                actual_pickup_at BIGINT,
                actual_delivery_at BIGINT,
                pickup_eta BIGINT,
                delivery_eta BIGINT,
                revenue_cents BIGINT NOT NULL CHECK (revenue_cents >= 0),
                payment_terms TEXT NOT NULL DEFAULT '' CHECK (length(payment_terms) <= 100),
                version BIGINT NOT NULL DEFAULT 1 CHECK (version >= 1),
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                UNIQUE (tenant_id, number),
                CHECK (status NOT IN ('assigned', 'picked_up', 'delivered') OR driver_id IS NOT NULL),
                CHECK (status NOT IN ('picked_up', 'delivered') OR actual_pickup_at IS NOT NULL),
                CHECK (status <> 'delivered' OR actual_delivery_at IS NOT NULL),
                CHECK (pickup_window_end IS NULL OR pickup_window_start IS NULL OR pickup_window_end >= pickup_window_start),
                CHECK (delivery_window_end IS NULL OR delivery_window_start IS NULL OR delivery_window_end >= delivery_window_start),
                FOREIGN KEY (tenant_id, trip_id) REFERENCES trips (tenant_id, id),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
            );
            CREATE INDEX orders_by_driver ON orders (tenant_id, driver_id, created_at DESC, id);
            CREATE INDEX orders_by_trip ON orders (tenant_id, trip_id);

            CREATE TABLE trip_expenses (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                trip_id TEXT NOT NULL,
                driver_id TEXT,
                category TEXT NOT NULL CHECK (category IN ('fuel', 'tolls', 'repairs', 'lodging', 'other')),
                amount_cents BIGINT NOT NULL CHECK (amount_cents > 0 AND amount_cents <= 10000000),
                expense_date TEXT NOT NULL CHECK (expense_date LIKE '____-__-__'),
                notes TEXT NOT NULL DEFAULT '' CHECK (length(notes) <= 2000),
                created_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, trip_id) REFERENCES trips (tenant_id, id),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
            );
            CREATE INDEX trip_expenses_by_trip ON trip_expenses (tenant_id, trip_id);

            CREATE TABLE driver_notifications (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                driver_id TEXT NOT NULL,
                type TEXT NOT NULL CHECK (type IN ('trip_assignment', 'status_change', 'dispatch_message', 'urgent')),
                title TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
                body TEXT NOT NULL CHECK (length(body) <= 4000),
                trip_id TEXT,
                order_id TEXT,
                read_at BIGINT,
                created_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX driver_notifications_by_driver ON driver_notifications (tenant_id, driver_id, created_at DESC, id);

            CREATE TABLE device_tokens (
                token TEXT PRIMARY KEY CHECK (length(token) BETWEEN 8 AND 256),
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                user_id TEXT NOT NULL,
                platform TEXT NOT NULL CHECK (platform IN ('ios', 'android')),
                created_at BIGINT NOT NULL,
                last_active_at BIGINT NOT NULL,
                FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX device_tokens_by_user ON device_tokens (tenant_id, user_id);

            CREATE TABLE otp_codes (
                email TEXT PRIMARY KEY,
                code_hash TEXT NOT NULL,
                attempts BIGINT NOT NULL DEFAULT 0 CHECK (attempts BETWEEN 0 AND 5),
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            );

            CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                user_id TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                revoked_at BIGINT,
                revoked_reason TEXT,
                FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX sessions_by_user ON sessions (user_id);

            CREATE TABLE refresh_tokens (
                token_hash TEXT PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                issued_at BIGINT NOT NULL,
                rotated_at BIGINT
            );
            CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);

            CREATE TABLE rate_limits (
                bucket TEXT NOT NULL,
                key TEXT NOT NULL,
                window_start BIGINT NOT NULL,
                hits BIGINT NOT NULL CHECK (hits >= 0),
                PRIMARY KEY (bucket, key)
            );

            CREATE TABLE change_log (
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                seq BIGINT NOT NULL CHECK (seq >= 1),
                entity TEXT NOT NULL CHECK (entity IN ('driver', 'trip', 'order', 'expense', 'notification')),
                entity_id TEXT NOT NULL,
                op TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
                driver_id TEXT,
                dispatch_visible BIGINT NOT NULL CHECK (dispatch_visible IN (0, 1)),
                payload TEXT,
                committed_at BIGINT NOT NULL,
                PRIMARY KEY (tenant_id, seq),
                CHECK (op = 'delete' OR payload IS NOT NULL)
            );
            CREATE INDEX change_log_by_driver ON change_log (tenant_id, driver_id, seq);
            """,
            // Trips list newest start first, undated last. SQLite sorts NULL
            // lowest (last in a DESC index); PostgreSQL must be told.
            sqlite: "CREATE INDEX trips_by_driver ON trips (tenant_id, driver_id, start_date DESC, created_at DESC, id)",
            postgres: "CREATE INDEX trips_by_driver ON trips (tenant_id, driver_id, start_date DESC NULLS LAST, created_at DESC, id)"),

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
        Migration(version: 15, name: "order search", sql: "", sqlite: """
            CREATE VIEW order_search_source AS SELECT rowid AS order_rowid, \(OrderSearch.text("")) AS body FROM orders;
            CREATE VIRTUAL TABLE order_search USING fts5(body, tokenize = 'trigram', content = 'order_search_source', content_rowid = 'order_rowid');
            INSERT INTO order_search (order_search) VALUES ('rebuild');
            CREATE TRIGGER order_search_insert AFTER INSERT ON orders BEGIN INSERT INTO order_search (rowid, body) VALUES (NEW.rowid, \(OrderSearch.text("NEW."))); END;
            CREATE TRIGGER order_search_delete AFTER DELETE ON orders BEGIN INSERT INTO order_search (order_search, rowid, body) VALUES ('delete', OLD.rowid, \(OrderSearch.text("OLD."))); END;
            CREATE TRIGGER order_search_update AFTER UPDATE OF \(OrderSearch.columns.joined(separator: ", ")) ON orders BEGIN INSERT INTO order_search (order_search, rowid, body) VALUES ('delete', OLD.rowid, \(OrderSearch.text("OLD."))); INSERT INTO order_search (rowid, body) VALUES (NEW.rowid, \(OrderSearch.text("NEW."))); END
            """, postgres: """
            CREATE EXTENSION IF NOT EXISTS pg_trgm;
            ALTER TABLE orders ADD COLUMN search_text TEXT GENERATED ALWAYS AS (lower(\(OrderSearch.text("", .postgres)))) STORED;
            CREATE INDEX orders_search ON orders USING gin (search_text gin_trgm_ops)
            """),

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

/// The text of an order that the board's search looks in.
enum OrderSearch {
    static let columns = ["number", "vehicle_vin", "vehicle_make", "vehicle_model", "pickup_name", "pickup_address",
                          "pickup_contact_name", "delivery_name", "delivery_address", "delivery_contact_name"]

    /// The columns (of the row `prefix` names, as `NEW.`) joined by line
    /// breaks: `char(10)` in SQLite, `chr(10)` in PostgreSQL.
    static func text(_ prefix: String, _ dialect: SQLDialect = .sqlite) -> String {
        columns.map { prefix + $0 }.joined(separator: dialect == .sqlite ? " || char(10) || " : " || chr(10) || ")
    }
}

/// A migration that adds an entity to the change log's CHECK constraint.
/// SQLite cannot change a CHECK constraint, so the table is rebuilt there,
/// with the columns it had before migration 12 (a later use must add
/// `mutation_id`).
enum ChangeLogEntities {
    static func sqlite(_ suffix: String, _ entities: [String]) -> String {
        """
        CREATE TABLE change_log_\(suffix) (
            tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            seq BIGINT NOT NULL CHECK (seq >= 1),
            entity TEXT NOT NULL CHECK (entity IN (\(list(entities)))),
            entity_id TEXT NOT NULL,
            op TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
            driver_id TEXT,
            dispatch_visible BIGINT NOT NULL CHECK (dispatch_visible IN (0, 1)),
            payload TEXT,
            committed_at BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, seq),
            CHECK (op = 'delete' OR payload IS NOT NULL)
        );
        INSERT INTO change_log_\(suffix) SELECT tenant_id, seq, entity, entity_id, op, driver_id, dispatch_visible, payload, committed_at
            FROM change_log;
        DROP TABLE change_log;
        ALTER TABLE change_log_\(suffix) RENAME TO change_log;
        CREATE INDEX change_log_by_driver ON change_log (tenant_id, driver_id, seq);
        CREATE INDEX change_log_for_dispatch ON change_log (tenant_id, dispatch_visible, seq);
        CREATE INDEX change_log_by_age ON change_log (committed_at);
        """
    }

    static func postgres(_ entities: [String]) -> String {
        """
        ALTER TABLE change_log DROP CONSTRAINT change_log_entity_check;
        ALTER TABLE change_log ADD CONSTRAINT change_log_entity_check CHECK (entity IN (\(list(entities))));
        """
    }

    private static func list(_ entities: [String]) -> String { entities.map { "'\($0)'" }.joined(separator: ", ") }
}

struct Migration: Sendable {
    let version: Int
    let name: String
    let sql: String
    /// Statements for one backend only, where the dialects differ.
    var sqlite: String = ""
    var postgres: String = ""
    /// Rebuilds (drops and recreates) a table other tables' foreign keys
    /// point at. SQLite then runs the migrations with foreign keys off, so
    /// dropping the old table neither cascades nor rewrites the references,
    /// and checks every reference before committing.
    var rebuildsReferencedTable = false

    /// The statements of the migration for a backend, split on the `;` that
    /// ends a line.
    func statements(for dialect: SQLDialect) -> [String] {
        (sql + ";\n" + (dialect == .sqlite ? sqlite : postgres)).components(separatedBy: ";\n")
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .map { $0.hasSuffix(";") ? String($0.dropLast()) : $0 }
            .filter { !$0.isEmpty }
    }
}
