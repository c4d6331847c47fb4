import Foundation
import VroomXModels

/// What the API document says of one endpoint beyond what the route table
/// knows: its words, the type of its body and of its answer, and the
/// refusals particular to it. The refusals every endpoint of its kind shares
/// (sign-in, role, a malformed body, storage, load) are added by rule.
struct APIOperation {
    enum Tag: String, CaseIterable {
        case service, auth, me, driver, dispatch, billing, settlements, sync, inspections, uploads, fleet, location

        var description: String? {
            switch self {
            case .inspections: return "Vehicle inspections at pickup and delivery, and their media"
            case .uploads: return "Resumable uploads, tus 1.0"
            case .fleet: return "Trucks and trailers, their papers, odometer and fuel"
            case .location: return "Where the trucks are: positions, tracks, arrivals"
            case .billing: return "Getting paid: invoices, payments, what customers owe, exports for the books"
            case .settlements: return "Paying drivers: weekly settlements, advances and deductions, statements, the driver's Earnings"
            case .service, .auth, .me, .driver, .dispatch, .sync: return nil
            }
        }
    }

    /// What the request carries.
    enum Body {
        case json(any Decodable.Type)
        /// JSON that may be left out (every field has a default).
        case optionalJSON(any Decodable.Type)
        /// A CSV file, described.
        case csv(String)
        /// File bytes of this media type.
        case bytes(String)
    }

    /// What a success carries.
    enum Content {
        case empty
        case json(any Decodable.Type)
        /// `application/geo+json` of this type.
        case geoJSON(any Decodable.Type)
        /// `{"items": […]}` (with `next_cursor` when the endpoint pages).
        case list(any Decodable.Type)
        /// File bytes.
        case file
        /// A JSON document of no fixed schema (this document).
        case document
        /// Text of this media type.
        case text(String)
    }

    struct Answer {
        let status: Int
        let description: String
        let content: Content
        /// Response headers that carry the answer, with what they say.
        var headers: [String: String] = [:]

        init(_ status: Int, _ description: String, _ content: Content, headers: [String: String] = [:]) {
            self.status = status
            self.description = description
            self.content = content
            self.headers = headers
        }

        static func ok(_ type: any Decodable.Type) -> Answer { Answer(200, "OK", .json(type)) }
        static func created(_ type: any Decodable.Type) -> Answer { Answer(201, "Created", .json(type)) }
        static func list(_ type: any Decodable.Type) -> Answer { Answer(200, "OK", .list(type)) }
    }

    /// A header the endpoint reads that the route table does not declare (tus's own).
    struct Header {
        let name: String
        let required: Bool
        let schema: JSONValue
        let description: String?
    }

    let endpoint: Endpoint
    let tag: Tag
    let summary: String
    let details: String?
    let body: Body?
    let answer: Answer
    /// Responses particular to this endpoint, by status (a shared reference is written `@Name`).
    let refusals: [Int: String]
    /// Parameters the endpoint cannot do without.
    let requires: Set<String>
    let headers: [Header]

    init(_ endpoint: Endpoint, _ tag: Tag, _ summary: String, details: String? = nil, body: Body? = nil, answer: Answer,
         refusals: [Int: String] = [:], requires: Set<String> = [], headers: [Header] = []) {
        self.endpoint = endpoint
        self.tag = tag
        self.summary = summary
        self.details = details
        self.body = body
        self.answer = answer
        self.refusals = refusals
        self.requires = requires
        self.headers = headers
    }

    /// The refusals every endpoint of this kind shares, by status; a value
    /// starting `@` names a shared response.
    var sharedRefusals: [Int: String] {
        var shared: [Int: String] = [431: "@RequestHeaderFieldsTooLarge"]
        if !Self.withoutDatabase.contains(endpoint) { shared[503] = "@Unavailable" }
        if ![.get, .head, .options].contains(endpoint.method), !Self.withoutDatabase.contains(endpoint) {
            shared[507] = "@InsufficientStorage"
        }
        switch endpoint.access {
        case .anyone: break
        case .signedIn: shared[401] = Self.unauthorized
        case .driver:
            shared[401] = Self.unauthorized
            shared[403] = "forbidden: the endpoint is for another role (or driver_not_found)"
        case .dispatcher:
            shared[401] = Self.unauthorized
            shared[403] = "forbidden: the endpoint is for another role"
        }
        if endpoint.parameterNames.contains("id") { shared[400] = "invalid_parameter: the id is not a UUID" }
        if endpoint.parameters.contains(.pageCursor) {
            shared[400] = "invalid_parameter (a limit outside 1…500, a cursor this server did not give"
                + (endpoint.parameters.contains(.changeSeen) ? ", an \(ChangeNumber.header) that is not a whole number from 0)" : ")")
        }
        if endpoint.parameters.contains(.range) {
            shared[206] = "The requested byte range (Content-Range)"
            shared[416] = "invalid_parameter: the range is outside the file"
        }
        switch body {
        case .json, .optionalJSON:
            shared[400] = "malformed_json"
            shared[413] = "payload_too_large (JSON bodies are limited to 256 KiB)"
            shared[415] = "unsupported_media_type"
            shared[422] = "validation_failed, naming the field"
        case .csv, .bytes, nil: break
        }
        return shared
    }

    static let unauthorized = "missing_token, invalid_token, token_expired or session_revoked"

    /// Endpoints that answer without the database (and write nothing).
    static let withoutDatabase: Set<Endpoint> = [.health, .openAPI, .uploadOptions]

    /// Every endpoint's account, in the document's order.
    static var all: [APIOperation] { account + driving + dispatching + billing + settlements + fleet }
}

extension APIOperation.Header {
    static let tusResumable = Self(name: "Tus-Resumable", required: true, schema: ["type": "string", "const": "1.0.0"], description: nil)
    static let uploadMetadata = Self(name: "Upload-Metadata", required: true, schema: ["type": "string"],
                                     description: "base64 values, optionally filename: inspection_id and slot; equipment_id (a unit's photo); expense_id (a receipt); payment_id (a collected payment's photo); problem_id and order_id (a problem at a stop); or message_id (a photo with a driver's message)")
    static let uploadChecksum = Self(name: "Upload-Checksum", required: false, schema: ["type": "string"],
                                     description: "sha1 or sha256, then the base64 digest of this chunk")
}
