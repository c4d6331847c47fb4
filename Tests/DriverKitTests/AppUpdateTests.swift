@testable import DriverKit
import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// A server that no longer serves an old app: the phone shows "Update the
/// app" and keeps everything it has queued; the updated app sends it once.
@Suite("An app too old for the server", .serialized)
@MainActor
struct AppUpdateTests {
    @Test("the server restarts accepting 2.0 and later: a 1.9 phone is told to update and keeps its queued message; updated, it sends it exactly once")
    func updateRequired() async throws {
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, appVersion: AppVersion("1.9")) }
        let app = scene.app
        #expect(app.router.route == .main && !app.status.updateRequired)

        await scene.live.stop()
        try await scene.live.start { $0.minimumAppVersion = AppVersion("2.0") }
        _ = try app.sendMessage("Running late at the auction")
        await app.syncNow()
        try await eventually("told to update") { app.status.updateRequired }
        #expect(app.router.route == .updateRequired)
        #expect(app.status.requiredAppVersion == AppVersion("2.0"))
        #expect(app.status.updateMessage.contains("Update the app to version 2.0 or later"))
        // Nothing queued was refused or dropped: it waits.
        #expect(app.status.failed.isEmpty)
        #expect(try app.database.unsyncedCount() == 1)
        let tenant = scene.carrier.tenant.id
        let driver = scene.carrier.driverID(0)
        #expect(try await scene.server.store.conversations.conversation(with: driver, tenant: tenant).isEmpty)
        await app.shutdown()

        // The updated app on the same phone (same state folder).
        let updated = try DriverDevice.make(server: scene.live, stateDirectory: scene.device.stateDirectory, appVersion: AppVersion("2.0.1"))
        await updated.app.syncNow()
        try await eventually("sent") { try updated.app.database.unsyncedCount() == 0 }
        await updated.app.syncNow()
        #expect(!updated.app.status.updateRequired && updated.app.router.route != .updateRequired)
        let told = try await scene.server.store.conversations.conversation(with: driver, tenant: tenant)
        #expect(told.filter { $0.body == "Running late at the auction" }.count == 1)
        await updated.app.shutdown()
        await scene.live.stop()
    }
}
