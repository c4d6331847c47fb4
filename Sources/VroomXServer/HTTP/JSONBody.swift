import Foundation
import Hummingbird
import NIOCore
import VroomXModels

/// What a handler answers: a status and a JSON body (or none). Kept as
/// plain bytes so an answer can be stored and replayed for an
/// `Idempotency-Key`.
struct Reply: Sendable {
    var status: HTTPResponse.Status
    var body: ByteBuffer?
    var headers = HTTPFields()

    init(status: HTTPResponse.Status, body: ByteBuffer?) {
        self.status = status
        self.body = body
    }

    var response: Response {
        var headers = self.headers
        guard let body else { return Response(status: status, headers: headers) }
        if headers[.contentType] == nil { headers[.contentType] = "application/json; charset=utf-8" }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}

/// JSON in and out, with the shared wire configuration.
enum JSONBody {
    /// Largest JSON body accepted; larger ones answer 413 `payload_too_large`.
    static let maxBytes = 256 * 1024

    static let encoder = WireJSON.encoder()
    static let decoder = WireJSON.decoder()

    static func response<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Reply {
        Reply(status: status, body: ByteBuffer(bytes: try WireJSON.encode(value)))
    }

    static func noContent() -> Reply { Reply(status: .noContent, body: nil) }

    /// `{"items":[…],"next_cursor":…}` assembled from stored row documents,
    /// without decoding and re-encoding them.
    static func items(_ page: DocumentPage) -> Reply {
        var buffer = ByteBufferAllocator().buffer(capacity: page.joined.readableBytes + 48 + (page.nextCursor?.utf8.count ?? 0))
        buffer.writeStaticString("{\"items\":[")
        buffer.writeImmutableBuffer(page.joined)
        buffer.writeStaticString("]")
        // Cursors are base64url: nothing in them needs escaping.
        if let nextCursor = page.nextCursor { buffer.writeString(",\"next_cursor\":\"\(nextCursor)\"") }
        buffer.writeStaticString("}")
        return Reply(status: .ok, body: buffer)
    }

    /// One stored row document.
    static func document(_ document: String) -> Reply {
        Reply(status: .ok, body: ByteBuffer(string: document))
    }

    /// Decodes a request body, answering each kind of bad input with its own
    /// code: 415 for a non-JSON content type, 413 when too large, 400
    /// `malformed_json` for bytes that are not JSON, 422 `validation_failed`
    /// (naming the field) for JSON of the wrong shape.
    /// `reading`: a reader of the body's usual shape, tried before the
    /// decoder (nil: not that shape, the decoder reads it).
    static func decode<T: Decodable>(_ type: T.Type, from request: Request,
                                     reading: ((UnsafeRawBufferPointer) -> T?)? = nil) async throws -> T {
        guard let value = try await decode(type, from: request, emptyAllowed: false, reading: reading) else {
            throw AppError(400, .malformedJSON, "The request body is empty; send a JSON object.")
        }
        return value
    }

    /// As `decode`, but an empty body is nil (for endpoints whose body is optional).
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, emptyAllowed: Bool,
                                     reading: ((UnsafeRawBufferPointer) -> T?)? = nil) async throws -> T? {
        if let contentType = request.headers[.contentType]?.lowercased(),
           !(contentType.hasPrefix("application/json") || contentType.contains("+json")) {
            throw AppError(415, .unsupportedMediaType, "Send the body as application/json.")
        }
        // A body announced larger than the limit is refused before any of it is read (not after waiting for it all).
        if let announced = request.headers[.contentLength].flatMap({ DecimalText.int64($0) }), announced > Int64(maxBytes) {
            throw tooLarge
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBytes)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        }
        guard buffer.readableBytes > 0 else { return nil }
        if let reading, let value = buffer.withUnsafeReadableBytes(reading) { return value }
        let data = Data(buffer.readableBytesView)
        do {
            return try decoder.decode(T.self, from: data)
        } catch let error as DecodingError {
            // The decoder calls a number that does not fit its field (1.5, 2^63) invalid JSON, naming no field.
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty, let field = misfitNumber(T.self, in: data) {
                throw AppError(422, .validationFailed, "\(field) must be a whole number (no fraction, at most 19 digits).", field: field)
            }
            throw describe(error)
        }
    }

    /// In a body that is JSON, the path of the number that keeps it from
    /// decoding: each number that is not a whole 64-bit one (a handful at
    /// most) is set to 0 in turn, and the one whose change lets the body past
    /// the number check is it.
    static func misfitNumber<T: Decodable>(_ type: T.Type, in data: Data) -> String? {
        guard let root = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        var candidates: [[JSONPathStep]] = []
        collectMisfits(root, path: [], into: &candidates)
        for path in candidates {
            guard let patched = try? JSONSerialization.data(withJSONObject: replacing(root, at: path[...], with: 0),
                                                           options: [.fragmentsAllowed]) else { continue }
            do {
                _ = try decoder.decode(T.self, from: patched)
            } catch let error as DecodingError {
                if case .dataCorrupted(let context) = error, context.codingPath.isEmpty { continue }
            } catch {}
            return path.map { step in
                switch step {
                case .key(let key): ".\(key)"
                case .index(let index): "[\(index)]"
                }
            }.joined().trimmingCharacters(in: CharacterSet(charactersIn: "."))
        }
        return nil
    }

    enum JSONPathStep {
        case key(String)
        case index(Int)
    }

    private static func collectMisfits(_ value: Any, path: [JSONPathStep], into candidates: inout [[JSONPathStep]]) {
        guard candidates.count < 8 else { return }
        switch value {
        case let object as [String: Any]:
            for (key, member) in object.sorted(by: { $0.key < $1.key }) { collectMisfits(member, path: path + [.key(key)], into: &candidates) }
        case let array as [Any]:
            for (index, member) in array.prefix(1000).enumerated() { collectMisfits(member, path: path + [.index(index)], into: &candidates) }
        case let number as NSNumber:
            if Int64(number.stringValue) == nil { candidates.append(path) }
        default:
            break
        }
    }

    private static func replacing(_ value: Any, at path: ArraySlice<JSONPathStep>, with replacement: Any) -> Any {
        guard let step = path.first else { return replacement }
        switch (step, value) {
        case (.key(let key), var object as [String: Any]):
            object[key] = object[key].map { replacing($0, at: path.dropFirst(), with: replacement) }
            return object
        case (.index(let index), var array as [Any]) where array.indices.contains(index):
            array[index] = replacing(array[index], at: path.dropFirst(), with: replacement)
            return array
        default:
            return value
        }
    }

    static let tooLarge = AppError(413, .payloadTooLarge, "The request body is larger than \(maxBytes / 1024) KiB.")

    static func describe(_ error: DecodingError) -> AppError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (codingPath + (last.map { [$0] } ?? [])).map { key in
                key.intValue.map { "[\($0)]" } ?? key.stringValue
            }.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath, key)
            return AppError(422, .validationFailed, "\(field) is required.", field: field)
        case .valueNotFound(_, let context):
            if context.codingPath.isEmpty { return AppError(422, .validationFailed, "The body must be a JSON object.") }
            let field = path(context.codingPath)
            return AppError(422, .validationFailed, "\(field) must not be null.", field: field)
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            if context.codingPath.isEmpty {
                return AppError(422, .validationFailed, "The body must be a JSON object.")
            }
            return AppError(422, .validationFailed, "\(field) must be \(typeName(type)).", field: field)
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return AppError(400, .malformedJSON, "The request body is not valid JSON.")
            }
            let field = path(context.codingPath)
            // A value an enumeration does not have: said in the client's terms, not Swift's.
            if context.debugDescription.hasPrefix("Cannot initialize "), context.debugDescription.contains(" from invalid ") {
                return AppError(422, .validationFailed, "\(field) is not one of the values it takes (see /openapi.json).", field: field)
            }
            // The reason may quote the value sent: a page of it is enough.
            let reason = context.debugDescription.count > 200 ? context.debugDescription.prefix(200) + "…" : Substring(context.debugDescription)
            return AppError(422, .validationFailed, "\(field) is invalid: \(reason)", field: field)
        @unknown default:
            return AppError(400, .malformedJSON, "The request body could not be read.")
        }
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type, is Int64.Type: return "an integer"
        case is Double.Type: return "a number"
        case is Bool.Type: return "true or false"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array") { return "an array" }
            if name.hasPrefix("Dictionary") { return "an object" }
            return "an object"
        }
    }
}

extension Request {
    func decodeJSON<T: Decodable>(_ type: T.Type) async throws -> T {
        try await JSONBody.decode(type, from: self)
    }

    /// A JSON body that may be left out.
    func decodeOptionalJSON<T: Decodable>(_ type: T.Type) async throws -> T? {
        try await JSONBody.decode(type, from: self, emptyAllowed: true)
    }
}

extension AppRequestContext {
    /// A path parameter that must be an id.
    func id<Entity>(_ name: String = "id", as type: Entity.Type = Entity.self) throws -> ID<Entity> {
        guard let text = parameters.get(name), let id = ID<Entity>(text) else {
            throw AppError(400, .invalidParameter, "\(name) must be a UUID.", field: name)
        }
        return id
    }
}
