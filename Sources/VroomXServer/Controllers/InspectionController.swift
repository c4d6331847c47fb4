import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import VroomXModels

/// Inspections at pickup and delivery, and their files: authenticated
/// downloads with ranges, and a one-request upload for small files (large
/// ones use the resumable uploads).
struct InspectionController {
    let store: Store
    let media: any MediaStorage
    let uploads: UploadService

    func register(_ routes: Routes) {
        routes.on(.saveInspection) { request, context in
            let body = try await request.decodeJSON(SaveInspectionRequest.self)
            return try JSONBody.response(try await store.inspections.save(try context.id(), body, try context.caller().scope))
        }
        routes.on(.inspection) { _, context in
            try JSONBody.response(try await store.inspections.inspection(try context.id(), try context.caller().scope))
        }
        routes.on(.completeInspection) { request, context in
            let body = try await request.decodeOptionalJSON(CompleteInspectionRequest.self)
            return try JSONBody.response(try await store.inspections.complete(try context.id(), occurredAt: body?.occurredAt,
                                                                            try context.caller().scope).inspection)
        }
        routes.on(.orderInspections) { _, context in
            JSONBody.items(try await store.inspections.documents(of: try context.id(), try context.caller().scope))
        }
        routes.on(.dispatchOrderInspections) { _, context in
            JSONBody.items(try await store.inspections.documents(of: try context.id(), try context.caller().scope))
        }
        routes.onResponse(.inspectionMedia) { request, context in
            try await download(request, context)
        }
        routes.onResponse(.putInspectionMedia) { request, context in
            try await put(request, context)
        }
    }

    private func slot(_ context: AppRequestContext) throws -> MediaSlot {
        let slot = MediaSlot(context.parameters.get("slot") ?? "")
        guard slot.isValid else { throw AppError(400, .invalidParameter, "slot must be a slot name like front.", field: "slot") }
        return slot
    }

    /// The file, whole or the byte range asked for (one range; RFC 9110).
    private func download(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        let (described, key) = try await store.inspections.media(try context.id(), slot: try slot(context), try context.caller().scope)
        return try await Self.serve(request, contentType: described.contentType, sha256: described.sha256, key: key, media: media)
    }

    /// A stored file as the answer to a request, whole or the one byte
    /// range asked for (the API and the console both serve media so).
    static func serve(_ request: Request, contentType: String, sha256: String, key: String, media: any MediaStorage) async throws -> Response {
        let opened: (any StoredMediaReader)?
        do {
            opened = try await media.open(key)
        } catch {
            throw UploadService.storageError(error)
        }
        guard let reader = opened else { throw AppError.notFound("Media file") }
        let size = reader.size
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.acceptRanges] = "bytes"
        headers[.eTag] = "\"\(sha256)\""
        headers[.cacheControl] = "private, max-age=31536000, immutable"
        // The bytes were only checked to start like their type: never read as anything else, never run.
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentSecurityPolicy] = "sandbox; default-src 'none'"
        var requested = Int64(0)..<size
        var status = HTTPResponse.Status.ok
        if let header = request.headers[.range], request.headers[.ifRange].map({ $0 == "\"\(sha256)\"" }) ?? true {
            switch Self.parseRange(header, size: size) {
            case .whole:
                break
            case .unsatisfiable:
                reader.close()
                var error = AppError(416, .invalidParameter, "The range is outside the file (\(size) bytes).", field: "Range")
                error.headers["Content-Range"] = "bytes */\(size)"
                throw error
            case .part(let part):
                requested = part
                status = .partialContent
                headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(size)"
            }
        }
        let range = requested
        headers[.contentLength] = String(range.count)
        let body = ResponseBody(contentLength: Int(range.count)) { writer in
            defer { reader.close() }
            try await reader.read(range) { chunk in try await writer.write(chunk) }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    enum RangeAnswer: Equatable {
        case whole
        case part(Range<Int64>)
        case unsatisfiable
    }

    /// `bytes=a-b`, `bytes=a-`, `bytes=-n`. Several ranges, or a header that
    /// is not a byte range, get the whole file (RFC 9110 lets a server
    /// ignore a Range it does not support). Bounds are decimal digits only
    /// (`DecimalText`), so no arithmetic here can overflow.
    static func parseRange(_ header: String, size: Int64) -> RangeAnswer {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let bounds = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2 else { return .whole }
        if bounds[0].isEmpty {
            guard let suffix = DecimalText.int64(bounds[1]) else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - suffix)..<size)
        }
        guard let start = DecimalText.int64(bounds[0]) else { return .whole }
        guard start < size else { return .unsatisfiable }
        if bounds[1].isEmpty { return .part(start..<size) }
        guard let end = DecimalText.int64(bounds[1]), end >= start else { return .whole }
        // start < size, so size - 1 >= start >= 0 and the + 1 stays within size.
        return .part(start..<(min(end, size - 1) + 1))
    }

    /// A whole file in one request (Content-Length required): the same
    /// checks and storage as a resumable upload.
    private func put(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        let id: ID<Inspection> = try context.id()
        try await uploads.putWhole(request, to: .inspection(id, try slot(context)), try context.caller())
        return try JSONBody.response(try await store.inspections.inspection(id, try context.caller().scope)).response
    }
}
