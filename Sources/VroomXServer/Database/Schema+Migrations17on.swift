import Foundation

extension Schema {
    private static let customerEntities = ["driver", "trip", "order", "expense", "notification", "inspection", "equipment", "customer"]

    static let migrations17on: [Migration] = [
        // Customers: the shippers, brokers, dealers and auctions a carrier
        // hauls for (a name unique ignoring case, so a file or a form can
        // name one); an order names its customer and the load board's
        // reference, which the board's search finds.
        Migration(version: 17, name: "customers", sql: """
            CREATE TABLE customers (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
                name_key TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('shipper', 'broker', 'dealer', 'auction')),
                billing_contact TEXT NOT NULL DEFAULT '' CHECK (length(billing_contact) <= 200),
                email TEXT NOT NULL DEFAULT '' CHECK (length(email) <= 254),
                phone TEXT NOT NULL DEFAULT '' CHECK (length(phone) <= 40),
                address TEXT NOT NULL DEFAULT '' CHECK (length(address) <= 500),
                payment_terms TEXT NOT NULL DEFAULT '' CHECK (length(payment_terms) <= 100),
                notes TEXT NOT NULL DEFAULT '' CHECK (length(notes) <= 2000),
                version BIGINT NOT NULL DEFAULT 1 CHECK (version >= 1),
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                UNIQUE (tenant_id, name_key)
            );
            ALTER TABLE orders ADD COLUMN customer_id TEXT REFERENCES customers (id);
            ALTER TABLE orders ADD COLUMN external_load_id TEXT CHECK (length(external_load_id) BETWEEN 1 AND 64);
            CREATE INDEX orders_by_customer ON orders (tenant_id, customer_id, created_at DESC, id)
            """,
            // The change log learns the new entity (see version 4); the board's search is rebuilt over the new column.
            // SQLite's ALTER TABLE cannot add a composite foreign key: `customers.id` is a primary key, and the
            // service checks the customer is the carrier's (PostgreSQL holds the composite key as well).
            sqlite: [ChangeLogEntities.sqlite("v17", customerEntities, withMutation: true),
                     "DROP TRIGGER order_search_insert", "DROP TRIGGER order_search_delete", "DROP TRIGGER order_search_update",
                     "DROP TABLE order_search", "DROP VIEW order_search_source",
                     OrderSearch.sqliteIndex(OrderSearch.columns17)].joined(separator: ";\n"),
            postgres: [ChangeLogEntities.postgres(customerEntities),
                       "ALTER TABLE orders ADD CONSTRAINT orders_customer_in_carrier FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)",
                       "DROP INDEX orders_search", "ALTER TABLE orders DROP COLUMN search_text",
                       OrderSearch.postgresIndex(OrderSearch.columns17)].joined(separator: ";\n")),

        // Links a customer follows an order by: one live link per order at
        // most (a new one replaces it), revocable. The token is signed from
        // the link's id (`TrackingToken`), so it is not stored.
        Migration(version: 18, name: "tracking links", sql: """
            CREATE TABLE tracking_links (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                order_id TEXT NOT NULL,
                created_by TEXT,
                created_at BIGINT NOT NULL,
                revoked_at BIGINT,
                withdrawn BIGINT NOT NULL DEFAULT 0 CHECK (withdrawn IN (0, 1)),
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, order_id) REFERENCES orders (tenant_id, id) ON DELETE CASCADE
            );
            CREATE UNIQUE INDEX tracking_links_live ON tracking_links (tenant_id, order_id) WHERE revoked_at IS NULL
            """),

        // What a carrier's documents say of it (legal name, MC and DOT
        // numbers, address, terms) and what it chooses for them.
        Migration(version: 19, name: "carrier profiles", sql: """
            CREATE TABLE carrier_profiles (
                tenant_id TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
                legal_name TEXT NOT NULL DEFAULT '' CHECK (length(legal_name) <= 200),
                mc_number TEXT NOT NULL DEFAULT '' CHECK (length(mc_number) <= 8),
                dot_number TEXT NOT NULL DEFAULT '' CHECK (length(dot_number) <= 9),
                address TEXT NOT NULL DEFAULT '' CHECK (length(address) <= 500),
                phone TEXT NOT NULL DEFAULT '' CHECK (length(phone) <= 40),
                email TEXT NOT NULL DEFAULT '' CHECK (length(email) <= 254),
                bol_terms TEXT NOT NULL DEFAULT '' CHECK (length(bol_terms) <= 4000),
                tracking_link_in_emails BIGINT NOT NULL DEFAULT 1 CHECK (tracking_link_in_emails IN (0, 1)),
                version BIGINT NOT NULL CHECK (version >= 1),
                updated_at BIGINT NOT NULL
            )
            """),

        // The bill of lading mailed to the customer once per completed
        // inspection (the unique key is the "at most once"), the send's
        // state and its history.
        Migration(version: 20, name: "documents mailed", sql: """
            CREATE TABLE document_mail (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                order_id TEXT NOT NULL,
                inspection_id TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('pickup', 'delivery')),
                recipient TEXT NOT NULL DEFAULT '',
                state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'skipped')),
                attempts BIGINT NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                sent_at BIGINT,
                note TEXT NOT NULL DEFAULT '',
                created_at BIGINT NOT NULL,
                UNIQUE (tenant_id, inspection_id),
                FOREIGN KEY (tenant_id, order_id) REFERENCES orders (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX document_mail_due ON document_mail (state, next_attempt_at);
            CREATE INDEX document_mail_by_order ON document_mail (tenant_id, order_id);
            ALTER TABLE inspections ADD COLUMN signer_name TEXT CHECK (length(signer_name) BETWEEN 1 AND 200)
            """),

        // Several vehicles per order: the list as JSON (its first vehicle
        // also in the vehicle_* columns), and what the board's search finds
        // of the others. An order from before moves its one vehicle, which
        // takes the order's id and earns the order's revenue; its stored
        // document (sent as it is by lists and the feed) gets both keys.
        Migration(version: 21, name: "several vehicles per order", sql: """
            ALTER TABLE orders ADD COLUMN vehicles TEXT NOT NULL DEFAULT '[]';
            ALTER TABLE orders ADD COLUMN vehicle_search TEXT NOT NULL DEFAULT ''
            """,
            sqlite: ["""
                UPDATE orders SET vehicles = json_array(json_object('id', id, 'year', vehicle_year, 'make', vehicle_make,
                    'model', vehicle_model, 'vin', vehicle_vin, 'color', vehicle_color, 'operable', json('true'),
                    'price_cents', revenue_cents))
                """,
                     // The stored document (what lists and the feed send as it is) says so too.
                     "UPDATE orders SET doc = json_set(doc, '$.vehicles', json(vehicles), '$.vehicle', json(vehicles) -> '$[0]')",
                     "DROP TRIGGER order_search_insert", "DROP TRIGGER order_search_delete", "DROP TRIGGER order_search_update",
                     "DROP TABLE order_search", "DROP VIEW order_search_source",
                     OrderSearch.sqliteIndex(OrderSearch.columns)].joined(separator: ";\n"),
            postgres: ["""
                UPDATE orders SET vehicles = json_build_array(json_build_object('id', id, 'year', vehicle_year, 'make', vehicle_make,
                    'model', vehicle_model, 'vin', vehicle_vin, 'color', vehicle_color, 'operable', true,
                    'price_cents', revenue_cents))::text
                """,
                       "UPDATE orders SET doc = jsonb_set(jsonb_set(doc::jsonb, '{vehicles}', vehicles::jsonb), '{vehicle}', vehicles::jsonb -> 0)::text",
                       "DROP INDEX orders_search", "ALTER TABLE orders DROP COLUMN search_text",
                       OrderSearch.postgresIndex(OrderSearch.columns)].joined(separator: ";\n")),

        // Each vehicle inspected at each stop: an inspection names its
        // vehicle, one per (order, vehicle, kind). An inspection from
        // before is its order's one vehicle's, whose id (migration 21) is
        // the order's. SQLite cannot drop a UNIQUE constraint: the table is
        // rebuilt (media and uploads point at it).
        Migration(version: 22, name: "inspections per vehicle", sql: "",
                  sqlite: """
                    CREATE TABLE inspections_v22 (
                        id TEXT PRIMARY KEY,
                        tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                        order_id TEXT NOT NULL,
                        vehicle_id TEXT NOT NULL,
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
                        signer_name TEXT CHECK (length(signer_name) BETWEEN 1 AND 200),
                        UNIQUE (tenant_id, id),
                        UNIQUE (tenant_id, order_id, vehicle_id, kind),
                        FOREIGN KEY (tenant_id, order_id) REFERENCES orders (tenant_id, id),
                        FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id)
                    );
                    INSERT INTO inspections_v22 (id, tenant_id, order_id, vehicle_id, driver_id, kind, odometer, notes, customer_unavailable,
                                                 completed_at, version, created_at, updated_at, doc, signer_name)
                        SELECT id, tenant_id, order_id, order_id, driver_id, kind, odometer, notes, customer_unavailable, completed_at,
                               version, created_at, updated_at, json_set(doc, '$.vehicle_id', order_id), signer_name FROM inspections;
                    DROP TABLE inspections;
                    ALTER TABLE inspections_v22 RENAME TO inspections
                    """,
                  postgres: """
                    ALTER TABLE inspections ADD COLUMN vehicle_id TEXT;
                    UPDATE inspections SET vehicle_id = order_id, doc = jsonb_set(doc::jsonb, '{vehicle_id}', to_jsonb(order_id))::text;
                    ALTER TABLE inspections ALTER COLUMN vehicle_id SET NOT NULL;
                    ALTER TABLE inspections DROP CONSTRAINT inspections_tenant_id_order_id_kind_key;
                    ALTER TABLE inspections ADD CONSTRAINT inspections_per_vehicle UNIQUE (tenant_id, order_id, vehicle_id, kind)
                    """, rebuildsReferencedTable: true),

        // Getting paid: invoices for delivered orders (an order on one
        // invoice at a time: voiding frees it), payments against them (the
        // client's id makes a repeated record one), the carrier's invoice
        // numbers (given when an invoice is first sent, without gaps), each
        // email of an invoice claimed before it is sent, and the factoring
        // company a carrier's invoices may be assigned to.
        Migration(version: 23, name: "invoices and payments", sql: """
            CREATE TABLE invoices (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                customer_id TEXT NOT NULL,
                sequence BIGINT CHECK (sequence >= 1),
                status TEXT NOT NULL CHECK (status IN ('draft', 'sent', 'partly_paid', 'paid', 'void')),
                terms TEXT NOT NULL CHECK (terms IN ('cod', 'cop', 'quick_pay', 'net_15', 'net_30', 'net_45')),
                issued_on TEXT NOT NULL,
                due_on TEXT NOT NULL,
                total_cents BIGINT NOT NULL,
                paid_cents BIGINT NOT NULL DEFAULT 0 CHECK (paid_cents >= 0),
                sent_at BIGINT,
                version BIGINT NOT NULL CHECK (version >= 1),
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                UNIQUE (tenant_id, sequence),
                CHECK (status = 'draft' OR status = 'void' OR sequence IS NOT NULL),
                FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
            );
            CREATE INDEX invoices_by_customer ON invoices (tenant_id, customer_id, status);
            CREATE INDEX invoices_by_date ON invoices (tenant_id, created_at DESC, id);
            CREATE TABLE invoice_orders (
                tenant_id TEXT NOT NULL,
                order_id TEXT NOT NULL,
                invoice_id TEXT NOT NULL,
                PRIMARY KEY (tenant_id, order_id),
                FOREIGN KEY (tenant_id, invoice_id) REFERENCES invoices (tenant_id, id) ON DELETE CASCADE,
                FOREIGN KEY (tenant_id, order_id) REFERENCES orders (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX invoice_orders_by_invoice ON invoice_orders (tenant_id, invoice_id);
            CREATE TABLE invoice_payments (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                invoice_id TEXT NOT NULL,
                amount_cents BIGINT NOT NULL CHECK (amount_cents BETWEEN 1 AND 10000000000),
                method TEXT NOT NULL CHECK (method IN ('check', 'ach', 'wire', 'cash', 'card', 'other')),
                reference TEXT NOT NULL DEFAULT '' CHECK (length(reference) <= 100),
                received_on TEXT NOT NULL,
                note TEXT NOT NULL DEFAULT '' CHECK (length(note) <= 500),
                recorded_by TEXT NOT NULL DEFAULT '',
                created_at BIGINT NOT NULL,
                removed_at BIGINT,
                FOREIGN KEY (tenant_id, invoice_id) REFERENCES invoices (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX invoice_payments_by_invoice ON invoice_payments (tenant_id, invoice_id, received_on);
            CREATE TABLE invoice_numbers (
                tenant_id TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
                last BIGINT NOT NULL CHECK (last >= 0)
            );
            CREATE TABLE invoice_mail (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                invoice_id TEXT NOT NULL,
                recipient TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed')),
                attempts BIGINT NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                sent_at BIGINT,
                note TEXT NOT NULL DEFAULT '',
                created_at BIGINT NOT NULL,
                FOREIGN KEY (tenant_id, invoice_id) REFERENCES invoices (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX invoice_mail_due ON invoice_mail (state, next_attempt_at);
            CREATE INDEX invoice_mail_by_invoice ON invoice_mail (tenant_id, invoice_id);
            ALTER TABLE carrier_profiles ADD COLUMN factoring_company TEXT NOT NULL DEFAULT '' CHECK (length(factoring_company) <= 200);
            ALTER TABLE carrier_profiles ADD COLUMN factoring_remit_to TEXT NOT NULL DEFAULT '' CHECK (length(factoring_remit_to) <= 500);
            ALTER TABLE carrier_profiles ADD COLUMN factoring_notice TEXT NOT NULL DEFAULT '' CHECK (length(factoring_notice) <= 2000)
            """),
            // Paper behind money: receipt photos on expenses, and the photo of a
        // check or cash receipt a driver collected on delivery (COD) or at
        // pickup (COP), which is a payment of the order's invoice, pending
        // deposit until dispatch banks it. The photos' rows hold their
        // bytes' keys (the expense's and payment's JSON carry them as read);
        // an upload now goes to an inspection's slot, a unit, or such paper
        // (`paper_id`, of the kind its slot names), exactly one (SQLite
        // cannot change a CHECK: the uploads table is rebuilt there). Files
        // whose row went (a deleted expense) wait in `media_trash` for the
        // upload sweeper, which removes them once the deletion committed.
        Migration(version: 24, name: "receipts and collections", sql: """
            CREATE TABLE receipt_photos (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                expense_id TEXT,
                payment_id TEXT,
                content_type TEXT NOT NULL,
                size_bytes BIGINT NOT NULL CHECK (size_bytes > 0),
                sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
                storage_key TEXT NOT NULL,
                uploaded_by TEXT NOT NULL,
                uploaded_at BIGINT NOT NULL,
                position BIGINT NOT NULL CHECK (position >= 0),
                CHECK ((expense_id IS NULL) <> (payment_id IS NULL)),
                FOREIGN KEY (tenant_id, expense_id) REFERENCES trip_expenses (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX receipt_photos_by_expense ON receipt_photos (tenant_id, expense_id);
            CREATE INDEX receipt_photos_by_payment ON receipt_photos (tenant_id, payment_id);
            CREATE TABLE media_trash (
                storage_key TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL,
                trashed_at BIGINT NOT NULL
            );
            ALTER TABLE trip_expenses ADD COLUMN receipts TEXT NOT NULL DEFAULT '[]';
            ALTER TABLE invoice_payments ADD COLUMN collected_by TEXT;
            ALTER TABLE invoice_payments ADD COLUMN order_id TEXT;
            ALTER TABLE invoice_payments ADD COLUMN deposited_on TEXT;
            ALTER TABLE invoice_payments ADD COLUMN photos TEXT NOT NULL DEFAULT '[]';
            CREATE INDEX invoice_payments_by_order ON invoice_payments (tenant_id, order_id)
            """,
            sqlite: """
            CREATE TABLE uploads_v24 (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                inspection_id TEXT,
                equipment_id TEXT,
                paper_id TEXT,
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
                CHECK ((inspection_id IS NOT NULL) + (equipment_id IS NOT NULL) + (paper_id IS NOT NULL) = 1),
                FOREIGN KEY (tenant_id, inspection_id) REFERENCES inspections (tenant_id, id) ON DELETE CASCADE,
                FOREIGN KEY (tenant_id, equipment_id) REFERENCES equipment (tenant_id, id) ON DELETE CASCADE,
                FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
            );
            INSERT INTO uploads_v24 (id, tenant_id, inspection_id, equipment_id, user_id, slot, kind, length, received, metadata, created_at,
                                     expires_at, completed_at, storage_key, sha256, content_type, storage_handle, lease_token, lease_until)
                SELECT id, tenant_id, inspection_id, equipment_id, user_id, slot, kind, length, received, metadata, created_at,
                       expires_at, completed_at, storage_key, sha256, content_type, storage_handle, lease_token, lease_until
                FROM uploads;
            DROP TABLE uploads;
            ALTER TABLE uploads_v24 RENAME TO uploads;
            CREATE INDEX uploads_by_expiry ON uploads (expires_at);
            CREATE INDEX uploads_open_by_user ON uploads (tenant_id, user_id, completed_at)
            """,
            postgres: """
            ALTER TABLE uploads ADD COLUMN paper_id TEXT;
            DO $$ DECLARE old text; BEGIN SELECT conname INTO old FROM pg_constraint WHERE conrelid = 'uploads'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%equipment_id IS NULL%'; EXECUTE 'ALTER TABLE uploads DROP CONSTRAINT ' || quote_ident(old); END $$;
            ALTER TABLE uploads ADD CONSTRAINT uploads_one_target
                CHECK ((inspection_id IS NOT NULL)::int + (equipment_id IS NOT NULL)::int + (paper_id IS NOT NULL)::int = 1)
            """),
        // Driver settlements: a week's pay frozen on approval, its lines each
        // naming what they came from. The partial unique indexes keep a trip
        // paid, an expense reimbursed, an item taken, a deduction taken per
        // week and a negative balance carried once per driver, whatever two
        // dispatchers do at once; corrections are lines beside them.
        Migration(version: 25, name: "driver settlements", sql: """
            CREATE TABLE settlements (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                driver_id TEXT NOT NULL,
                period_start TEXT NOT NULL,
                period_end TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('approved', 'paid')),
                net_cents BIGINT NOT NULL,
                approved_at BIGINT NOT NULL,
                approved_by TEXT NOT NULL,
                paid_on TEXT,
                paid_reference TEXT NOT NULL DEFAULT '' CHECK (length(paid_reference) <= 100),
                doc TEXT NOT NULL,
                UNIQUE (tenant_id, id),
                UNIQUE (tenant_id, driver_id, period_start),
                CHECK (status = 'approved' OR paid_on IS NOT NULL)
            );
            CREATE INDEX settlements_by_week ON settlements (tenant_id, period_start);
            CREATE TABLE settlement_lines (
                tenant_id TEXT NOT NULL,
                settlement_id TEXT NOT NULL,
                driver_id TEXT NOT NULL,
                position BIGINT NOT NULL CHECK (position >= 0),
                kind TEXT NOT NULL CHECK (kind IN ('trip_pay', 'reimbursement', 'bonus', 'advance', 'deduction', 'correction', 'carried_balance')),
                amount_cents BIGINT NOT NULL,
                week_start TEXT NOT NULL,
                trip_id TEXT,
                expense_id TEXT,
                pay_item_id TEXT,
                deduction_id TEXT,
                carried_from TEXT,
                PRIMARY KEY (tenant_id, settlement_id, position),
                FOREIGN KEY (tenant_id, settlement_id) REFERENCES settlements (tenant_id, id) ON DELETE CASCADE
            );
            CREATE UNIQUE INDEX settlement_lines_trip_paid ON settlement_lines (tenant_id, driver_id, trip_id) WHERE kind = 'trip_pay';
            CREATE UNIQUE INDEX settlement_lines_expense_paid ON settlement_lines (tenant_id, driver_id, expense_id) WHERE kind = 'reimbursement';
            CREATE UNIQUE INDEX settlement_lines_item_taken ON settlement_lines (tenant_id, pay_item_id) WHERE pay_item_id IS NOT NULL;
            CREATE UNIQUE INDEX settlement_lines_deduction_taken ON settlement_lines (tenant_id, deduction_id, week_start)
                WHERE deduction_id IS NOT NULL;
            CREATE UNIQUE INDEX settlement_lines_balance_carried ON settlement_lines (tenant_id, carried_from) WHERE carried_from IS NOT NULL;
            CREATE INDEX settlement_lines_by_trip ON settlement_lines (tenant_id, driver_id, trip_id);
            CREATE INDEX settlement_lines_by_expense ON settlement_lines (tenant_id, driver_id, expense_id);
            CREATE TABLE driver_pay_items (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                driver_id TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('advance', 'deduction', 'bonus')),
                description TEXT NOT NULL CHECK (length(description) <= 200),
                amount_cents BIGINT NOT NULL CHECK (amount_cents BETWEEN 1 AND 10000000),
                date TEXT NOT NULL,
                settlement_id TEXT,
                created_by TEXT NOT NULL,
                created_at BIGINT NOT NULL
            );
            CREATE INDEX driver_pay_items_by_driver ON driver_pay_items (tenant_id, driver_id, settlement_id);
            CREATE TABLE driver_deductions (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                driver_id TEXT NOT NULL,
                description TEXT NOT NULL CHECK (length(description) BETWEEN 1 AND 200),
                amount_cents BIGINT NOT NULL CHECK (amount_cents BETWEEN 1 AND 10000000),
                starts_on TEXT NOT NULL,
                ends_on TEXT,
                created_at BIGINT NOT NULL
            );
            CREATE INDEX driver_deductions_by_driver ON driver_deductions (tenant_id, driver_id);
            CREATE TABLE settlement_mail (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                settlement_id TEXT NOT NULL,
                recipient TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed')),
                attempts BIGINT NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                sent_at BIGINT,
                note TEXT NOT NULL DEFAULT '',
                created_at BIGINT NOT NULL,
                FOREIGN KEY (tenant_id, settlement_id) REFERENCES settlements (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX settlement_mail_due ON settlement_mail (state, next_attempt_at);
            CREATE INDEX settlement_mail_by_settlement ON settlement_mail (tenant_id, settlement_id);
            CREATE INDEX trip_expenses_by_driver ON trip_expenses (tenant_id, driver_id, expense_date);
            CREATE INDEX trips_by_driver_change ON trips (tenant_id, driver_id, updated_at)
            """),
        // Drivers may be paid a flat amount per vehicle carried: the pay type's
        // CHECK takes `per_vehicle` (SQLite cannot change a CHECK: the table is rebuilt).
        Migration(version: 26, name: "pay per vehicle", sql: "", sqlite: """
            CREATE TABLE drivers_v26 (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                user_id TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
                phone TEXT NOT NULL DEFAULT '' CHECK (length(phone) <= 40),
                pay_type TEXT NOT NULL CHECK (pay_type IN ('percentage', 'per_mile', 'per_trip', 'per_vehicle')),
                pay_rate BIGINT NOT NULL CHECK (pay_rate >= 0),
                version BIGINT NOT NULL DEFAULT 1 CHECK (version >= 1),
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                doc TEXT NOT NULL,
                deactivated_at BIGINT,
                last_seen_at BIGINT,
                UNIQUE (tenant_id, id),
                FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
            );
            INSERT INTO drivers_v26 (id, tenant_id, user_id, name, phone, pay_type, pay_rate, version, created_at, updated_at, doc,
                                     deactivated_at, last_seen_at)
                SELECT id, tenant_id, user_id, name, phone, pay_type, pay_rate, version, created_at, updated_at, doc, deactivated_at, last_seen_at
                FROM drivers;
            DROP TABLE drivers;
            ALTER TABLE drivers_v26 RENAME TO drivers
            """, postgres: """
            ALTER TABLE drivers DROP CONSTRAINT drivers_pay_type_check;
            ALTER TABLE drivers ADD CONSTRAINT drivers_pay_type_check CHECK (pay_type IN ('percentage', 'per_mile', 'per_trip', 'per_vehicle'))
            """, rebuildsReferencedTable: true),
        // A trip's revenue follows its orders' prices unless dispatch types it
        // (trips from before were typed by hand); a driver's notice about a
        // trip gathers what follows it until `coalesce_until`.
        Migration(version: 27, name: "trips run themselves", sql: """
            ALTER TABLE trips ADD COLUMN revenue_set_by_hand BIGINT NOT NULL DEFAULT 1 CHECK (revenue_set_by_hand IN (0, 1));
            ALTER TABLE driver_notifications ADD COLUMN coalesce_until BIGINT
            """),
        // Drivers write to dispatch (in general, or about a trip or an order);
        // dispatch sees when each urgent message was answered "Got it".
        Migration(version: 28, name: "two-way messages", sql: """
            CREATE TABLE driver_messages (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                driver_id TEXT NOT NULL,
                trip_id TEXT,
                order_id TEXT,
                body TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 2000),
                sent_at BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                read_by_dispatch_at BIGINT,
                doc TEXT NOT NULL,
                FOREIGN KEY (tenant_id, driver_id) REFERENCES drivers (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX driver_messages_by_driver ON driver_messages (tenant_id, driver_id, sent_at, id);
            CREATE INDEX driver_messages_arrived ON driver_messages (tenant_id, driver_id, created_at);
            CREATE INDEX driver_messages_unread ON driver_messages (tenant_id, driver_id) WHERE read_by_dispatch_at IS NULL;
            CREATE INDEX driver_notifications_from_dispatch ON driver_notifications (tenant_id, driver_id, created_at, id)
                WHERE type IN ('dispatch_message', 'urgent');
            ALTER TABLE driver_notifications ADD COLUMN acknowledged_at BIGINT
            """,
            // The change log learns the new entity (see version 17).
            sqlite: ChangeLogEntities.sqlite("v28", customerEntities + ["message"], withMutation: true),
            postgres: ChangeLogEntities.postgres(customerEntities + ["message"])),
            // Stop times and problems: when the truck left each stop's fence, what
        // the driver reported going wrong there, and what the carrier bills
        // for time beyond its free time and for dry runs. Dispatch is alerted
        // once when an order becomes late or at risk (by email if it chooses).
        Migration(version: 29, name: "stop times and problems", sql: """
            ALTER TABLE orders ADD COLUMN departed_at_pickup BIGINT;
            ALTER TABLE orders ADD COLUMN departed_at_delivery BIGINT;
            ALTER TABLE orders ADD COLUMN problems TEXT NOT NULL DEFAULT '[]';
            CREATE INDEX orders_on_site ON orders (tenant_id, driver_id, updated_at) WHERE \(Self.onSite);
            ALTER TABLE carrier_profiles ADD COLUMN detention_free_minutes BIGINT NOT NULL DEFAULT 120
                CHECK (detention_free_minutes BETWEEN 0 AND 1440);
            ALTER TABLE carrier_profiles ADD COLUMN detention_cents_per_hour BIGINT NOT NULL DEFAULT 5000
                CHECK (detention_cents_per_hour BETWEEN 0 AND 1000000);
            ALTER TABLE carrier_profiles ADD COLUMN dry_run_fee_cents BIGINT NOT NULL DEFAULT 15000
                CHECK (dry_run_fee_cents BETWEEN 0 AND 1000000);
            ALTER TABLE carrier_profiles ADD COLUMN alert_email TEXT NOT NULL DEFAULT '' CHECK (length(alert_email) <= 254);
            ALTER TABLE orders ADD COLUMN risk_alerted_at BIGINT;
            ALTER TABLE orders ADD COLUMN risk_alert TEXT NOT NULL DEFAULT '';
            CREATE TABLE order_alert_mail (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                order_id TEXT NOT NULL,
                recipient TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed')),
                attempts BIGINT NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                sent_at BIGINT,
                note TEXT NOT NULL DEFAULT '',
                created_at BIGINT NOT NULL,
                FOREIGN KEY (tenant_id, order_id) REFERENCES orders (tenant_id, id) ON DELETE CASCADE
            );
            CREATE INDEX order_alert_mail_due ON order_alert_mail (state, next_attempt_at);
            CREATE INDEX order_alert_mail_by_order ON order_alert_mail (tenant_id, order_id);
            CREATE TABLE attachment_photos (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                problem_id TEXT,
                message_id TEXT,
                content_type TEXT NOT NULL,
                size_bytes BIGINT NOT NULL CHECK (size_bytes > 0),
                sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
                storage_key TEXT NOT NULL,
                uploaded_by TEXT NOT NULL,
                uploaded_at BIGINT NOT NULL,
                position BIGINT NOT NULL CHECK (position >= 0),
                CHECK ((problem_id IS NULL) <> (message_id IS NULL))
            );
            CREATE INDEX attachment_photos_by_problem ON attachment_photos (tenant_id, problem_id);
            CREATE INDEX attachment_photos_by_message ON attachment_photos (tenant_id, message_id);
            ALTER TABLE driver_messages ADD COLUMN photos TEXT NOT NULL DEFAULT '[]';
            CREATE TABLE stop_problem_ids (
                id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
                order_id TEXT NOT NULL
            );
            ALTER TABLE orders ADD COLUMN risk_rank BIGINT NOT NULL DEFAULT 0;
            CREATE INDEX orders_alerted ON orders (tenant_id, risk_alerted_at);
            ALTER TABLE orders ADD COLUMN dry_run BIGINT NOT NULL DEFAULT 0 CHECK (dry_run IN (0, 1))
            """),
]
}

extension Schema {
    /// An order whose truck arrived at a stop and has not been seen leaving
    /// (the partial index `orders_on_site` and the query that uses it say it alike).
    static let onSite = "(arrived_at_pickup IS NOT NULL AND departed_at_pickup IS NULL) OR (arrived_at_delivery IS NOT NULL AND departed_at_delivery IS NULL)"
}
