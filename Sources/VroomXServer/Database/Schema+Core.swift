import Foundation

extension Schema {
    /// The first schema: carriers, people, trips, orders, expenses, notifications, sessions.
    static let core: [Migration] = [
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
    ]
}
