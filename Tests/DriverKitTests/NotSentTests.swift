@testable import DriverKit
import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// "Not sent yet": what has not reached dispatch, and the driver's word on it.
@Suite("Not sent yet", .serialized)
@MainActor
struct NotSentTests {
    @Test("a refused change is dismissed; a kept inspection is exported with its photo, then dropped after a warning that says so")
    func refusedAndKept() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let model = NotSentViewModel(app: app)
        #expect(model.rows.isEmpty && model.emptyMessage == "Everything has reached dispatch.")

        // Refused: dispatch moved the ETA while the phone was offline.
        let (first, second) = (carrier.orders[carrier.trips[0][0].id]![0], carrier.orders[carrier.trips[0][0].id]![1])
        await live.stop()
        try app.submitETA(first.id, pickup: server.clock.now.addingTimeInterval(3600))
        _ = try await server.store.orders.update(first.id, UpdateOrderRequest(pickupETA: server.clock.now.addingTimeInterval(9000)),
                                                 tenant: carrier.tenant.id)
        // Kept: the second order goes to another driver with a photo of it still on the phone.
        let inspection = try app.startInspection(order: second.id, kind: .pickup)
        try await live.start()
        await app.syncNow()
        await live.stop()
        try await app.attach(try InspectionTests.write(MediaSamples.jpeg(), name: "front.jpg"), to: inspection, slot: .front)
        _ = try await server.store.orders.assign(second.id, .init(driverID: carrier.driverID(1)), tenant: carrier.tenant.id)
        try await live.start()
        await app.syncNow()
        try await eventually("refused and kept") { model.rows.count == 2 }

        let refused = try #require(model.rows.first { if case .change = $0.target { true } else { false } })
        #expect(refused.failed && refused.why.contains("dispatch") || refused.why.lowercased().contains("changed"), "\(refused)")
        #expect(refused.actions == [.discard(warning: "Dismiss this? Dispatch refused it, so it was never applied.")])
        let kept = try #require(model.rows.first { if case .keptInspection = $0.target { true } else { false } })
        #expect(kept.title == "The \(second.number) pickup inspection, 1 file" && kept.why.contains("another driver"), "\(kept)")
        #expect(kept.actions.first == .export)
        guard case .discard(let warning)? = kept.actions.last else { Issue.record("no discard"); return }
        #expect(warning == "Drop the \(second.number) pickup inspection and its 1 file for good? Export it first to keep a copy.")

        let exported = model.export(kept)
        #expect(exported.map(\.lastPathComponent) == ["front.jpg", "inspection.json"] && model.lastError == nil)
        let keptFile = try #require(try app.evidence().first?.files.first)
        #expect(try Data(contentsOf: exported[0]) == Data(contentsOf: URL(fileURLWithPath: keptFile.path)))
        let manifest = try String(contentsOf: exported[1], encoding: .utf8)
        #expect(manifest.contains(inspection.rawValue) && manifest.contains("another driver"))

        await model.discard(refused)
        await model.discard(kept)
        #expect(model.rows.isEmpty && model.lastError == nil)
        #expect(try app.evidence().isEmpty && app.database.atStakeCount() == 0)
        await app.shutdown()
        await live.stop()
    }
}
