import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// When and where the phone took an inspection photo: sent with the upload,
/// checked when it begins, kept on the inspection, printed on the bill of lading.
@Suite("Photo time and place")
struct PhotoCaptureTests {
    @Test("a stamp that is no time, no place or later than now is refused at the start; the rest reaches the inspection and the bill of lading")
    func captureThroughUpload() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await UploadTests.openInspection(server, carrier)
        // Dispatch placed the pickup yard on the map.
        var pickup = carrier.orders[carrier.trips[0][0].id]![0].pickup
        pickup.location = GeoPoint(latitude: 41.5032, longitude: -87.7449)
        _ = try await server.store.orders.update(inspection.orderID, UpdateOrderRequest(pickup: pickup), tenant: carrier.tenant.id)
        let token = carrier.driver.accessToken
        let photo = Array(try Data(contentsOf: BillOfLadingTests.fixtures.appendingPathComponent("vehicle-photo.jpg")))
        let takenAt = server.clock.now.addingTimeInterval(-90)
        try await server.run { api in
            func create(_ slot: MediaSlot, _ capture: [String: String]) async throws -> APIResponse {
                try await api.call(.createUpload, token: token, headers: [
                    "Tus-Resumable": Tus.version, "Upload-Length": String(photo.count),
                    "Upload-Metadata": Tus.encodeMetadata(["inspection_id": inspection.id.rawValue, "slot": slot.rawValue].merging(capture) { $1 }),
                ])
            }
            let later = WireTime.string(from: server.clock.now.addingTimeInterval(MediaCapture.allowedAhead + 60))
            for (bad, field) in [(["taken_at": "yesterday"], "taken_at"), (["taken_at": later], "taken_at"),
                                 (["latitude": "41.5", "longitude": "-87.7"], "taken_at"),
                                 (["taken_at": WireTime.string(from: takenAt), "latitude": "91", "longitude": "0"], "latitude"),
                                 (["taken_at": WireTime.string(from: takenAt), "latitude": "41.5"], "latitude"),
                                 (["taken_at": WireTime.string(from: takenAt), "latitude": "41.5", "longitude": "-87.7", "accuracy_meters": "nan"],
                                  "accuracy_meters"),
                                 (["accuracy_meters": "5"], "taken_at"),
                                 (["taken_at": WireTime.string(from: takenAt), "latitude": "0x1.4p5", "longitude": "0"], "latitude"),
                                 (["taken_at": WireTime.string(from: takenAt), "latitude": "4e1", "longitude": "0"], "latitude"),
                                 (["taken_at": WireTime.string(from: takenAt), "latitude": "+41", "longitude": "0"], "latitude")] {
                let refused = try await create(.front, bad)
                #expect(refused.status == 400 && refused.errorCode == "invalid_parameter" && refused.text.contains(field), "\(bad): \(refused.text)")
            }
            let capture = MediaCapture(takenAt: takenAt, position: GeoPoint(latitude: 41.503123, longitude: -87.744812), accuracyMeters: 7.6)
            // 2.0 miles north of the yard (0.029° of latitude).
            let away = MediaCapture(takenAt: takenAt, position: GeoPoint(latitude: 41.532123, longitude: -87.744812), accuracyMeters: 5)
            for (slot, stamp) in [(MediaSlot.front, capture.metadata), (.rear, MediaCapture(takenAt: takenAt).metadata), (.leftSide, [:]),
                                  (.rightSide, away.metadata)] {
                let created = try await create(slot, stamp)
                #expect(created.status == 201, "\(created.text)")
                let upload = String(try #require(created.headers[.location]).split(separator: "/").last ?? "")
                let sent = try await api.call(.appendUpload, upload, bytes: photo, token: token, headers: [
                    "Tus-Resumable": Tus.version, "Upload-Offset": "0", "Content-Type": Tus.patchContentType,
                ])
                #expect(sent.status == 204, "\(sent.text)")
            }
        }
        let stored = try await server.store.inspections.inspection(inspection.id, .dispatch(tenant: carrier.tenant.id))
        let media = Dictionary(stored.media.map { ($0.slot, $0) }) { first, _ in first }
        #expect(media[.front]?.captured?.position == GeoPoint(latitude: 41.503123, longitude: -87.744812))
        #expect(media[.front]?.captured?.accuracyMeters == 7.6)
        #expect(media[.front]?.captured.map { WireTime.milliseconds($0.takenAt) } == WireTime.milliseconds(takenAt))
        #expect(media[.rear]?.captured?.position == nil && media[.rear]?.captured != nil)
        #expect(media[.leftSide] != nil && media[.leftSide]?.captured == nil, "a photo from the library says nothing")

        // The bill of lading prints when, and where against the stop (the yard dispatch placed), never the coordinates:
        // the customer receives it.
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let (_, pdf) = try await BillOfLadingService(store: server.store, media: server.services.media)
            .pdf(of: order.id, tenant: carrier.tenant.id)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID()).pdf")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(pdf).write(to: file)
        // A copy to look at, beside the console's screenshots.
        let samples = BillOfLadingTests.fixtures.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/documents")
        try? FileManager.default.createDirectory(at: samples, withIntermediateDirectories: true)
        try? Data(pdf).write(to: samples.appendingPathComponent("bill-of-lading-photo-stamps.pdf"))
        let text = try await ChildProcess.run("/usr/bin/pdftotext", ["-layout", file.path, "-"])
        let words = text.text.split(whereSeparator: { $0 == " " }).joined(separator: " ")
        #expect(words.contains("Taken \(BillOfLadingPDF.time(takenAt))"), "\(text.text)")
        #expect(words.contains("At the pickup") && words.contains("2.0 mi from the pickup"), "\(text.text)")
        #expect(!words.contains("41.50") && !words.contains("-87.74"), "no coordinates for the customer: \(text.text)")
    }

    @Test("what the app writes the server reads back, however small or signed the numbers")
    func metadataRoundTrip() throws {
        let now = Date()
        for (latitude, longitude, accuracy) in [(0.000012, -0.0, 0.00001), (-89.9999999, 179.9999999, 100_000.0), (41.5, -87.7, 8.0)] {
            let capture = MediaCapture(takenAt: now, position: GeoPoint(latitude: latitude, longitude: longitude), accuracyMeters: accuracy)
            let read = try #require(try MediaCapture.from(metadata: capture.metadata, now: now))
            #expect(abs((read.position?.latitude ?? 99) - latitude) < 1e-7 && abs((read.position?.longitude ?? 99) - longitude) < 1e-7)
            #expect(read.position?.longitude.sign == .plus || longitude != 0, "-0 reads as 0")
            #expect(abs((read.accuracyMeters ?? -1) - accuracy) <= 0.05)
        }
    }
}
