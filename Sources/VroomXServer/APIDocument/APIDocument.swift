import Foundation
import VroomXModels

/// The OpenAPI 3.1 document `GET /openapi.json` serves, written from the
/// code when the server starts: paths, methods, access and parameters from
/// the route table (`Endpoint`), bodies, answers and words from
/// `APIOperation`, schemas from the Codable types themselves (`SchemaWriter`)
/// with the shared `FieldLimits`.
enum APIDocument {
    static let data: [UInt8] = write().document.bytes

    /// The document, and what could not be written from the code (empty when all is well).
    static func write() -> (document: JSONValue, problems: [String]) {
        var schemas = SchemaWriter()
        var paths: [String: JSONValue] = [:]
        for operation in APIOperation.all {
            let endpoint = operation.endpoint
            paths[endpoint.path, default: [:]][endpoint.method.rawValue.lowercased()] = describe(operation, &schemas)
        }
        _ = schemas.reference(APIErrorResponse.self)
        let document: JSONValue = [
            "openapi": "3.1.0",
            "info": ["title": "VroomX API", "version": "1.0.0", "description": .string(summary)],
            "servers": [["url": "http://127.0.0.1:8080"]],
            "tags": .array(APIOperation.Tag.allCases.map { tag in
                var value: JSONValue = ["name": .string(tag.rawValue)]
                if let description = tag.description { value["description"] = .string(description) }
                return value
            }),
            "paths": .object(paths),
            "components": [
                "schemas": .object(schemas.components),
                "responses": sharedResponses,
                "securitySchemes": ["bearer": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"]],
            ],
        ]
        return (document, schemas.problems)
    }

    private static func describe(_ operation: APIOperation, _ schemas: inout SchemaWriter) -> JSONValue {
        let endpoint = operation.endpoint
        var value: JSONValue = [
            "summary": .string(operation.summary),
            "operationId": .string(operationID(endpoint)),
            "tags": [.string(operation.tag.rawValue)],
        ]
        if let details = operation.details { value["description"] = .string(details) }
        if endpoint.access != .anyone { value["security"] = [["bearer": []]] }
        let parameters = self.parameters(operation)
        if !parameters.isEmpty { value["parameters"] = .array(parameters) }
        switch operation.body {
        case .json(let type):
            value["requestBody"] = ["required": true, "content": ["application/json": ["schema": schemas.reference(type)]]]
        case .optionalJSON(let type):
            value["requestBody"] = ["required": false, "content": ["application/json": ["schema": schemas.reference(type)]]]
        case .csv(let description):
            value["requestBody"] = ["required": true, "content": ["text/csv": ["schema": ["type": "string", "description": .string(description)]]]]
        case .bytes(let mediaType):
            value["requestBody"] = ["required": true, "content": .object([mediaType: ["schema": ["type": "string", "format": "binary"]]])]
        case nil: break
        }
        var responses: [String: JSONValue] = [:]
        for (status, words) in operation.sharedRefusals.merging(operation.refusals, uniquingKeysWith: { _, particular in particular }) {
            responses[String(status)] = refusal(words)
        }
        if endpoint.acceptsIdempotencyKey {
            // A key that is not a UUID, or one sent again with another request, is refused whatever else the endpoint says.
            responses["400"] = refusal(Self.joined(responses["400"]?["description"], "invalid_parameter: Idempotency-Key is not a UUID"))
            responses["422"] = refusal(Self.joined(responses["422"]?["description"], "idempotency_key_reused"))
        }
        if AppVersionMiddleware.applies(to: endpoint.path) { responses["426"] = refusal("@AppUpdateRequired") }
        if responses["206"] != nil { responses["206"]?["content"] = ["*/*": ["schema": ["type": "string", "format": "binary"]]] }
        responses[String(operation.answer.status)] = answer(operation, &schemas)
        value["responses"] = .object(responses)
        return value
    }

    private static func answer(_ operation: APIOperation, _ schemas: inout SchemaWriter) -> JSONValue {
        let answer = operation.answer
        var value: JSONValue = ["description": .string(answer.description)]
        switch answer.content {
        case .empty: break
        case .json(let type): value["content"] = ["application/json": ["schema": schemas.reference(type)]]
        case .geoJSON(let type): value["content"] = ["application/geo+json": ["schema": schemas.reference(type)]]
        case .list(let type):
            let paged = operation.endpoint.parameters.contains(.pageCursor)
            value["content"] = ["application/json": ["schema": schemas.list(of: type, paged: paged)]]
        case .file: value["content"] = ["*/*": ["schema": ["type": "string", "format": "binary"]]]
        case .document: value["content"] = ["application/json": ["schema": [:]]]
        case .text(let mediaType): value["content"] = .object([mediaType: ["schema": ["type": "string"]]])
        }
        var headers = answer.headers.mapValues { words -> JSONValue in ["description": .string(words), "schema": ["type": "string"]] }
        if operation.endpoint.writes, !operation.endpoint.path.hasPrefix("/v1/auth/") {
            headers[ChangeNumber.header] = [
                "description": "When the request changed carrier data (or replays an answer that did): the carrier's change number reached, in the numbers of the feed's cursor. Send it back on the driver's list reads to read the change from any server instance.",
                "schema": ["type": "integer", "minimum": 0],
            ]
        }
        if !headers.isEmpty { value["headers"] = .object(headers) }
        return value
    }

    /// An answer's words with another refusal added, unless they name it already.
    private static func joined(_ words: JSONValue?, _ more: String) -> String {
        guard case .string(let text)? = words, !text.isEmpty else { return more }
        return text.contains(more.split(separator: ":")[0]) ? text : "\(text); \(more)"
    }

    /// An error answer, or a reference to a shared one (`@Name`).
    private static func refusal(_ words: String) -> JSONValue {
        if words.hasPrefix("@") { return ["$ref": .string("#/components/responses/\(words.dropFirst())")] }
        return ["description": .string(words), "content": errorContent]
    }

    private static let errorContent: JSONValue = ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]]

    private static func parameters(_ operation: APIOperation) -> [JSONValue] {
        let endpoint = operation.endpoint
        var parameters: [JSONValue] = endpoint.parameterNames.map { name in
            var value: JSONValue = ["name": .string(name), "in": "path", "required": true, "schema": pathSchema(name)]
            if name == "slot" { value["description"] = "The required photos, the optional angles, damage_1 … damage_30, walkthrough (video) or signature." }
            return value
        }
        for parameter in endpoint.parameters {
            let notes = ParameterNotes.all[parameter]
            var schema = self.schema(of: parameter.kind)
            if let extra = notes?.schema { schema = schema.merging(extra) }
            var value: JSONValue = ["name": .string(parameter.name), "in": .string(parameter.location.rawValue),
                                    "required": .boolean(operation.requires.contains(parameter.name)), "schema": schema]
            if let description = notes?.description { value["description"] = .string(description) }
            parameters.append(value)
        }
        for header in operation.headers {
            var value: JSONValue = ["name": .string(header.name), "in": "header", "required": .boolean(header.required), "schema": header.schema]
            if let description = header.description { value["description"] = .string(description) }
            parameters.append(value)
        }
        if AppVersionMiddleware.applies(to: endpoint.path) {
            parameters.append([
                "name": .string(AppVersion.header), "in": "header", "required": false, "schema": ["type": "string", "example": "1.4.2"],
                "description": "The driver app's version (up to four dot-separated numbers). Older than the server's VROOMX_MIN_APP_VERSION is 426 app_update_required; not a version, 400 invalid_parameter. Left out, the request is served.",
            ])
        }
        if endpoint.acceptsIdempotencyKey {
            parameters.append([
                "name": "Idempotency-Key", "in": "header", "required": false, "schema": ["type": "string", "format": "uuid"],
                "description": "Client-chosen UUID: sending the same request again with it has exactly one effect (the stored answer is replayed with Idempotent-Replayed: true). Kept at least 7 days. The same key with another request is 422 idempotency_key_reused.",
            ])
        }
        return parameters
    }

    private static func pathSchema(_ name: String) -> JSONValue {
        switch name {
        case "token": return ["type": "string"]
        case "vin": return ["type": "string", "maxLength": 64]
        case "slot": return ["type": "string", "enum": .array(MediaSlot.all.map { .string($0.rawValue) })]
        default: return ["type": "string", "format": "uuid"]
        }
    }

    private static func schema(of kind: Parameter.Kind) -> JSONValue {
        switch kind {
        case .integer(let range): return ["type": "integer", "minimum": .integer(range.lowerBound), "maximum": .integer(range.upperBound)]
        case .boolean: return ["type": "boolean"]
        case .uuid: return ["type": "string", "format": "uuid"]
        case .oneOf(let words): return ["type": "string", "enum": .array(words.map { .string($0) })]
        case .token, .byteRange: return ["type": "string"]
        case .date: return ["type": "string", "format": "date", "description": "Calendar date YYYY-MM-DD"]
        case .text(let maxLength): return ["type": "string", "maxLength": .integer(Int64(maxLength))]
        }
    }

    /// `getTripsId` for `GET /v1/trips/{id}`.
    static func operationID(_ endpoint: Endpoint) -> String {
        let words = endpoint.path.split(separator: "/").filter { $0 != "v1" }.flatMap { segment in
            segment.trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(whereSeparator: { $0 == "-" || $0 == "_" || $0 == "." })
        }
        return endpoint.method.rawValue.lowercased() + words.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    private static let retryAfter: JSONValue = ["Retry-After": ["description": "Seconds to wait before retrying", "schema": ["type": "integer"]]]

    private static var sharedResponses: JSONValue {
        [
            "Unavailable": ["description": "unavailable: the database cannot serve right now (unreachable, restarting, busy, timed out); retry after Retry-After",
                            "headers": retryAfter, "content": errorContent],
            "InsufficientStorage": ["description": "insufficient_storage: the server's storage is full; retry after Retry-After",
                                    "headers": retryAfter, "content": errorContent],
            "AppUpdateRequired": ["description": "app_update_required: the app's X-VroomX-App-Version is older than the server accepts; update the app (queued work waits)",
                                  "headers": .object([AppVersion.minimumHeader: ["description": "The oldest app version the server accepts.",
                                                                                       "schema": ["type": "string"]]]),
                                  "content": errorContent],
            "RequestHeaderFieldsTooLarge": ["description": "request_header_fields_too_large: the request line and headers are over 64 KiB or 100 fields; the connection closes",
                                            "content": errorContent],
        ]
    }

    private static let summary = """
        The VroomX server: email one-time-code sign-in, carriers strictly isolated from each other, and the driver and dispatch API. \
        Every error has the shape {"error": {"code", "message", ...}} with a stable code. Money is integer cents; times are UTC ISO-8601; \
        ids are UUIDs. A database that cannot serve right now answers 503 unavailable with Retry-After (507 insufficient_storage when its \
        storage is full): retry the same request after that many seconds. Connections are bounded: a request head must arrive within 15 s \
        and stay within 64 KiB and 100 fields (431 request_header_fields_too_large, then the connection closes); bytes that are not \
        HTTP/1.1 get 400 malformed_request and a close; a request body must bring at least 1 KiB per 20 s; one client address holds at \
        most 256 connections.
        """
}

/// Words and defaults of the query parameters and headers the route table declares.
struct ParameterNotes {
    var description: String?
    /// Keywords merged into the parameter's schema (a default, a length).
    var schema: JSONValue?

    static let all: [Parameter: ParameterNotes] = [
        .pageLimit: ParameterNotes(description: "Rows per page.", schema: ["default": .integer(Int64(Page.defaultLimit))]),
        .pageCursor: ParameterNotes(description: "next_cursor of the previous page: the page continues after its last row.", schema: ["maxLength": 1024]),
        .syncLimit: ParameterNotes(schema: ["default": 500]),
        .since: ParameterNotes(description: "The cursor of the last page or message applied (0: start with a snapshot)."),
        .changeSeen: ParameterNotes(description: "The newest change number the client holds (a write's X-VroomX-Change answer, or its feed cursor): the answer includes every change up to it, whichever server instance answers. Left out, a first page may come from the instance's memory up to the moment its notification of another instance's write arrives."),
        .uploadLength: ParameterNotes(description: "The file size in bytes (decimal digits only); at most the slot's cap."),
        .withinDays: ParameterNotes(description: "Within this many days", schema: ["default": 30]),
        .fromDate: ParameterNotes(description: "First day (default: 29 days before to)"),
        .toDate: ParameterNotes(description: "Last day (default: today)"),
    ]
}
