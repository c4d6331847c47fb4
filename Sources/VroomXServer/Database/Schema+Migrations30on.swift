import Foundation

extension Schema {
    static let migrations30on: [Migration] = [
        // The board at any size: its order (pickup date, the window's first
        // day or, with only a last day, that one; then number) read
        // from an index, and each tab's count kept as orders come, go and
        // change status, not counted over every order of the carrier on
        // every view. A carrier's count of a status is the sum of its rows
        // (`Store.orderCounts`).
        Migration(version: 30, name: "board counts and order", sql: """
            DROP INDEX orders_board;
            CREATE INDEX orders_board ON orders (tenant_id, status, \(Schema.pickupDue), number, id);
            \(StatusCounts.orders.sql)
            """, sqlite: StatusCounts.orders.sqlite, postgres: StatusCounts.orders.postgres),
        // The trips page at any size: finished trips a page at a time, newest first, read in index order.
        Migration(version: 31, name: "finished trips in order", sql: "",
                  sqlite: "CREATE INDEX trips_finished ON trips (tenant_id, start_date DESC, created_at DESC, id) WHERE \(Schema.tripFinished)",
                  postgres: """
                  CREATE INDEX trips_finished ON trips (tenant_id, start_date DESC NULLS LAST, created_at DESC, id) WHERE \(Schema.tripFinished)
                  """),
        // Open trips (the trips page, the drivers page, the order form) read from their own index: without it each
        // view read every trip the carrier ever ran to find the few under way (25,000 rows with their documents).
        Migration(version: 32, name: "open trips in order", sql: "",
                  sqlite: "CREATE INDEX trips_open ON trips (tenant_id, start_date DESC, created_at DESC, id) WHERE \(Schema.tripOpen)",
                  postgres: """
                  CREATE INDEX trips_open ON trips (tenant_id, start_date DESC NULLS LAST, created_at DESC, id) WHERE \(Schema.tripOpen)
                  """),
        // The alert sweep (every few minutes) reads the orders due by tomorrow from these, not every order of the carrier.
        Migration(version: 33, name: "orders due for the alert sweep", sql: """
            CREATE INDEX orders_pickup_due ON orders (tenant_id, \(Schema.pickupEnds)) WHERE \(Schema.pickupWatched);
            CREATE INDEX orders_delivery_due ON orders (tenant_id, \(Schema.deliveryEnds)) WHERE \(Schema.deliveryWatched)
            """),
        // PostgreSQL reads an index alone only when it holds every column a query names: with the pickup window's
        // columns beside the board's key, a typed deep page is walked to in the index, not by sorting the whole tab.
        // Built beside the old one, then swapped: reads of the orders go on while it builds (a dropped index would hold
        // every reader of the table until the migrations commit).
        Migration(version: 34, name: "board index covers its dates", sql: "", postgres: """
            CREATE INDEX orders_board_covering ON orders (tenant_id, status, \(Schema.pickupDue), number, id) INCLUDE (pickup_window_start, pickup_window_end);
            DROP INDEX orders_board;
            ALTER INDEX orders_board_covering RENAME TO orders_board
            """),
        // Every batch of positions (every few seconds from each truck on the road) finds the driver's trip under way
        // and the orders on it from here, not by going through every trip the driver ever drove.
        Migration(version: 35, name: "trips under way by driver", sql: """
            CREATE INDEX trips_under_way ON trips (tenant_id, driver_id, start_date, id) WHERE status = 'in_progress'
            """),
        // The trips page's count of finished trips kept as trips come, go and change status, as the board's are
        // (`StatusCounts`): counting them on each view read every finished trip's index entry (25,000 at a large carrier).
        Migration(version: 36, name: "trip counts", sql: StatusCounts.trips.sql, sqlite: StatusCounts.trips.sqlite,
                  postgres: StatusCounts.trips.postgres),
        // A typed page number of the board found by adding up each pickup day's count (a few hundred rows), then
        // stepping over at most that day's orders: stepping over every order before the page cost 2,000 instructions
        // an order (Delivered page 1,200 of 100,000 orders: 72 M instructions).
        Migration(version: 37, name: "board counts by pickup day", sql: StatusCounts.orderDays.sql, sqlite: StatusCounts.orderDays.sqlite,
                  postgres: StatusCounts.orderDays.postgres),
        // The same for the trips page's finished trips, by start date (Trips page 500 of 25,000: 16 M instructions more
        // than its first).
        Migration(version: 38, name: "trip counts by start day", sql: StatusCounts.tripDays.sql, sqlite: StatusCounts.tripDays.sqlite,
                  postgres: StatusCounts.tripDays.postgres),
        // The trips page lists open trips a page at a time too, in its own order (`Schema.tripOpenListed`), read from
        // here: all 250 open trips of a large carrier on every page cost 30 M instructions a view.
        Migration(version: 39, name: "open trips as the trips page lists them", sql: """
            CREATE INDEX trips_open_listed ON trips (tenant_id, \(Schema.tripOpenListed), id) WHERE \(Schema.tripOpen)
            """),
        // Each new expense checks its trip's count against the cap (`ExpenseService.maxExpensesPerTrip`): counted,
        // that read every expense of the trip on every insert (0.3 ms on PostgreSQL at 1,250 fresh rows).
        Migration(version: 40, name: "expense counts by trip", sql: TripExpenseCounts.sql, sqlite: TripExpenseCounts.sqlite,
                  postgres: TripExpenseCounts.postgres),
    ]
}

/// How many expenses each trip holds, kept by triggers as expenses come, go
/// or move, so the cap on a trip's expenses reads one row. One row a trip,
/// changed in place on both databases: whoever records or deletes one of a
/// trip's expenses holds the trip's row first (`TripRepository.lock`,
/// `ExpenseRepository.holders`), so none waits longer for its count, and
/// none holds the count while waiting for the trip.
enum TripExpenseCounts {
    static let sql = """
        CREATE TABLE trip_expense_counts (
            tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            trip_id TEXT NOT NULL,
            n BIGINT NOT NULL,
            PRIMARY KEY (tenant_id, trip_id),
            FOREIGN KEY (tenant_id, trip_id) REFERENCES trips (tenant_id, id) ON DELETE CASCADE
        )
        """

    /// The expenses there are, counted once the triggers count every change
    /// (on PostgreSQL creating them holds off the table's writes until the
    /// migration commits).
    private static let counted = """
        INSERT INTO trip_expense_counts (tenant_id, trip_id, n) SELECT tenant_id, trip_id, COUNT(*) FROM trip_expenses GROUP BY tenant_id, trip_id
        """

    private static let added = "ON CONFLICT (tenant_id, trip_id) DO UPDATE SET n = trip_expense_counts.n + excluded.n"

    static let sqlite = """
        CREATE TRIGGER trip_expense_counts_insert AFTER INSERT ON trip_expenses BEGIN INSERT INTO trip_expense_counts (tenant_id, trip_id, n) VALUES (NEW.tenant_id, NEW.trip_id, 1) \(added); END;
        CREATE TRIGGER trip_expense_counts_delete AFTER DELETE ON trip_expenses BEGIN UPDATE trip_expense_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND trip_id = OLD.trip_id; END;
        CREATE TRIGGER trip_expense_counts_update AFTER UPDATE OF tenant_id, trip_id ON trip_expenses WHEN OLD.tenant_id <> NEW.tenant_id OR OLD.trip_id <> NEW.trip_id BEGIN UPDATE trip_expense_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND trip_id = OLD.trip_id; INSERT INTO trip_expense_counts (tenant_id, trip_id, n) VALUES (NEW.tenant_id, NEW.trip_id, 1) \(added); END;
        \(counted)
        """

    /// A statement's new or removed expenses are one change a trip.
    static let postgres = """
        CREATE FUNCTION trip_expense_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO trip_expense_counts (tenant_id, trip_id, n) SELECT tenant_id, trip_id, COUNT(*) FROM added GROUP BY tenant_id, trip_id \(added); RETURN NULL; END $$;
        CREATE TRIGGER trip_expense_counts_insert AFTER INSERT ON trip_expenses REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION trip_expense_counts_insert();
        CREATE FUNCTION trip_expense_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE trip_expense_counts c SET n = c.n - r.k FROM (SELECT tenant_id, trip_id, COUNT(*) AS k FROM removed GROUP BY tenant_id, trip_id) r WHERE c.tenant_id = r.tenant_id AND c.trip_id = r.trip_id; RETURN NULL; END $$;
        CREATE TRIGGER trip_expense_counts_delete AFTER DELETE ON trip_expenses REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION trip_expense_counts_delete();
        CREATE FUNCTION trip_expense_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE trip_expense_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND trip_id = OLD.trip_id; INSERT INTO trip_expense_counts (tenant_id, trip_id, n) VALUES (NEW.tenant_id, NEW.trip_id, 1) \(added); RETURN NULL; END $$;
        CREATE TRIGGER trip_expense_counts_update AFTER UPDATE OF tenant_id, trip_id ON trip_expenses FOR EACH ROW WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.trip_id IS DISTINCT FROM NEW.trip_id) EXECUTE FUNCTION trip_expense_counts_update();
        \(counted)
        """
}

extension Schema {
    /// The trips the trips page lists under Finished, a page at a time:
    /// one expression for the index `trips_finished` and its query.
    static let tripFinished = "status IN ('completed', 'cancelled')"

    /// Trips planned or under way: one expression for the index `trips_open`
    /// and the queries it serves (SQLite uses a partial index only for a
    /// query naming its condition's values, not bound parameters).
    static let tripOpen = "status IN ('planned', 'in_progress')"

    /// How the trips page lists open trips: under way before planned, each
    /// by start date (none last), then number. One expression for the index
    /// `trips_open_listed` and its query; false sorts before true on both databases.
    static let tripOpenListed = "(status = 'planned'), (start_date IS NULL), start_date, number"

    /// The pickup date the board sorts by and shows: the window's first day,
    /// or its last when only that is known ("by Dec 1"). One expression for
    /// the index `orders_board` and the queries it serves.
    static let pickupDue = "COALESCE(pickup_window_start, pickup_window_end)"

    /// The last day of an order's pickup window and of its delivery window
    /// (`Stop.lastWindowDay`), and the orders the alert sweep watches for each
    /// (waiting for the pickup, or open; the furthest trouble, the delivery
    /// late, not yet told): one expression each for the indexes
    /// `orders_pickup_due` and `orders_delivery_due` and the sweep's query.
    static let pickupEnds = "COALESCE(pickup_window_end, pickup_window_start)"
    static let deliveryEnds = "COALESCE(delivery_window_end, delivery_window_start)"
    static let pickupWatched = "status IN ('new', 'assigned') AND risk_rank < 4"
    static let deliveryWatched = "status IN ('new', 'assigned', 'picked_up') AND risk_rank < 4"
}

/// A table's rows counted by carrier and status (and, for the board's
/// orders by day, their pickup date), kept by triggers as rows come, go and
/// change what they are counted by, so a page reads a few counts, not every
/// row. A carrier's count is the sum of its rows (PostgreSQL adds a row a
/// change until `Store.gatherStatusCounts` sums them).
struct StatusCounts: Sendable {
    /// The counted table (`orders`), and the table of its counts (`order_status_counts`).
    let table: String
    let counts: String
    /// What a row is counted by beside its carrier and status, if anything.
    var day: CountedDay?

    /// A date a row is counted by (the counts' column `day`): its value
    /// from a row of the table (`row` is `NEW.`, `OLD.` or nothing: '' for
    /// none, as a unique index holds NULLs apart), and the table's columns it
    /// is made of.
    struct CountedDay: Sendable {
        let value: @Sendable (_ row: String) -> String
        let madeOf: [String]
    }

    static let orders = StatusCounts(table: "orders", counts: "order_status_counts")
    static let trips = StatusCounts(table: "trips", counts: "trip_status_counts")
    /// The board's orders by status and pickup date (`Schema.pickupDue`), and
    /// trips by status and start date, so a typed page number is found by
    /// adding up days, not by stepping over every row before it.
    static let orderDays = StatusCounts(table: "orders", counts: "order_day_counts", day: CountedDay(
        value: { "COALESCE(\($0)pickup_window_start, \($0)pickup_window_end, '')" }, madeOf: ["pickup_window_start", "pickup_window_end"]))
    static let tripDays = StatusCounts(table: "trips", counts: "trip_day_counts", day: CountedDay(
        value: { "COALESCE(\($0)start_date, '')" }, madeOf: ["start_date"]))
    static let all = [orders, trips, orderDays, tripDays]

    /// The counts' columns after the carrier's.
    var keyColumns: [String] { day == nil ? ["status"] : ["status", "day"] }
    var keys: String { keyColumns.joined(separator: ", ") }
    /// Their values from a row of the table.
    private func values(_ row: String) -> String { day.map { "\(row)status, \($0.value(row))" } ?? "\(row)status" }
    /// Their values from the table's rows, named as the counts' columns (for a query grouping the rows).
    var rowKeys: String { day.map { "status, \($0.value("")) AS day" } ?? "status" }
    /// The counts' row of a row of the table, as a condition.
    private func matching(_ row: String) -> String {
        "tenant_id = \(row)tenant_id AND status = \(row)status" + (day.map { " AND day = \($0.value(row))" } ?? "")
    }
    /// The columns whose change moves a row from one count to another.
    private var watched: String { (["status"] + (day?.madeOf ?? [])).joined(separator: ", ") }
    private func moved(_ differs: String) -> String {
        "OLD.status \(differs) NEW.status" + (day.map { " OR \($0.value("OLD.")) \(differs) \($0.value("NEW."))" } ?? "")
    }

    var sql: String {
        """
        CREATE TABLE \(counts) (
            tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            status TEXT NOT NULL,\(day == nil ? "" : "\n    day TEXT NOT NULL,")
            n BIGINT NOT NULL
        )
        """
    }

    /// The rows there are, counted once the triggers count every change. On
    /// PostgreSQL creating a trigger waits for the table's writes under way
    /// and holds off new ones until the migration commits, so none is
    /// missed or counted twice (counted before the triggers, a write in
    /// flight was neither counted nor triggered).
    private var counted: String {
        "INSERT INTO \(counts) (tenant_id, \(keys), n) SELECT tenant_id, \(values("")), COUNT(*) FROM \(table) GROUP BY tenant_id, \(values(""))"
    }

    /// One row a key, changed in place (one writer at a time).
    var sqlite: String {
        """
        CREATE UNIQUE INDEX \(counts)_by_status ON \(counts) (tenant_id, \(keys));
        CREATE TRIGGER \(counts)_insert AFTER INSERT ON \(table) BEGIN INSERT INTO \(counts) (tenant_id, \(keys), n) VALUES (NEW.tenant_id, \(values("NEW.")), 1) ON CONFLICT (tenant_id, \(keys)) DO UPDATE SET n = n + 1; END;
        CREATE TRIGGER \(counts)_update AFTER UPDATE OF \(watched) ON \(table) WHEN \(moved("<>")) BEGIN UPDATE \(counts) SET n = n - 1 WHERE \(matching("OLD.")); INSERT INTO \(counts) (tenant_id, \(keys), n) VALUES (NEW.tenant_id, \(values("NEW.")), 1) ON CONFLICT (tenant_id, \(keys)) DO UPDATE SET n = n + 1; END;
        CREATE TRIGGER \(counts)_delete AFTER DELETE ON \(table) BEGIN UPDATE \(counts) SET n = n - 1 WHERE \(matching("OLD.")); END;
        \(counted)
        """
    }

    /// Changes added as rows of their own, summed later: writers never wait on one another for a count, and a
    /// transaction changing thousands of rows does not update one row thousands of times (each update a new version
    /// the next must step over). A statement's new or removed rows are one row a key.
    var postgres: String {
        """
        CREATE INDEX \(counts)_by_status ON \(counts) (tenant_id, \(keys));
        CREATE FUNCTION \(counts)_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO \(counts) (tenant_id, \(keys), n) SELECT tenant_id, \(values("")), COUNT(*) FROM added GROUP BY tenant_id, \(values("")); RETURN NULL; END $$;
        CREATE TRIGGER \(counts)_insert AFTER INSERT ON \(table) REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION \(counts)_insert();
        CREATE FUNCTION \(counts)_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO \(counts) (tenant_id, \(keys), n) SELECT tenant_id, \(values("")), -COUNT(*) FROM removed WHERE EXISTS (SELECT 1 FROM tenants WHERE tenants.id = removed.tenant_id) GROUP BY tenant_id, \(values("")); RETURN NULL; END $$;
        CREATE TRIGGER \(counts)_delete AFTER DELETE ON \(table) REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION \(counts)_delete();
        CREATE FUNCTION \(counts)_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO \(counts) (tenant_id, \(keys), n) VALUES (OLD.tenant_id, \(values("OLD.")), -1), (NEW.tenant_id, \(values("NEW.")), 1); RETURN NULL; END $$;
        CREATE TRIGGER \(counts)_update AFTER UPDATE OF \(watched) ON \(table) FOR EACH ROW WHEN (\(moved("IS DISTINCT FROM"))) EXECUTE FUNCTION \(counts)_update();
        \(counted)
        """
    }
}
