import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// A driver's offline work meets a world that changed while it waited on the
/// phone: the server reconciles it instead of refusing it.
@Suite("Driver work reconciled")
struct ReconciledWorkTests {
    static func send(_ api: TestAPI, _ mutations: [Mutation], token: String) async throws -> [MutationResult] {
        let answer = try await api.call(.mutations, json: MutationBatch(mutations), token: token)
        #expect(answer.status == 200, "\(answer.text)")
        return try answer.decode(MutationBatchResult.self).results
    }

    @Test("an expense spent offline on a trip dispatch gave away since is kept, in the spender's name and marked; no one else can do it",
          arguments: TestBackend.available)
    func expenseAfterReassignment(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 3, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        let (alex, sam, jordan) = (carrier.drivers[0].accessToken, carrier.drivers[1].accessToken, carrier.drivers[2].accessToken)
        try await server.run { api in
            // Alex spent $301.17 with no signal; meanwhile dispatch gave the trip to Sam.
            _ = try await server.store.trips.assign(trip.id, to: carrier.driverID(1), tenant: carrier.tenant.id)
            let spent = Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .tolls, amountCents: 30_117,
                                                      date: LocalDate(server.clock.now), notes: "Bridge")))
            let results = try await Self.send(api, [spent], token: alex)
            #expect(results.map(\.outcome) == [.applied], "\(results)")
            guard case .expense(let kept)? = results.first?.row else { Issue.record("no expense row"); return }
            #expect(kept.driverID == carrier.driverID(0) && kept.afterReassignment && kept.tripID == trip.id)
            // Dispatch sees it on the trip, in Alex's name; Sam does not see Alex's money.
            let onTrip = try await server.store.expenses.list(trip: trip.id, carrier.scope)
            #expect(onTrip.contains { $0.id == kept.id && $0.afterReassignment })
            let samsList = try await api.call(.tripExpenses, trip.id.rawValue, token: sam)
            #expect(samsList.status == 200 && !samsList.text.contains(kept.id.rawValue))
            // The same change sent again (its answer lost) is the same expense, once.
            let replay = try await Self.send(api, [spent], token: alex)
            #expect(replay.first?.replayed == true)
            #expect(try await server.store.expenses.list(trip: trip.id, carrier.scope).filter { $0.id == kept.id }.count == 1)
            // Sent by another driver with the same id and content, it is not theirs to see.
            var copy = spent
            copy.id = ID()
            let sams = try await Self.send(api, [copy], token: sam)
            #expect(sams.first?.code == .notFound || sams.first?.code == .alreadyExists, "\(sams)")
            #expect(sams.first?.row == nil)
            // A day the trip was not Alex's (before it was given to him) is not his to put money on.
            let earlierDay = Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .tolls, amountCents: 100,
                                                           date: LocalDate(server.clock.now).adding(days: -3))))
            #expect(try await Self.send(api, [earlierDay], token: alex).first?.code == .notFound)
            // A driver who never held the trip cannot put money on it.
            let stranger = try await Self.send(api, [Mutation(.createExpense(.init(id: ID(), tripID: trip.id, category: .tolls,
                                                                                     amountCents: 100, date: LocalDate(server.clock.now))))],
                                               token: jordan)
            #expect(stranger.first?.code == .notFound)
            // Alex may delete his own expense there; Sam may not.
            let samDeletes = try await Self.send(api, [Mutation(.deleteExpense(.init(expenseID: kept.id)))], token: sam)
            #expect(samDeletes.first?.code == .notFound)
            let alexDeletes = try await Self.send(api, [Mutation(.deleteExpense(.init(expenseID: kept.id)))], token: alex)
            #expect(alexDeletes.first?.outcome == .applied)
        }
    }

    @Test("reassigning an order clears the previous driver's ETAs; the order's history keeps them", arguments: TestBackend.available)
    func reassignmentClearsETAs(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let eta = WireTime.date(milliseconds: WireTime.milliseconds(server.clock.now.addingTimeInterval(3 * 3600)))
        try await server.run { api in
            let set = try await api.call(.updateOrderETA, order.id.rawValue, json: UpdateETARequest(pickupETA: eta),
                                         token: carrier.driver.accessToken)
            #expect(set.status == 200, "\(set.text)")
            server.clock.advance(by: 60)
            let moved = try await server.store.orders.assign(order.id, AssignOrderRequest(tripID: carrier.trips[1][0].id), tenant: carrier.tenant.id)
            #expect(moved.driverID == carrier.driverID(1) && moved.pickupETA == nil && moved.deliveryETA == nil)
            let progress = try await api.call(.dispatchOrderProgress, order.id.rawValue, token: carrier.dispatcher.accessToken)
            #expect(progress.status == 200 && !progress.text.contains(WireTime.string(from: eta)), "\(progress.text)")
            // Sam's copy carries no ETA of Alex's.
            let samsOrder = try await api.call(.order, order.id.rawValue, token: carrier.drivers[1].accessToken).decode(Order.self)
            #expect(samsOrder.pickupETA == nil)
            let history = try await server.store.etaHistory(order.id, tenant: carrier.tenant.id)
            #expect(history.count == 2, "\(history)")
            #expect(history.first?.pickupETA == eta && history.first?.cleared == false)
            #expect(history.last?.cleared == true && history.last?.pickupETA == eta)
            #expect(history.last?.driverName == carrier.drivers[0].driver?.name)
        }
    }

    @Test("a read receipt keeps when the driver read (the phone's corrected time, within sent and now) and when it arrived",
          arguments: TestBackend.available)
    func readReceipts(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        func message(_ title: String) async throws -> DriverNotification {
            try await server.store.notifications.send(SendMessageRequest(driverID: carrier.driverID(0), type: .dispatchMessage, title: title, body: ""),
                                               tenant: carrier.tenant.id)
        }
        let late = try await message("Read in a dead zone")
        let ahead = try await message("Read on a phone whose clock runs ahead")
        let before = try await message("A clock far behind")
        let sentAt = server.clock.now
        server.clock.advance(by: 3 * 3600)
        let now = server.clock.now
        try await server.run { api in
            let token = try await api.signIn(carrier.driver.user.email, server: server).accessToken
            let readAt = sentAt.addingTimeInterval(300)
            let results = try await Self.send(api, [
                Mutation(.markNotificationRead(.init(notificationID: late.id, readAt: readAt))),
                Mutation(.markNotificationRead(.init(notificationID: ahead.id, readAt: now.addingTimeInterval(3600)))),
                Mutation(.markNotificationRead(.init(notificationID: before.id, readAt: sentAt.addingTimeInterval(-86_400)))),
            ], token: token)
            #expect(results.allSatisfy { $0.outcome == .applied })
            let stored = try await api.call(.notifications, token: token).decode(ListPage<DriverNotification>.self).items
            func find(_ id: ID<DriverNotification>) -> DriverNotification? { stored.first { $0.id == id } }
            #expect(find(late.id)?.readAt.map(WireTime.milliseconds) == WireTime.milliseconds(readAt))
            #expect(find(late.id)?.readReceivedAt.map(WireTime.milliseconds) == WireTime.milliseconds(now))
            #expect(find(ahead.id)?.readAt.map(WireTime.milliseconds) == WireTime.milliseconds(now))
            #expect(find(before.id)?.readAt.map(WireTime.milliseconds) == WireTime.milliseconds(before.createdAt))
            // The messages page says when dispatch learnt of a late read (and not for a read known at once).
            let sent = try await server.store.sentMessages(tenant: carrier.tenant.id, limit: 10)
            #expect(sent.first { $0.notification.id == late.id }.flatMap { ConsolePeoplePages.lateReceipt($0.notification) } != nil)
            #expect(sent.first { $0.notification.id == ahead.id }.flatMap { ConsolePeoplePages.lateReceipt($0.notification) } == nil)
        }
    }

    @Test("an expense created and deleted in one batch, never applied before, leaves no trace for dispatch; one applied before is deleted",
          arguments: TestBackend.available)
    func pairsThatCancelOut(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        let token = carrier.driver.accessToken
        let today = LocalDate(server.clock.now)
        try await server.run { api in
            let counter = try await server.store.changeCounter(carrier.tenant.id).counter
            let neverSent = ID<Expense>()
            let create = Mutation(.createExpense(.init(id: neverSent, tripID: trip.id, category: .fuel, amountCents: 5_000, date: today)))
            let delete = Mutation(.deleteExpense(.init(expenseID: neverSent)), dependsOn: [create.id])
            let results = try await Self.send(api, [create, delete], token: token)
            #expect(results.map(\.outcome) == [.applied, .applied], "\(results)")
            #expect(try await server.store.changeCounter(carrier.tenant.id).counter == counter, "the feed holds nothing of it")
            #expect(try await server.store.expenses.list(trip: trip.id, carrier.scope).allSatisfy { $0.id != neverSent })
            // Sent again (its answer lost), the pair replays and still changes nothing.
            let replay = try await Self.send(api, [create, delete], token: token)
            #expect(replay.allSatisfy { $0.outcome == .applied && $0.replayed })
            #expect(try await server.store.changeCounter(carrier.tenant.id).counter == counter)

            // A creation that did land earlier: the deletion in the pair deletes it for real.
            let landed = ID<Expense>()
            let first = Mutation(.createExpense(.init(id: landed, tripID: trip.id, category: .fuel, amountCents: 6_000, date: today)))
            #expect(try await Self.send(api, [first], token: token).first?.outcome == .applied)
            let again = try await Self.send(api, [first, Mutation(.deleteExpense(.init(expenseID: landed)), dependsOn: [first.id])], token: token)
            #expect(again.map(\.outcome) == [.applied, .applied] && again[0].replayed)
            #expect(try await server.store.expenses.list(trip: trip.id, carrier.scope).allSatisfy { $0.id != landed })

            // Only that shape cancels: a deletion before its creation, or one that waits on something else, is not a pair.
            let early = ID<Expense>(), second = ID<Expense>()
            let deleteFirst = try await Self.send(api, [
                Mutation(.deleteExpense(.init(expenseID: early))),
                Mutation(.createExpense(.init(id: early, tripID: trip.id, category: .tolls, amountCents: 700, date: today))),
            ], token: token)
            #expect(deleteFirst.map(\.outcome) == [.rejected, .applied])
            #expect(try await server.store.expenses.list(trip: trip.id, carrier.scope).contains { $0.id == early }, "the creation stands")
            let refusedBefore = Mutation(.updateOrderStatus(.init(orderID: carrier.orders[trip.id]![0].id, status: .delivered)))
            let creation = Mutation(.createExpense(.init(id: second, tripID: trip.id, category: .tolls, amountCents: 800, date: today)))
            let other = try await Self.send(api, [refusedBefore, creation,
                                                  Mutation(.deleteExpense(.init(expenseID: second)), dependsOn: [refusedBefore.id])], token: token)
            #expect(other.map(\.outcome) == [.rejected, .applied, .rejected])
            #expect(try await server.store.expenses.list(trip: trip.id, carrier.scope).contains { $0.id == second }, "applied means stored")
        }
    }

    @Test("a batch of positions answers what reached dispatch; fixes stamped ahead of the server's clock are left out and counted",
          arguments: TestBackend.available)
    func positionsAnswered(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let trip = carrier.trips[0][0]
        try await server.run { api in
            #expect(try await api.call(.dispatchUpdateTrip, trip.id.rawValue, json: UpdateTripRequest(status: .inProgress),
                                       token: carrier.dispatcher.accessToken).status == 200)
            let now = WireTime.date(milliseconds: WireTime.milliseconds(server.clock.now) / 1000 * 1000)
            let fixes = (0..<10).map { index in
                GeoPosition(latitude: 41.5, longitude: -88.1 + Double(index) * 0.001, accuracyMeters: 10,
                            recordedAt: now.addingTimeInterval(Double(index - 5) * 120))
            }
            let results = try await Self.send(api, [Mutation(.recordLocations(RecordLocationsRequest(id: ID(), fixes: fixes)))],
                                              token: carrier.driver.accessToken)
            #expect(results.first?.outcome == .applied)
            let positions = results.first?.positions
            // Fixes from 10 min ago to 8 min ahead, 2 min apart: up to +4 min is within the 5 a phone's clock may run ahead.
            #expect(positions?.stored == 8 && positions?.future == 2 && positions?.leftOut == 2, "\(String(describing: positions))")
        }
    }
}

extension ReconciledWorkTests {
    @Test("a phone's report of waiting work is bounded and checked, replaced by the next, cleared by a report of nothing, seen by dispatch",
          arguments: TestBackend.available)
    func deviceBacklogReports(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let token = carrier.driver.accessToken
        @Sendable func report(_ device: String = "phone-1", changes: Int = 1, files: Int = 0, bytes: Int64 = 0,
                    items: [DeviceBacklog.Item] = [.init(status: .waiting, what: "your pickup ETA for O-1", detail: "pickup Nov 30")]) -> DeviceBacklog {
            DeviceBacklog(deviceID: device, waitingChanges: changes, waitingFiles: files, fileBytes: bytes, oldestAt: nil, items: items)
        }
        try await server.run { api in
            for (bad, field) in [(report("not a device id!"), "device_id"), (report(changes: -1), "waiting_changes"),
                                 (report(files: Int.max), "waiting_files"), (report(bytes: -5), "file_bytes"),
                                 (report(items: Array(repeating: .init(status: .refused, what: "x"), count: 51)), "items"),
                                 (report(items: [.init(status: .waiting, what: String(repeating: "é", count: 301))]), "items[0].what"),
                                 (report(items: [.init(status: .waiting, what: "ok", reason: "a\u{0}b")]), "items[0].reason"),
                                 (report(items: [.init(status: .waiting, what: "ok", madeAt: Date().addingTimeInterval(86_400))]), "items[0].made_at")] {
                let answer = try await api.call(.reportDeviceBacklog, json: bad, token: token)
                #expect(answer.status == 422 && answer.error?.field == field, "\(field): \(answer.status) \(answer.text)")
            }
            #expect(try await api.call(.reportDeviceBacklog, json: report(), token: token).status == 204)
            #expect(try await api.call(.reportDeviceBacklog, json: report(changes: 3), token: token).status == 204)
            #expect(try await api.call(.reportDeviceBacklog, json: report(), token: carrier.dispatcher.accessToken).status == 403)
            let seen = try await api.call(.dispatchDeviceBacklogs, token: carrier.dispatcher.accessToken).decode(Items<ReportedBacklog>.self).items
            #expect(seen.count == 1 && seen[0].backlog.waitingChanges == 3 && seen[0].driverID == carrier.driverID(0))
            #expect(seen[0].backlog.items.first?.detail == "pickup Nov 30")
            #expect(ConsolePeoplePages.phoneWork(seen)?.summary == "3 waiting")
            // All of it arrived: the phone says so, and nothing is shown any more.
            #expect(try await api.call(.reportDeviceBacklog, json: report(changes: 0, items: []), token: token).status == 204)
            #expect(try await server.store.deviceBacklogs.reports(tenant: carrier.tenant.id).isEmpty)
            // A driver has a few phones: a flood of made-up ones keeps the newest three, never more.
            for index in 0..<12 {
                server.clock.advance(by: 1)
                #expect(try await api.call(.reportDeviceBacklog, json: report("phone-\(index)"), token: token).status == 204)
            }
            let phones = try await server.store.deviceBacklogs.reports(tenant: carrier.tenant.id).map(\.backlog.deviceID)
            #expect(phones == ["phone-11", "phone-10", "phone-9"], "\(phones)")
            // Text that turns a line around is refused by name; a report not renewed for a month is forgotten.
            let turned = report(items: [.init(status: .refused, what: "the \u{202E}ATE")])
            #expect(try await api.call(.reportDeviceBacklog, json: turned, token: token).error?.field == "items[0].what")
            server.clock.advance(by: DeviceBacklogService.backlogRetention + 60)
            #expect(try await server.store.deviceBacklogs.reports(tenant: carrier.tenant.id).isEmpty)
            try await server.store.deviceBacklogs.prune()
        }
    }
}

struct ListPage<T: Decodable>: Decodable {
    let items: [T]
}
