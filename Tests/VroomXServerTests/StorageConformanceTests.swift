import Foundation
import Logging
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The same storage suite on SQLite and PostgreSQL: values round-trip,
/// migrations are idempotent, the schema rejects what breaks the rules, and
/// the change log numbers writes without gaps.
@Suite("Storage conformance")
struct StorageConformanceTests {
    @Test("values round-trip through parameters", arguments: TestBackend.available)
    func valuesRoundTrip(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let tricky = "O'Brien \"quoted\" ; DROP TABLE tenants; -- ünïcødé 🚚"
        let row = try await server.store.database.read { db in
            try await db.first("""
                SELECT \(tricky) AS text, \(Int64.max) AS big, \(-42) AS negative, \(2.5) AS real, \(Optional<String>.none) AS missing
                """)
        }
        #expect(try row?.string("text") == tricky)
        #expect(try row?.int64("big") == Int64.max)
        #expect(try row?.int("negative") == -42)
        #expect(row?["real"] == .real(2.5))
        #expect(row?["missing"] == .null)
        await server.store.database.close()
    }

    @Test("migrations apply once and are recorded", arguments: TestBackend.available)
    func migrationsAreIdempotent(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let database = server.store.database
        #expect(try await Migrator.migrate(database, now: Date()).isEmpty)
        let versions = try await database.read { try await $0.query("SELECT version FROM schema_migrations ORDER BY version") }
        #expect(try versions.map { try $0.int("version") } == Schema.migrations.map(\.version))
        await database.close()
    }

    @Test("upgrading a schema 3 database with history keeps its change log and accepts inspections", arguments: TestBackend.available)
    func upgradeKeepsHistory(_ backend: TestBackend) async throws {
        let configuration = try await backend.freshConfiguration()
        let database = try await ServerServices.openDatabase(configuration, logger: Logger(label: "test"))
        #expect(try await Migrator.migrate(database, now: Date(), upTo: 3) == [1, 2, 3])
        let now = Date()
        try await database.write { db in
            try await db.execute("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 'Old Carrier', \(now))")
            for seq in 1...3 {
                try await db.execute("""
                    INSERT INTO change_log (tenant_id, seq, entity, entity_id, op, driver_id, dispatch_visible, payload, committed_at)
                    VALUES ('t1', \(seq), 'trip', \("trip-\(seq)"), 'upsert', NULL, 1, '{}', \(now))
                    """)
            }
        }
        #expect(try await Migrator.migrate(database, now: Date()) == Array(4...Migrator.latestVersion))
        let kept = try await database.read { try await $0.query("SELECT seq, entity_id FROM change_log ORDER BY seq") }
        #expect(try kept.map { try $0.string("entity_id") } == ["trip-1", "trip-2", "trip-3"])
        try await database.write { db in
            try await db.execute("""
                INSERT INTO change_log (tenant_id, seq, entity, entity_id, op, driver_id, dispatch_visible, payload, committed_at)
                VALUES ('t1', 4, 'inspection', 'i-1', 'upsert', NULL, 1, '{}', \(now))
                """)
        }
        await #expect(throws: (any Error).self) {
            try await database.write { db in
                try await db.execute("""
                    INSERT INTO change_log (tenant_id, seq, entity, entity_id, op, driver_id, dispatch_visible, payload, committed_at)
                    VALUES ('t1', 5, 'invoice', 'x', 'upsert', NULL, 1, '{}', \(now))
                    """)
            }
        }
        await database.close()
    }

    @Test("the schema rejects rows that break the rules", arguments: TestBackend.available)
    func schemaEnforcesRules(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let b = try await CarrierFixture.make(server, name: "Bravo", drivers: 1, tripsPerDriver: 1)
        let database = server.store.database
        let trip = a.trips[0][0]
        let now = Date()

        func rejected(_ sql: SQL) async -> DatabaseConstraintError? {
            do {
                try await database.write { try await $0.execute(sql) }
                return nil
            } catch let error as DatabaseConstraintError {
                return error
            } catch {
                Issue.record("expected a constraint error, got \(error)")
                return nil
            }
        }
        func isCheck(_ error: DatabaseConstraintError?) -> Bool { if case .check = error { true } else { false } }
        func isUnique(_ error: DatabaseConstraintError?) -> Bool { if case .unique = error { true } else { false } }
        func isForeignKey(_ error: DatabaseConstraintError?) -> Bool { if case .foreignKey = error { true } else { false } }
        func isNotNull(_ error: DatabaseConstraintError?) -> Bool { if case .notNull = error { true } else { false } }

        // Negative money, unknown statuses and categories.
        #expect(isCheck(await rejected("UPDATE trips SET revenue_cents = -1 WHERE id = \(trip.id)")))
        #expect(isCheck(await rejected("UPDATE orders SET status = 'lost' WHERE trip_id = \(trip.id)")))
        #expect(isCheck(await rejected("UPDATE trip_expenses SET category = 'snacks' WHERE trip_id = \(trip.id)")))
        #expect(isCheck(await rejected("UPDATE trip_expenses SET amount_cents = 0 WHERE trip_id = \(trip.id)")))
        // A delivered order must have been picked up; an assigned one needs a driver.
        #expect(isCheck(await rejected("UPDATE orders SET status = 'delivered' WHERE trip_id = \(trip.id)")))
        #expect(isCheck(await rejected("UPDATE orders SET driver_id = NULL WHERE trip_id = \(trip.id)")))
        // Trip numbers are unique within a carrier.
        #expect(isUnique(await rejected("""
            INSERT INTO trips (id, tenant_id, number, status, revenue_cents, driver_pay_cents, miles, created_at, updated_at, doc)
            VALUES (\(ID<Trip>()), \(a.tenant.id), \(trip.number), 'planned', 0, 0, 0, \(now), \(now), '{}')
            """)))
        // A row can never point at another carrier's row.
        #expect(isForeignKey(await rejected("UPDATE trips SET driver_id = \(b.driverID(0)) WHERE id = \(trip.id)")))
        #expect(isForeignKey(await rejected("""
            INSERT INTO trip_expenses (id, tenant_id, trip_id, category, amount_cents, expense_date, created_at, doc)
            VALUES (\(ID<Expense>()), \(b.tenant.id), \(trip.id), 'fuel', 100, '2026-01-01', \(now), '{}')
            """)))
        #expect(isNotNull(await rejected("UPDATE trips SET number = NULL WHERE id = \(trip.id)")))
        // Nothing was changed by the rejected writes.
        let after = try await server.store.trips.trip(trip.id, a.scope)
        #expect(after == trip)
        await database.close()
    }

    @Test("change log: every write gets the next number, in commit order, per carrier", arguments: TestBackend.available)
    func changeLogIsGapFree(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let b = try await CarrierFixture.make(server, name: "Bravo", drivers: 1, tripsPerDriver: 1)
        let store = server.store
        // 40 concurrent writes in two carriers.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                for carrier in [a, b] {
                    group.addTask {
                        _ = try await store.notifications.send(.init(driverID: carrier.driverID(0), type: .dispatchMessage,
                                                              title: "Message \(index)", body: "body"), tenant: carrier.tenant.id)
                    }
                }
            }
            try await group.waitForAll()
        }
        for carrier in [a, b] {
            let rows = try await store.database.read { db in
                try await db.query("SELECT seq FROM change_log WHERE tenant_id = \(carrier.tenant.id) ORDER BY seq")
            }
            let sequence = try rows.map { try $0.int64("seq") }
            #expect(sequence == Array(1...Int64(sequence.count)))
            let counter = try await store.database.read { try await $0.first("SELECT change_seq FROM tenants WHERE id = \(carrier.tenant.id)") }
            #expect(try counter?.int64("change_seq") == Int64(sequence.count))
        }
        await store.database.close()
    }

    @Test("a transaction's changes, more than one statement holds, are logged in the order recorded with every field",
          arguments: TestBackend.available)
    func largeTransactionIsLoggedInOrder(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let store = server.store
        let driver = a.driverID(0)
        let start = try await Self.changeCounter(a, store)
        let ids = (0..<(TenantTransaction.changesPerStatement * 2 + 1)).map { _ in ID<Expense>().rawValue }
        try await store.write(tenant: a.tenant.id) { tx in
            for (index, id) in ids.enumerated() {
                switch index % 3 {
                case 0: tx.recordUpsert(.expense, id: id, document: "{\"n\":\(index)}", visibleTo: driver)
                case 1: tx.recordDelete(.expense, id: id, visibleTo: nil)
                default: tx.recordRevoke(.expense, id: id, from: driver)
                }
            }
        }
        let rows = try await store.database.read { db in
            try await db.query("""
                SELECT seq, entity_id, op, driver_id, dispatch_visible, payload FROM change_log
                WHERE tenant_id = \(a.tenant.id) AND seq > \(start) ORDER BY seq
                """)
        }
        #expect(try rows.map { try $0.int64("seq") } == Array((start + 1)...(start + Int64(ids.count))))
        #expect(try rows.map { try $0.string("entity_id") } == ids)
        for (index, row) in rows.enumerated() {
            let expected: (op: String, driver: String?, dispatch: Int64, payload: String?) = switch index % 3 {
            case 0: ("upsert", driver.rawValue, 1, "{\"n\":\(index)}")
            case 1: ("delete", nil, 1, nil)
            default: ("delete", driver.rawValue, 0, nil)
            }
            #expect(try row.string("op") == expected.op)
            #expect(try row.optionalString("driver_id") == expected.driver)
            #expect(try row.int64("dispatch_visible") == expected.dispatch)
            #expect(try row.optionalString("payload") == expected.payload)
        }
        #expect(try await Self.changeCounter(a, store) == start + Int64(ids.count))
        await store.database.close()
    }

    static func changeCounter(_ carrier: CarrierFixture, _ store: Store) async throws -> Int64 {
        let row = try await store.database.read { try await $0.first("SELECT change_seq FROM tenants WHERE id = \(carrier.tenant.id)") }
        return try row?.int64("change_seq") ?? -1
    }

    @Test("a failed write leaves no rows and no change numbers behind", arguments: TestBackend.available)
    func failedWriteRollsBack(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let store = server.store
        let before = try await store.database.read { try await $0.first("SELECT change_seq FROM tenants WHERE id = \(a.tenant.id)") }
        // Creating a trip with a duplicate number fails after other work was done in the transaction.
        await #expect(throws: AppError.self) {
            _ = try await store.trips.create(.init(number: a.trips[0][0].number, driverID: a.driverID(0), origin: "x",
                                                 destination: "y", revenueCents: 1, miles: 1), tenant: a.tenant.id)
        }
        let after = try await store.database.read { try await $0.first("SELECT change_seq FROM tenants WHERE id = \(a.tenant.id)") }
        #expect(try before?.int64("change_seq") == after?.int64("change_seq"))
        #expect(try await store.trips.list(a.scope).count == 1)
        await store.database.close()
    }

    @Test("reads inside one snapshot agree with each other", arguments: TestBackend.available)
    func snapshotIsConsistent(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let store = server.store
        // While messages are being written, every snapshot sees exactly as many
        // notification changes in the log as the counter says.
        let writer = Task {
            for index in 0..<30 {
                _ = try await store.notifications.send(.init(driverID: a.driverID(0), type: .dispatchMessage, title: "m\(index)", body: ""),
                                                tenant: a.tenant.id)
            }
        }
        for _ in 0..<30 {
            let (counter, logged) = try await store.database.snapshot { db in
                let counter = try await db.first("SELECT change_seq FROM tenants WHERE id = \(a.tenant.id)")!.int64("change_seq")
                let logged = try await db.first("SELECT COUNT(*) AS n FROM change_log WHERE tenant_id = \(a.tenant.id)")!.int64("n")
                return (counter, logged)
            }
            #expect(counter == logged)
        }
        try await writer.value
        await store.database.close()
    }
}

/// Rows keep their wire JSON beside their columns; the two must agree after
/// every kind of write.
@Suite("Stored documents")
struct StoredDocumentTests {
    @Test("each row's document decodes to the row its columns describe", arguments: TestBackend.available)
    func documentsMatchColumns(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 2)
        let store = server.store
        let scope = carrier.scope
        // Exercise every write path: updates, reassignment, status changes, reads, deletes.
        let trip = carrier.trips[0][0]
        _ = try await store.trips.update(trip.id, .init(status: .inProgress, origin: "Elsewhere"), tenant: carrier.tenant.id)
        _ = try await store.trips.assign(carrier.trips[0][1].id, to: carrier.driverID(1), tenant: carrier.tenant.id)
        let order = carrier.orders[trip.id]![0]
        _ = try await store.orders.updateStatus(order.id, to: .pickedUp, occurredAt: nil, scope) // dispatch may record a pickup
        _ = try await store.orders.updateETA(carrier.orders[trip.id]![1].id, pickup: Date().addingTimeInterval(3600), delivery: nil, scope)
        _ = try await store.orders.assign(carrier.orders[carrier.trips[1][0].id]![0].id, .init(driverID: carrier.driverID(0)), tenant: carrier.tenant.id)
        let notification = try await store.notifications.list(scope)[0]
        _ = try await store.notifications.markRead(notification.id, .driver(tenant: carrier.tenant.id, driver: notification.driverID))

        let decoder = WireJSON.decoder()
        func check<T: Decodable & Equatable>(_ models: [T], _ page: DocumentPage) throws {
            #expect(!models.isEmpty)
            #expect(try decoder.decode([T].self, from: Data(page.array.utf8)) == models)
        }
        try check(try await store.trips.list(scope), try await store.trips.documents(scope, page: .all))
        try check(try await store.orders.list(scope), try await store.orders.documents(scope, page: .all))
        try check(try await store.notifications.list(scope, limit: 500), try await store.notifications.documents(scope, page: .all))
        try check(try await store.people.drivers(tenant: carrier.tenant.id), try await store.people.driverDocuments(tenant: carrier.tenant.id, page: .all))
        for trip in try await store.trips.list(scope) {
            try check(try await store.expenses.list(trip: trip.id, scope), try await store.expenses.documents(trip: trip.id, scope, page: .all))
        }
        await store.database.close()
    }
}
