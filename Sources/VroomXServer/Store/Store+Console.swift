import Foundation
import VroomXModels
import VroomXSecurity

/// A dispatcher's browser session, found by its cookie.
struct ConsoleSession: Sendable {
    let identity: Identity
    let email: String
    let carrier: String
    let csrfToken: String
    let lastUsedAt: Date
}

/// What the dispatch console reads and writes beyond the API's own store
/// calls: browser sessions, the board's search and counts, the drivers'
/// overview, sent messages and the pay report.
extension Store {
    // MARK: Browser sessions

    /// A sign-in session for the browser: the `sessions` row (so revoking
    /// it, as deactivating a user does, ends the browser session too) and
    /// the cookie's row with its CSRF token.
    func createConsoleSession(user: User, tokenHash: String, csrfToken: String, lifetime: TimeInterval) async throws -> ID<Session> {
        let session = try await createSession(user: user, refreshTokenHash: SecureToken.sha256Hex(SecureToken.random()), lifetime: lifetime)
        let now = self.now
        try await writeRows { db in
            try await db.execute("""
                INSERT INTO console_sessions (token_hash, session_id, tenant_id, user_id, csrf_token, created_at, last_used_at)
                VALUES (\(tokenHash), \(session), \(user.tenantID), \(user.id), \(csrfToken), \(now), \(now))
                """)
        }
        return session
    }

    /// The live browser session of a cookie: not revoked, not past its
    /// absolute end (the `sessions` row's expiry), not idle too long.
    func consoleSession(tokenHash: String, idleTimeout: TimeInterval) async throws -> ConsoleSession? {
        let now = self.now
        guard let row = try await read({ db in
            try await db.first("""
                SELECT c.session_id, c.user_id, c.tenant_id, c.csrf_token, c.last_used_at, s.expires_at, u.email, u.role, t.name
                FROM console_sessions c
                JOIN sessions s ON s.id = c.session_id
                JOIN users u ON u.id = c.user_id AND u.tenant_id = c.tenant_id
                JOIN tenants t ON t.id = c.tenant_id
                WHERE c.token_hash = \(tokenHash) AND s.revoked_at IS NULL AND s.expires_at > \(now)
                    AND c.last_used_at > \(now.addingTimeInterval(-idleTimeout))
                """)
        }) else { return nil }
        guard let role = UserRole(rawValue: try row.string("role")) else { return nil }
        let identity = Identity(user: try row.id("user_id"), tenant: try row.id("tenant_id"), role: role, session: try row.id("session_id"),
                                driver: nil, expiresAt: try row.date("expires_at"))
        return ConsoleSession(identity: identity, email: try row.string("email"), carrier: try row.string("name"),
                              csrfToken: try row.string("csrf_token"), lastUsedAt: try row.date("last_used_at"))
    }

    /// Marks a browser session used now (the idle clock restarts).
    func touchConsoleSession(tokenHash: String) async throws {
        let now = self.now
        try await writeRows { db in
            try await db.execute("UPDATE console_sessions SET last_used_at = \(now) WHERE token_hash = \(tokenHash)")
        }
    }

    /// Sign-out: the sign-in session is revoked and the cookie forgotten.
    func endConsoleSession(tokenHash: String) async throws {
        let now = self.now
        try await writeEndingSessions { db in
            guard let row = try await db.first("SELECT session_id FROM console_sessions WHERE token_hash = \(tokenHash)") else { return ((), []) }
            let session: ID<Session> = try row.id("session_id")
            try await db.execute("""
                UPDATE sessions SET revoked_at = \(now), revoked_reason = 'console_sign_out' WHERE id = \(session) AND revoked_at IS NULL
                """)
            try await db.execute("DELETE FROM console_sessions WHERE session_id = \(session)")
            return ((), [session])
        }
    }

    // MARK: The board

    /// Orders by status, with a search over number, VIN, make/model, the
    /// stops' names and addresses (city), and contacts; sorted by pickup date.
    struct BoardQuery: Sendable {
        var status: OrderStatus
        var search: String
        var pickupNewestFirst: Bool
        /// 0-based; read when there is no anchor, or its order left the tab.
        var page: Int
        var pageSize: Int
        var anchor: BoardAnchor? = nil
        /// Only orders on no trip (the New tab also holds those on a trip that has no driver yet).
        var onNoTrip = false
    }

    /// Where a board page reached from the page beside it starts: just after
    /// that page's last order, just before the next page's first, or the
    /// tab's last `rows` orders. It is read from the index at that spot, so
    /// the thousandth page costs what the first does; a page number alone
    /// makes the database step over every order before it.
    enum BoardAnchor: Sendable, Equatable {
        case after(ID<Order>)
        case before(ID<Order>)
        case last(rows: Int)
    }

    /// An order's place on the board: its pickup date (`Schema.pickupDue`), number and id.
    private struct BoardKey {
        let due: String?
        let number: String
        let id: String
    }

    /// One page of the board's orders, and whether the tab has orders
    /// before and after it (so the pager links where there is something to
    /// see, whatever changed since the page number was given).
    struct BoardPage: Sendable {
        var orders: [Order]
        var earlier: Bool
        var later: Bool
    }

    /// One page of the board's orders: those with a pickup date in its
    /// order (`Schema.pickupDue`: the index `orders_board` reads them in it,
    /// either way), then those without one by number. (How many there are in all is
    /// `orderCounts`, which the board reads anyway.)
    func boardOrders(_ query: BoardQuery, tenant: ID<Tenant>) async throws -> [Order] {
        try await boardPage(query, tenant: tenant).orders
    }

    func boardPage(_ query: BoardQuery, tenant: ID<Tenant>) async throws -> BoardPage {
        let filter: SQL = "tenant_id = \(tenant) AND status = \(query.status)" + (query.onNoTrip ? " AND trip_id IS NULL" : "")
            + boardSearch(query.search, tenant: tenant)
        let ascending = !query.pickupNewestFirst
        if let anchor = query.anchor, let page = try await read({ db in
            try await Self.boardPage(at: anchor, ascending: ascending, size: query.pageSize, filter: filter, tenant: tenant, db)
        }) {
            return page
        }
        // The kept counts by pickup day are the whole tab's: a search or the orders on no trip are fewer.
        let counted = Self.searchWords(query.search).isEmpty && !query.onNoTrip ? query.status : nil
        let offset = query.page * query.pageSize
        @Sendable func page(_ db: any SQLExecutor) async throws -> BoardPage {
            try await Self.boardPage(skipping: offset, ascending: ascending, size: query.pageSize, filter: filter, counted: counted, tenant: tenant, db)
        }
        // Counts and rows from one snapshot when the counts are read (a snapshot costs PostgreSQL two more round trips).
        return offset > 0 && counted != nil ? try await readSnapshot(page) : try await read(page)
    }

    /// The page after `offset` orders (one more is read, to know whether any
    /// follow). With the tab's counts by pickup day (`counted`: the whole
    /// tab is shown), the page is read from the day it begins on, stepping
    /// over that day's orders before it, not every order before it; in the
    /// orders without a date, from whichever end of them is nearer.
    private static func boardPage(skipping offset: Int, ascending: Bool, size: Int, filter: SQL, counted status: OrderStatus?,
                                  tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> BoardPage {
        let direction: SQL = ascending ? "ASC" : "DESC"
        let limit = size + 1
        let due = Schema.pickupDue
        let dated: SQL = "\(filter) AND \(unsafeRaw: due) IS NOT NULL"
        var days: DayCounts?
        if offset > 0, let status {
            days = try await DayCounts.position(offset, in: .orderDays, "status = \(status)", ascending: ascending, tenant: tenant, db)
        }
        var orders: [Order] = []
        // Unless every dated order comes before the page.
        if days.map({ $0.start != nil }) ?? true {
            let from: SQL = days?.start.map { " AND \(unsafeRaw: due) \(unsafeRaw: ascending ? ">=" : "<=") \($0.day)" } ?? ""
            orders = try await ordersPast(days?.start?.within ?? offset, limit: limit, where: dated + from,
                                          "ORDER BY \(unsafeRaw: due) \(direction), number \(direction), id \(direction)", tenant, db)
        }
        if orders.count < limit {
            // Orders without a pickup date come last either way: after the dated ones on this page, or from where
            // the dated ones ended.
            var undatedOffset = 0
            if orders.isEmpty, offset > 0 {
                if let days {
                    undatedOffset = max(0, offset - days.dated)
                } else {
                    let row = try await db.first("SELECT COUNT(*) AS n FROM orders WHERE \(dated)")
                    undatedOffset = max(0, offset - (try row?.int("n") ?? 0))
                }
            }
            let undated: SQL = "\(filter) AND \(unsafeRaw: due) IS NULL"
            let wanted = limit - orders.count
            if let total = days?.undated, undatedOffset > total / 2 {
                // Nearer the end: read backward from it, then turned over.
                let end = min(undatedOffset + wanted, total)
                if end > undatedOffset {
                    orders += try await ordersPast(total - end, limit: end - undatedOffset, where: undated,
                                                   "ORDER BY \(undatedOrder(ascending ? "DESC" : "ASC", db.dialect))", tenant, db).reversed()
                }
            } else {
                orders += try await ordersPast(undatedOffset, limit: wanted, where: undated, "ORDER BY \(undatedOrder(direction, db.dialect))",
                                               tenant, db)
            }
        }
        return BoardPage(orders: Array(orders.prefix(size)), earlier: offset > 0, later: orders.count > size)
    }

    /// Up to `limit` orders after the first `offset` of those matching
    /// `condition` in `order` (`orders_board` holds the date's columns for
    /// PostgreSQL, migration 34).
    private static func ordersPast(_ offset: Int, limit: Int, where condition: SQL, _ order: SQL, _ tenant: ID<Tenant>,
                                   _ db: any SQLExecutor) async throws -> [Order] {
        try await db.query(pageQuery(Order.columns, from: .orders, where: condition, order, limit: limit, offset: offset,
                                     tenant: tenant, db.dialect))
            .map(Order.init(row:))
    }

    /// The tables read a deep page at a time.
    fileprivate enum PagedTable: String { case orders, trips }

    /// `table`'s rows matching `condition` in `order`, after the first
    /// `offset`. PostgreSQL walks past the skipped ones in an index alone
    /// (one holding every column the condition and order name) and reads only
    /// the page's rows, found by id within the carrier (the condition is not
    /// evaluated twice: a search's would be); asked for the rows as it walks,
    /// it read every row it skipped or sorted them all (Delivered page 1,200
    /// of 100,000 orders: 170 ms, 25 ms this way). SQLite skips index entries
    /// without reading rows, and a first page skips nothing.
    fileprivate static func pageQuery(_ columns: SQL, from table: PagedTable, where condition: SQL, _ order: SQL,
                                      limit: Int, offset: Int, tenant: ID<Tenant>, _ dialect: SQLDialect) -> SQL {
        dialect == .postgres && offset > 0
            ? """
              SELECT \(columns) FROM \(unsafeRaw: table.rawValue) WHERE tenant_id = \(tenant)
              AND id IN (SELECT id FROM \(unsafeRaw: table.rawValue) WHERE \(condition) \(order) LIMIT \(limit) OFFSET \(offset)) \(order)
              """
            : "SELECT \(columns) FROM \(unsafeRaw: table.rawValue) WHERE \(condition) \(order) LIMIT \(limit) OFFSET \(offset)"
    }

    /// The page at an anchor, in the board's order; nil when the anchor is
    /// no order of the carrier (the caller reads by page number). An order
    /// that left the tab meanwhile (assigned, cancelled) still marks its
    /// place in the tab's order.
    /// The tab is two runs, the dated orders then the undated: reading
    /// forward goes from the anchor's run into the next, reading backward
    /// walks them the other way round and turns the rows over. One more
    /// order than a page is read, to know whether the tab goes on. Past the
    /// tab's end (its last orders left meanwhile) the page is empty, for the
    /// caller to show the last page; before its start is the first page.
    private static func boardPage(at anchor: BoardAnchor, ascending: Bool, size: Int, filter: SQL,
                                  tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> BoardPage? {
        func key(_ id: ID<Order>) async throws -> BoardKey? {
            guard let row = try await db.first("""
                SELECT \(unsafeRaw: Schema.pickupDue) AS due, number FROM orders WHERE tenant_id = \(tenant) AND id = \(id)
                """) else { return nil }
            return BoardKey(due: try row.optionalString("due"), number: try row.string("number"), id: id.rawValue)
        }
        func walk(_ runs: [Bool], from key: BoardKey?, ascending: Bool, limit: Int) async throws -> [Order] {
            var orders: [Order] = []
            for (index, dated) in runs.enumerated() where orders.count < limit {
                orders += try await boardRun(dated: dated, beyond: index == 0 ? key : nil, ascending: ascending, limit: limit - orders.count,
                                             filter: filter, db)
            }
            return orders
        }
        /// The tab's last `rows` orders.
        func last(_ rows: Int) async throws -> BoardPage {
            let orders = try await walk([false, true], from: nil, ascending: !ascending, limit: rows + 1)
            return BoardPage(orders: orders.prefix(rows).reversed(), earlier: orders.count > rows, later: false)
        }
        switch anchor {
        case .after(let id):
            guard let key = try await key(id) else { return nil }
            let orders = try await walk(key.due == nil ? [false] : [true, false], from: key, ascending: ascending, limit: size + 1)
            return BoardPage(orders: Array(orders.prefix(size)), earlier: true, later: orders.count > size)
        case .before(let id):
            guard let key = try await key(id) else { return nil }
            let orders = try await walk(key.due == nil ? [false, true] : [true], from: key, ascending: !ascending, limit: size + 1)
            guard orders.count > size else {
                return try await boardPage(skipping: 0, ascending: ascending, size: size, filter: filter, counted: nil, tenant: tenant, db)
            }
            return BoardPage(orders: orders.prefix(size).reversed(), earlier: true, later: true)
        case .last(let rows):
            return try await last(min(max(rows, 1), size))
        }
    }

    /// The order of the orders without a pickup date: by number. PostgreSQL
    /// reads them in `orders_board`'s order only when the (null) date is
    /// named first, as in the index; by number alone it walked all the
    /// carrier's orders by number looking for them (144 ms at 100,000).
    /// SQLite would sort again if the date (or any constant) were named.
    private static func undatedOrder(_ direction: SQL, _ dialect: SQLDialect) -> SQL {
        let byNumber: SQL = "number \(direction), id \(direction)"
        return dialect == .postgres ? "\(unsafeRaw: Schema.pickupDue) \(direction), " + byNumber : byNumber
    }

    /// Up to `limit` of a tab's dated or undated orders, in their key order
    /// (`ascending` or not), strictly beyond `key` when there is one. The
    /// date alone bounds the range too, so SQLite seeks in `orders_board` to
    /// it (it does not seek on a row value over an expression).
    private static func boardRun(dated: Bool, beyond key: BoardKey?, ascending: Bool, limit: Int, filter: SQL,
                                 _ db: any SQLExecutor) async throws -> [Order] {
        let direction: SQL = ascending ? "ASC" : "DESC"
        let beyond: SQL = ascending ? ">" : "<"
        let due = Schema.pickupDue
        var range: SQL = dated ? " AND \(unsafeRaw: due) IS NOT NULL" : " AND \(unsafeRaw: due) IS NULL"
        if let key {
            if dated, let keyDue = key.due {
                range = range + " AND \(unsafeRaw: due) \(beyond)= \(keyDue) AND (\(unsafeRaw: due), number, id) \(beyond) (\(keyDue), \(key.number), \(key.id))"
            } else if !dated {
                range = range + " AND (number, id) \(beyond) (\(key.number), \(key.id))"
            }
        }
        let order: SQL = dated ? "\(unsafeRaw: due) \(direction), number \(direction), id \(direction)" : undatedOrder(direction, db.dialect)
        return try await db.query("SELECT \(Order.columns) FROM orders WHERE \(filter)\(range) ORDER BY \(order) LIMIT \(limit)")
            .map(Order.init(row:))
    }

    /// The words a board search looks for: visible text, the first five
    /// words, each cut to 40 characters (a VIN is 17), so no search costs
    /// more than a bounded number of index lookups.
    static func searchWords(_ search: String) -> [String] {
        // Control and format characters are no text anyone looks for (and PostgreSQL refuses a NUL).
        let visible = String(String.UnicodeScalarView(search.unicodeScalars.filter {
            $0.properties.generalCategory != .control && $0.properties.generalCategory != .format
        }))
        return visible.split(whereSeparator: \.isWhitespace).prefix(5).map {
            String(String.UnicodeScalarView($0.unicodeScalars.prefix(40)))
        }
    }

    /// ` AND …` for each word of a board search (`searchWords`): the word
    /// appears (ignoring case) in one of the order's searched fields
    /// (`OrderSearch`: number, VIN, vehicle, a stop's name, address or
    /// contact, the load board's reference), or in the name of its driver,
    /// the number of its trip or the name of its customer (the board shows them). A word of three characters or more is looked up in
    /// the text index; a shorter one (an index cannot look up less than a
    /// trigram) is skipped beside longer ones, and alone matches a whole
    /// order or trip number, or part of a driver's name (a carrier has few
    /// drivers). Nothing for an empty search. The
    /// carrier's drivers and trips that match are found once per word
    /// (uncorrelated subqueries), not once per order.
    func boardSearch(_ search: String, tenant: ID<Tenant>) -> SQL {
        var filter: SQL = ""
        var words = Self.searchWords(search)
        // Beside a longer word, one of one or two characters ("Rd", "TX") narrows nothing an index can look up: skipped.
        if words.contains(where: { $0.unicodeScalars.count >= 3 }) { words.removeAll { $0.unicodeScalars.count < 3 } }
        for word in words {
            // Folded by the database on both sides, so the word and the text fold alike.
            let pattern: SQL = "lower(\("%" + Self.likeEscaped(word) + "%"))"
            var driverOrTrip: SQL = """
                driver_id IN (SELECT id FROM drivers WHERE tenant_id = \(tenant) AND lower(name) LIKE \(pattern) ESCAPE '\\')
                    OR trip_id IN (SELECT id FROM trips WHERE tenant_id = \(tenant) AND lower(number) LIKE \(pattern) ESCAPE '\\')
                    OR customer_id IN (SELECT id FROM customers WHERE tenant_id = \(tenant) AND name_key LIKE \(pattern) ESCAPE '\\')
                """
            let inOrder: SQL
            if word.unicodeScalars.count < 3 {
                // Alone, one or two characters match a whole order or trip number, nothing inside a name.
                inOrder = "lower(number) = lower(\(word))"
                driverOrTrip = "trip_id IN (SELECT id FROM trips WHERE tenant_id = \(tenant) AND lower(number) = lower(\(word)))"
            } else if database.dialect == .sqlite {
                // An FTS5 phrase: trigram by trigram, in order: the word as a substring.
                let phrase = "\"" + word.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                inOrder = "rowid IN (SELECT rowid FROM order_search WHERE order_search MATCH \(phrase))"
            } else {
                // A subquery of its own, so the trigram index answers it (beside the driver and trip tests an OR
                // of plain conditions would be checked order by order).
                inOrder = "id IN (SELECT id FROM orders WHERE tenant_id = \(tenant) AND search_text LIKE \(pattern) ESCAPE '\\')"
            }
            filter = filter + " AND (" + inOrder + " OR " + driverOrTrip + ")"
        }
        return filter
    }

    /// How many orders the carrier has in each status; with a search, how
    /// many in each match it (so the board's tabs say where matches are).
    func orderCounts(tenant: ID<Tenant>, search: String = "") async throws -> [OrderStatus: Int] {
        // Without a search, the counts the database keeps as orders come, go and change status
        // (`order_status_counts`): no count over every order.
        let counting: SQL = search.isEmpty
            ? "SELECT status, CAST(SUM(n) AS BIGINT) AS n FROM order_status_counts WHERE tenant_id = \(tenant) GROUP BY status"
            : "SELECT status, COUNT(*) AS n FROM orders WHERE tenant_id = \(tenant)\(boardSearch(search, tenant: tenant)) GROUP BY status"
        return try await read { db in
            var counts: [OrderStatus: Int] = [:]
            for row in try await db.query(counting) {
                if let status = OrderStatus(rawValue: try row.string("status")) { counts[status] = try row.int("n") }
            }
            return counts
        }
    }

    /// Sums each carrier's kept counts of orders and trips into one row a
    /// status (PostgreSQL adds a row for each change; SQLite keeps one
    /// already). Rows added meanwhile are not yet visible to it, so they
    /// stay, and still count.
    public func gatherStatusCounts() async throws {
        for kept in StatusCounts.all {
            guard database.dialect == .postgres else {
                // Days the rows have all left (yesterday's pickups, now delivered) would stay as rows of none.
                if kept.day != nil { try await writeRows { try await $0.execute("DELETE FROM \(unsafeRaw: kept.counts) WHERE n = 0") } }
                continue
            }
            // Only the keys with more than one row (changes since the last time) or none counted: the day counts hold a
            // row for every day of the carrier's history, most of them unchanged.
            let same = kept.keyColumns.map { "c.\($0) = m.\($0)" }.joined(separator: " AND ")
            try await writeRows { db in
                try await db.execute("""
                    WITH moved AS (SELECT tenant_id, \(unsafeRaw: kept.keys) FROM \(unsafeRaw: kept.counts)
                                   GROUP BY tenant_id, \(unsafeRaw: kept.keys) HAVING COUNT(*) > 1 OR SUM(n) = 0),
                         gone AS (DELETE FROM \(unsafeRaw: kept.counts) c USING moved m WHERE c.tenant_id = m.tenant_id AND \(unsafeRaw: same)
                                  RETURNING c.tenant_id, \(unsafeRaw: kept.keyColumns.map { "c." + $0 }.joined(separator: ", ")), c.n)
                    INSERT INTO \(unsafeRaw: kept.counts) (tenant_id, \(unsafeRaw: kept.keys), n)
                    SELECT tenant_id, \(unsafeRaw: kept.keys), SUM(n) FROM gone GROUP BY tenant_id, \(unsafeRaw: kept.keys) HAVING SUM(n) <> 0
                    """)
            }
        }
    }

    /// How many orders each trip carries.
    /// The trips page: one page of open trips (planned or under way, in the
    /// order of the index `trips_open_listed`) and one of finished ones
    /// (newest first, `trips_finished`); how many of each there are (kept
    /// counts) and the orders on each trip shown (never counted over every order).
    struct TripsPage {
        /// One page of the open trips, as `Schema.tripOpenListed` orders them.
        var open: [Trip]
        var openTotal: Int
        /// One page of the finished trips, newest first.
        var finished: [Trip]
        var finishedTotal: Int
        var orders: [ID<Trip>: Int]
    }

    /// A page of each list of the trips page: `open` and `finished` are (offset, limit).
    func tripsPage(tenant: ID<Tenant>, open openRange: (offset: Int, limit: Int), finished finishedRange: (offset: Int, limit: Int))
    async throws -> TripsPage {
        @Sendable func page(_ db: any SQLExecutor) async throws -> TripsPage {
            let open = try await db.query(Self.pageQuery(Trip.columns, from: .trips, where: "tenant_id = \(tenant) AND \(unsafeRaw: Schema.tripOpen)",
                                                         "ORDER BY \(unsafeRaw: Schema.tripOpenListed), id", limit: openRange.limit,
                                                         offset: openRange.offset, tenant: tenant, db.dialect)).map(Trip.init(row:))
            let finished = try await Self.finishedTrips(skipping: finishedRange.offset, limit: finishedRange.limit, tenant: tenant, db)
            // The counts kept as trips change (`StatusCounts.trips`), not counted over the carrier's trips.
            var openTotal = 0, finishedTotal = 0
            for row in try await db.query("""
                SELECT status, CAST(SUM(n) AS BIGINT) AS n FROM trip_status_counts WHERE tenant_id = \(tenant) GROUP BY status
                """) {
                let status: TripStatus = try row.enumeration("status")
                if status.isOpen { openTotal += try row.int("n") } else { finishedTotal += try row.int("n") }
            }
            var orders: [ID<Trip>: Int] = [:]
            for shown in (open + finished).map(\.id).chunks(of: 400) {
                for row in try await db.query("""
                    SELECT trip_id, COUNT(*) AS n FROM orders WHERE tenant_id = \(tenant) AND trip_id IN (\(SQL.list(shown))) GROUP BY trip_id
                    """) {
                    orders[try row.id("trip_id")] = try row.int("n")
                }
            }
            return TripsPage(open: open, openTotal: openTotal, finished: finished, finishedTotal: finishedTotal, orders: orders)
        }
        // A finished page past the first reads the counts by start day: from one snapshot with its rows.
        return finishedRange.offset > 0 ? try await readSnapshot(page) : try await read(page)
    }

    /// Finished trips newest first (`Trip.order`, the index `trips_finished`),
    /// after the first `offset`: read from the start day the page begins on
    /// (`DayCounts`), not past every trip before it; those without a start
    /// date come last.
    private static func finishedTrips(skipping offset: Int, limit: Int, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Trip] {
        let finished: SQL = "tenant_id = \(tenant) AND \(unsafeRaw: Schema.tripFinished)"
        func read(_ condition: SQL, skipping offset: Int, limit: Int) async throws -> [Trip] {
            try await db.query(pageQuery(Trip.columns, from: .trips, where: condition, "ORDER BY \(Trip.order.sql)", limit: limit, offset: offset,
                                         tenant: tenant, db.dialect)).map(Trip.init(row:))
        }
        guard offset > 0 else { return try await read(finished, skipping: 0, limit: limit) }
        let days = try await DayCounts.position(offset, in: .tripDays, "\(unsafeRaw: Schema.tripFinished)", ascending: false, tenant: tenant, db)
        var trips: [Trip] = []
        if let start = days.start {
            trips = try await read(finished + " AND start_date <= \(start.day)", skipping: start.within, limit: limit)
        }
        if trips.count < limit {
            trips += try await read(finished + " AND start_date IS NULL", skipping: trips.isEmpty ? max(0, offset - days.dated) : 0,
                                    limit: limit - trips.count)
        }
        return trips
    }

    /// `%`, `_` and the escape character itself match literally.
    /// Escaped scalar by scalar: a `%` that a combining mark joins into one
    /// Character is still a `%` to the database.
    static func likeEscaped(_ text: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar == "%" || scalar == "_" || scalar == "\\" { escaped.append("\\") }
            escaped.append(scalar)
        }
        return String(escaped)
    }

    // MARK: Drivers and messages

    struct DriverOverview: Sendable {
        let driver: Driver
        /// The trip in progress, else the next planned one.
        let currentTrip: Trip?
        let unreadMessages: Int
        /// The driver's last API request or socket (to the minute), or last position fix if later.
        let lastSeenAt: Date?
    }

    func driverOverview(tenant: ID<Tenant>) async throws -> [DriverOverview] {
        let drivers = try await people.drivers(tenant: tenant)
        // A driver's current trip is open: the carrier's finished trips are not read.
        let trips = try await self.trips.open(tenant: tenant)
        let now = self.now
        let (unread, seen) = try await read { db in
            var unread: [ID<Driver>: Int] = [:]
            for row in try await db.query("""
                SELECT driver_id, COUNT(*) AS n FROM driver_notifications WHERE tenant_id = \(tenant) AND read_at IS NULL GROUP BY driver_id
                """) {
                unread[try row.id("driver_id")] = try row.int("n")
            }
            // Seen by the server or by satellite: a position fix counts (the map shows it as seen too).
            var seen: [ID<Driver>: Date] = [:]
            for row in try await db.query("""
                SELECT d.id, d.last_seen_at, p.recorded_at FROM drivers d
                    LEFT JOIN driver_positions p ON p.tenant_id = d.tenant_id AND p.driver_id = d.id
                WHERE d.tenant_id = \(tenant) AND (d.last_seen_at IS NOT NULL OR p.recorded_at IS NOT NULL)
                """) {
                // A phone's clock may run ahead: never later than now.
                let times = [try row.optionalDate("last_seen_at"), try row.optionalDate("recorded_at")].compactMap { $0 }
                seen[try row.id("id")] = times.max().map { min($0, now) }
            }
            return (unread, seen)
        }
        return drivers.map { driver in
            let mine = trips.filter { $0.driverID == driver.id }
            let current = mine.first { $0.status == .inProgress }
                ?? mine.filter { $0.status == .planned }.min { ($0.startDate ?? .distantFuture) < ($1.startDate ?? .distantFuture) }
            return DriverOverview(driver: driver, currentTrip: current, unreadMessages: unread[driver.id] ?? 0,
                                  lastSeenAt: seen[driver.id])
        }
    }

    /// Drivers with a trip in progress, or planned to run today.
    func driversOnTripsToday(tenant: ID<Tenant>, today: LocalDate) async throws -> [ID<Driver>] {
        let trips = try await self.trips.open(tenant: tenant)
        let driving = trips.filter { trip in
            guard trip.driverID != nil else { return false }
            if trip.status == .inProgress { return true }
            guard trip.status == .planned, let start = trip.startDate else { return false }
            return start <= today && (trip.endDate ?? start) >= today
        }
        return Array(Set(driving.compactMap(\.driverID))).sorted()
    }

    /// A line of an order's status history.
    struct OrderEvent: Sendable {
        let status: OrderStatus
        let occurredAt: Date
        let recordedAt: Date
        /// The driver's name or the dispatcher's email; nil when the server acted.
        let who: String?
        let byDriver: Bool
    }

    /// Every status an order reached, when, and who moved it, oldest first.
    /// The newest 500 events, oldest first.
    func orderHistory(_ order: ID<Order>, tenant: ID<Tenant>) async throws -> [OrderEvent] {
        try await read { db in
            try await db.query("""
                SELECT e.status, e.occurred_at, e.recorded_at, u.email, u.role, d.name AS driver_name
                FROM order_events e
                LEFT JOIN users u ON u.tenant_id = e.tenant_id AND u.id = e.user_id
                LEFT JOIN drivers d ON d.tenant_id = e.tenant_id AND d.user_id = e.user_id
                WHERE e.tenant_id = \(tenant) AND e.order_id = \(order)
                ORDER BY e.occurred_at DESC, e.recorded_at DESC LIMIT 500
                """).reversed().map { row in
                let byDriver = try row.optionalString("role") == UserRole.driver.rawValue
                return OrderEvent(status: try row.enumeration("status"), occurredAt: try row.date("occurred_at"),
                                  recordedAt: try row.date("recorded_at"),
                                  who: byDriver ? try row.optionalString("driver_name") : try row.optionalString("email"),
                                  byDriver: byDriver)
            }
        }
    }

    /// A line of an order's ETA history.
    struct ETAEvent: Sendable {
        let pickupETA: Date?
        let deliveryETA: Date?
        /// A reassignment cleared these, the previous driver's ETAs.
        let cleared: Bool
        let recordedAt: Date
        /// The driver whose truck the ETAs were for.
        let driverName: String?
        /// The driver's name or the dispatcher's email; nil when the server acted.
        let who: String?
    }

    /// The ETAs an order was given and cleared, oldest first (the newest 200).
    func etaHistory(_ order: ID<Order>, tenant: ID<Tenant>) async throws -> [ETAEvent] {
        try await read { db in
            try await db.query("""
                SELECT e.pickup_eta, e.delivery_eta, e.cleared, e.recorded_at, d.name AS driver_name, u.email, u.role,
                       ud.name AS user_driver_name
                FROM order_eta_events e
                LEFT JOIN drivers d ON d.tenant_id = e.tenant_id AND d.id = e.driver_id
                LEFT JOIN users u ON u.tenant_id = e.tenant_id AND u.id = e.user_id
                LEFT JOIN drivers ud ON ud.tenant_id = e.tenant_id AND ud.user_id = e.user_id
                WHERE e.tenant_id = \(tenant) AND e.order_id = \(order)
                ORDER BY e.recorded_at DESC, e.id LIMIT 200
                """).reversed().map { row in
                let byDriver = try row.optionalString("role") == UserRole.driver.rawValue
                return ETAEvent(pickupETA: try row.optionalDate("pickup_eta"), deliveryETA: try row.optionalDate("delivery_eta"),
                                cleared: try row.int("cleared") != 0, recordedAt: try row.date("recorded_at"),
                                driverName: try row.optionalString("driver_name"),
                                who: byDriver ? try row.optionalString("user_driver_name") : try row.optionalString("email"))
            }
        }
    }

    struct SentMessage: Sendable {
        let notification: DriverNotification
        let driverName: String
    }

    /// Messages dispatch sent (not the automatic ones), newest first.
    func sentMessages(tenant: ID<Tenant>, limit: Int) async throws -> [SentMessage] {
        try await read { db in
            try await db.query("""
                SELECT n.id, n.driver_id, n.type, n.title, n.body, n.trip_id, n.order_id, n.read_at, n.read_received_at, n.created_at, n.acknowledged_at,
                       d.name AS driver_name
                FROM driver_notifications n JOIN drivers d ON d.id = n.driver_id AND d.tenant_id = n.tenant_id
                WHERE n.tenant_id = \(tenant) AND n.type IN ('dispatch_message', 'urgent')
                ORDER BY n.created_at DESC, n.id LIMIT \(limit)
                """).map { SentMessage(notification: try DriverNotification(row: $0), driverName: try $0.string("driver_name")) }
        }
    }
}

extension LocalDate {
    static let distantFuture = LocalDate(year: 2999, month: 12, day: 31)!
}
