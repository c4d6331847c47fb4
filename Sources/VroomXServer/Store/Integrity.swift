import VroomXModels

extension Store {
    /// Everything `rowProblems` and `countProblems` find; empty when all
    /// holds. The race and fault tests check it after every run, on both
    /// databases.
    public func integrityProblems() async throws -> [String] {
        try await rowProblems() + countProblems()
    }

    /// How trips and orders must stand together, beyond what one row's
    /// constraints can say: a closed trip carries no vehicle, a completed
    /// trip left nothing undelivered, an order waiting on a trip waits for
    /// that trip's driver, a delivery comes after its pickup. Each names its
    /// carrier (numbers are a carrier's own).
    public func rowProblems() async throws -> [String] {
        try await database.read { db in
            var problems: [String] = []
            for row in try await db.query("""
                SELECT c.id AS carrier_id, c.name AS carrier, t.number AS trip, t.status AS trip_status, o.number AS "order", o.status AS order_status
                FROM orders o JOIN trips t ON t.tenant_id = o.tenant_id AND t.id = o.trip_id JOIN tenants c ON c.id = o.tenant_id
                WHERE (t.status IN ('cancelled', 'completed') AND o.status = 'picked_up')
                   OR (t.status = 'completed' AND o.status IN ('new', 'assigned'))
                ORDER BY c.name, c.id, t.number, o.number
                """) {
                problems.append("\(try Self.carrier(row)): trip \(try row.string("trip")) is \(try row.string("trip_status")) "
                                + "with order \(try row.string("order")) \(try row.string("order_status"))")
            }
            for row in try await db.query("""
                SELECT c.id AS carrier_id, c.name AS carrier, o.number AS "order"
                FROM orders o JOIN trips t ON t.tenant_id = o.tenant_id AND t.id = o.trip_id JOIN tenants c ON c.id = o.tenant_id
                WHERE o.status = 'assigned' AND (t.driver_id IS NULL OR o.driver_id <> t.driver_id)
                ORDER BY c.name, c.id, o.number
                """) {
                problems.append("\(try Self.carrier(row)): order \(try row.string("order")) waits for a driver other than its trip's")
            }
            for row in try await db.query("""
                SELECT c.id AS carrier_id, c.name AS carrier, o.number FROM orders o JOIN tenants c ON c.id = o.tenant_id
                WHERE (o.status = 'new' AND o.driver_id IS NOT NULL)
                   OR (o.status = 'delivered' AND o.actual_delivery_at < o.actual_pickup_at)
                ORDER BY c.name, c.id, o.number
                """) {
                problems.append("\(try Self.carrier(row)): order \(try row.string("number")) is inconsistent (unassigned with a driver, or delivered before its pickup)")
            }
            // Only where foreign keys were off (SQLite's command line): a carrier deleted from under its rows.
            for row in try await db.query("""
                SELECT kind, tenant_id, COUNT(*) AS n FROM (
                    SELECT 'orders' AS kind, tenant_id FROM orders UNION ALL SELECT 'trips' AS kind, tenant_id FROM trips
                ) AS r WHERE NOT EXISTS (SELECT 1 FROM tenants t WHERE t.id = r.tenant_id)
                GROUP BY kind, tenant_id ORDER BY tenant_id, kind
                """) {
                problems.append("\(try row.int64("n")) \(try row.string("kind")) belong to a carrier that does not exist (\(try row.string("tenant_id")))")
            }
            return problems
        }
    }

    /// The kept counts (`StatusCounts`: orders and trips by status, and by
    /// day; `TripExpenseCounts`: each trip's expenses) that are not the rows
    /// there are.
    public func countProblems() async throws -> [String] {
        try await database.read { db in
            var problems: [String] = []
            for kept in StatusCounts.all {
                problems += try await Self.countDrift(kept, db).map(\.description)
            }
            problems += try await Self.expenseCountDrift(db).map(\.description)
            return problems
        }
    }

    /// A carrier as a problem names it: `"Acme Hauling" (its id)`, from a row's `carrier` and `carrier_id`.
    static func carrier(_ row: SQLRow) throws -> String {
        "\"\(try row.optionalString("carrier") ?? "?")\" (\(try row.string("carrier_id")))"
    }
}
