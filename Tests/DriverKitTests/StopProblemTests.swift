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
        let photo = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID()).jpg")
        try Data(MediaSamples.jpeg(size: 4096)).write(to: photo)
        defer { try? FileManager.default.removeItem(at: photo) }
        #expect(await model.reportProblem(.keysMissing, note: "Dealer closed, keys in the office", photos: [photo]))
        // A photo with a message too.
        let messages = MessagesViewModel(app: app)
        #expect(await messages.send("The office is this one", order: order.id, photos: [photo]))
        #expect(model.lastError == nil)
        try await eventually("on the order at once") { model.order?.problems.map(\.kind) == [.keysMissing] }
        #expect(model.reportedProblems.first?.hasPrefix("Keys missing at pickup: Dealer closed, keys in the office") == true)
        // What the server would refuse is refused on the phone: a delivery problem before the pickup.
        await #expect(throws: LocalRejection.self) { try await app.reportProblem(.waiting, at: .delivery, of: order.id) }
        #expect(try app.database.unsyncedCount() == 4, "the report, the message and their photos")
        #expect(try app.database.uploads().map(\.about).sorted() == ["message photo", "problem photo"])

        scene.server.clock.set(Date().addingTimeInterval(1))
        try await scene.live.start()
        await app.syncNow()
        try await eventually("sent, photos too") {
            try app.database.unsyncedCount() == 0 && app.database.uploads().allSatisfy { $0.status == .completed }
        }
        await app.syncNow()  // again: nothing more is sent
        let seen = try await scene.server.store.orders.order(order.id, .dispatch(tenant: tenant))
        #expect(seen.problems.map(\.kind) == [.keysMissing] && seen.problems[0].note == "Dealer closed, keys in the office")
        #expect(seen.problems[0].photos.count == 1 && seen.problems[0].photos[0].sizeBytes == 4096)
        let told = try await scene.server.store.conversations.conversation(with: scene.carrier.driverID(0), tenant: tenant)
        #expect(told.filter { $0.body.hasPrefix("Problem reported: Keys missing at pickup") }.count == 1)
        #expect(told.first { $0.body == "The office is this one" }?.photos.count == 1)
        // The server's copy replaced the phone's: still one problem.
        try await eventually("the server's order") { model.order?.problems.count == 1 && model.order?.version == seen.version }
        #expect(model.order?.problems.first?.photos.count == 1)
        await app.shutdown()
        await scene.live.stop()
    }
}
