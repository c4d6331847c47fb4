import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Exactly-once mutations: Idempotency-Key on REST, and the batch endpoint.
@Suite("Exactly-once mutations")
struct MutationTests {
    @Test("Idempotency-Key on device tokens and new drivers (writes outside the change log) applies once and replays, never a 500",
          arguments: TestBackend.available)
    func idempotencyOutsideTheLog(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        try await server.run { api in
            let token = carrier.driver.accessToken
            let register = RegisterDeviceTokenRequest(token: String(repeating: "ab", count: 32), platform: .ios)
            let key = UUID().uuidString
            let first = try await api.call(.registerDeviceToken, json: register, token: token, headers: ["Idempotency-Key": key])
            #expect((200..<300).contains(first.status), "\(first.status) \(first.text)")
            let again = try await api.call(.registerDeviceToken, json: register, token: token, headers: ["Idempotency-Key": key])
            #expect(again.status == first.status && again.headers[.init("Idempotent-Replayed")!] == "true", "\(again.text)")
            let removed = try await api.call(.removeDeviceToken, register.token, token: token, headers: ["Idempotency-Key": UUID().uuidString])
            #expect((200..<300).contains(removed.status), "\(removed.status) \(removed.text)")
            let invite = CreateDriverRequest(email: "new-driver@alpha.test", name: "New Driver", payType: .perMile, payRate: 60)
            let inviteKey = UUID().uuidString
            let created = try await api.call(.dispatchCreateDriver, json: invite, token: carrier.dispatcher.accessToken,
                                             headers: ["Idempotency-Key": inviteKey])
            #expect(created.status == 201, "\(created.text)")
            let replayed = try await api.call(.dispatchCreateDriver, json: invite, token: carrier.dispatcher.accessToken,
                                              headers: ["Idempotency-Key": inviteKey])
            #expect(replayed.status == 201 && replayed.body == created.body)
            #expect(try await server.store.people.drivers(tenant: carrier.tenant.id).filter { $0.email == "new-driver@alpha.test" }.count == 1)
        }
    }

    @Test("the same Idempotency-Key applies once and replays the answer", arguments: TestBackend.available)
    func restIdempotency(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        try await server.run { api in
            let token = carrier.driver.accessToken
            let key = UUID().uuidString
            let request = CreateExpenseRequest(tripID: trip.id, category: .tolls, amountCents: 650, date: LocalDate(Date()))
            let first = try await api.call(.createExpense, json: request, token: token, headers: ["Idempotency-Key": key])
            #expect(first.status == 201)
            let before = try await carrier.fingerprint(server)
            let again = try await api.call(.createExpense, json: request, token: token, headers: ["Idempotency-Key": key])
            #expect(again.status == 201)
            #expect(again.body == first.body)
            #expect(again.headers[.init("Idempotent-Replayed")!] == "true")
            #expect(try await carrier.fingerprint(server) == before)
            // Without the key, the same body is a second expense.
            #expect(try await api.call(.createExpense, json: request, token: token).status == 201)
            // The key with another request, and keys that are not UUIDs.
            var other = request
            other.amountCents = 1
            #expect(try await api.call(.createExpense, json: other, token: token, headers: ["Idempotency-Key": key]).errorCode
                    == "idempotency_key_reused")
            #expect(try await api.call(.createExpense, json: request, token: token, headers: ["Idempotency-Key": "abc"]).errorCode
                    == "invalid_parameter")
            // A request that failed stored nothing: retrying the key tries again.
            let order = carrier.orders[trip.id]![0]
            let failKey = UUID().uuidString
            let skip = UpdateOrderStatusRequest(status: .delivered)
            #expect(try await api.call(.updateOrderStatus, order.id.rawValue, json: skip, token: token,
                                       headers: ["Idempotency-Key": failKey]).errorCode == "invalid_transition")
            #expect(try await api.call(.updateOrderStatus, order.id.rawValue, json: skip, token: token,
                                       headers: ["Idempotency-Key": failKey]).errorCode == "invalid_transition")
        }
    }

    @Test("parallel requests with one key apply once", arguments: TestBackend.available)
    func parallelSameKey(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        // Ten connections, so the ten requests do reach the server at once (a client's connection pool would queue
        // some behind the others, and on a loaded machine time them out); each waits on the tests' wait scale.
        let live = try await LiveServer(server)
        let key = UUID().uuidString
        let request = CreateExpenseRequest(tripID: trip.id, category: .fuel, amountCents: 4_200, date: LocalDate(Date()), notes: "once")
        let body = Array(try WireJSON.encoder().encode(request))
        let headers = ["Authorization": "Bearer \(carrier.driver.accessToken)", "Content-Type": "application/json", "Idempotency-Key": key]
        let answers = try await withThrowingTaskGroup(of: RawHTTP.Answer.self) { group in
            for _ in 0..<10 {
                group.addTask { try await RawHTTP.request(port: live.port, "POST", Endpoint.createExpense.path(), headers: headers, body: body) }
            }
            return try await group.reduce(into: [RawHTTP.Answer]()) { $0.append($1) }
        }
        await live.stop()
        #expect(answers.allSatisfy { $0.status == 201 }, "\(answers.map(\.status))")
        #expect(Set(answers.map(\.body)).count == 1)
        let expenses = try await server.store.expenses.list(trip: trip.id, carrier.scope)
        #expect(expenses.filter { $0.notes == "once" }.count == 1)
    }

    @Test("a batch applies in order, rejects without blocking, and replays without changing anything", arguments: TestBackend.available)
    func batchReplay(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        let (first, second) = (carrier.orders[trip.id]![0], carrier.orders[trip.id]![1])
        let notification = try await server.store.notifications.list(.driver(tenant: carrier.tenant.id, driver: carrier.driverID(0)))[0]
        let expenseID = ID<Expense>()
        let skip = Mutation(.updateOrderStatus(.init(orderID: second.id, status: .delivered)))
        server.clock.advance(by: 600)  // the orders have existed ten minutes
        let pickedUpAt = server.clock.now.addingTimeInterval(-60)
        try await server.run { api in
            let token = carrier.driver.accessToken
            // The photos went up as files; the completion travels in the batch.
            let pickup = try await api.readyInspection(of: first.id, .pickup, token: token)
            let delivery = ID<Inspection>()
            let batch = MutationBatch([
                Mutation(.completeInspection(.init(inspectionID: pickup, occurredAt: pickedUpAt))),
                skip,
                Mutation(.updateOrderETA(.init(orderID: second.id, deliveryETA: server.clock.now.addingTimeInterval(7200))), dependsOn: [skip.id]),
                Mutation(.createExpense(.init(id: expenseID, tripID: trip.id, category: .fuel, amountCents: 9_999, date: LocalDate(Date())))),
                Mutation(.markNotificationRead(.init(notificationID: notification.id))),
                // Allowed because the completion before it picked the vehicle up.
                Mutation(.saveInspection(.init(inspectionID: delivery, inspection: SaveInspectionRequest(orderID: first.id, kind: .delivery)))),
            ])
            let results = try await api.call(.mutations, json: batch, token: token).decode(MutationBatchResult.self).results
            #expect(results.map(\.id) == batch.mutations.map(\.id))
            #expect(results.map(\.outcome) == [.applied, .rejected, .rejected, .applied, .applied, .applied])
            if case .inspection(let completed) = results[0].row { #expect(completed.completedAt != nil) } else { Issue.record("no row") }
            #expect(results[0].order?.status == .pickedUp)
            #expect(results[0].order?.actualPickupDate.map(WireTime.milliseconds) == WireTime.milliseconds(pickedUpAt))
            #expect(results[1].code == .invalidTransition)
            if case .order(let current) = results[1].row { #expect(current.status == .assigned) } else { Issue.record("no current row") }
            #expect(results[2].code == .dependencyFailed)
            #expect(results.allSatisfy { !$0.replayed })
            if case .inspection(let started) = results[5].row { #expect(started.kind == .delivery) } else { Issue.record("no row") }

            // The answer was lost; the client sends the same batch again.
            let before = try await carrier.fingerprint(server)
            let replay = try await api.call(.mutations, json: batch, token: token).decode(MutationBatchResult.self).results
            #expect(replay.map(\.outcome) == results.map(\.outcome))
            #expect(replay.filter { $0.outcome == .applied }.allSatisfy { $0.replayed })
            #expect(replay.filter { $0.outcome == .applied }.map(\.row) == results.filter { $0.outcome == .applied }.map(\.row))
            #expect(try await carrier.fingerprint(server) == before)

            // Batch limits.
            let tooMany = MutationBatch((0..<501).map { _ in Mutation(.markNotificationRead(.init(notificationID: notification.id))) })
            #expect(try await api.call(.mutations, json: tooMany, token: token).errorCode == "validation_failed")
            let duplicate = Mutation(.markNotificationRead(.init(notificationID: notification.id)))
            #expect(try await api.call(.mutations, json: MutationBatch([duplicate, duplicate]), token: token).errorCode == "validation_failed")
            #expect(try await api.call(.mutations, json: batch, token: carrier.dispatcher.accessToken).status == 403)
        }
    }

    @Test("a batch longer than one transaction: dependencies hold across the boundary, a refusal carries the row as the batch left it, the feed has each change once",
          arguments: TestBackend.available)
    func batchAcrossTransactions(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        let order = carrier.orders[trip.id]![0]
        let today = LocalDate(server.clock.now)
        let eta = server.clock.now.addingTimeInterval(3600)
        func expense(cents: Int = 100) -> Mutation {
            Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .tolls, amountCents: cents, date: today)))
        }
        let boundary = MutationService.mutationsPerTransaction
        // The driver set the pickup ETA, then edited it expecting a value it never had: refused.
        var mutations = [
            Mutation(.updateOrderETA(.init(orderID: order.id, pickupETA: eta, expected: ETAExpectation(pickupETA: .some(nil))))),
            Mutation(.updateOrderETA(.init(orderID: order.id, pickupETA: eta.addingTimeInterval(60),
                                           expected: ETAExpectation(pickupETA: .some(eta.addingTimeInterval(7200)))))),
        ]
        mutations += (mutations.count..<(boundary - 1)).map { _ in expense() }
        let refused = expense(cents: 0)  // the last of the first transaction
        mutations.append(refused)
        mutations.append(Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .fuel, amountCents: 1, date: today)),
                                  dependsOn: [refused.id]))  // the first of the second
        mutations += (0..<(boundary + 10)).map { _ in expense() }
        let batch = MutationBatch(mutations)

        let feedEnd = try await Self.feed(server, carrier, since: 0).cursor
        try await server.run { api in
            let token = carrier.driver.accessToken
            // Under the whole suite's load the server may answer 503 (its database check too slow to answer), as it may
            // any client: the driver app sends the same batch again after `retry_after`, and it applies once.
            var answer = try await api.call(.mutations, json: batch, token: token)
            for _ in 0..<3 where answer.status == 503 {
                try await Task.sleep(for: .seconds(2))
                answer = try await api.call(.mutations, json: batch, token: token)
            }
            let results = try answer.decode(MutationBatchResult.self).results
            #expect(results.map(\.id) == batch.mutations.map(\.id))
            let rejected = results.indices.filter { results[$0].outcome == .rejected }
            #expect(rejected == [1, boundary - 1, boundary], "\(rejected)")
            #expect(results[1].code == .conflict)
            #expect(results[boundary - 1].code == .validationFailed)
            #expect(results[boundary].code == .dependencyFailed)
            guard case .order(let truth) = results[1].row else { Issue.record("a refused edit carries the server's row"); return }
            #expect(truth.pickupETA.map(WireTime.milliseconds) == WireTime.milliseconds(eta), "the ETA the batch set before it")

            let applied = Set(batch.mutations.indices.filter { !rejected.contains($0) }.compactMap { Self.expenseID(batch.mutations[$0]) })
            let stored = Set(try await server.store.expenses.list(trip: trip.id, carrier.scope).map(\.id))
            #expect(applied.isSubset(of: stored))
            #expect(!stored.contains(Self.expenseID(refused)!))
            let page = try await Self.feed(server, carrier, since: feedEnd)
            #expect(page.changes.map(\.seq) == Array((feedEnd + 1)...page.cursor), "numbered without gaps")
            let announced = page.changes.filter { $0.entity == .expense }.compactMap { ID<Expense>($0.id) }
            #expect(announced.count == applied.count && Set(announced) == applied, "each applied expense once, nothing refused")
            #expect(page.changes.filter { $0.entity == .order }.count == 1)
            // Each entry names the mutation that made it (the device learns from it what was applied); entries made otherwise name none.
            let madeBy = Dictionary(uniqueKeysWithValues: batch.mutations.compactMap { mutation in
                Self.expenseID(mutation).map { ($0.rawValue, mutation.id.rawValue) }
            })
            #expect(page.changes.filter { $0.entity == .expense }.allSatisfy { madeBy[$0.id] == $0.mutationID })
            #expect(page.changes.first { $0.entity == .order }?.mutationID == batch.mutations[0].id.rawValue)
            #expect(try await Self.feed(server, carrier, since: 0).changes.filter { $0.seq <= feedEnd }.allSatisfy { $0.mutationID == nil })

            // Sent again: what applied replays, the refusals stand, the feed does not move.
            let replay = try await api.call(.mutations, json: batch, token: token).decode(MutationBatchResult.self).results
            #expect(replay.map(\.outcome) == results.map(\.outcome))
            #expect(replay.filter { $0.outcome == .applied }.allSatisfy { $0.replayed })
            #expect(try await Self.feed(server, carrier, since: page.cursor).changes.isEmpty)
        }
    }

    @Test("a mutation that changes nothing leaves one feed entry naming it, for its driver alone, with the row as it stands",
          arguments: TestBackend.available)
    func unchangedMutationIsAcknowledged(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let driverScope = Scope.driver(tenant: carrier.tenant.id, driver: carrier.driverID(0))
        let eta = server.clock.now.addingTimeInterval(3 * 86_400)
        let first = Mutation(.updateOrderETA(.init(orderID: order.id, deliveryETA: eta)))
        let again = Mutation(.updateOrderETA(.init(orderID: order.id, deliveryETA: eta)))
        try await server.run { api in
            let token = carrier.driver.accessToken
            _ = try await api.call(.mutations, json: MutationBatch([first]), token: token)
            let before = try await server.store.changeCounter(carrier.tenant.id).counter
            let results = try await api.call(.mutations, json: MutationBatch([again]), token: token).decode(MutationBatchResult.self).results
            #expect(results.map(\.outcome) == [.applied])
            let current = try await server.store.orders.order(order.id, carrier.scope)
            let mine = try await server.store.feed(since: before, limit: 100, driverScope).changes
            #expect(mine.map(\.mutationID) == [again.id.rawValue])
            #expect(mine.first.map { $0.entity == .order && $0.id == order.id.rawValue && $0.operation == .upsert } == true)
            let row = try mine.first?.document.map { try WireJSON.decoder().decode(Order.self, from: Data($0.utf8)) }
            #expect(row?.version == current.version)
            #expect(try await server.store.feed(since: before, limit: 100, carrier.scope).changes.isEmpty, "dispatch sees nothing")
        }
    }

    @Test("the same long batch sent four times at once applies each mutation once; an id reused for another change is refused on its own",
          arguments: TestBackend.available)
    func concurrentBatches(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        let today = LocalDate(server.clock.now)
        let batch = MutationBatch((0..<(MutationService.mutationsPerTransaction * 2 + 10)).map { index in
            Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .tolls, amountCents: 100 + index, date: today)))
        })
        let feedEnd = try await Self.feed(server, carrier, since: 0).cursor
        try await server.run(.live) { api in
            let token = carrier.driver.accessToken
            // Each waits for the others' claims of the same keys: on a loaded machine the four take a while,
            // longer than the test client's 20 s, so they go through a client that waits two minutes.
            let client = HTTPTestClient(baseURL: "http://127.0.0.1:\(try #require(api.port))")
            let answers = try await withThrowingTaskGroup(of: [MutationResult].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await client.send(.mutations, json: batch, token: token, timeout: .seconds(120)).decode(MutationBatchResult.self).results
                    }
                }
                return try await group.reduce(into: [[MutationResult]]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.map(\.id) == batch.mutations.map(\.id) && $0.allSatisfy { $0.outcome == .applied } })
            let freshCounts = batch.mutations.indices.map { index in answers.filter { !$0[index].replayed }.count }
            #expect(freshCounts.allSatisfy { $0 == 1 }, "each mutation applied in exactly one of the answers")
            let announced = try await Self.feed(server, carrier, since: feedEnd).changes.filter { $0.entity == .expense }.compactMap { ID<Expense>($0.id) }
            #expect(announced.count == batch.mutations.count && Set(announced) == Set(batch.mutations.compactMap(Self.expenseID)))

            // The id of an applied mutation, sent again for another change: that one is refused, the other applies.
            guard case .createExpense(var changed) = batch.mutations[5].payload else { return }
            changed.amountCents += 1
            let fresh = Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .fuel, amountCents: 7, date: today)))
            let mixed = try await api.call(.mutations, json: MutationBatch([Mutation(id: batch.mutations[5].id, .createExpense(changed)), fresh]),
                                           token: token).decode(MutationBatchResult.self).results
            #expect(mixed.map(\.outcome) == [.rejected, .applied])
            #expect(mixed.first?.code == .idempotencyKeyReused)
            #expect(try await server.store.expenses.list(trip: trip.id, carrier.scope).contains { $0.id == Self.expenseID(fresh) })
        }
    }

    static func expenseID(_ mutation: Mutation) -> ID<Expense>? {
        if case .createExpense(let request) = mutation.payload { return request.id }
        return nil
    }

    /// The carrier's feed as dispatch sees it, after `cursor`, all pages.
    static func feed(_ server: TestServer, _ carrier: CarrierFixture, since cursor: Int64) async throws -> (changes: [Store.FeedEntry], cursor: Int64) {
        var changes: [Store.FeedEntry] = []
        var position = cursor
        while true {
            let page = try await server.store.feed(since: position, limit: 1000, carrier.scope)
            changes += page.changes
            position = page.cursor
            if !page.hasMore { return (changes, position) }
        }
    }

    @Test("conflicts: a field someone else changed since base_version is not overwritten", arguments: TestBackend.available)
    func fieldLevelConflicts(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let base = order.version
        // Dispatch moves the pickup ETA after the driver last synced.
        let dispatchETA = server.clock.now.addingTimeInterval(3 * 3600)
        _ = try await server.store.orders.update(order.id, .init(pickupETA: dispatchETA), tenant: carrier.tenant.id)
        try await server.run { api in
            let token = carrier.driver.accessToken
            let mine = server.clock.now.addingTimeInterval(5 * 3600)
            let results = try await api.call(.mutations, json: MutationBatch([
                // Same field, different value: conflict, the server's value comes back.
                Mutation(.updateOrderETA(.init(orderID: order.id, pickupETA: mine)), baseVersion: base),
                // Another field dispatch did not touch: applied (field-level merge).
                Mutation(.updateOrderETA(.init(orderID: order.id, deliveryETA: mine)), baseVersion: base),
                // Status follows the state machine and the inspections, whatever the base version.
                Mutation(.updateOrderStatus(.init(orderID: order.id, status: .pickedUp)), baseVersion: base),
            ]), token: token).decode(MutationBatchResult.self).results
            #expect(results.map(\.outcome) == [.rejected, .applied, .rejected])
            #expect(results[0].code == .conflict)
            #expect(results[2].code == .inspectionRequired)
            guard case .order(let current) = results[0].row else { Issue.record("no row"); return }
            #expect(current.pickupETA.map(WireTime.milliseconds) == WireTime.milliseconds(dispatchETA))
            let final = try await server.store.orders.order(order.id, carrier.scope)
            #expect(final.pickupETA.map(WireTime.milliseconds) == WireTime.milliseconds(dispatchETA))
            #expect(final.deliveryETA.map(WireTime.milliseconds) == WireTime.milliseconds(mine))
            #expect(final.status == .assigned)
        }
    }

    @Test("a mutation the server fails on is answered on its own; the rest of the batch lands", arguments: TestBackend.available)
    func poisonMutationDoesNotBlockTheBatch(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        // A fault for one row only: inserting an expense noted "poison" fails inside the database.
        try await server.store.database.write { db in
            if db.dialect == .sqlite {
                try await db.execute("""
                    CREATE TRIGGER poison BEFORE INSERT ON trip_expenses WHEN NEW.notes = 'poison'
                    BEGIN SELECT RAISE(ABORT, 'simulated fault'); END
                    """)
            } else {
                try await db.execute("""
                    CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN IF NEW.notes = 'poison' THEN RAISE EXCEPTION 'simulated fault'; END IF; RETURN NEW; END $$
                    """)
                try await db.execute("CREATE TRIGGER poison BEFORE INSERT ON trip_expenses FOR EACH ROW EXECUTE FUNCTION poison()")
            }
        }
        let today = LocalDate(server.clock.now)
        let batch = MutationBatch([
            Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .fuel, amountCents: 100, date: today, notes: "poison"))),
            Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .tolls, amountCents: 200, date: today, notes: "fine"))),
        ])
        try await server.run { api in
            let answer = try await api.call(.mutations, json: batch, token: carrier.driver.accessToken)
            #expect(answer.status == 200, "\(answer.text)")
            let results = try answer.decode(MutationBatchResult.self).results
            #expect(results.map(\.outcome) == [.rejected, .applied])
            #expect(results.first?.code == .internalError)
        }
    }

    @Test("a driver's queued ETA edits follow each other (each expects what the one before set); dispatch's change in between is a conflict",
          arguments: TestBackend.available)
    func chainedETAEdits(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let (first, second, third) = (server.clock.now.addingTimeInterval(3600), server.clock.now.addingTimeInterval(7200),
                                      server.clock.now.addingTimeInterval(9000))
        @Sendable func edit(_ eta: Date, expecting saw: Date?) -> Mutation {
            Mutation(.updateOrderETA(.init(orderID: order.id, pickupETA: eta, expected: ETAExpectation(pickupETA: .some(saw)))))
        }
        try await server.run { api in
            let token = carrier.driver.accessToken
            // Offline, the driver changed the pickup ETA twice; both edits go in one batch.
            let batch = MutationBatch([edit(first, expecting: nil), edit(second, expecting: first)])
            let results = try await api.call(.mutations, json: batch, token: token).decode(MutationBatchResult.self).results
            #expect(results.map(\.outcome) == [.applied, .applied], "\(results)")
            #expect(try await server.store.orders.order(order.id, carrier.scope).pickupETA.map(WireTime.milliseconds) == WireTime.milliseconds(second))
            // Dispatch moves it; an edit that still expects the driver's last value is refused with the truth.
            _ = try await server.store.orders.update(order.id, UpdateOrderRequest(pickupETA: third), tenant: carrier.tenant.id)
            let stale = try await api.call(.mutations, json: MutationBatch([edit(first, expecting: second)]), token: token)
                .decode(MutationBatchResult.self).results
            #expect(stale.first?.outcome == .rejected && stale.first?.code == .conflict)
            if case .order(let truth) = stale.first?.row {
                #expect(truth.pickupETA.map(WireTime.milliseconds) == WireTime.milliseconds(third))
            } else {
                Issue.record("a refused edit carries the server's row")
            }
        }
    }
}
