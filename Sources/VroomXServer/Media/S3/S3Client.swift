import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import VroomXSecurity

/// Where an S3-compatible service is and how to sign for it
/// (`VROOMX_S3_*`). Path-style addressing (`endpoint/bucket/key`) suits
/// MinIO and most self-hosted services; virtual-hosted (`bucket.endpoint/key`)
/// is AWS's default.
public struct S3Configuration: Sendable, Hashable {
    public var endpoint: URL
    public var bucket: String
    public var region: String
    public var accessKeyID: String
    public var secretAccessKey: String
    public var pathStyle: Bool

    public init(endpoint: URL, bucket: String, region: String, accessKeyID: String, secretAccessKey: String, pathStyle: Bool) {
        self.endpoint = endpoint
        self.bucket = bucket
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.pathStyle = pathStyle
    }
}

extension S3Configuration {
    /// `VROOMX_S3_ENDPOINT`, `_BUCKET`, `_REGION` (default us-east-1),
    /// `_ACCESS_KEY_ID`, `_SECRET_ACCESS_KEY`, `_PATH_STYLE` (true/false,
    /// default true); nil when no endpoint is set. `prefix` names another
    /// set of the same variables (the backups' `VROOMX_BACKUP_S3_`), and
    /// `bucket` gives the bucket instead of a variable.
    static func fromEnvironment(_ environment: [String: String], prefix: String = "VROOMX_S3_", bucket given: String? = nil) throws -> S3Configuration? {
        func value(_ name: String) -> String? { environment[prefix + name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let endpoint = value("ENDPOINT") else { return nil }
        guard let url = URL(string: endpoint), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil,
              url.path.isEmpty || url.path == "/" else {
            throw ConfigurationError("\(prefix)ENDPOINT must be an http(s) URL without a path, like https://s3.us-east-1.amazonaws.com.")
        }
        func required(_ name: String) throws -> String {
            guard let value = value(name) else { throw ConfigurationError("With \(prefix)ENDPOINT, set \(prefix + name).") }
            return value
        }
        let bucket = try given ?? required("BUCKET")
        guard (3...63).contains(bucket.count), bucket.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-" || $0 == ".") }) else {
            throw ConfigurationError("\(given == nil ? prefix + "BUCKET" : "The bucket \"\(bucket)\"") must be a bucket name: 3 to 63 lowercase letters, digits, dots and hyphens.")
        }
        let pathStyle: Bool
        switch value("PATH_STYLE")?.lowercased() ?? "true" {
        case "true", "yes", "1": pathStyle = true
        case "false", "no", "0": pathStyle = false
        default: throw ConfigurationError("\(prefix)PATH_STYLE must be true or false.")
        }
        return S3Configuration(endpoint: url, bucket: bucket, region: value("REGION") ?? "us-east-1",
                               accessKeyID: try required("ACCESS_KEY_ID"), secretAccessKey: try required("SECRET_ACCESS_KEY"), pathStyle: pathStyle)
    }
}

/// An answer S3 gave that is not a success: its status and `<Code>`.
struct S3Error: Error, CustomStringConvertible {
    let status: Int
    let code: String
    let message: String
    var description: String { "S3 \(status) \(code): \(message)" }
    var isNotFound: Bool { status == 404 || code == "NoSuchKey" || code == "NoSuchUpload" }
}

/// The few S3 calls media storage needs, signed with SigV4 over
/// async-http-client: objects (put, ranged get, head, delete), multipart
/// uploads (create, upload part, complete, abort, list parts, list
/// uploads) and object listing for cleanup.
struct S3Client: Sendable {
    let configuration: S3Configuration
    let signer: SigV4Signer
    let http: HTTPClient
    let now: @Sendable () -> Date
    /// Every call ends within this (a part or a read is at most 8 MiB):
    /// well inside an upload's 60 s lease, which is renewed every 15 s, so a
    /// request stuck on the store never outlives its right to write.
    static let timeout: TimeAmount = .seconds(30)

    /// The store's own HTTP client: a store that refuses connections fails
    /// the call within the 3 s connect timeout (503 to the client, which
    /// retries) rather than at the request's deadline.
    static let sharedHTTP = HTTPClient(eventLoopGroupProvider: .singleton,
                                       configuration: .init(timeout: .init(connect: .seconds(3), read: .seconds(30))))

    init(_ configuration: S3Configuration, http: HTTPClient = S3Client.sharedHTTP, now: @escaping @Sendable () -> Date = Date.init) {
        self.configuration = configuration
        self.signer = SigV4Signer(credentials: .init(accessKeyID: configuration.accessKeyID, secretAccessKey: configuration.secretAccessKey),
                                  region: configuration.region, service: "s3")
        self.http = http
        self.now = now
    }

    struct Part: Sendable, Hashable {
        let number: Int
        let etag: String
        let size: Int64
    }

    // MARK: Objects

    func putObject(_ key: String, body: ByteBuffer, contentType: String? = nil) async throws {
        var headers: [(String, String)] = []
        if let contentType { headers.append(("content-type", contentType)) }
        _ = try await send("PUT", key: key, headers: headers, body: body)
    }

    /// The object's bytes in `range` (or all), streamed to `consume` as they arrive.
    func getObject(_ key: String, range: Range<Int64>? = nil,
                   consume: (ByteBuffer) async throws -> Void) async throws {
        var headers: [(String, String)] = []
        if let range, !range.isEmpty { headers.append(("range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")) }
        let response = try await execute("GET", key: key, query: [], headers: headers, body: nil)
        guard (200..<300).contains(Int(response.status.code)) else {
            throw try await Self.error(response)
        }
        for try await chunk in response.body { try await consume(chunk) }
    }

    /// The whole (small) object in memory, or nil when there is none.
    func getSmallObject(_ key: String, limit: Int) async throws -> ByteBuffer? {
        var collected = ByteBuffer()
        do {
            try await getObject(key) { chunk in
                guard collected.readableBytes + chunk.readableBytes <= limit else {
                    throw S3Error(status: 0, code: "TooLarge", message: "\(key) is over \(limit) bytes")
                }
                var chunk = chunk
                collected.writeBuffer(&chunk)
            }
        } catch let error as S3Error where error.isNotFound {
            return nil
        }
        return collected
    }

    /// The object's size, or nil when there is none.
    func headObject(_ key: String) async throws -> Int64? {
        let response = try await execute("HEAD", key: key, query: [], headers: [], body: nil)
        if response.status == .notFound { return nil }
        guard response.status == .ok else { throw S3Error(status: Int(response.status.code), code: "", message: "HEAD \(key)") }
        return response.headers.first(name: "content-length").flatMap { Int64($0) }
    }

    /// Deletes an object; deleting one that is not there succeeds.
    func deleteObject(_ key: String) async throws {
        _ = try await send("DELETE", key: key)
    }

    /// Keys under a prefix with their last-modified time, a page at a time.
    func listObjects(prefix: String, continuation: String? = nil) async throws -> (keys: [(key: String, modified: Date?)], next: String?) {
        let page = try await listPage(prefix: prefix, continuation: continuation)
        return (page.objects.map { ($0.key, $0.modified) }, page.next)
    }

    struct Listed: Sendable {
        let key: String
        let modified: Date?
        let size: Int64
    }

    /// Every object under a prefix (all pages).
    func listAllObjects(prefix: String) async throws -> [Listed] {
        var all: [Listed] = []
        var continuation: String?
        repeat {
            let page = try await listPage(prefix: prefix, continuation: continuation)
            all += page.objects
            continuation = page.next
        } while continuation != nil
        return all
    }

    private func listPage(prefix: String, continuation: String?) async throws -> (objects: [Listed], next: String?) {
        var query = [("list-type", "2"), ("prefix", prefix)]
        if let continuation { query.append(("continuation-token", continuation)) }
        let xml = try await send("GET", key: "", query: query)
        let objects = S3XML.elements("Contents", in: xml).map { item in
            Listed(key: S3XML.value("Key", in: item) ?? "", modified: S3XML.value("LastModified", in: item).flatMap(S3XML.date),
                   size: S3XML.value("Size", in: item).flatMap { Int64($0) } ?? -1)
        }
        let truncated = S3XML.value("IsTruncated", in: xml) == "true"
        return (objects, truncated ? S3XML.value("NextContinuationToken", in: xml) : nil)
    }

    // MARK: Files

    /// Size of each part when a file goes up in parts (S3 allows 10,000 parts: files up to 80 GiB).
    static let filePartBytes = 8 << 20

    /// Uploads a file without holding it in memory: in one request when it
    /// fits a part, else as a multipart upload (aborted if any part fails).
    func putFile(_ key: String, from file: URL) async throws {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        let first = try handle.read(upToCount: Self.filePartBytes) ?? Data()
        let second = try handle.read(upToCount: Self.filePartBytes) ?? Data()
        guard !second.isEmpty else {
            try await putObject(key, body: ByteBuffer(bytes: first))
            return
        }
        let uploadID = try await createMultipartUpload(key)
        do {
            var parts: [Part] = []
            var chunk = first
            var next = second
            while !chunk.isEmpty {
                let number = parts.count + 1
                let etag = try await uploadPart(key, uploadID: uploadID, number: number, body: ByteBuffer(bytes: chunk))
                parts.append(Part(number: number, etag: etag, size: Int64(chunk.count)))
                chunk = next
                next = chunk.isEmpty ? Data() : try handle.read(upToCount: Self.filePartBytes) ?? Data()
            }
            try await completeMultipartUpload(key, uploadID: uploadID, parts: parts)
        } catch {
            try? await abortMultipartUpload(key, uploadID: uploadID)
            throw error
        }
    }

    /// Downloads an object of `size` bytes into a new file, a part's worth
    /// per request (each request has the calls' deadline), removing the file
    /// again if the download fails.
    func getFile(_ key: String, size: Int64, to file: URL) async throws {
        // Readable by the server's user alone, as the files it writes itself (the sign-in key among them).
        guard FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw S3Error(status: 0, code: "LocalFile", message: "cannot create \(file.path)")
        }
        do {
            let handle = try FileHandle(forWritingTo: file)
            defer { try? handle.close() }
            var offset: Int64 = 0
            while offset < size {
                let end = min(size, offset + Int64(Self.filePartBytes))
                var received: Int64 = 0
                try await getObject(key, range: offset..<end) { chunk in
                    received += Int64(chunk.readableBytes)
                    try handle.write(contentsOf: chunk.readableBytesView)
                }
                guard received == end - offset else {
                    throw S3Error(status: 0, code: "ShortRead", message: "\(key): \(received) of \(end - offset) bytes at \(offset)")
                }
                offset = end
            }
            try handle.synchronize()
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw error
        }
    }

    /// Creates the bucket (for tests and first-time setup scripts).
    func createBucket() async throws {
        _ = try await send("PUT", key: "")
    }

    // MARK: Multipart uploads

    func createMultipartUpload(_ key: String) async throws -> String {
        let xml = try await send("POST", key: key, query: [("uploads", "")])
        guard let id = S3XML.value("UploadId", in: xml), !id.isEmpty else {
            throw S3Error(status: 200, code: "NoUploadId", message: "CreateMultipartUpload answered without an UploadId")
        }
        return id
    }

    /// Uploads one part (1…10000); S3 keeps the last one sent under a number.
    func uploadPart(_ key: String, uploadID: String, number: Int, body: ByteBuffer) async throws -> String {
        let response = try await execute("PUT", key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)],
                                         headers: [], body: body)
        guard response.status == .ok else { throw try await Self.error(response) }
        return response.headers.first(name: "etag") ?? ""
    }

    /// Joins the parts into the object. S3 may answer 200 with an error in
    /// the body, which is an error here.
    func completeMultipartUpload(_ key: String, uploadID: String, parts: [Part]) async throws {
        let list = parts.sorted { $0.number < $1.number }
            .map { "<Part><PartNumber>\($0.number)</PartNumber><ETag>\(S3XML.escape($0.etag))</ETag></Part>" }.joined()
        let xml = try await send("POST", key: key, query: [("uploadId", uploadID)],
                                 body: ByteBuffer(string: "<CompleteMultipartUpload>\(list)</CompleteMultipartUpload>"))
        if let code = S3XML.value("Code", in: xml), xml.contains("<Error>") {
            throw S3Error(status: 200, code: code, message: S3XML.value("Message", in: xml) ?? "")
        }
    }

    /// Drops a multipart upload and its parts; one already gone succeeds.
    func abortMultipartUpload(_ key: String, uploadID: String) async throws {
        do {
            _ = try await send("DELETE", key: key, query: [("uploadId", uploadID)])
        } catch let error as S3Error where error.isNotFound {
            return
        }
    }

    func listParts(_ key: String, uploadID: String) async throws -> [Part] {
        var parts: [Part] = []
        var marker: String?
        var pages = 0
        repeat {
            // An upload has at most 10,000 parts, 1,000 a page: a marker that does not move ends the listing.
            pages += 1
            var query = [("uploadId", uploadID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let xml = try await send("GET", key: key, query: query)
            parts += S3XML.elements("Part", in: xml).compactMap { part in
                guard let number = S3XML.value("PartNumber", in: part).flatMap({ Int($0) }),
                      let etag = S3XML.value("ETag", in: part) else { return nil }
                return Part(number: number, etag: etag, size: S3XML.value("Size", in: part).flatMap { Int64($0) } ?? 0)
            }
            let next = S3XML.value("IsTruncated", in: xml) == "true" ? S3XML.value("NextPartNumberMarker", in: xml) : nil
            marker = next != marker ? next : nil
        } while marker != nil && pages < 100
        return parts
    }

    /// Unfinished multipart uploads under a prefix, with when each began: every page (a store answers 1,000 at a
    /// time, and the rest were never seen).
    func listMultipartUploads(prefix: String) async throws -> [(key: String, uploadID: String, initiated: Date?)] {
        var uploads: [(key: String, uploadID: String, initiated: Date?)] = []
        var marker: (key: String, uploadID: String)?
        var seen: Set<String> = []
        // At most 1,000 pages (a million uploads): a store whose markers never end cannot hold the sweep for ever.
        for _ in 0..<1_000 {
            var query = [("uploads", ""), ("prefix", prefix)]
            if let marker {
                query.append(("key-marker", marker.key))
                if !marker.uploadID.isEmpty { query.append(("upload-id-marker", marker.uploadID)) }
            }
            let xml = try await send("GET", key: "", query: query)
            let page = S3XML.elements("Upload", in: xml).compactMap { upload -> (key: String, uploadID: String, initiated: Date?)? in
                guard let key = S3XML.value("Key", in: upload), let id = S3XML.value("UploadId", in: upload) else { return nil }
                return (key, id, S3XML.value("Initiated", in: upload).flatMap(S3XML.date))
            }
            uploads += page
            guard S3XML.value("IsTruncated", in: xml) == "true" else { break }
            // The next page begins after the marker the store names, or else after this page's last upload.
            let named = S3XML.value("NextKeyMarker", in: xml).map { (key: $0, uploadID: S3XML.value("NextUploadIdMarker", in: xml) ?? "") }
            guard let next = named ?? page.last.map({ (key: $0.key, uploadID: $0.uploadID) }), !next.key.isEmpty,
                  seen.insert(next.key + "\n" + next.uploadID).inserted else { break }
            marker = next
        }
        return uploads
    }

    // MARK: Presigned URLs

    /// A URL anyone may GET for `expires` seconds.
    func presignedGetURL(_ key: String, expires: Int) -> URL? {
        let target = self.target(key)
        let query = signer.presignedQuery(method: "GET", path: target.path, query: [], host: target.host, expires: expires, date: now())
        return URL(string: target.base + SigV4Signer.canonicalURI(target.path) + "?" + SigV4Signer.canonicalQuery(query))
    }

    // MARK: Requests

    private struct Target {
        let base: String
        let host: String
        let path: String
    }

    /// Path-style: `endpoint/bucket/key`; virtual-hosted: `bucket.endpoint/key`.
    private func target(_ key: String) -> Target {
        let endpoint = configuration.endpoint
        let scheme = endpoint.scheme ?? "https"
        let port = endpoint.port.map { ":\($0)" } ?? ""
        let endpointHost = endpoint.host ?? ""
        let host = (configuration.pathStyle ? endpointHost : "\(configuration.bucket).\(endpointHost)") + port
        let path = configuration.pathStyle ? "/\(configuration.bucket)" + (key.isEmpty ? "" : "/\(key)") : "/\(key)"
        return Target(base: "\(scheme)://\(host)", host: host, path: path)
    }

    /// A request whose answer is a small XML document (or nothing).
    private func send(_ method: String, key: String, query: [(String, String)] = [], headers: [(String, String)] = [],
                      body: ByteBuffer? = nil) async throws -> String {
        let response = try await execute(method, key: key, query: query, headers: headers, body: body)
        guard (200..<300).contains(Int(response.status.code)) else {
            if method == "DELETE", response.status == .notFound, !query.contains(where: { $0.0 == "uploadId" }) { return "" }
            throw try await Self.error(response)
        }
        return String(buffer: try await response.body.collect(upTo: 16 << 20))
    }

    private func execute(_ method: String, key: String, query: [(String, String)], headers: [(String, String)],
                         body: ByteBuffer?) async throws -> HTTPClientResponse {
        let target = self.target(key)
        let payloadHash = body.map { buffer in
            buffer.withUnsafeReadableBytes { SHA256.hash(data: $0).hexString }
        } ?? SigV4Signer.emptyPayloadHash
        let all = headers + [("host", target.host)]
        let signed = signer.sign(method: method, path: target.path, query: query, headers: all, payloadHash: payloadHash, date: now())
        let queryText = SigV4Signer.canonicalQuery(query)
        var request = HTTPClientRequest(url: target.base + SigV4Signer.canonicalURI(target.path) + (queryText.isEmpty ? "" : "?" + queryText))
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers + signed where name != "host" { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) }
        return try await http.execute(request, timeout: Self.timeout)
    }

    private static func error(_ response: HTTPClientResponse) async throws -> S3Error {
        let text = String(buffer: (try? await response.body.collect(upTo: 1 << 20)) ?? ByteBuffer())
        return S3Error(status: Int(response.status.code), code: S3XML.value("Code", in: text) ?? "",
                       message: S3XML.value("Message", in: text) ?? "")
    }
}

/// Just enough XML for S3's answers: the text of `<Name>…</Name>` elements.
enum S3XML {
    static func elements(_ name: String, in xml: String) -> [String] {
        var found: [String] = []
        var rest = xml[...]
        while let open = rest.range(of: "<\(name)>"), let close = rest[open.upperBound...].range(of: "</\(name)>") {
            found.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return found
    }

    static func value(_ name: String, in xml: String) -> String? {
        elements(name, in: xml).first.map(unescape)
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&#34;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
