import Crypto
import Foundation
import NIOCore
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Inspections and their media: resumable uploads (tus 1.0), one-request
/// uploads, downloads with ranges, and every way an upload can be wrong.
@Suite("Inspections and uploads")
struct UploadTests {
    static func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    /// A pickup inspection of the first driver's first order, saved through the store.
    static func openInspection(_ server: TestServer, _ carrier: CarrierFixture) async throws -> Inspection {
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        return try await server.store.inspections.save(ID(), SaveInspectionRequest(orderID: order.id, kind: .pickup),
                                                     .driver(tenant: carrier.tenant.id, driver: carrier.driverID(0)))
    }

    static func tus(_ token: String, _ extra: [String: String] = [:]) -> [String: String] {
        ["Tus-Resumable": Tus.version, "Authorization": "Bearer \(token)"].merging(extra) { $1 }
    }

    @Test("an upload cut at 10 random offsets resumes from the server's offset; the stored file is byte for byte the original",
          arguments: TestBackend.available)
    func resumesAfterCuts(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await Self.openInspection(server, carrier)
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        let token = carrier.driver.accessToken
        let file = MediaSamples.mp4(size: 3 << 20)

        let created = try await RawHTTP.request(port: live.port, "POST", "/v1/uploads", headers: Self.tus(token, [
            "Upload-Length": String(file.count), "Upload-Metadata": MediaSamples.metadata(inspection.id, .walkthrough, filename: "walk.mp4"),
        ]))
        #expect(created.status == 201)
        #expect(created.headers["tus-resumable"] == Tus.version && created.headers["upload-expires"] != nil)
        let location = try #require(created.headers["location"])

        var cuts = Set<Int>()
        while cuts.count < 10 { cuts.insert(Int.random(in: 1..<file.count)) }
        var offset = 0
        var resent = 0
        for cut in cuts.sorted() {
            // The connection drops after `cut` bytes of a PATCH meant to finish the file.
            let socket = try RawSocket(port: live.port)
            try await socket.send(RawHTTP.head("PATCH", location, headers: Self.tus(token, [
                "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
            ]), contentLength: file.count - offset) + Array(file[offset..<cut]))
            socket.close()
            // The client learns where to resume.
            // The server reads what the client sent before the drop at its own pace; under a full test run that takes seconds.
            var reported = -1
            let deadline = ContinuousClock.now + TestWait.bound(.seconds(120))
            while ContinuousClock.now < deadline {
                let head = try await RawHTTP.request(port: live.port, "HEAD", location, headers: Self.tus(token))
                #expect(head.status == 200 && head.headers["cache-control"] == "no-store")
                reported = Int(head.headers["upload-offset"] ?? "") ?? -1
                if reported == cut { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(reported == cut, "after a cut at \(cut), the server reports \(reported)")
            // The moment HEAD shows the offset, the cut request has let go of the upload: a client resuming at
            // once is not told 423 (the lost race left the next cut's bytes refused, unread).
            let resumed = try await RawHTTP.request(port: live.port, "PATCH", location, headers: Self.tus(token, [
                "Upload-Offset": String(reported), "Content-Type": Tus.patchContentType,
            ]), body: [])
            #expect(resumed.status == 204 && resumed.headers["upload-offset"] == String(reported), "\(resumed.status) \(resumed.text)")
            resent += max(0, offset - reported)
            offset = reported
        }
        #expect(resent == 0, "acknowledged bytes are never sent again")
        // The cut request may still hold the upload while the server lets go of it: 423 says retry, as a client does.
        var last = try await RawHTTP.request(port: live.port, "PATCH", location, headers: Self.tus(token, [
            "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
        ]), body: Array(file[offset...]))
        for _ in 0..<100 where last.status == 423 {
            try await Task.sleep(for: .milliseconds(50))
            last = try await RawHTTP.request(port: live.port, "PATCH", location, headers: Self.tus(token, [
                "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
            ]), body: Array(file[offset...]))
        }
        #expect(last.status == 204 && last.headers["upload-offset"] == String(file.count), "\(last.status) \(last.text)")

        let attached = try await server.store.inspections.inspection(inspection.id, carrier.scope)
        let video = try #require(attached.media.first { $0.slot == .walkthrough })
        #expect(video.sha256 == Self.hex(file) && video.sizeBytes == Int64(file.count) && video.contentType == "video/mp4")
        let download = try await RawHTTP.request(port: live.port, "GET", Endpoint.inspectionMedia.path(inspection.id.rawValue, "walkthrough"),
                                           headers: ["Authorization": "Bearer \(token)"])
        #expect(download.status == 200 && Self.hex(download.body) == Self.hex(file))
        // Each finished upload has a file of its own: `{slot}.{upload}` (its type is recorded with it, decided by its bytes).
        let folder = server.services.configuration.resolvedMediaDirectory
            .appendingPathComponent("\(carrier.tenant.id.rawValue)/\(inspection.id.rawValue)/videos")
        let uploadID = String(location.split(separator: "/").last!)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["walkthrough.\(uploadID)"])
        let stored = folder.appendingPathComponent("walkthrough.\(uploadID)")
        #expect(Self.hex([UInt8](try Data(contentsOf: stored))) == Self.hex(file))

        // The attachment reached the driver's change feed.
        let feed = try await server.store.feed(since: 0, limit: 1000, .driver(tenant: carrier.tenant.id, driver: carrier.driverID(0)))
        #expect(feed.changes.contains { $0.entity == .inspection && $0.document?.contains(video.sha256) == true })
    }

    @Test("a long PATCH records its progress as it goes: HEAD sees it before the request ends")
    func progressDuringLongRequest() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await Self.openInspection(server, carrier)
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        let token = carrier.driver.accessToken
        let file = MediaSamples.mp4(size: 40 << 20)
        let created = try await RawHTTP.request(port: live.port, "POST", "/v1/uploads", headers: Self.tus(token, [
            "Upload-Length": String(file.count), "Upload-Metadata": MediaSamples.metadata(inspection.id, .walkthrough),
        ]))
        let location = try #require(created.headers["location"])
        // 20 MB of the file, and the connection stays open: the request has not ended.
        let socket = try RawSocket(port: live.port)
        defer { socket.close() }
        try await socket.send(RawHTTP.head("PATCH", location, headers: Self.tus(token, [
            "Upload-Offset": "0", "Content-Type": Tus.patchContentType,
        ]), contentLength: file.count) + Array(file[0..<(20 << 20)]))
        var reported = 0
        for _ in 0..<500 where reported < Int(UploadService.recordEvery) {
            let head = try await RawHTTP.request(port: live.port, "HEAD", location, headers: Self.tus(token))
            reported = Int(head.headers["upload-offset"] ?? "") ?? 0
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(reported >= Int(UploadService.recordEvery) && reported <= 20 << 20, "HEAD during the request: \(reported)")
        // Another writer meanwhile waits its turn.
        let second = try await RawHTTP.request(port: live.port, "PATCH", location, headers: Self.tus(token, [
            "Upload-Offset": String(reported), "Content-Type": Tus.patchContentType,
        ]), body: Array(file[reported..<(reported + 1000)]))
        #expect(second.status == 423)
    }

    @Test("an upload another instance still holds answers 423 to a large PATCH, and a client (or proxy) that sends the whole body before reading gets that answer, not a reset")
    func earlyAnswerSurvivesALargeBody() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await Self.openInspection(server, carrier)
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        let token = carrier.driver.accessToken
        let file = MediaSamples.mp4(size: 8 << 20)
        let created = try await RawHTTP.request(port: live.port, "POST", "/v1/uploads", headers: Self.tus(token, [
            "Upload-Length": String(file.count), "Upload-Metadata": MediaSamples.metadata(inspection.id, .walkthrough),
        ]))
        let location = try #require(created.headers["location"])
        let id = try #require(location.split(separator: "/").last.map(String.init))
        // An instance that died mid-upload left its lease behind.
        #expect(try await server.store.uploads.claim(id, tenant: carrier.tenant.id, lease: "dead-instance", until: server.store.now.addingTimeInterval(600)))
        let socket = try RawSocket(port: live.port)
        defer { socket.close() }
        // As nginx does: the whole body first, then the answer.
        let request = RawHTTP.head("PATCH", location, headers: Self.tus(token, [
            "Upload-Offset": "0", "Content-Type": Tus.patchContentType,
        ]), contentLength: file.count) + file
        let sent = await socket.sendUntilClosed(request)
        #expect(sent == request.count, "the server stopped taking the body after \(sent) of \(request.count) bytes")
        let answer = try await socket.readResponse(timeout: .seconds(10))
        #expect(answer.status == 423, "\(answer.status)")
    }

    @Test("wrong types, sizes, offsets, versions, checksums and carriers are each refused with their code",
          arguments: TestBackend.available)
    func rejections(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha")
        let b = try await CarrierFixture.make(server, name: "Bravo")
        let inspection = try await Self.openInspection(server, a)
        let owner = a.driver.accessToken, foreigner = b.driver.accessToken, sibling = a.drivers[1].accessToken
        let i = inspection.id.rawValue
        try await server.run { api in
            func create(_ slot: MediaSlot, length: Int, token: String = owner) async throws -> APIResponse {
                try await api.call(.createUpload, token: token, headers: [
                    "Tus-Resumable": Tus.version, "Upload-Length": String(length), "Upload-Metadata": MediaSamples.metadata(inspection.id, slot),
                ])
            }
            func id(_ created: APIResponse) throws -> String { String(try #require(created.headers[.location]).split(separator: "/").last!) }
            func patch(_ upload: String, offset: Int, _ bytes: [UInt8], token: String = owner,
                       extra: [String: String] = [:]) async throws -> APIResponse {
                try await api.call(.appendUpload, upload, bytes: bytes, token: token, headers: [
                    "Tus-Resumable": Tus.version, "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
                ].merging(extra) { $1 })
            }

            #expect(UploadController.httpDate(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
            let options = try await api.call(.uploadOptions)
            #expect(options.status == 204 && options.headers[.init("Tus-Extension")!]?.contains("checksum") == true)

            // The bytes decide what a file is.
            let pdf = try id(try await create(.front, length: 2048))
            let refused = try await patch(pdf, offset: 0, MediaSamples.pdf())
            #expect(refused.status == 415 && refused.errorCode == "unsupported_media_type")
            #expect(try await api.call(.uploadOffset, pdf, token: owner, headers: ["Tus-Resumable": Tus.version]).status == 404)
            let photoAsVideo = try id(try await create(.walkthrough, length: 2048))
            #expect(try await patch(photoAsVideo, offset: 0, MediaSamples.jpeg()).errorCode == "unsupported_media_type")

            // Sizes.
            let limit = server.services.configuration.uploads.maxPhotoBytes
            let oversize = try await create(.front, length: Int(limit) + 1)
            #expect(oversize.status == 413 && oversize.errorCode == "payload_too_large")
            let photo = MediaSamples.jpeg(size: 4096)
            let upload = try id(try await create(.front, length: photo.count))
            let past = try await patch(upload, offset: 0, photo + [0])
            #expect(past.status == 413 && past.errorCode == "payload_too_large")

            // Offsets, versions, content types, checksums.
            let wrongOffset = try await patch(upload, offset: 100, Array(photo[100..<200]))
            #expect(wrongOffset.status == 409 && wrongOffset.errorCode == "upload_offset_mismatch")
            #expect(wrongOffset.headers[.init("Upload-Offset")!] == "0")
            let noVersion = try await api.call(.appendUpload, upload, bytes: photo, token: owner,
                                               headers: ["Upload-Offset": "0", "Content-Type": Tus.patchContentType])
            #expect(noVersion.status == 412 && noVersion.errorCode == "tus_version_unsupported")
            #expect(noVersion.headers[.init("Tus-Version")!] == Tus.version)
            let notOctets = try await api.call(.appendUpload, upload, bytes: photo, token: owner,
                                               headers: ["Tus-Resumable": Tus.version, "Upload-Offset": "0"])
            #expect(notOctets.status == 415)
            let wrongSum = Data(SHA256.hash(data: [1, 2, 3])).base64EncodedString()
            let badChecksum = try await patch(upload, offset: 0, Array(photo[0..<1000]), extra: ["Upload-Checksum": "sha256 \(wrongSum)"])
            #expect(badChecksum.status == 460 && badChecksum.errorCode == "checksum_mismatch")
            let afterBad = try await api.call(.uploadOffset, upload, token: owner, headers: ["Tus-Resumable": Tus.version])
            #expect(afterBad.headers[.init("Upload-Offset")!] == "0", "a chunk that fails its checksum is discarded")
            let rightSum = Data(SHA256.hash(data: photo[0..<1000])).base64EncodedString()
            let goodChecksum = try await patch(upload, offset: 0, Array(photo[0..<1000]), extra: ["Upload-Checksum": "sha256 \(rightSum)"])
            #expect(goodChecksum.status == 204 && goodChecksum.headers[.init("Upload-Offset")!] == "1000")

            // Another carrier's driver, and another driver of the same carrier, cannot see or touch it.
            for token in [foreigner, sibling] {
                #expect(try await api.call(.uploadOffset, upload, token: token, headers: ["Tus-Resumable": Tus.version]).status == 404)
                #expect(try await patch(upload, offset: 1000, Array(photo[1000...]), token: token).errorCode == "not_found")
                #expect(try await api.call(.terminateUpload, upload, token: token, headers: ["Tus-Resumable": Tus.version]).status == 404)
                #expect(try await create(.rear, length: 100, token: token).errorCode == "not_found")
                #expect(try await api.call(.inspectionMedia, i, "front", token: token).status == 404)
            }
            let finished = try await patch(upload, offset: 1000, Array(photo[1000...]))
            #expect(finished.status == 204 && finished.headers[.init("Upload-Offset")!] == String(photo.count))

            // Ranges.
            let part = try await api.call(.inspectionMedia, i, "front", token: owner, headers: ["Range": "bytes=10-19"])
            #expect(part.status == 206 && [UInt8](part.body) == Array(photo[10..<20]))
            #expect(part.headers[.contentRange] == "bytes 10-19/\(photo.count)")
            let tail = try await api.call(.inspectionMedia, i, "front", token: owner, headers: ["Range": "bytes=-5"])
            #expect(tail.status == 206 && [UInt8](tail.body) == Array(photo.suffix(5)))
            let outside = try await api.call(.inspectionMedia, i, "front", token: owner, headers: ["Range": "bytes=999999-"])
            #expect(outside.status == 416 && outside.errorCode == "invalid_parameter")
            #expect(try await api.call(.inspectionMedia, i, "front", token: a.dispatcher.accessToken).body == Data(photo))
            // HEAD sends no bytes and leaves no file open (the body that would close it is never written).
            let media = server.services.configuration.resolvedMediaDirectory.path
            let before = Self.openDescriptors(under: media)
            for _ in 0..<20 {
                let head = try await api.raw(.head, "/v1/inspections/\(i)/media/front", headers: ["Authorization": "Bearer \(owner)"])
                #expect(head.status == 200 && head.body.isEmpty && head.headers[.contentLength] == String(photo.count))
            }
            try await Task.sleep(for: .milliseconds(100))
            #expect(Self.openDescriptors(under: media) <= before)

            // Completing needs every required photo and a signature or "customer not available".
            let early = try await api.call(.completeInspection, i, token: owner)
            #expect(early.status == 422 && early.errorCode == "inspection_incomplete" && early.text.contains("vin_plate"))
            for slot in MediaSlot.requiredPhotos where slot != .front {
                #expect(try await api.call(.putInspectionMedia, i, slot.rawValue, bytes: MediaSamples.png(), token: owner).status == 200)
            }
            #expect(try await api.call(.completeInspection, i, token: owner).errorCode == "inspection_incomplete")
            #expect(try await api.call(.putInspectionMedia, i, "signature", bytes: MediaSamples.mp4(), token: owner).status == 415)
            #expect(try await api.call(.putInspectionMedia, i, "signature", bytes: MediaSamples.png(), token: owner).status == 200)
            let completed = try await api.call(.completeInspection, i, token: owner)
            #expect(completed.status == 200)
            #expect(try completed.decode(Inspection.self).completedAt != nil)
            #expect(try await create(.rear, length: 100).errorCode == "inspection_completed")
            #expect(try await api.call(.saveInspection, i, json: SaveInspectionRequest(orderID: inspection.orderID, kind: .pickup, notes: "x"),
                                       token: owner).errorCode == "inspection_completed")
        }
    }

    @Test("abandoned uploads expire and their partial files are removed", arguments: TestBackend.available)
    func expiry(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await Self.openInspection(server, carrier)
        let scope = Scope.driver(tenant: carrier.tenant.id, driver: carrier.driverID(0))
        // Straight through the store: nothing races the test's clock.
        let (upload, _) = try await server.store.uploads.open(.inspection(inspection.id, .front), length: 5000, metadata: "",
                                                         user: carrier.driver.user.id, scope, limits: UploadLimits())
        let media = server.services.media
        _ = try await media.beginPartial(upload.id, key: upload.fileKey)
        let writer = try await media.openPartial(upload.id, key: upload.fileKey, handle: nil, length: upload.length, at: 0)
        try await writer.append(ByteBuffer(bytes: MediaSamples.jpeg(size: 1000)))
        try await writer.finish(keeping: 1000)
        writer.close()
        let partial = server.services.configuration.resolvedMediaDirectory.appendingPathComponent(".partial/\(upload.id)")
        #expect(FileManager.default.fileExists(atPath: partial.path))

        server.clock.advance(by: 23 * 3600)
        #expect(try await server.services.pruneExpiredUploads() == 0)
        #expect(try await server.store.uploads.find(upload.id, user: carrier.driver.user.id, tenant: carrier.tenant.id).received == 0)
        server.clock.advance(by: 3600 + 1)
        do {
            _ = try await server.store.uploads.find(upload.id, user: carrier.driver.user.id, tenant: carrier.tenant.id)
            Issue.record("an expired upload can still be resumed")
        } catch let error as AppError {
            #expect(error.status == 410 && error.code == .uploadExpired)
        }
        #expect(try await server.services.pruneExpiredUploads() == 1)
        #expect(!FileManager.default.fileExists(atPath: partial.path))
    }

    @Test("inspections follow the order: pickup while assigned, one per kind, fields validated", arguments: TestBackend.available)
    func inspectionRules(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let token = carrier.driver.accessToken
        try await server.run { api in
            let early = try await api.call(.saveInspection, ID<Inspection>().rawValue,
                                           json: SaveInspectionRequest(orderID: order.id, kind: .delivery), token: token)
            #expect(early.status == 409 && early.errorCode == "invalid_transition")
            let id = ID<Inspection>().rawValue
            let saved = try await api.call(.saveInspection, id, json: SaveInspectionRequest(
                orderID: order.id, kind: .pickup, odometer: 48_210, notes: "Light rain",
                position: GeoPosition(latitude: 29.76, longitude: -95.37, accuracyMeters: 8, recordedAt: Date()),
                damages: [Damage(location: "front_bumper", type: .scratch, severity: .minor, note: "10 cm", photoSlot: MediaSlot("damage_1"))]),
                token: token)
            #expect(saved.status == 200)
            let inspection = try saved.decode(Inspection.self)
            #expect(inspection.odometer == 48_210 && inspection.damages.count == 1 && inspection.driverID == carrier.driverID(0))
            let again = try await api.call(.saveInspection, ID<Inspection>().rawValue,
                                           json: SaveInspectionRequest(orderID: order.id, kind: .pickup), token: token)
            #expect(again.status == 409 && again.errorCode == "already_exists")
            let badPosition = try await api.call(.saveInspection, id, json: SaveInspectionRequest(
                orderID: order.id, kind: .pickup, position: GeoPosition(latitude: 91, longitude: 0, recordedAt: Date())), token: token)
            #expect(badPosition.status == 422 && badPosition.error?.field == "position")
            let badDamage = try await api.call(.saveInspection, id, json: SaveInspectionRequest(
                orderID: order.id, kind: .pickup, damages: [Damage(location: "../etc", type: .dent, severity: .severe)]), token: token)
            #expect(badDamage.status == 422 && badDamage.error?.field == "damages[0].location")
            let listed = try await api.call(.orderInspections, order.id.rawValue, token: token).decode(Items<Inspection>.self)
            #expect(listed.items.map(\.id.rawValue) == [id])
            let badSlot = try await api.call(.inspectionMedia, id, "..%2Fescape", token: token)
            #expect(badSlot.status == 400 || badSlot.status == 404)
        }
    }

    @Test("an order reassigned mid-inspection takes the inspection to the new driver; the previous driver's feed drops it",
          arguments: TestBackend.available)
    func reassignedMidInspection(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        let (first, second) = (carrier.drivers[0].accessToken, carrier.drivers[1].accessToken)
        try await server.run { api in
            let inspection = try await api.readyInspection(of: order.id, .pickup, token: first)
            func cursor(_ token: String) async throws -> Int64 {
                var page = try await api.call(.sync, query: "since=0", token: token).decode(SyncPage.self)
                while page.hasMore {
                    page = try await api.call(.sync, query: "since=\(page.cursor)&snapshot_after=\(page.snapshotAfter ?? "")", token: token)
                        .decode(SyncPage.self)
                }
                return page.cursor
            }
            let (firstCursor, secondCursor) = (try await cursor(first), try await cursor(second))
            #expect(try await api.call(.dispatchAssignOrder, order.id.rawValue, json: AssignOrderRequest(driverID: carrier.driverID(1)),
                                       token: carrier.dispatcher.accessToken).status == 200)

            let dropped = try await api.call(.sync, query: "since=\(firstCursor)", token: first).decode(SyncPage.self).changes
            #expect(dropped.contains { $0.entity == .inspection && $0.id == inspection.rawValue && $0.op == .delete })
            #expect(dropped.contains { $0.entity == .order && $0.id == order.id.rawValue && $0.op == .delete })
            #expect(try await api.call(.inspection, inspection.rawValue, token: first).status == 404)
            let received = try await api.call(.sync, query: "since=\(secondCursor)", token: second).decode(SyncPage.self).changes
            let handedOver = received.compactMap { change -> Inspection? in
                if case .inspection(let value) = change.row { return value } else { return nil }
            }
            #expect(handedOver.map(\.id) == [inspection])
            #expect(handedOver.first?.driverID == carrier.driverID(1) && handedOver.first?.media.count == MediaSlot.requiredPhotos.count)
            // The new driver finishes it, which picks the vehicle up.
            #expect(try await api.call(.completeInspection, inspection.rawValue, token: first).status == 404)
            #expect(try await api.call(.completeInspection, inspection.rawValue, token: second).status == 200)
            #expect(try await server.store.orders.order(order.id, carrier.scope).status == .pickedUp)
        }
    }

    @Test("a standard tus client (tuspy) uploads a photo with checksums")
    func tuspy() async throws {
        guard try await ChildProcess.run("/usr/bin/env", ["python3", "-c", "import tusclient"]).status == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("tuspy is not installed (pip install tuspy)") }
            return
        }
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await Self.openInspection(server, carrier)
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        let photo = MediaSamples.jpeg(size: 700_000)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tuspy-\(UUID().uuidString).jpg")
        try Data(photo).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tuspy_upload.py").path
        let output = try await ChildProcess.run("/usr/bin/env", ["python3", script, "--endpoint", "\(live.baseURL)/v1/uploads", "--token", carrier.driver.accessToken,
                                                         "--inspection", inspection.id.rawValue, "--slot", "front", "--file", file.path])
        #expect(output.status == 0, "tuspy: \(output.text)")
        let attached = try await server.store.inspections.inspection(inspection.id, carrier.scope)
        #expect(attached.media.first { $0.slot == .front }?.sha256 == Self.hex(photo))
    }

    /// This process's open files inside `directory` (the in-process server's files among them).
    static func openDescriptors(under directory: String) -> Int {
        let root = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"))?.hasPrefix(root + "/") == true
        }.count
    }
}
