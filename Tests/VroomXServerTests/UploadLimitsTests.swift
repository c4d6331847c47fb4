import Foundation
import NIOCore
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// What one driver or carrier can make the server store, and what happens
/// when storage fails: closed slot list, quotas, no orphaned or replaced
/// files, a full disk answered as "try later" with nothing lost.
@Suite("Upload limits and storage failures")
struct UploadLimitsTests {
    static func tus(_ token: String, _ extra: [String: String] = [:]) -> [String: String] {
        ["Tus-Resumable": Tus.version, "Authorization": "Bearer \(token)"].merging(extra) { $1 }
    }

    static func create(_ api: TestAPI, _ inspection: ID<Inspection>, _ slot: MediaSlot, length: Int, token: String) async throws -> APIResponse {
        try await api.call(.createUpload, token: token, headers: [
            "Tus-Resumable": Tus.version, "Upload-Length": String(length), "Upload-Metadata": MediaSamples.metadata(inspection, slot),
        ])
    }

    static func patch(_ api: TestAPI, _ upload: String, offset: Int, _ bytes: [UInt8], token: String) async throws -> APIResponse {
        try await api.call(.appendUpload, upload, bytes: bytes, token: token, headers: [
            "Tus-Resumable": Tus.version, "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
        ])
    }

    static func uploadID(_ created: APIResponse) throws -> String {
        String(try #require(created.headers[.location]).split(separator: "/").last!)
    }

    static func files(in folder: URL) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: folder.path)
        return (enumerator?.allObjects as? [String] ?? []).filter { !$0.hasPrefix(".partial") && $0.contains(".") }.sorted()
    }

    @Test("only the inspection's own slots take files, and an inspection at every limit stays small")
    func closedSlotList() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let token = carrier.driver.accessToken
        try await server.run { api in
            let inspection = try await api.readyInspection(of: order.id, .pickup, token: token)
            for slot in ["damage_31", "extra_photo", "damage_0", "Front", "front2"] {
                let created = try await Self.create(api, inspection, MediaSlot(slot), length: 100, token: token)
                #expect(created.status == 400 && created.errorCode == "invalid_parameter", "\(slot): \(created.text)")
                let put = try await api.call(.putInspectionMedia, inspection.rawValue, slot, bytes: MediaSamples.jpeg(), token: token)
                #expect(put.status == 400, "\(slot): \(put.text)")
            }
            // An empty file says so (it has its Content-Length: 0), rather than asking for a Content-Length.
            let empty = try await api.call(.putInspectionMedia, inspection.rawValue, "front", bytes: [], token: token)
            #expect(empty.status == 400 && empty.errorCode == "invalid_parameter" && empty.text.contains("empty"), "\(empty.status) \(empty.text)")
            for slot in ["damage_30", "front_left", "keys"] {
                #expect(try await api.call(.putInspectionMedia, inspection.rawValue, slot, bytes: MediaSamples.jpeg(), token: token).status == 200)
            }
            let tooMany = (0...Inspection.maxDamages).map { Damage(location: "door_\($0)", type: .dent, severity: .minor) }
            let refused = try await api.call(.saveInspection, inspection.rawValue, json: SaveInspectionRequest(
                orderID: order.id, kind: .pickup, damages: tooMany), token: token)
            #expect(refused.status == 422 && refused.error?.field == "damages")
        }
        // The largest inspection a client can make: every slot filled, every text at its limit.
        let now = Date()
        let media = MediaSlot.all.map {
            InspectionMedia(slot: $0, kind: $0.kind, contentType: "image/jpeg", sizeBytes: 25 << 20,
                            sha256: String(repeating: "a", count: 64), uploadedAt: now)
        }
        let damages = (1...Inspection.maxDamages).map {
            Damage(location: String(repeating: "l", count: 32), type: .scratch, severity: .severe,
                   note: String(repeating: "n", count: FieldLimits.damageNote.max), photoSlot: MediaSlot("damage_\($0)"))
        }
        let largest = Inspection(id: ID(), orderID: ID(), driverID: ID(), kind: .pickup, odometer: 9_999_999,
                                 notes: String(repeating: "x", count: FieldLimits.inspectionNotes.max),
                                 position: GeoPosition(latitude: 1, longitude: 1, accuracyMeters: 5, recordedAt: now),
                                 damages: damages, customerUnavailable: false, media: media, completedAt: now, createdAt: now, updatedAt: now)
        let size = try WireJSON.encoder().encode(largest).count
        #expect(size < 48 * 1024, "the largest inspection is \(size) bytes")
    }

    @Test("a driver's open uploads and a carrier's stored bytes are capped with clear, retryable errors",
          arguments: TestBackend.available)
    func quotas(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend) { configuration in
            configuration.uploads.openUploadsPerUser = 3
            configuration.uploads.openBytesPerUser = 10_000
            configuration.uploads.storedBytesPerCarrier = 40_000
        }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let token = carrier.driver.accessToken
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        try await server.run { api in
            let saved = try await api.call(.saveInspection, ID<Inspection>().rawValue,
                                           json: SaveInspectionRequest(orderID: order.id, kind: .pickup), token: token)
            let inspection = try saved.decode(Inspection.self).id
            var open: [String] = []
            for slot in [MediaSlot.front, .rear, .leftSide] {
                open.append(try Self.uploadID(try await Self.create(api, inspection, slot, length: 1000, token: token)))
            }
            let fourth = try await Self.create(api, inspection, .rightSide, length: 1000, token: token)
            #expect(fourth.status == 429 && fourth.errorCode == "upload_quota_exceeded", "\(fourth.text)")
            #expect(fourth.headers[.retryAfter].flatMap { Int($0) }.map { (1...900).contains($0) } == true)
            // Cancelling one frees its place.
            #expect(try await api.call(.terminateUpload, open.removeLast(), token: token, headers: ["Tus-Resumable": Tus.version]).status == 204)
            // The bytes announced count too: 2 × 1,000 open, 9,000 more would pass 10,000.
            let big = try await Self.create(api, inspection, .rightSide, length: 9000, token: token)
            #expect(big.status == 429 && big.errorCode == "upload_quota_exceeded")
            for upload in open {
                #expect(try await api.call(.terminateUpload, upload, token: token, headers: ["Tus-Resumable": Tus.version]).status == 204)
            }

            // Uploads started again for one slot (answers lost, requests delivered twice) replace each
            // other: far more than the quota of them, and the last one still works; the replaced answer 410,
            // and their bytes leave the disk at once (they no longer count against any quota).
            var replaced: [String] = []
            for attempt in 0..<10 {
                let again = try await Self.create(api, inspection, .front, length: 1000, token: token)
                #expect(again.status == 201, "attempt \(attempt): \(again.text)")
                replaced.append(try Self.uploadID(again))
                #expect(try await Self.patch(api, replaced.last!, offset: 0, [0xFF, 0xD8, 0xFF, 0xE0], token: token).status == 204)
            }
            let partials = server.services.configuration.resolvedMediaDirectory.appendingPathComponent(".partial")
            let current = replaced.removeLast()
            #expect(try FileManager.default.contentsOfDirectory(atPath: partials.path) == [current])
            for upload in replaced {
                #expect(try await Self.patch(api, upload, offset: 4, [1, 2, 3], token: token).status == 410)
            }
            #expect(try await Self.patch(api, current, offset: 4, [1, 2, 3], token: token).status == 204)
            #expect(try await api.call(.terminateUpload, current, token: token, headers: ["Tus-Resumable": Tus.version]).status == 204)

            // The carrier's stored bytes: 4 photos of 9,000 bytes fit in 40,000, the fifth does not.
            for slot in [MediaSlot.front, .rear, .leftSide, .rightSide] {
                let put = try await api.call(.putInspectionMedia, inspection.rawValue, slot.rawValue,
                                             bytes: MediaSamples.jpeg(size: 9000), token: token)
                #expect(put.status == 200, "\(slot): \(put.text)")
            }
            let full = try await api.call(.putInspectionMedia, inspection.rawValue, "odometer", bytes: MediaSamples.jpeg(size: 9000),
                                          token: token)
            #expect(full.status == 507 && full.errorCode == "storage_quota_exceeded", "\(full.text)")
            #expect(full.headers[.retryAfter] != nil)
        }
    }

    @Test("a replaced photo's old file goes; a file finished after the inspection was completed is refused and removed")
    func noOrphanedOrReplacedFiles() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let token = carrier.driver.accessToken
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let folder = server.services.configuration.resolvedMediaDirectory
        try await server.run { api in
            let inspection = try await api.readyInspection(of: order.id, .pickup, token: token)
            let photos = folder.appendingPathComponent("\(carrier.tenant.id)/\(inspection)/photos")
            let before = Self.files(in: photos)
            #expect(before.count == MediaSlot.requiredPhotos.count)
            let retake = MediaSamples.jpeg(size: 700)
            #expect(try await api.call(.putInspectionMedia, inspection.rawValue, "front", bytes: retake, token: token).status == 200)
            let after = Self.files(in: photos)
            #expect(after.count == before.count, "the previous front photo was removed: \(after)")
            let front = try #require(after.first { $0.hasPrefix("front.") })
            #expect(try Data(contentsOf: photos.appendingPathComponent(front)) == Data(retake))

            // A damage photo is underway when the driver completes the inspection.
            let bytes = MediaSamples.jpeg(size: 3000)
            let upload = try Self.uploadID(try await Self.create(api, inspection, MediaSlot("damage_1"), length: bytes.count, token: token))
            #expect(try await Self.patch(api, upload, offset: 0, Array(bytes[0..<2000]), token: token).status == 204)
            #expect(try await api.call(.completeInspection, inspection.rawValue, token: token).status == 200)
            let late = try await Self.patch(api, upload, offset: 2000, Array(bytes[2000...]), token: token)
            #expect(late.status == 409 && late.errorCode == "inspection_completed")
            #expect(Self.files(in: photos) == after, "the completed inspection's files are unchanged and no orphan is left")
            let completed = try await server.store.inspections.inspection(inspection, carrier.scope)
            #expect(!completed.media.contains { $0.slot == MediaSlot("damage_1") })
        }
    }

    @Test("an upload whose file was stored but not yet attached is finished by the client's retry")
    func finishesAfterAnInterruptedAttachment() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let token = carrier.driver.accessToken
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let identity = try await server.services.authenticator.authenticate(token: token)
        try await server.run { api in
            let inspection = try await api.readyInspection(of: order.id, .pickup, token: token)
            let bytes = MediaSamples.jpeg(size: 1500)
            let upload = try Self.uploadID(try await Self.create(api, inspection, MediaSlot("damage_2"), length: bytes.count, token: token))
            // The server got every byte, recorded where the file goes and moved it there; then the database went away.
            let record = try await server.store.uploads.find(upload, user: identity.user, tenant: identity.tenant)
            let media = server.services.media
            let writer = try await media.openPartial(upload, key: record.fileKey, handle: record.storageHandle, length: record.length, at: 0)
            try await writer.append(ByteBuffer(bytes: bytes))
            try await writer.finish(keeping: Int64(bytes.count))
            writer.close()
            try await server.store.database.write { db in
                try await db.execute("UPDATE uploads SET received = \(bytes.count) WHERE id = \(upload)")
            }
            try await media.commit(upload, key: record.fileKey, handle: record.storageHandle, length: record.length)
            try await server.store.uploads.recordStoredFile(.init(key: record.fileKey, sha256: UploadTests.hex(bytes), contentType: "image/jpeg"),
                                                    of: upload, tenant: identity.tenant)
            // The client asks where to resume and sends the (empty) rest.
            let head = try await api.call(.uploadOffset, upload, token: token, headers: ["Tus-Resumable": Tus.version])
            #expect(head.headers[.init("Upload-Offset")!] == String(bytes.count))
            let retry = try await Self.patch(api, upload, offset: bytes.count, [], token: token)
            #expect(retry.status == 204, "\(retry.text)")
            let attached = try await server.store.inspections.inspection(inspection, carrier.scope).media.first { $0.slot == MediaSlot("damage_2") }
            #expect(attached?.sha256 == UploadTests.hex(bytes))
            let download = try await api.call(.inspectionMedia, inspection.rawValue, "damage_2", token: token)
            #expect(download.body == Data(bytes))
        }
    }

    @Test("a full disk answers 507 with Retry-After and keeps what was recorded; the upload resumes once space is back")
    func fullDisk() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let token = carrier.driver.accessToken
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let partials = server.services.configuration.resolvedMediaDirectory.appendingPathComponent(".partial")
        try await server.run { api in
            let inspection = try await api.readyInspection(of: order.id, .pickup, token: token)
            let bytes = MediaSamples.mp4(size: 64 * 1024)
            let upload = try Self.uploadID(try await Self.create(api, inspection, .walkthrough, length: bytes.count, token: token))
            #expect(try await Self.patch(api, upload, offset: 0, Array(bytes[0..<20_000]), token: token).status == 204)
            // The disk fills up: the kernel's /dev/full answers every write with ENOSPC.
            let partial = partials.appendingPathComponent(upload)
            let kept = try Data(contentsOf: partial)
            try FileManager.default.removeItem(at: partial)
            try FileManager.default.createSymbolicLink(atPath: partial.path, withDestinationPath: "/dev/full")
            let full = try await Self.patch(api, upload, offset: 20_000, Array(bytes[20_000...]), token: token)
            #expect(full.status == 507 && full.errorCode == "insufficient_storage", "\(full.status) \(full.text)")
            #expect(full.headers[.retryAfter] != nil)
            let head = try await api.call(.uploadOffset, upload, token: token, headers: ["Tus-Resumable": Tus.version])
            #expect(head.status == 200 && head.headers[.init("Upload-Offset")!] == "20000")
            // Space is back.
            try FileManager.default.removeItem(at: partial)
            try kept.write(to: partial)
            let resumed = try await Self.patch(api, upload, offset: 20_000, Array(bytes[20_000...]), token: token)
            #expect(resumed.status == 204, "\(resumed.text)")
            let download = try await api.call(.inspectionMedia, inspection.rawValue, "walkthrough", token: token)
            #expect(download.body == Data(bytes))
        }
    }

    @Test("expired uploads are pruned until none remain, whatever their number", arguments: TestBackend.available)
    func pruneEverything(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let scope = Scope.driver(tenant: carrier.tenant.id, driver: carrier.driverID(0))
        let inspection = try await server.store.inspections.save(ID(), SaveInspectionRequest(orderID: order.id, kind: .pickup), scope)
        let past = WireTime.milliseconds(server.clock.now) - 1000
        // Written 100 rows per transaction: one write of 1,234 single-row
        // inserts can outlast the database deadline on a loaded machine.
        for chunk in stride(from: 0, to: 1_234, by: 100) {
            try await server.store.database.write { db in
                for _ in chunk..<min(chunk + 100, 1_234) {
                    try await db.execute("""
                        INSERT INTO uploads (id, tenant_id, inspection_id, user_id, slot, kind, length, metadata, created_at, expires_at)
                        VALUES (\(UUID().uuidString.lowercased()), \(carrier.tenant.id), \(inspection.id), \(carrier.driver.user.id),
                                'front', 'photo', 100, '', \(past), \(past))
                        """)
                }
            }
        }
        #expect(try await server.services.pruneExpiredUploads() == 1_234)
        let left = try await server.store.database.read { try await $0.first("SELECT COUNT(*) AS n FROM uploads")?.int("n") }
        #expect(left == 0)
    }
}
