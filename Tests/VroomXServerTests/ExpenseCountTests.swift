import Foundation
import Logging
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Each trip's number of expenses, kept by the database (`TripExpenseCounts`)
/// for the cap a new expense is checked against.
@Suite("Kept expense counts")
struct ExpenseCountTests {
    @Test("a trip's kept count follows expenses recorded, deleted, written by hand several at a time and moved; the migration counts those before it; check finds a count edited behind its back and the repair counts that trip again; a deleted carrier leaves none",
          arguments: TestBackend.available)
    func keptCount(_ backend: TestBackend) async throws {
        let configuration = try await backend.freshConfiguration()
        let database = try await ServerServices.openDatabase(configuration, logger: Logger(label: "test"))
        try await Migrator.migrate(database, now: Date(), upTo: 39)
        let (tenant, old) = (ID<Tenant>(), ID<Trip>())
        let now = Date()
        // Rows as the server before the counts wrote them: three expenses on a trip.
        try await database.write { db in
            try await db.execute("INSERT INTO tenants (id, name, created_at) VALUES (\(tenant), 'Old Carrier', \(now))")
            try await db.execute("""
                INSERT INTO trips (id, tenant_id, number, status, revenue_cents, driver_pay_cents, miles, created_at, updated_at, doc)
                VALUES (\(old), \(tenant), 'T-OLD', 'planned', 0, 0, 0, \(now), \(now), '{}')
                """)
            for amount in 1...3 { try await Self.insertByHand(amount: amount, trip: old, tenant: tenant, db) }
        }
        await database.close()

        let services = try await ServerServices.make(configuration)
        let store = services.store
        let dispatch = Scope.dispatch(tenant: tenant)
        #expect(try await Self.kept(old, tenant, services) == 3)

        let trip = try await store.trips.create(.init(number: "T-1", origin: "a", destination: "b", revenueCents: 1, miles: 1), tenant: tenant).id
        let today = LocalDate(store.now)
        var recorded: [ID<Expense>] = []
        for amount in 1...4 {
            recorded.append(try await store.expenses.create(.init(id: ID(), tripID: trip, category: .tolls, amountCents: amount, date: today), dispatch).id)
        }
        // The same expense sent again is not counted twice.
        _ = try await store.expenses.create(.init(id: recorded[0], tripID: trip, category: .tolls, amountCents: 1, date: today), dispatch)
        try await store.expenses.delete(recorded[1], dispatch)
        try await services.database.write { try await Self.insertByHand(amount: 9, trip: trip, tenant: tenant, $0) }
        #expect(try await Self.kept(trip, tenant, services) == 4)
        // Statements of several rows (PostgreSQL counts a statement's rows at once), and an expense moved to another trip.
        let several = [ID<Expense>(), ID<Expense>(), ID<Expense>()]
        try await services.database.write { db in
            try await db.execute("""
                INSERT INTO trip_expenses (id, tenant_id, trip_id, category, amount_cents, expense_date, notes, created_at, doc)
                VALUES \(SQL.joined(several.map { "(\($0), \(tenant), \(trip), 'tolls', 5, '2026-11-01', '', 0, '{}')" }, separator: ", "))
                """)
        }
        #expect(try await Self.kept(trip, tenant, services) == 7)
        try await services.database.write { db in
            try await db.execute("DELETE FROM trip_expenses WHERE tenant_id = \(tenant) AND id IN (\(several[0]), \(several[1]))")
            try await db.execute("UPDATE trip_expenses SET trip_id = \(old) WHERE tenant_id = \(tenant) AND id = \(several[2])")
        }
        #expect(try await Self.kept(trip, tenant, services) == 4)
        #expect(try await Self.kept(old, tenant, services) == 4)
        #expect(try await store.countProblems() == [])

        // A count edited behind the triggers' back is found, and only that trip is counted again.
        try await services.database.write { db in
            try await db.execute("UPDATE trip_expense_counts SET n = 9 WHERE tenant_id = \(tenant) AND trip_id = \(trip)")
        }
        let drift = "\"Old Carrier\" (\(tenant)): trip_expense_counts counts 9 expenses on trip T-1, and there are 4"
        #expect(try await store.countProblems() == [drift])
        #expect(try await store.repairKeptCounts() == [drift + "; counted again"])
        #expect(try await store.countProblems() == [])
        #expect(try await Self.kept(trip, tenant, services) == 4)

        // A new expense reads the kept count, not its trip's expenses: a trip counted at the cap takes no more.
        try await services.database.write { db in
            try await db.execute("UPDATE trip_expense_counts SET n = \(ExpenseService.maxExpensesPerTrip) WHERE tenant_id = \(tenant) AND trip_id = \(trip)")
        }
        await #expect(throws: AppError.self) {
            try await store.expenses.create(.init(id: ID(), tripID: trip, category: .tolls, amountCents: 5, date: today), dispatch)
        }
        _ = try await store.repairKeptCounts()

        try await services.database.write { try await $0.execute("DELETE FROM tenants WHERE id = \(tenant)") }
        let left = try await services.database.read { try await $0.first("SELECT COUNT(*) AS n FROM trip_expense_counts")?.int("n") }
        #expect(left == 0)
        await services.database.close()
    }

    @Test("deleting an expense holds its trip first, as recording one does, so the two never deadlock over the trip's count",
          arguments: TestBackend.available.filter { $0 == .postgres })
    func deleteHoldsTrip(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let (store, trip) = (server.store, carrier.trips[0][0].id)
        let dispatch = Scope.dispatch(tenant: carrier.tenant.id)
        let expense = try await store.expenses.create(.init(id: ID(), tripID: trip, category: .tolls, amountCents: 1, date: LocalDate(store.now)), dispatch)
        struct TripHeld: Error {}
        // A delete's transaction, still open: another asks for the trip and does not wait.
        let held = try await store.committing(tenant: carrier.tenant.id) { tx in
            try await TenantTransaction.$ambient.withValue(tx) { try await store.expenses.delete(expense.id, dispatch) }
            do {
                try await server.services.database.write { db in
                    do {
                        try await db.execute("SELECT id FROM trips WHERE id = \(trip) FOR UPDATE NOWAIT")
                    } catch let error as PostgresServerError where error.sqlState == "55P03" {
                        throw TripHeld()
                    }
                }
                return false
            } catch is TripHeld {
                return true
            }
        }
        #expect(held, "the trip was free while its expense was being deleted")
    }

    static func insertByHand(amount: Int, trip: ID<Trip>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            INSERT INTO trip_expenses (id, tenant_id, trip_id, category, amount_cents, expense_date, notes, created_at, doc)
            VALUES (\(ID<Expense>()), \(tenant), \(trip), 'tolls', \(amount), '2026-11-01', '', 0, '{}')
            """)
    }

    static func kept(_ trip: ID<Trip>, _ tenant: ID<Tenant>, _ services: ServerServices) async throws -> Int? {
        try await services.database.read { db in
            try await db.first("SELECT n FROM trip_expense_counts WHERE tenant_id = \(tenant) AND trip_id = \(trip)")?.int("n")
        }
    }
}
