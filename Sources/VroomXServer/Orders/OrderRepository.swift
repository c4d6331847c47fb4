import Foundation
import VroomXModels

/// Orders in the database: the SQL and the row mapping, nothing else.
enum OrderRepository {
    /// A trip's orders, of the given statuses (all when nil).
    static func onTrip(_ trip: ID<Trip>, statuses: [OrderStatus]? = nil, tenant: ID<Tenant>,
                       _ db: any SQLExecutor) async throws -> [Order] {
        let which: SQL = statuses.map { " AND status IN (\(SQL.list($0)))" } ?? ""
        return try await db.query("SELECT \(Order.columns) FROM orders WHERE tenant_id = \(tenant) AND trip_id = \(trip)\(which)")
            .map(Order.init(row:))
    }
}
