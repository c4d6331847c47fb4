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
                                  "accuracy_meters")] {
                let refused = try await create(.front, bad)
                #expect(refused.status == 400 && refused.errorCode == "invalid_parameter" && refused.text.contains(field), "\(bad): \(refused.text)")
            }
            let capture = MediaCapture(takenAt: takenAt, position: GeoPoint(latitude: 41.503123, longitude: -87.744812), accuracyMeters: 7.6)
            for (slot, stamp) in [(MediaSlot.front, capture.metadata), (.rear, MediaCapture(takenAt: takenAt).metadata), (.leftSide, [:])] {
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

        // The bill of lading prints it under the photo.
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
        #expect(words.contains("41.50312, -87.74481 ±8 m"), "\(text.text)")
        #expect(words.contains("Taken \(BillOfLadingPDF.time(takenAt))"), "\(text.text)")
    }
}
