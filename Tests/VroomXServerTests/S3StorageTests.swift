import Crypto
import Foundation
import NIOCore
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The SigV4 signer against AWS's published examples and botocore, and
/// media storage in a real S3-compatible server (moto).
@Suite("S3 media storage")
struct S3StorageTests {
    static let credentials = SigV4Signer.Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                                     secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    static let signer = SigV4Signer(credentials: credentials, region: "us-east-1", service: "s3")
    /// 2013-05-24T00:00:00Z, the date of AWS's S3 examples.
    static let exampleDate = Date(timeIntervalSince1970: 1_369_353_600)

    static func signature(_ headers: [(String, String)]) -> String {
        let authorization = headers.first { $0.0 == "Authorization" }?.1 ?? ""
        return String(authorization.split(separator: "=").last ?? "")
    }

    @Test("signs AWS's published S3 examples: GET with Range, GET ?lifecycle, list objects, and a presigned URL")
    func awsExamples() {
        let host = ("host", "examplebucket.s3.amazonaws.com")
        let get = Self.signer.sign(method: "GET", path: "/test.txt", query: [], headers: [host, ("range", "bytes=0-9")],
                                   payloadHash: SigV4Signer.emptyPayloadHash, date: Self.exampleDate)
        #expect(Self.signature(get) == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(get.first { $0.0 == "Authorization" }?.1.contains("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date") == true)
        let lifecycle = Self.signer.sign(method: "GET", path: "/", query: [("lifecycle", "")], headers: [host],
                                         payloadHash: SigV4Signer.emptyPayloadHash, date: Self.exampleDate)
        #expect(Self.signature(lifecycle) == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
        let list = Self.signer.sign(method: "GET", path: "/", query: [("prefix", "J"), ("max-keys", "2")], headers: [host],
                                    payloadHash: SigV4Signer.emptyPayloadHash, date: Self.exampleDate)
        #expect(Self.signature(list) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
        let presigned = Self.signer.presignedQuery(method: "GET", path: "/test.txt", query: [], host: host.1, expires: 86400,
                                                   date: Self.exampleDate)
        #expect(presigned.last?.1 == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    }

    @Test("agrees with botocore's signer on multipart, odd keys and extra headers, at a fixed clock")
    func agreesWithBotocore() async throws {
        let cases: [(method: String, path: String, query: [(String, String)], headers: [(String, String)], body: String)] = [
            ("PUT", "/bucket/t1/i1/videos/walkthrough.u1", [("partNumber", "3"), ("uploadId", "abc/def+ghi=")], [], "part bytes"),
            ("POST", "/bucket/key with spaces/ünïcødé~.bin", [("uploads", "")], [("content-type", "video/mp4")], ""),
            ("GET", "/bucket", [("list-type", "2"), ("prefix", ".partial/u 1/"), ("continuation-token", "a=b&c")], [], ""),
            ("DELETE", "/bucket/a/b", [("uploadId", "x")], [("x-amz-meta-note", "  two   spaces  ")], ""),
        ]
        let script = """
            import datetime, hashlib, json, sys
            from unittest import mock
            from urllib.parse import quote, urlencode
            from botocore.auth import S3SigV4Auth
            from botocore.awsrequest import AWSRequest
            from botocore.credentials import Credentials
            creds = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
            fixed = datetime.datetime(2013, 5, 24, 0, 0, 0)
            out = []
            for method, path, query, headers, body in json.load(sys.stdin):
                url = "https://s3.example.com" + quote(path, safe="/~") + ("?" + "&".join(quote(k, safe="~") + "=" + quote(v, safe="~") for k, v in query) if query else "")
                request = AWSRequest(method=method, url=url, headers=dict(headers), data=body.encode())
                with mock.patch("botocore.auth.get_current_datetime", return_value=fixed):
                    S3SigV4Auth(creds, "s3", "us-east-1").add_auth(request)
                out.append(request.headers["Authorization"].split("Signature=")[1])
            print(json.dumps(out))
            """
        let input = try JSONSerialization.data(withJSONObject: cases.map { item in
            [item.method, item.path, item.query.map { [$0.0, $0.1] }, item.headers.map { [$0.0, $0.1] }, item.body] as [Any]
        })
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sigv4-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try script.write(to: folder.appendingPathComponent("sign.py"), atomically: true, encoding: .utf8)
        try input.write(to: folder.appendingPathComponent("cases.json"))
        let run = try await ChildProcess.run("/bin/sh", ["-c", "cd \(folder.path) && python3 sign.py < cases.json"])
        guard run.status == 0 else {
            // botocore comes with moto[server], which the S3 tests need anyway; CI installs it.
            if ProcessInfo.processInfo.environment["CI"] != nil { Issue.record("botocore is not available: \(run.text)") }
            return
        }
        let expected = try JSONDecoder().decode([String].self, from: Data(run.text.utf8))
        for (index, item) in cases.enumerated() {
            let payloadHash = SHA256.hash(data: Array(item.body.utf8)).hexString
            let signed = Self.signer.sign(method: item.method, path: item.path, query: item.query,
                                          headers: [("host", "s3.example.com")] + item.headers,
                                          payloadHash: payloadHash, date: Self.exampleDate)
            #expect(Self.signature(signed) == expected[index], "case \(index): \(item.method) \(item.path)")
        }
    }

    static func client() async throws -> S3Client {
        let client = S3Client(try await S3TestServer.shared.configuration())
        try await client.createBucket()
        return client
    }

    @Test("the client stores, reads ranges of, lists and deletes objects, and runs multipart uploads to the end or aborts them")
    func clientAgainstAnS3Server() async throws {
        let client = try await Self.client()
        let bytes = ByteBuffer(bytes: (0..<10_000).map { UInt8($0 % 251) })
        try await client.putObject("a/b c.bin", body: bytes)
        #expect(try await client.headObject("a/b c.bin") == 10_000)
        #expect(try await client.headObject("missing") == nil)
        var ranged: [UInt8] = []
        try await client.getObject("a/b c.bin", range: 100..<110) { ranged += $0.readableBytesView }
        #expect(ranged == (100..<110).map { UInt8($0 % 251) })
        #expect(try await client.listObjects(prefix: "a/").keys.map(\.key) == ["a/b c.bin"])
        try await client.deleteObject("a/b c.bin")
        try await client.deleteObject("a/b c.bin")
        #expect(try await client.headObject("a/b c.bin") == nil)

        let part = ByteBuffer(bytes: [UInt8](repeating: 7, count: 5 << 20))
        let upload = try await client.createMultipartUpload("video")
        let first = try await client.uploadPart("video", uploadID: upload, number: 1, body: part)
        let second = try await client.uploadPart("video", uploadID: upload, number: 2, body: ByteBuffer(string: "end"))
        let listed = try await client.listParts("video", uploadID: upload)
        #expect(listed.map(\.number) == [1, 2] && listed.map(\.size) == [5 << 20, 3])
        #expect(try await client.listMultipartUploads(prefix: "").contains { $0.uploadID == upload })
        try await client.completeMultipartUpload("video", uploadID: upload, parts: [
            .init(number: 1, etag: first, size: 5 << 20), .init(number: 2, etag: second, size: 3),
        ])
        #expect(try await client.headObject("video") == (5 << 20) + 3)
        let abandoned = try await client.createMultipartUpload("abandoned")
        _ = try await client.uploadPart("abandoned", uploadID: abandoned, number: 1, body: ByteBuffer(string: "x"))
        try await client.abortMultipartUpload("abandoned", uploadID: abandoned)
        try await client.abortMultipartUpload("abandoned", uploadID: abandoned)
        #expect(try await client.listMultipartUploads(prefix: "").isEmpty)
    }

    @Test("an upload cut on one instance resumes on another through the same PostgreSQL and bucket; one writer at a time across them")
    func resumesOnAnotherInstance() async throws {
        guard TestBackend.available.contains(.postgres) else { return }
        let s3 = try await S3TestServer.shared.configuration()
        try await S3Client(s3).createBucket()
        let first = try await TestServer.make(.postgres) { $0.s3 = s3 }
        let second = try await TestServer.make(.postgres, databaseURL: first.services.configuration.databaseURL) { $0.s3 = s3 }
        let carrier = try await CarrierFixture.make(first, name: "Alpha")
        let inspection = try await UploadTests.openInspection(first, carrier)
        let a = try await LiveServer(first)
        let b = try await LiveServer(second)
        defer { Task { await a.stop(); await b.stop() } }
        let token = carrier.driver.accessToken
        let file = MediaSamples.mp4(size: 19 << 20)
        let tus = UploadTests.tus(token)

        let created = try await RawHTTP.request(port: a.port, "POST", "/v1/uploads", headers: UploadTests.tus(token, [
            "Upload-Length": String(file.count), "Upload-Metadata": MediaSamples.metadata(inspection.id, .walkthrough, filename: "walk.mp4"),
        ]))
        let location = try #require(created.headers["location"])
        // Cuts inside the first part's tail, across part boundaries, and inside the last part; each resume goes to the other instance.
        var offset = 0
        for (index, cut) in [3 << 20, 9 << 20, (17 << 20) + 12_345].enumerated() {
            let port = index % 2 == 0 ? a.port : b.port
            let socket = try RawSocket(port: port)
            try await socket.send(RawHTTP.head("PATCH", location, headers: UploadTests.tus(token, [
                "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
            ]), contentLength: file.count - offset) + Array(file[offset..<cut]))
            socket.close()
            var reported = -1
            for _ in 0..<500 {
                let other = index % 2 == 0 ? b.port : a.port
                let head = try await RawHTTP.request(port: other, "HEAD", location, headers: tus)
                reported = Int(head.headers["upload-offset"] ?? "") ?? -1
                if reported == cut { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(reported == cut, "after a cut at \(cut), the other instance reports \(reported)")
            offset = reported
        }

        // While a request on A writes (its body still coming), B refuses a second writer.
        // The last cut's request gives its lease back after recording its offset: until it has, the lease
        // seen below would be that one, and B (not the slow request) would write and finish the upload.
        let uploadID = String(location.split(separator: "/").last ?? "")
        func lease() async throws -> String? {
            try await first.services.database.read { db in
                try await db.first("SELECT lease_token FROM uploads WHERE id = \(uploadID)")?.optionalString("lease_token")
            }
        }
        for _ in 0..<500 {
            if try await lease() == nil { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await lease() == nil, "the last cut's request still holds the upload")
        let slow = try RawSocket(port: a.port)
        try await slow.send(RawHTTP.head("PATCH", location, headers: UploadTests.tus(token, [
            "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
        ]), contentLength: file.count - offset) + Array(file[offset..<(offset + 1000)]))
        // Only once A holds the lease: a PATCH from B arriving first would rightly write (and finish) the upload itself.
        for _ in 0..<500 {
            if try await lease() != nil { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        var locked = 0
        for _ in 0..<100 {
            locked = try await RawHTTP.request(port: b.port, "PATCH", location, headers: UploadTests.tus(token, [
                "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
            ]), body: Array(file[offset...])).status
            if locked == 423 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(locked == 423)
        slow.close()
        for _ in 0..<500 {
            let head = try await RawHTTP.request(port: b.port, "HEAD", location, headers: tus)
            offset = Int(head.headers["upload-offset"] ?? "") ?? offset
            let done = try await RawHTTP.request(port: b.port, "PATCH", location, headers: UploadTests.tus(token, [
                "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
            ]), body: Array(file[offset...]))
            if done.status == 204 { break }
            try await Task.sleep(for: .milliseconds(20))
        }

        let attached = try await first.store.inspections.inspection(inspection.id, carrier.scope)
        let video = try #require(attached.media.first { $0.slot == .walkthrough })
        #expect(video.sha256 == UploadTests.hex(file) && video.sizeBytes == Int64(file.count) && video.contentType == "video/mp4")
        let ranged = try await RawHTTP.request(port: a.port, "GET", "/v1/inspections/\(inspection.id)/media/walkthrough",
                                               headers: ["Authorization": "Bearer \(token)", "Range": "bytes=1000-1999"])
        #expect(ranged.status == 206 && ranged.body == Array(file[1000..<2000]))
        // Nothing of the upload is left in progress: no multipart upload, no tail objects.
        let client = S3Client(s3)
        #expect(try await client.listMultipartUploads(prefix: "").isEmpty)
        #expect(try await client.listObjects(prefix: ".partial/").keys.isEmpty)
    }

    @Test("an abandoned S3 upload is aborted at expiry with its tail; leftovers older than the lifetime are swept")
    func expiryAbortsMultipart() async throws {
        let s3 = try await S3TestServer.shared.configuration()
        try await S3Client(s3).createBucket()
        let server = try await TestServer.make(.sqlite) { $0.s3 = s3 }
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await UploadTests.openInspection(server, carrier)
        try await server.run { api in
            let token = carrier.driver.accessToken
            let created = try await api.call(.createUpload, token: token, headers: UploadTests.tus(token, [
                "Upload-Length": "6000000", "Upload-Metadata": MediaSamples.metadata(inspection.id, .walkthrough, filename: "w.mp4"),
            ]))
            let location = try #require(created.headers[.init("Location")!])
            let id = String(location.split(separator: "/").last ?? "")
            let chunk = MediaSamples.mp4(size: 2000)
            let patched = try await api.call(.appendUpload, id, bytes: chunk, token: token, headers: UploadTests.tus(token, [
                "Upload-Offset": "0", "Content-Type": Tus.patchContentType,
            ]))
            #expect(patched.status == 204, "\(patched.text)")
            // A request resuming there never records less than what the client was told.
            let record = try await server.store.uploads.find(id, user: carrier.driver.user.id, tenant: carrier.tenant.id)
            let writer = try await server.services.media.openPartial(id, key: record.fileKey, handle: record.storageHandle,
                                                                     length: record.length, at: record.received)
            #expect(record.received == 2000)
            #expect(try await writer.checkpoint() == 2000)
            writer.close()
            let client = S3Client(s3)
            let pending = try await client.listMultipartUploads(prefix: "")
            #expect(pending.count == 1, "\(pending)")
            #expect(try await client.listObjects(prefix: ".partial/").keys.count == 1)
            server.clock.advance(by: 25 * 3600)
            #expect(try await server.services.pruneExpiredUploads() == 1)
            #expect(try await client.listMultipartUploads(prefix: "").isEmpty)
            #expect(try await client.listObjects(prefix: ".partial/").keys.isEmpty)
        }
        let client = S3Client(s3)
        // A multipart upload no row describes (a crash lost it) goes once it is older than twice the lifetime; one an
        // upload row describes stays, however old the store says it is (moto dates every multipart upload 2010).
        // (A second server on the same bucket: the first one's clock is a day on, past its tokens.)
        let other = try await TestServer.make(.sqlite) { $0.s3 = s3 }
        let driver = try await CarrierFixture.make(other, name: "Beta")
        let shot = try await UploadTests.openInspection(other, driver)
        try await other.run { api in
            let token = driver.driver.accessToken
            let created = try await api.call(.createUpload, token: token, headers: UploadTests.tus(token, [
                "Upload-Length": "6000000", "Upload-Metadata": MediaSamples.metadata(shot.id, .walkthrough, filename: "w.mp4"),
            ]))
            let live = String(try #require(created.headers[.init("Location")!]).split(separator: "/").last ?? "")
            let record = try await other.store.uploads.find(live, user: driver.driver.user.id, tenant: driver.tenant.id)
            let handle = try #require(record.storageHandle)
            _ = try await other.services.pruneExpiredUploads()
            #expect(try await client.listMultipartUploads(prefix: "").map(\.uploadID) == [handle], "the sweep took an upload in progress")
            _ = try await client.createMultipartUpload("orphan")
            // An upload opening now: its row is written, its multipart upload begun, its handle not yet on the row.
            let opening = try await client.createMultipartUpload(record.fileKey)
            let storage = S3MediaStorage(client: S3Client(s3, now: { Date().addingTimeInterval(3 * 86_400) }))
            #expect(try await storage.removeLeftovers(olderThan: 2 * 86_400, described: { try await other.store.uploads.described($0) }) == 1)
            #expect(Set(try await client.listMultipartUploads(prefix: "").map(\.uploadID)) == [handle, opening],
                    "the sweep took the multipart upload of an upload opening meanwhile")
        }
    }

    @Test("a checksummed chunk that trickles in past the lease keeps it: no second writer gets in meanwhile")
    func checksummedChunkKeepsItsLease() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await UploadTests.openInspection(server, carrier)
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        let token = carrier.driver.accessToken
        let photo = MediaSamples.jpeg(size: 64 << 10)
        let created = try await RawHTTP.request(port: live.port, "POST", "/v1/uploads", headers: UploadTests.tus(token, [
            "Upload-Length": String(photo.count), "Upload-Metadata": MediaSamples.metadata(inspection.id, .front),
        ]))
        let location = try #require(created.headers["location"])
        let sum = Data(SHA256.hash(data: photo)).base64EncodedString()
        let slow = try RawSocket(port: live.port)
        try await slow.send(RawHTTP.head("PATCH", location, headers: UploadTests.tus(token, [
            "Upload-Offset": "0", "Content-Type": Tus.patchContentType, "Upload-Checksum": "sha256 \(sum)",
        ]), contentLength: photo.count) + Array(photo[0..<4096]))
        // Time passes beyond the lease while the chunk is still arriving.
        var sent = 4096
        for _ in 0..<3 {
            try await Task.sleep(for: .milliseconds(200))
            server.clock.advance(by: 25)
            try await slow.send(Array(photo[sent..<(sent + 2048)]))
            sent += 2048
        }
        try await Task.sleep(for: .milliseconds(300))
        let second = try await RawHTTP.request(port: live.port, "PATCH", location, headers: UploadTests.tus(token, [
            "Upload-Offset": "0", "Content-Type": Tus.patchContentType,
        ]), body: Array(photo[0..<1000]))
        #expect(second.status == 423, "a second writer got \(second.status) while the first still held the upload")
        #expect(second.headers["retry-after"] != nil)
        try await slow.send(Array(photo[sent...]))
        #expect(try await slow.readResponse().status == 204)
        slow.close()
    }

    @Test("stored bytes that vanished from the bucket: a lost tail rewinds the upload to what is still stored, a lost multipart upload ends it with 410")
    func lostBytesAreAnsweredNotRetriedForever() async throws {
        let s3 = try await S3TestServer.shared.configuration()
        let bucket = S3Client(s3)
        try await bucket.createBucket()
        let server = try await TestServer.make(.sqlite) { $0.s3 = s3 }
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let inspection = try await UploadTests.openInspection(server, carrier)
        let live = try await LiveServer(server)
        defer { Task { await live.stop() } }
        let token = carrier.driver.accessToken
        let tus = UploadTests.tus(token)
        let file = MediaSamples.mp4(size: 12 << 20)

        func create() async throws -> String {
            let created = try await RawHTTP.request(port: live.port, "POST", "/v1/uploads", headers: UploadTests.tus(token, [
                "Upload-Length": String(file.count), "Upload-Metadata": MediaSamples.metadata(inspection.id, .walkthrough, filename: "walk.mp4"),
            ]))
            return try #require(created.headers["location"])
        }
        func cut(_ location: String, at end: Int) async throws {
            let socket = try RawSocket(port: live.port)
            try await socket.send(RawHTTP.head("PATCH", location, headers: UploadTests.tus(token, [
                "Upload-Offset": "0", "Content-Type": Tus.patchContentType,
            ]), contentLength: file.count) + Array(file[0..<end]))
            socket.close()
            // The server stores what came before the cut on its own time; beside a busy suite that can take a while.
            let deadline = ContinuousClock.now + .seconds(120)
            var offset: String?
            repeat {
                offset = try await RawHTTP.request(port: live.port, "HEAD", location, headers: tus).headers["upload-offset"]
                if offset == String(end) { return }
                try await Task.sleep(for: .milliseconds(20))
            } while ContinuousClock.now < deadline
            Issue.record("the cut upload stayed at offset \(offset ?? "none"), not \(end)")
        }
        func patch(_ location: String, from start: Int) async throws -> RawHTTP.Answer {
            // 423 while the cut request still holds its lease; 503 when the store stumbled (moto beside a busy suite
            // answers a bare 500 now and then): as the app does, ask for the offset and go on from there.
            let deadline = ContinuousClock.now + .seconds(120)
            var offset = start
            var answer: RawHTTP.Answer
            repeat {
                answer = try await RawHTTP.request(port: live.port, "PATCH", location, headers: UploadTests.tus(token, [
                    "Upload-Offset": String(offset), "Content-Type": Tus.patchContentType,
                ]), body: Array(file[offset...]))
                guard answer.status == 423 || answer.status == 503 else { break }
                try await Task.sleep(for: .milliseconds(50))
                if answer.status == 503, let stored = try await RawHTTP.request(port: live.port, "HEAD", location, headers: tus)
                    .headers["upload-offset"].flatMap(Int.init) { offset = stored }
            } while ContinuousClock.now < deadline
            return answer
        }

        // The tail object of a cut at 3 MiB disappears: the next PATCH is told to start again from 0, and then finishes.
        let first = try await create()
        try await cut(first, at: 3 << 20)
        let id = String(first.split(separator: "/").last ?? "")
        for (key, _) in try await bucket.listObjects(prefix: S3MediaStorage.tailPrefix(id)).keys { try await bucket.deleteObject(key) }
        // (A chunk of 1 KiB: the answer comes before the body is read.)
        let rewound = try await RawHTTP.request(port: live.port, "PATCH", first, headers: UploadTests.tus(token, [
            "Upload-Offset": String(3 << 20), "Content-Type": Tus.patchContentType,
        ]), body: Array(file[(3 << 20)..<((3 << 20) + 1024)]))
        #expect(rewound.status == 409 && rewound.headers["upload-offset"] == "0", "\(rewound.status) \(rewound.text)")
        let finished = try await patch(first, from: 0)
        #expect(finished.status == 204, "\(finished.status) \(finished.text)")
        let stored = try await server.store.inspections.inspection(inspection.id, carrier.scope).media.first { $0.slot == .walkthrough }
        #expect(stored?.sha256 == UploadTests.hex(file))

        // The multipart upload itself is aborted behind the server's back: 410, and the upload is gone (the app starts a new one).
        let second = try await create()
        try await cut(second, at: 9 << 20)
        let record = try await server.store.uploads.find(String(second.split(separator: "/").last ?? ""), user: carrier.driver.user.id,
                                                   tenant: carrier.tenant.id)
        try await bucket.abortMultipartUpload(record.fileKey, uploadID: try #require(record.storageHandle))
        let gone = try await patch(second, from: 9 << 20)
        #expect(gone.status == 410 && gone.errorCode == "upload_lost", "\(gone.status) \(gone.text)")
        #expect(try await RawHTTP.request(port: live.port, "HEAD", second, headers: tus).status == 404)
    }

}
