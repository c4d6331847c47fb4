import Logging
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

@Suite("Demo data")
struct DemoDataTests {
    /// A fresh server with the demo carrier seeded.
    static func seeded(_ backend: TestBackend) async throws -> (TestServer, Tenant) {
        let server = try await TestServer.make(backend)
        #expect(try await DemoData.seedIfNeeded(server.store, logger: Logger(label: "demo")))
        return (server, try #require(try await server.store.people.tenants().first { $0.name == "Demo Auto Transport" }))
    }

    @Test("the demo carrier's trips earn what their orders add up to", arguments: TestBackend.available)
    func tripRevenueIsItsOrders(_ backend: TestBackend) async throws {
        let (server, tenant) = try await Self.seeded(backend)
        let scope = Scope.dispatch(tenant: tenant.id)
        let trips = try await server.store.trips.list(scope)
        #expect(trips.count == 5)
        for trip in trips {
            let orders = try await server.store.orders.list(scope, trip: trip.id)
            #expect(!orders.isEmpty)
            #expect(orders.reduce(0) { $0 + $1.revenueCents } == trip.revenueCents, "\(trip.number)")
        }
    }

    @Test("a driver the map shows at a position is not 'never seen' on the drivers' list", arguments: TestBackend.available)
    func seenByPosition(_ backend: TestBackend) async throws {
        let (server, tenant) = try await Self.seeded(backend)
        let positions = try await server.store.location.positions(tenant: tenant.id)
        let overview = try await server.store.driverOverview(tenant: tenant.id)
        #expect(!positions.isEmpty)
        for line in overview {
            let fix = positions.first { $0.driverID == line.driver.id }?.fix.recordedAt
            #expect(line.lastSeenAt == fix, "\(line.driver.name)")
        }
    }
}
