@testable import DriverKit
import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// A problem at a stop reported from the phone with no signal: on the order
/// at once, refused where the server would refuse it, reaching dispatch once.
@Suite("Problems at a stop on the phone", .serialized)
@MainActor
struct StopProblemTests {
    @Test("offline, the driver reports keys missing at the pickup: on the order at once, a delivery problem refused before pickup, sent once on reconnect, dispatch reads it on the order and in the conversation")
    func offlineReport() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        let tenant = scene.carrier.tenant.id
        let order = scene.carrier.orders[scene.carrier.trips[0][0].id]![0]
        await app.syncNow()
        let model = OrderDetailViewModel(app: app, order: order.id)
        #expect(model.problemStop == .pickup && model.problemChoices.contains(.dryRun))

        await scene.live.stop()
        #expect(model.reportProblem(.keysMissing, note: "Dealer closed, keys in the office"))
        #expect(model.lastError == nil)
        try await eventually("on the order at once") { model.order?.problems.map(\.kind) == [.keysMissing] }
        #expect(model.reportedProblems.first?.hasPrefix("Keys missing at pickup: Dealer closed, keys in the office") == true)
        // What the server would refuse is refused on the phone: a delivery problem before the pickup.
        #expect(throws: LocalRejection.self) { try app.reportProblem(.waiting, at: .delivery, of: order.id) }
        #expect(try app.database.unsyncedCount() == 1)

        scene.server.clock.set(Date().addingTimeInterval(1))
        try await scene.live.start()
        await app.syncNow()
        try await eventually("sent") { try app.database.unsyncedCount() == 0 }
        await app.syncNow()  // again: nothing more is sent
        let seen = try await scene.server.store.orders.order(order.id, .dispatch(tenant: tenant))
        #expect(seen.problems.map(\.kind) == [.keysMissing] && seen.problems[0].note == "Dealer closed, keys in the office")
        let told = try await scene.server.store.conversations.conversation(with: scene.carrier.driverID(0), tenant: tenant)
        #expect(told.filter { $0.body.hasPrefix("Problem reported: Keys missing at pickup") }.count == 1)
        // The server's copy replaced the phone's: still one problem.
        try await eventually("the server's order") { model.order?.problems.count == 1 && model.order?.version == seen.version }
        await app.shutdown()
        await scene.live.stop()
    }
}
