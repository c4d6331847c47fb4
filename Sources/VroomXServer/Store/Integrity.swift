import VroomXModels

extension Store {
    /// How trips and orders must stand together, beyond what one row's
    /// constraints can say: a closed trip carries no vehicle, a completed
    /// trip left nothing undelivered, an order waiting on a trip waits for
    /// that trip's driver, a delivery comes after its pickup, the kept counts
    /// (`StatusCounts`: orders and trips by status, and by day) are
    /// the rows there are. Empty when all hold. The race and fault tests check it after every run, on both
    /// databases.
    public func integrityProblems() async throws -> [String] {
        try await database.read { db in
            var problems: [String] = []
            for row in try await db.query("""
                SELECT t.number AS trip, t.status AS trip_status, o.number AS "order", o.status AS order_status
                FROM orders o JOIN trips t ON t.tenant_id = o.tenant_id AND t.id = o.trip_id
                WHERE (t.status IN ('cancelled', 'completed') AND o.status = 'picked_up')
                   OR (t.status = 'completed' AND o.status IN ('new', 'assigned'))
                ORDER BY t.number, o.number
                """) {
                problems.append("trip \(try row.string("trip")) is \(try row.string("trip_status")) with order \(try row.string("order")) \(try row.string("order_status"))")
            }
            for row in try await db.query("""
                SELECT o.number AS "order" FROM orders o JOIN trips t ON t.tenant_id = o.tenant_id AND t.id = o.trip_id
                WHERE o.status = 'assigned' AND (t.driver_id IS NULL OR o.driver_id <> t.driver_id)
                ORDER BY o.number
                """) {
                problems.append("order \(try row.string("order")) waits for a driver other than its trip's")
            }
            for row in try await db.query("""
                SELECT number FROM orders
                WHERE (status = 'new' AND driver_id IS NOT NULL)
                   OR (status = 'delivered' AND actual_delivery_at < actual_pickup_at)
                ORDER BY number
                """) {
                problems.append("order \(try row.string("number")) is inconsistent (unassigned with a driver, or delivered before its pickup)")
            }
            for kept in StatusCounts.all {
                problems += try await Self.countDrift(kept, db).map(\.description)
            }
            return problems
        }
    }
}
