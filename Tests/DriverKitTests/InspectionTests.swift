import Crypto
@testable import DriverKit
import Foundation
import NIOConcurrencyHelpers
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// Counts the file bytes each upload request carries, and can stop
/// answering after a number of chunks (the app is killed mid-upload).
final class UploadCountingTransport: HTTPTransport, Sendable {
    let real = AsyncHTTPTransport()
    private let state = NIOLockedValueBox<(patchBytes: Int, patches: Int, dieAfter: Int?)>((0, 0, nil))

    var patchBytes: Int { state.withLockedValue { $0.patchBytes } }
    func die(afterPatches count: Int) { state.withLockedValue { $0.dieAfter = count } }

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        if request.method == "PATCH" {
            let dead = state.withLockedValue { state -> Bool in
                if let limit = state.dieAfter, state.patches >= limit { return true }
                state.patches += 1
                state.patchBytes += request.body?.count ?? 0
                return false
            }
            if dead { throw TransportError(description: "the app was killed (test)") }
        }
        return try await real.send(request)
    }
}

/// A network that is always up: for stepping the upload queue by hand.
struct AlwaysOnline: NetworkMonitor {
    let state = NetworkState(online: true)
    var isOnline: Bool { true }
    func changes() -> AsyncStream<Bool> { state.changes() }
    func reportSuccess() {}
    func reportFailure() {}
}

@Suite("Inspections in DriverKit")
@MainActor
struct InspectionTests {
    static func hex(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    static func write(_ bytes: [UInt8], name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-\(UUID().uuidString.prefix(8))-\(name)")
        try Data(bytes).write(to: url)
        return url
    }

    @Test("an inspection made offline — photos, video, damage, no customer — uploads when the server returns and completes after its files")
    func offlineInspection() async throws {
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, uploadChunkSize: 256 << 10) }
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        await live.stop()

        // In the yard with no signal.
        let inspection = try app.startInspection(order: order.id, kind: .pickup)
        try app.updateInspection(inspection, odometer: 48_210,
                                 damages: [Damage(location: "rear_bumper", type: .dent, severity: .moderate, note: "fist-sized")],
                                 customerUnavailable: true)
        // The gate clerk's name in print, for the bill of lading: kept on the phone at once, spacing as stored.
        try app.updateInspection(inspection, signerName: "  Pat   Gate ")
        #expect(try app.database.inspection(inspection)?.signerName == "Pat   Gate")
        #expect(throws: LocalRejection.self) { try app.updateInspection(inspection, signerName: "Pat\nGate") }
        // A direction mark an Arabic or Hebrew keyboard slips in is refused here as the server refuses it, never sent to be refused there.
        #expect(throws: LocalRejection.self) { try app.updateInspection(inspection, signerName: "Yusuf \u{200F}Al-Amin") }
        #expect(throws: LocalRejection.self) { try app.completeInspection(inspection) }
        var files: [MediaSlot: URL] = [:]
        for slot in MediaSlot.requiredPhotos { files[slot] = try Self.write(MediaSamples.jpeg(size: 40_000), name: "\(slot).jpg") }
        files[.walkthrough] = try Self.write(MediaSamples.mp4(size: 1_500_000), name: "walk.mp4")
        for (slot, file) in files { try await app.attach(file, to: inspection, slot: slot) }
        // The camera's files may go away: the queue kept its own copies.
        let originals = try files.mapValues { Self.hex(try Data(contentsOf: $0)) }
        for file in files.values { try FileManager.default.removeItem(at: file) }
        try app.completeInspection(inspection)
        #expect(try app.database.inspection(inspection)?.completedAt != nil)
        #expect(try app.database.pendingUploadCount() == 7)
        let queued = try app.database.outbox().count
        try await eventually("the sync status shows the waiting files") {
            app.status.pendingUploads.count == 7 && app.status.unsyncedCount == 7 + queued
        }
        await #expect(throws: AuthError.self) { try await app.auth.logout() }

        // Back in coverage.
        try await live.start()
        await app.syncNow()
        try await eventually("every file uploaded", timeout: .seconds(60)) {
            try app.database.uploads().allSatisfy { $0.status == .completed }
        }
        try await waitUntil("the completion reached the server", timeout: .seconds(60)) {
            try await server.store.inspections.inspection(inspection, carrier.scope).completedAt != nil
        }
        let stored = try await server.store.inspections.inspection(inspection, carrier.scope)
        #expect(stored.odometer == 48_210 && stored.customerUnavailable && stored.damages.count == 1 && stored.signerName == "Pat Gate")
        #expect(Dictionary(uniqueKeysWithValues: stored.media.map { ($0.slot, $0.sha256) }) == originals)
        try await eventually("the server's inspection in the cache") {
            try app.database.inspection(inspection)?.media.count == 7
        }
        try await eventually("nothing left to sync") { try app.database.unsyncedCount() == 0 }
        await app.shutdown()
        await live.stop()
    }

    @Test("an order taken away mid-inspection leaves the device, but a photo not yet sent stays as evidence until the driver drops it")
    func reassignedMidInspection() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, device, app) = (scene.server, scene.carrier, scene.live, scene.device, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let inspection = try app.startInspection(order: order.id, kind: .pickup)
        await app.syncNow()
        await live.stop()
        try await app.attach(try Self.write(MediaSamples.jpeg(), name: "front.jpg"), to: inspection, slot: .front)
        #expect(try app.database.unsyncedCount() == 1)
        _ = try await server.store.orders.assign(order.id, .init(driverID: carrier.driverID(1)), tenant: carrier.tenant.id)

        try await live.start()
        await app.syncNow()
        try await eventually("the order and its inspection left the device") {
            try app.database.order(order.id) == nil && app.database.inspection(inspection) == nil
        }
        // The photo is evidence of the vehicle's condition: kept, never silently deleted; not waiting to go,
        // but signing out would lose it, so the warning names it.
        let held = try #require(try app.evidence().first)
        #expect(held.id == inspection && held.reason.contains("another driver") && held.files.count == 1)
        #expect(try app.database.unsyncedCount() == 0)
        #expect(try app.database.atStake() == "the \(order.number) pickup inspection kept on this phone")
        await #expect(throws: AuthError.self) { try await app.auth.logout() }
        // It survives a restart of the app.
        await app.shutdown()
        let restarted = try DriverDevice.make(server: live, stateDirectory: device.stateDirectory)
        restarted.app.launch()
        try await Task.sleep(for: .milliseconds(300))
        #expect(FileManager.default.fileExists(atPath: held.files[0].path))
        // Only the driver's word drops it.
        try restarted.app.discardEvidence(inspection)
        #expect(try restarted.app.database.unsyncedCount() == 0)
        #expect(!FileManager.default.fileExists(atPath: held.files[0].path))
        await restarted.app.shutdown()
        await live.stop()
    }

    @Test("the order comes back: the inspection the server kept is finished on the device; the photo kept as evidence stays kept and does not hold the completion")
    func orderBackAfterEvidence() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let inspection = try await Self.keptAsEvidence(order.id, scene, offlineOdometer: 48_210)

        // Dispatch gives the order back; the server still has the inspection the driver started.
        _ = try await server.store.orders.assign(order.id, .init(driverID: carrier.driverID(0)), tenant: carrier.tenant.id)
        await app.syncNow()
        try await eventually("the order is back") { try app.database.order(order.id) != nil }
        let resumed = try app.startInspection(order: order.id, kind: .pickup)
        #expect(resumed == inspection)
        try await Self.finishPickup(resumed, scene)
        // The photo and the odometer from while the order was away are the driver's to export or drop, not sent on their own.
        let stored = try await server.store.inspections.inspection(resumed, carrier.scope)
        #expect(!stored.media.contains { $0.slot == "interior" } && stored.odometer == nil)
        #expect(try app.evidence().first?.files.map(\.slot) == ["interior"])
        // Dropping the evidence leaves the inspection's own files alone.
        try app.discardEvidence(resumed)
        #expect(try app.database.uploads(inspection: resumed).count == 7)
        #expect(try app.database.outbox().filter(\.isUnsynced).isEmpty)
        await app.shutdown()
        await live.stop()
    }

    @Test("the order comes back after another driver changed its inspection: the device's kept photo stays evidence and does not hold the completion")
    func orderBackChangedMeanwhile() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let inspection = try await Self.keptAsEvidence(order.id, scene)
        // The other driver notes the odometer; then dispatch gives the order back.
        _ = try await server.store.inspections.save(inspection, SaveInspectionRequest(orderID: order.id, kind: .pickup, odometer: 51_000),
                                                  .driver(tenant: carrier.tenant.id, driver: carrier.driverID(1)))
        _ = try await server.store.orders.assign(order.id, .init(driverID: carrier.driverID(0)), tenant: carrier.tenant.id)
        await app.syncNow()
        try await eventually("the order is back") { try app.database.inspection(inspection)?.odometer == 51_000 }
        #expect(try app.evidence().first?.id == inspection)

        try await Self.finishPickup(inspection, scene)
        let stored = try await server.store.inspections.inspection(inspection, carrier.scope)
        #expect(stored.odometer == 51_000 && !stored.media.contains { $0.slot == "interior" })
        #expect(try app.evidence().first?.files.count == 1)
        await app.shutdown()
        await live.stop()
    }

    /// The driver starts the pickup inspection, takes an interior photo (and notes the odometer) offline,
    /// and the order goes to driver 1 meanwhile: the device keeps the inspection as evidence.
    private static func keptAsEvidence(_ order: ID<Order>, _ scene: DriverScene, offlineOdometer: Int? = nil) async throws -> ID<Inspection> {
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let inspection = try app.startInspection(order: order, kind: .pickup)
        await app.syncNow()
        await live.stop()
        try await app.attach(try write(MediaSamples.jpeg(), name: "interior.jpg"), to: inspection, slot: "interior")
        if let offlineOdometer { try app.updateInspection(inspection, odometer: offlineOdometer) }
        _ = try await server.store.orders.assign(order, .init(driverID: carrier.driverID(1)), tenant: carrier.tenant.id)
        try await live.start()
        await app.syncNow()
        try await eventually("the photo kept as evidence") { try app.evidence().first?.id == inspection }
        return inspection
    }

    /// Takes the required photos and the walkthrough, marks the customer not there, completes, and waits for the server to have it.
    private static func finishPickup(_ inspection: ID<Inspection>, _ scene: DriverScene) async throws {
        let (server, carrier, app) = (scene.server, scene.carrier, scene.app)
        for slot in MediaSlot.requiredPhotos {
            try await app.attach(try write(MediaSamples.jpeg(size: 20_000), name: "\(slot).jpg"), to: inspection, slot: slot)
        }
        try await app.attach(try write(MediaSamples.mp4(size: 200_000), name: "walk.mp4"), to: inspection, slot: .walkthrough)
        try app.updateInspection(inspection, customerUnavailable: true)
        try app.completeInspection(inspection)
        try await waitUntil("the completion reached the server", timeout: .seconds(60)) {
            await app.syncNow()
            return try await server.store.inspections.inspection(inspection, carrier.scope).completedAt != nil
        }
    }

    @Test("a file the server refuses fails with its reason, stays unsynced until the driver discards it, and a retaken photo completes the pickup")
    func refusedFile() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, live, app) = (scene.server, scene.carrier, scene.live, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let inspection = try app.startInspection(order: order.id, kind: .pickup)
        try app.updateInspection(inspection, customerUnavailable: true)
        await app.syncNow()
        // A document scanned into the front slot: not a photo.
        let wrong = try await app.attach(try Self.write(MediaSamples.pdf(), name: "front.pdf"), to: inspection, slot: .front)
        try await eventually("refused") { try app.database.uploads().first { $0.id == wrong.id }?.status == .failed }
        let reason = try app.database.uploads().first { $0.id == wrong.id }?.lastError ?? ""
        #expect(reason.contains("takes a JPEG, PNG or HEIC photo"), "\(reason)")
        #expect(try app.database.unsyncedCount() == 1, "a refused file is not dropped silently")
        await #expect(throws: AuthError.self) { try await app.auth.logout() }
        await #expect(throws: LocalRejection.self) { try await app.discardUpload("no-such-file") }

        try await app.discardUpload(wrong.id)
        #expect(try app.database.unsyncedCount() == 0)
        #expect(!FileManager.default.fileExists(atPath: wrong.path), "the app's copy is deleted")
        for slot in MediaSlot.requiredPhotos {
            try await app.attach(try Self.write(MediaSamples.jpeg(), name: "\(slot).jpg"), to: inspection, slot: slot)
        }
        try app.completeInspection(inspection)
        try await waitUntil("picked up on the server", timeout: .seconds(60)) {
            try await server.store.orders.order(order.id, carrier.scope).status == .pickedUp
        }
        await app.shutdown()
        await live.stop()
    }

    @Test("a file sent by another process on the device stays sent: that process's late failure (the copy it read deleted once done) is ignored")
    func finishedUploadStaysFinished() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        await app.uploads.stop()
        let order = scene.carrier.orders[scene.carrier.trips[0][0].id]![0]
        let inspection = try app.startInspection(order: order.id, kind: .pickup)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("photo-\(UUID().uuidString.prefix(8)).jpg")
        try Data(MediaSamples.jpeg(size: 1024)).write(to: file)
        let item = try await app.attach(file, to: inspection, slot: .front)
        try app.database.updateUpload(item.id, status: .completed, sentBytes: item.size, lastError: .some(nil))
        try app.database.updateUpload(item.id, status: .failed, lastError: .some("The file doesn’t exist."), attempts: 1)
        let stored = try #require(try app.database.uploads(inspection: inspection).first { $0.id == item.id })
        #expect(stored.status == .completed && stored.lastError == nil)
        await app.shutdown()
        await scene.live.stop()
    }

    @Test("a copy not yet recorded (another process between copying and recording it) is kept; one left unlisted for an hour is deleted")
    func unlistedCopies() async throws {
        // The device's clock a day ahead changes nothing: ages are the file system's.
        let clock = TestClock()
        clock.advance(by: 86_400)
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, clock: clock.read, leftoverCopyAge: 2) }
        let app = scene.app
        let directory = scene.device.stateDirectory.appendingPathComponent("uploads")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let copy = directory.appendingPathComponent(UUID().uuidString.lowercased())
        // Stopped first: stopping waits for the queue's current work, which on a loaded machine can outlast the copy's 2 s.
        await app.uploads.stop()
        try Data(MediaSamples.jpeg(size: 1024)).write(to: copy)
        await app.uploads.start()
        #expect(FileManager.default.fileExists(atPath: copy.path))
        try await Task.sleep(for: .seconds(3))
        await app.uploads.stop()
        await app.uploads.start()
        #expect(!FileManager.default.fileExists(atPath: copy.path))
        await app.shutdown()
        await scene.live.stop()
    }

    @Test("an app killed mid-upload resumes after restart without sending acknowledged bytes again")
    func resumesAfterRestart() async throws {
        let chunk = 64 << 10
        let first = UploadCountingTransport()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: first, uploadChunkSize: chunk) }
        let (server, carrier, live, device) = (scene.server, scene.carrier, scene.live, scene.device)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let inspection = try device.app.startInspection(order: order.id, kind: .pickup)
        await device.app.syncNow()
        let video = MediaSamples.mp4(size: 1_000_000)
        first.die(afterPatches: 5)
        try await device.app.attach(try Self.write(video, name: "walk.mp4"), to: inspection, slot: .walkthrough)
        try await eventually("five chunks acknowledged") { try device.app.database.uploads().first?.sentBytes == Int64(5 * chunk) }
        await device.app.shutdown()

        // The app starts again on the same device.
        let second = UploadCountingTransport()
        let restarted = try DriverDevice.make(server: live, stateDirectory: device.stateDirectory, transport: second, uploadChunkSize: chunk)
        restarted.app.launch()
        do {
            try await eventually("the upload finished", timeout: .seconds(60)) {
                try restarted.app.database.uploads().first?.status == .completed
            }
        } catch {
            let item = try restarted.app.database.uploads().first
            Issue.record("upload stuck: \(String(describing: item)) online=\(restarted.app.network.isOnline)")
            throw error
        }
        #expect(first.patchBytes + second.patchBytes == video.count, "no acknowledged byte was sent twice")
        #expect(second.patchBytes == video.count - 5 * chunk)
        let stored = try await server.store.inspections.inspection(inspection, carrier.scope)
        #expect(stored.media.first { $0.slot == .walkthrough }?.sha256 == Self.hex(Data(video)))
        await restarted.app.shutdown()
        await live.stop()
    }

    @Test("failed uploads wait 5 s, 10 s, 20 s, … up to 15 minutes, with jitter")
    func backoffSchedule() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let live = try await LiveServer(server)
        let clock = TestClock()
        let device = try DriverDevice.make(server: live, clock: clock.read, network: AlwaysOnline())
        let app = device.app
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await app.uploads.stop()
        await app.syncNow()  // the order on the device (the first sync after sign-in runs in the background)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let inspection = try app.startInspection(order: order.id, kind: .pickup)
        await app.syncNow()
        try await app.attach(try Self.write(MediaSamples.jpeg(), name: "front.jpg"), to: inspection, slot: .front)
        await live.stop()

        var delays: [TimeInterval] = []
        for attempt in 1...11 {
            #expect(await app.uploads.processDue(), "attempt \(attempt) is due")
            let item = try #require(try app.database.uploads().first)
            #expect(item.status == .pending && item.attempts == attempt && item.lastError != nil)
            let delay = item.nextRetryAt.timeIntervalSince(clock.now)
            delays.append(delay)
            let base = min(5 * pow(2, Double(attempt - 1)), 900)
            #expect(delay >= base * 0.8 - 0.001 && delay <= min(base * 1.2, 900) + 0.001, "attempt \(attempt): \(delay) s")
            #expect(await !app.uploads.processDue(), "not due before its time")
            clock.advance(by: delay + 0.01)
        }
        #expect(delays.suffix(3).allSatisfy { $0 <= 900 })

        // The server comes back: the next due attempt delivers.
        try await live.start()
        #expect(await app.uploads.processDue())
        #expect(try app.database.uploads().first?.status == .completed)
        await app.shutdown()
        await live.stop()
    }

    /// The phone's position when asked (Core Location's place; it cannot run here), found as it is asked for: a fix
    /// made when the test began would be stale by the time a loaded machine takes the photo.
    struct FixedPosition: PositionFinder {
        let fix: GeoPosition?
        func currentPosition(within limit: Duration) async -> GeoPosition? {
            fix.map { var found = $0; found.recordedAt = Date(); return found }
        }
    }

    @Test("a photo just taken is stamped with the time and the last fix, or a position asked for when none is recent; one from the library is not")
    func photosStampedWithTimeAndPlace() async throws {
        let gate = GeoPosition(latitude: 41.50312, longitude: -87.74481, accuracyMeters: 6, recordedAt: Date())
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, positionFinder: FixedPosition(fix: gate)) }
        let (server, carrier, app) = (scene.server, scene.carrier, scene.app)
        let trip = carrier.trips[0][0]
        let order = carrier.orders[trip.id]![0]
        let screen = try InspectionViewModel(app: app, order: order.id, kind: .pickup)

        // Before the trip is under way no fix is recorded: the position is asked for.
        await screen.attach(try Self.write(MediaSamples.jpeg(), name: "front.jpg"), to: .front)
        // Under way, the last fix says where.
        try app.startTrip(trip.id)
        let road = GeoPosition(latitude: 41.6, longitude: -87.9, accuracyMeters: 9, recordedAt: Date())
        #expect(try app.location.record(road) == .kept)
        let before = app.serverClock.now
        await screen.attach(try Self.write(MediaSamples.jpeg(), name: "rear.jpg"), to: .rear)
        let after = app.serverClock.now
        await screen.attach(try Self.write(MediaSamples.jpeg(), name: "left.jpg"), to: .leftSide, justTaken: false)
        #expect(screen.lastError == nil)

        await app.syncNow()
        let inspection = try #require(screen.state?.inspection.id)
        try await eventually("three photos on the server") {
            (try? app.database.uploads().filter { $0.status == .completed }.count) == 3
        }
        let stored = try await server.store.inspections.inspection(inspection, .dispatch(tenant: carrier.tenant.id))
        let media = Dictionary(stored.media.map { ($0.slot, $0.captured) }) { first, _ in first }
        #expect(media[.front]??.position == gate.point && media[.front]??.accuracyMeters == 6)
        #expect(media[.rear]??.position == road.point && media[.rear]??.accuracyMeters == 9)
        #expect(media[.leftSide] != nil && media[.leftSide]! == nil, "a library photo carries no stamp")
        let taken = try #require(media[.rear]??.takenAt)
        // By the phone's clock corrected to the server's, when the attach ran.
        #expect(taken >= before.addingTimeInterval(-0.01) && taken <= after.addingTimeInterval(0.01), "\(taken) not in \(before)…\(after)")
        await app.shutdown()
        await scene.live.stop()
    }

    /// A sender the system cuts off part-way, as it may a background
    /// transfer: the first call sends a little and stops; later ones finish.
    final class CutOffSending: UploadSending {
        let chunked = ChunkedUploadSending(chunkSize: 64 << 10)
        private let calls = NIOLockedValueBox(0)
        var count: Int { calls.withLockedValue { $0 } }

        func send(file: URL, size: Int64, from offset: Int64, to location: String, via api: APIClient,
                  progress: @escaping @Sendable (Int64) async -> Void) async throws -> Int64 {
            let first = calls.withLockedValue { $0 += 1; return $0 == 1 }
            guard first else { return try await chunked.send(file: file, size: size, from: offset, to: location, via: api, progress: progress) }
            // One chunk, then the transfer ends without an error.
            let response = try await api.callRaw(.appendUpload, [], location: location, headers: Tus.patchHeaders(offset: offset),
                                                 body: try Data(contentsOf: file).prefix(64 << 10))
            let reached = try Tus.acknowledged(response, after: offset)
            await progress(reached)
            return reached
        }
    }

    @Test("a transfer cut off part-way is taken up from the server's offset by the next attempt, and the file lands once")
    func cutOffTransferResumes() async throws {
        let sending = CutOffSending()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, uploadSending: sending) }
        let (server, carrier, app) = (scene.server, scene.carrier, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let inspection = try app.startInspection(order: order.id, kind: .pickup)
        await app.syncNow()
        let video = MediaSamples.mp4(size: 300_000)
        try await app.attach(try Self.write(video, name: "walk.mp4"), to: inspection, slot: .walkthrough)
        try await eventually("the upload finished") { try app.database.uploads().first?.status == .completed }
        #expect(sending.count == 2, "cut off once, then finished")
        let stored = try await server.store.inspections.inspection(inspection, carrier.scope)
        #expect(stored.media.first { $0.slot == .walkthrough }?.sha256 == Self.hex(Data(video)))
        await app.shutdown()
        await scene.live.stop()
    }

    @Test("a stamp the server refuses (a phone clock far ahead) is dropped and the photo goes without it, not held back")
    func refusedStampDropped() async throws {
        let scene = try await DriverScene.make()
        let (server, carrier, app) = (scene.server, scene.carrier, scene.app)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let inspection = try app.startInspection(order: order.id, kind: .pickup)
        await app.syncNow()
        let ahead = MediaCapture(takenAt: server.clock.now.addingTimeInterval(3600), position: GeoPoint(latitude: 41.5, longitude: -87.7))
        try await app.attach(try Self.write(MediaSamples.jpeg(), name: "front.jpg"), to: inspection, slot: .front, captured: ahead)
        try await eventually("the photo on the server") { try app.database.uploads().first?.status == .completed }
        let stored = try await server.store.inspections.inspection(inspection, carrier.scope)
        let front = try #require(stored.media.first { $0.slot == .front })
        #expect(front.captured == nil)
        await app.shutdown()
        await scene.live.stop()
    }
}
