import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// `GET /v1/sync`: snapshots, pages and the gap-free feed.
@Suite("Change feed")
struct SyncFeedTests {
    /// Follows the feed from `cursor` until caught up; returns the changes and the new cursor.
    static func drain(_ api: TestAPI, token: String, from cursor: Int64, limit: Int = 500) async throws -> ([Change], Int64) {
        var cursor = cursor
        var changes: [Change] = []
        while true {
            let page = try await api.call(.sync, query: "since=\(cursor)&limit=\(limit)", token: token).decode(SyncPage.self)
            changes += page.changes
            cursor = page.cursor
            if !page.hasMore { return (changes, cursor) }
        }
    }

    /// A whole snapshot, page by page.
    static func snapshot(_ api: TestAPI, token: String, limit: Int) async throws -> (rows: [Change], cursor: Int64, pages: Int) {
        var rows: [Change] = []
        var query = "since=0&limit=\(limit)"
        var pages = 0
        while true {
            let page = try await api.call(.sync, query: query, token: token).decode(SyncPage.self)
            pages += 1
            #expect(page.reset == (pages == 1))
            rows += page.changes
            guard let after = page.snapshotAfter else { return (rows, page.cursor, pages) }
            query = "since=\(page.cursor)&snapshot_after=\(after)&limit=\(limit)"
        }
    }

    @Test("recording changes prepares the same statements each time: the SQLite writer's cache does not grow with every write")
    func writerStatementsStayFew() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let database = try #require(server.services.database as? SQLiteDatabase)
        func send(_ count: Int) async throws {
            for index in 0..<count {
                _ = try await server.store.notifications.send(.init(driverID: carrier.driverID(0), type: .dispatchMessage, title: "m\(index)", body: ""),
                                                       tenant: carrier.tenant.id)
            }
        }
        try await send(20)
        let settled = database.writerStatementCount
        try await send(200)
        #expect(database.writerStatementCount == settled)
    }

    @Test("a SQLite connection keeps the statements it uses prepared while statements of varying text come and go, and keeps at most its limit")
    func statementCacheKeepsWhatIsUsed() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("statements-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let connection = try SQLiteConnection(path: folder.appendingPathComponent("db.sqlite").path, readOnly: false, busyTimeout: .seconds(5),
                                              memoryMapBytes: 0)
        defer { connection.close() }
        _ = try connection.run("CREATE TABLE t (n INTEGER)")
        let hot: SQL = "SELECT COUNT(*) AS n FROM t WHERE n > \(1)"
        _ = try connection.run(hot)
        let before = connection.preparations
        // 1,000 statements each of a text of its own (as `IN` lists of every length are), the hot one between each.
        for length in 1...1_000 {
            _ = try connection.run("SELECT n FROM t WHERE n IN (\(unsafeRaw: (1...length).map(String.init).joined(separator: ", ")))")
            _ = try connection.run(hot)
            #expect(connection.cachedStatementCount <= SQLiteConnection.maxCachedStatements)
        }
        // Each varying statement prepared once; the hot one never again.
        #expect(connection.preparations - before == 1_000, "\(connection.preparations - before) preparations")
    }

    @Test("a driver's snapshot holds exactly their own rows, in one page or many", arguments: TestBackend.available)
    func snapshotContents(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 3)
        _ = try await CarrierFixture.make(server, name: "Bravo", drivers: 1, tripsPerDriver: 2)
        try await server.run { api in
            let token = a.drivers[0].accessToken
            let (whole, cursor, pages) = try await Self.snapshot(api, token: token, limit: 1000)
            #expect(pages == 1)
            let scope = Scope.driver(tenant: a.tenant.id, driver: a.driverID(0))
            let trips = try await server.store.trips.list(scope)
            let orders = try await server.store.orders.list(scope)
            let notifications = try await server.store.notifications.list(scope, limit: 1000)
            var expected: Set<String> = [a.driverID(0).rawValue]
            expected.formUnion(trips.map(\.id.rawValue) + orders.map(\.id.rawValue) + notifications.map(\.id.rawValue))
            expected.formUnion(trips.flatMap { a.expenses[$0.id]!.map(\.id.rawValue) })
            #expect(Set(whole.map(\.id)) == expected)
            #expect(whole.count == expected.count)
            #expect(whole.allSatisfy { $0.op == .upsert && $0.row != nil && $0.seq == cursor })
            let counter = try await server.store.changeCounter(a.tenant.id).counter
            #expect(cursor == counter)
            // The same snapshot in pages of 3.
            let (paged, pagedCursor, manyPages) = try await Self.snapshot(api, token: token, limit: 3)
            #expect(manyPages == (expected.count + 2) / 3)
            #expect(paged.map(\.id) == whole.map(\.id))
            #expect(pagedCursor == cursor)
            // A dispatcher's snapshot covers the whole carrier and nothing else.
            let dispatch = try await Self.snapshot(api, token: a.dispatcher.accessToken, limit: 7)
            let allTrips = try await server.store.trips.list(a.scope)
            #expect(Set(dispatch.rows.filter { $0.entity == .trip }.map(\.id)) == Set(allTrips.map(\.id.rawValue)))
            #expect(dispatch.rows.filter { $0.entity == .driver }.count == 2)
        }
    }

    @Test("changes after a cursor, in order; reassignment moves rows between drivers", arguments: TestBackend.available)
    func incrementalChanges(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        try await server.run { api in
            let first = a.drivers[0].accessToken, second = a.drivers[1].accessToken
            let (_, firstCursor, _) = try await Self.snapshot(api, token: first, limit: 500)
            let (_, secondCursor, _) = try await Self.snapshot(api, token: second, limit: 500)
            let trip = a.trips[0][0]
            _ = try await server.store.trips.assign(trip.id, to: a.driverID(1), tenant: a.tenant.id)

            let (lost, _) = try await Self.drain(api, token: first, from: firstCursor)
            // The first driver's device drops the trip and its orders; the expenses they recorded stay theirs.
            let moved = Set([trip.id.rawValue] + a.orders[trip.id]!.map(\.id.rawValue))
            let ownExpenses = Set(a.expenses[trip.id]!.map(\.id.rawValue))
            #expect(!ownExpenses.isEmpty)
            #expect(Set(lost.filter { $0.op == .delete }.map(\.id)) == moved)
            // Besides those, only the notification telling them the trip was taken off their list.
            let notes = lost.filter { $0.op == .upsert }
            #expect(notes.count == 1 && notes.allSatisfy { $0.entity == .notification })
            let (gained, _) = try await Self.drain(api, token: second, from: secondCursor)
            #expect(moved.isSubset(of: Set(gained.filter { $0.op == .upsert }.map(\.id))))
            // Another driver's amounts, notes and fuel never reach the new driver's device.
            #expect(ownExpenses.isDisjoint(with: Set(gained.map(\.id))))
            let listed = try await api.call(.tripExpenses, trip.id.rawValue, token: second)
            #expect(listed.status == 200 && !ownExpenses.contains { listed.text.contains($0) }, "\(listed.text)")
            #expect(gained.contains { $0.entity == .notification && { if case .notification(let n) = $0.row { n.type == .tripAssignment } else { false } }($0) })
            #expect(gained.map(\.seq) == gained.map(\.seq).sorted())
            // Small pages cover the same changes.
            let (paged, _) = try await Self.drain(api, token: second, from: secondCursor, limit: 2)
            #expect(paged == gained)
        }
    }

    @Test("a cursor older than the kept history, or ahead of the server, is cursor_expired", arguments: TestBackend.available)
    func cursorExpiry(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run { api in
            let token = a.driver.accessToken
            let counter = try await server.store.changeCounter(a.tenant.id).counter
            #expect(try await api.call(.sync, query: "since=\(counter + 5)", token: token).errorCode == "cursor_expired")
            server.clock.advance(by: 31 * 86_400)
            _ = try await server.store.notifications.send(.init(driverID: a.driverID(0), type: .dispatchMessage, title: "new", body: ""),
                                                   tenant: a.tenant.id)
            try await server.store.pruneChangeLog(olderThan: 30 * 86_400)
            let expired = try await api.call(.sync, query: "since=1", token: server.services.signIn(email: a.driver.user.email).accessToken)
            #expect(expired.status == 410)
            #expect(expired.errorCode == "cursor_expired")
            // From the floor on, the feed still works.
            let fresh = try await server.services.signIn(email: a.driver.user.email).accessToken
            let page = try await api.call(.sync, query: "since=\(counter)", token: fresh).decode(SyncPage.self)
            #expect(page.changes.map(\.seq) == [counter + 1])
            #expect(try await api.call(.sync, query: "since=-1", token: fresh).errorCode == "invalid_parameter")
        }
    }

    @Test("a full page ends between two mutations' entries, never inside one (unless one alone fills it)", arguments: TestBackend.available)
    func pageEndsBetweenMutations(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let start = try await server.store.changeCounter(a.tenant.id).counter
        let (first, second, third) = (ID<Mutation>(), ID<Mutation>(), ID<Mutation>())
        let made: [ID<Mutation>?] = [first, second, second, second, nil, third, third, third, third]
        try await server.store.database.write { db in
            for (offset, mutation) in made.enumerated() {
                try await db.execute("""
                    INSERT INTO change_log (tenant_id, seq, entity, entity_id, op, driver_id, dispatch_visible, payload, mutation_id, committed_at)
                    VALUES (\(a.tenant.id), \(start + 1 + Int64(offset)), 'expense', \(UUID().uuidString.lowercased()), 'delete', NULL, 1, NULL,
                            \(mutation?.rawValue), \(Date()))
                    """)
            }
            try await db.execute("UPDATE tenants SET change_seq = \(start + Int64(made.count)) WHERE id = \(a.tenant.id)")
        }
        var pages: [[String?]] = []
        var cursor = start
        while true {
            let page = try await server.store.feed(since: cursor, limit: 3, a.scope)
            pages.append(page.changes.map(\.mutationID))
            #expect(page.cursor == page.changes.last?.seq ?? cursor)
            cursor = page.cursor
            if !page.hasMore { break }
        }
        let (m1, m2, m3) = (first.rawValue, second.rawValue, third.rawValue)
        #expect(pages == [[m1], [m2, m2, m2], [nil], [m3, m3, m3], [m3]], "\(pages)")
    }

    @Test("8 concurrent writers × 500 writes: a follower sees every number once, in order", arguments: TestBackend.available)
    func concurrentWritersGapFree(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend) { $0.databasePoolSize = 12 }
        // Eight drivers: 500 messages each stays within what one driver may have unread (`NotificationService.maxUnreadMessages`).
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 8, tripsPerDriver: 0)
        let store = server.store
        let start = try await store.changeCounter(a.tenant.id).counter
        try await server.run { api in
            let token = a.dispatcher.accessToken
            let finished = Flag()
            let writers = Task {
                // Done also when a write fails: the follower below must not wait for ever.
                defer { Task { await finished.set() } }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<8 {
                        group.addTask {
                            for index in 0..<500 {
                                _ = try await store.notifications.send(.init(driverID: a.driverID(writer), type: .dispatchMessage,
                                                                      title: "w\(writer)-\(index)", body: ""), tenant: a.tenant.id)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            // Follow the feed while the writers run; stop once they are done and the feed is drained.
            var seen: [Int64] = []
            var cursor = start
            while true {
                let writersDone = await finished.value
                let page = try await api.call(.sync, query: "since=\(cursor)&limit=250", token: token).decode(SyncPage.self)
                seen += page.changes.map(\.seq)
                cursor = page.cursor
                if writersDone && !page.hasMore { break }
            }
            try await writers.value
            #expect(seen.count == 4000)
            #expect(seen == Array((start + 1)...(start + 4000)))
        }
    }
}

actor Flag {
    var value = false
    func set() { value = true }
}
