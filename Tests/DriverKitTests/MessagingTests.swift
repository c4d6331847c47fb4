@testable import DriverKit
import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The driver's side of the conversation with dispatch, with no signal:
/// written and answered on the phone at once, reaching dispatch once.
@Suite("Messages with dispatch on the phone", .serialized)
@MainActor
struct MessagingTests {
    @Test("offline, the driver writes about an order and answers an urgent message Got it: both show at once, reach dispatch exactly once on reconnect, and dispatch's read comes back")
    func offlineConversation() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        let tenant = scene.carrier.tenant.id
        let driver = scene.carrier.driverID(0)
        let order = scene.carrier.orders[scene.carrier.trips[0][0].id]![0]
        let urgent = try await scene.server.store.notifications.send(SendMessageRequest(
            driverID: driver, type: .urgent, title: "Road closed", body: "I-80 closed at exit 12"), tenant: tenant)
        await app.syncNow()
        let model = MessagesViewModel(app: app)
        let shown = try #require(model.state.sections.flatMap(\.rows).first { $0.id == urgent.id })
        #expect(model.canAcknowledge(shown.notification))

        await scene.live.stop()
        #expect(!model.send("   "), "nothing to send")
        #expect(model.lastError == "Write something to send.", "\(model.lastError ?? "")")
        #expect(model.send("Gate locked, waiting for the yard manager", order: order.id))
        model.acknowledge(urgent.id)
        #expect(model.lastError == nil)
        // On the phone at once (the screen follows the cache): the conversation, the Got it, the urgent message read.
        try await eventually("the conversation shown") {
            model.conversation.last?.from == .driver && model.conversation.first { $0.id == urgent.id.rawValue }?.acknowledgedAt != nil
        }
        let lines = model.conversation
        #expect(lines.last?.from == .driver && lines.last?.body == "Gate locked, waiting for the yard manager" && lines.last?.orderID == order.id)
        #expect(lines.first { $0.id == urgent.id.rawValue }?.acknowledgedAt != nil)
        #expect(!model.canAcknowledge(try #require(try app.database.notifications().first { $0.id == urgent.id })))
        #expect(try app.database.unsyncedCount() == 2)

        scene.server.clock.set(Date().addingTimeInterval(1))
        try await scene.live.start()
        await app.syncNow()
        try await eventually("sent") { try app.database.unsyncedCount() == 0 }
        await app.syncNow()  // again: nothing more is sent
        let server = try await scene.server.store.conversations.conversation(with: driver, tenant: tenant)
        #expect(server.filter { $0.from == .driver }.count == 1)
        #expect(server.first { $0.id == urgent.id.rawValue }?.acknowledgedAt != nil)
        // Dispatch opens the conversation: the phone shows the message read.
        try await scene.server.store.conversations.markRead(driver: driver, tenant: tenant)
        await app.syncNow()
        try await eventually("read by dispatch") { model.conversation.last { $0.from == .driver }?.readAt != nil }
        await app.shutdown()
        await scene.live.stop()
    }
}
