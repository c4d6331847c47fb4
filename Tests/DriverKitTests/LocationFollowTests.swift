@testable import DriverKit
import Foundation
import NIOConcurrencyHelpers
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// GPS runs only while it records something: not at launch, not off duty.
@Suite("Location only while a trip is under way", .serialized)
@MainActor
struct LocationFollowTests {
    /// Core Location's place (it cannot run here): counts each time positions
    /// are asked for and given up, and yields the fixes a test sends.
    final class WatchedProvider: LocationProvider {
        private struct State {
            var starts = 0
            var ends = 0
            var current: AsyncStream<GeoPosition>.Continuation?
        }
        private let state = NIOLockedValueBox(State())
        var starts: Int { state.withLockedValue { $0.starts } }
        var ends: Int { state.withLockedValue { $0.ends } }

        func positions() -> AsyncStream<GeoPosition> {
            AsyncStream { continuation in
                state.withLockedValue { $0.starts += 1; $0.current = continuation }
                continuation.onTermination = { [state] _ in state.withLockedValue { $0.ends += 1; $0.current = nil } }
            }
        }

        func send(_ fix: GeoPosition) { _ = state.withLockedValue { $0.current }?.yield(fix) }
        /// The positions stop on their own (Core Location gave up).
        func end() { state.withLockedValue { $0.current }?.finish() }
    }

    @Test("positions are asked for when a trip gets under way, given up when sharing is paused or the trip ends, and what was kept is queued")
    func followsTheTrip() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        let provider = WatchedProvider()
        let following = Task { await app.location.follow(provider) }

        try await Task.sleep(for: .milliseconds(300))
        #expect(provider.starts == 0 && !app.location.isGathering, "no trip under way: no GPS and no permission prompt")

        let trip = scene.carrier.trips[0][0]
        #expect(try app.startTrip(trip.id) != nil)
        try await eventually("positions asked for") { provider.starts == 1 && app.location.isGathering }
        provider.send(GeoPosition(latitude: 41.5, longitude: -88.1, accuracyMeters: 8, recordedAt: Date()))
        try await eventually("the fix kept") { app.location.counts.kept == 1 }

        try app.setLocationSharing(false)
        try await eventually("given up when paused") { provider.ends == 1 && !app.location.isGathering }
        #expect(app.location.counts.batches == 1, "the kept fix is queued, not lost")

        try app.setLocationSharing(true)
        try await eventually("asked for again") { provider.starts == 2 }
        // Positions that stop by themselves mid-trip are asked for again.
        app.location.restartDelay = .milliseconds(100)
        provider.end()
        try await eventually("asked for again after stopping") { provider.starts == 3 }

        // The dispatcher cancels the trip: the phone hears it and lets GPS go.
        _ = try await scene.server.store.trips.update(trip.id, UpdateTripRequest(status: .cancelled), tenant: scene.carrier.tenant.id)
        await app.syncNow()
        try await eventually("given up when no trip is under way") { provider.ends == 3 && !app.location.isGathering }
        try await Task.sleep(for: .milliseconds(300))
        #expect(provider.starts == 3)

        following.cancel()
        await following.value
        await app.shutdown()
        await scene.live.stop()
    }
}
