import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import VroomXModels

/// Resumable media uploads over tus 1.0 (core, creation, termination,
/// checksum, expiration), so any standard tus client can send a photo or a
/// walkthrough video: create an upload for an inspection slot (or a photo of
/// a unit), PATCH bytes at offsets, HEAD to learn the offset after an
/// interruption. Bytes that arrived before a connection dropped are kept. A
/// finished upload becomes the slot's file (or the unit's photo) and the
/// change reaches the feed.
struct UploadController {
    let uploads: UploadService

    func register(_ routes: Routes) {
        let maxSize = uploads.limits.maxVideoBytes
        routes.onResponse(.uploadOptions) { _, _ in
            var headers = Self.tusHeaders
            headers[.tusVersion] = Tus.version
            headers[.tusExtension] = Tus.extensions
            headers[.tusChecksumAlgorithm] = Tus.checksumAlgorithms
            headers[.tusMaxSize] = String(maxSize)
            return Response(status: .noContent, headers: headers)
        }
        routes.onResponse(.createUpload) { request, context in try await tus { try await create(request, context) } }
        routes.onResponse(.uploadOffset) { request, context in try await tus { try await head(request, context) } }
        routes.onResponse(.appendUpload) { request, context in try await tus { try await patch(request, context) } }
        routes.onResponse(.terminateUpload) { request, context in try await tus { try await terminate(request, context) } }
    }

    static var tusHeaders: HTTPFields {
        var headers = HTTPFields()
        headers[.tusResumable] = Tus.version
        return headers
    }

    /// Every tus answer, errors included, says which protocol version it speaks.
    private func tus(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch var error as AppError {
            error.headers["Tus-Resumable"] = Tus.version
            throw error
        }
    }

    private func checkVersion(_ request: Request) throws {
        guard request.headers[.tusResumable] == Tus.version else {
            var error = AppError(412, .tusVersionUnsupported, "Send Tus-Resumable: \(Tus.version).", field: "Tus-Resumable")
            error.headers["Tus-Version"] = Tus.version
            throw error
        }
    }

    // MARK: Creation

    private func create(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        try checkVersion(request)
        let identity = try context.caller()
        if request.headers[.uploadDeferLength] != nil {
            throw AppError(400, .invalidParameter, "Upload-Defer-Length is not supported; send Upload-Length.", field: "Upload-Defer-Length")
        }
        guard let length = try request.integer(.uploadLength) else {
            throw AppError(400, .invalidParameter, "Upload-Length must be the file size in bytes.", field: "Upload-Length")
        }
        let metadataText = request.headers[.uploadMetadata] ?? ""
        guard metadataText.utf8.count <= 4096, let metadata = Tus.decodeMetadata(metadataText) else {
            throw AppError(400, .invalidParameter, "Upload-Metadata must be comma-separated `key base64` pairs.", field: "Upload-Metadata")
        }
        let record = try await uploads.start(try Self.target(metadata), length: length, metadata: metadataText, identity)
        var headers = Self.tusHeaders
        headers[.location] = Endpoint.appendUpload.path(record.id)
        headers[.uploadExpires] = Self.httpDate(record.expiresAt)
        return Response(status: .created, headers: headers)
    }

    /// `inspection_id` with the `slot` it fills, `equipment_id` for a photo of a unit, `expense_id` for a
    /// receipt, or `payment_id` for the photo of a payment the driver collected.
    static func target(_ metadata: [String: String]) throws -> UploadTarget {
        if let problem = metadata["problem_id"] {
            guard metadata["inspection_id"] == nil, metadata["equipment_id"] == nil, metadata["expense_id"] == nil, metadata["payment_id"] == nil,
                  metadata["message_id"] == nil, let id = ID<StopProblem>(problem), let order = metadata["order_id"].flatMap(ID<Order>.init) else {
                throw AppError(400, .invalidParameter, "A problem's photo names its problem_id and the order_id it is on, and nothing else.",
                               field: "Upload-Metadata")
            }
            return .problemPhoto(id, order: order)
        }
        if let message = metadata["message_id"] {
            guard metadata["inspection_id"] == nil, metadata["equipment_id"] == nil, metadata["expense_id"] == nil, metadata["payment_id"] == nil,
                  let id = ID<DriverMessage>(message) else {
                throw AppError(400, .invalidParameter, "A message's photo names its message_id, and nothing else.", field: "Upload-Metadata")
            }
            return .messagePhoto(id)
        }
        let paper = ["expense_id", "payment_id"].filter { metadata[$0] != nil }
        if let named = paper.first {
            guard paper.count == 1, metadata["inspection_id"] == nil, metadata["equipment_id"] == nil, let value = metadata[named] else {
                throw AppError(400, .invalidParameter, "Upload-Metadata names one inspection_id, equipment_id, expense_id or payment_id.",
                               field: "Upload-Metadata")
            }
            if named == "expense_id", let expense = ID<Expense>(value) { return .receipt(expense) }
            if named == "payment_id", let payment = ID<InvoicePayment>(value) { return .collectionPhoto(payment) }
            throw AppError(400, .invalidParameter, "Upload-Metadata's \(named) is not an id.", field: "Upload-Metadata")
        }
        if let unit = metadata["equipment_id"] {
            guard metadata["inspection_id"] == nil, let id = ID<Equipment>(unit) else {
                throw AppError(400, .invalidParameter, "Upload-Metadata names either an inspection_id or an equipment_id (a unit id).",
                               field: "Upload-Metadata")
            }
            return .unitPhoto(id)
        }
        guard let inspection = metadata["inspection_id"].flatMap(ID<Inspection>.init) else {
            throw AppError(400, .invalidParameter, "Upload-Metadata must name the inspection_id (or the equipment_id of a unit's photo).",
                           field: "Upload-Metadata")
        }
        let slot = MediaSlot(metadata["slot"] ?? "")
        guard slot.isValid else {
            throw AppError(400, .invalidParameter, "Upload-Metadata must name a slot of the inspection (like front or walkthrough).",
                           field: "Upload-Metadata")
        }
        return .inspection(inspection, slot)
    }

    // MARK: Core

    private func head(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        try checkVersion(request)
        let upload = try await uploads.upload(try uploadID(context), try context.caller())
        var headers = Self.tusHeaders
        headers[.uploadOffset] = String(upload.completedAt == nil ? upload.received : upload.length)
        headers[.uploadLength] = String(upload.length)
        headers[.cacheControl] = "no-store"
        if !upload.metadata.isEmpty { headers[.uploadMetadata] = upload.metadata }
        if upload.completedAt == nil { headers[.uploadExpires] = Self.httpDate(upload.expiresAt) }
        return Response(status: .ok, headers: headers)
    }

    private func patch(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        try checkVersion(request)
        guard request.headers[.contentType]?.lowercased() == Tus.patchContentType else {
            throw AppError(415, .unsupportedMediaType, "Send the bytes as \(Tus.patchContentType).", field: "Content-Type")
        }
        guard let offset = try request.integer(.uploadOffset) else {
            throw AppError(400, .invalidParameter, "Upload-Offset must be the byte offset of this chunk.", field: "Upload-Offset")
        }
        let contentLength = try request.integer(.contentLength)
        let checksum = try request.headers[.uploadChecksum].map(Checksum.init(header:))
        let upload = try await uploads.append(request.body, contentLength: contentLength, at: offset, checksum: checksum,
                                              to: try uploadID(context), try context.caller())
        var headers = Self.tusHeaders
        headers[.uploadOffset] = String(upload.received)
        if upload.received < upload.length { headers[.uploadExpires] = Self.httpDate(upload.expiresAt) }
        return Response(status: .noContent, headers: headers)
    }

    // MARK: Termination

    private func terminate(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        try checkVersion(request)
        try await uploads.terminate(try uploadID(context), try context.caller())
        return Response(status: .noContent, headers: Self.tusHeaders)
    }

    private func uploadID(_ context: AppRequestContext) throws -> String {
        guard let id = context.parameters.get("id"), UUID(uuidString: id) != nil else { throw AppError.notFound("Upload") }
        return id.lowercased()
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110), built without a formatter
    /// object on every response.
    static func httpDate(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

extension HTTPField.Name {
    static let tusResumable = HTTPField.Name("Tus-Resumable")!
    static let tusVersion = HTTPField.Name("Tus-Version")!
    static let tusExtension = HTTPField.Name("Tus-Extension")!
    static let tusMaxSize = HTTPField.Name("Tus-Max-Size")!
    static let tusChecksumAlgorithm = HTTPField.Name("Tus-Checksum-Algorithm")!
    static let uploadLength = HTTPField.Name("Upload-Length")!
    static let uploadOffset = HTTPField.Name("Upload-Offset")!
    static let uploadMetadata = HTTPField.Name("Upload-Metadata")!
    static let uploadExpires = HTTPField.Name("Upload-Expires")!
    static let uploadChecksum = HTTPField.Name("Upload-Checksum")!
    static let uploadDeferLength = HTTPField.Name("Upload-Defer-Length")!
}
