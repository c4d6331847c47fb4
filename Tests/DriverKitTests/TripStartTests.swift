@testable import DriverKit
import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The trip gets under way on the phone as it does on the server, with no
/// signal: the first pickup starts it, or the driver does; the road is
/// recorded from then on.
@Suite("Trips starting on the phone", .serialized)
@MainActor
struct TripStartTests {
    @Test("offline, the driver starts one trip and picks up on another: both are under way at once and positions are kept; on reconnect the server has both started, once")
    func offlineStart() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        let (first, second) = (scene.carrier.trips[0][0], scene.carrier.trips[0][1])
        #expect(!app.location.isRecording, "no trip under way yet")
        let fix = GeoPosition(latitude: 41.5, longitude: -88.1, accuracyMeters: 8, recordedAt: Date())
        #expect(try app.location.record(fix) == .notRecording)

        await scene.live.stop()
        let model = TripDetailViewModel(app: app, trip: first.id)
        #expect(model.state?.canStart == true && model.state?.progressNote?.contains("first pickup") == true)
        model.startTrip()
        #expect(model.lastError == nil)
        #expect(try app.database.trip(first.id)?.status == .inProgress)
        #expect(app.location.isRecording, "recording from the start, offline")
        #expect(try app.location.record(fix) == .kept)
        // Started already: nothing more is queued.
        #expect(try app.startTrip(first.id) == nil)
        // The other trip starts with its first pickup.
        try await app.inspectAndComplete(scene.carrier.orders[second.id]![0].id, .pickup)
        #expect(try app.database.trip(second.id)?.status == .inProgress)

        scene.server.clock.set(Date().addingTimeInterval(1))
        try await scene.live.start()
        await app.syncNow()
        try await eventually("everything synced") { try app.database.unsyncedCount() == 0 }
        let tenant = scene.carrier.tenant.id
        for trip in [first, second] {
            let stored = try await scene.server.store.trips.trip(trip.id, .dispatch(tenant: tenant))
            #expect(stored.status == .inProgress && stored.version == trip.version + 1, "\(stored)")
            // The trip a pickup started comes down the feed.
            await app.syncNow()
            let cached = try app.database.trip(trip.id)
            #expect(cached == stored, "\(String(describing: cached))")
        }
        // A cancelled trip is refused on the phone, nothing queued.
        _ = try await scene.server.store.trips.update(first.id, UpdateTripRequest(status: .cancelled), tenant: tenant)
        await app.syncNow()
        #expect(throws: LocalRejection.self) { try app.startTrip(first.id) }
        await app.shutdown()
        await scene.live.stop()
    }
}
