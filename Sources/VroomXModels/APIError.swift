/// A stable, machine-readable error code. The set is open so that an older
/// client still decodes a code added later.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    // Request shape
    public static let malformedJSON = ErrorCode("malformed_json")
    public static let validationFailed = ErrorCode("validation_failed")
    public static let invalidParameter = ErrorCode("invalid_parameter")
    public static let payloadTooLarge = ErrorCode("payload_too_large")
    public static let unsupportedMediaType = ErrorCode("unsupported_media_type")
    public static let routeNotFound = ErrorCode("route_not_found")
    public static let methodNotAllowed = ErrorCode("method_not_allowed")
    /// The bytes are not an HTTP/1.1 request the server can parse.
    public static let malformedRequest = ErrorCode("malformed_request")
    /// The request line and headers together are over the server's limit.
    public static let requestHeaderFieldsTooLarge = ErrorCode("request_header_fields_too_large")
    // Authentication and access
    public static let missingToken = ErrorCode("missing_token")
    public static let invalidToken = ErrorCode("invalid_token")
    public static let tokenExpired = ErrorCode("token_expired")
    public static let sessionRevoked = ErrorCode("session_revoked")
    public static let forbidden = ErrorCode("forbidden")
    /// A console form or request without the session's CSRF token.
    public static let csrfFailed = ErrorCode("csrf_failed")
    public static let invalidCode = ErrorCode("invalid_code")
    public static let codeExpired = ErrorCode("code_expired")
    public static let tooManyAttempts = ErrorCode("too_many_attempts")
    public static let invalidRefreshToken = ErrorCode("invalid_refresh_token")
    public static let refreshTokenReused = ErrorCode("refresh_token_reused")
    public static let driverNotFound = ErrorCode("driver_not_found")
    /// The carrier deactivated this driver: no sign-in, no new work.
    public static let accountDeactivated = ErrorCode("account_deactivated")
    /// The code is right and the email has accounts at several carriers:
    /// send the same code again with one of `carriers` as `carrier_id`.
    public static let carrierRequired = ErrorCode("carrier_required")
    public static let pinNotSet = ErrorCode("pin_not_set")
    public static let pinIncorrect = ErrorCode("pin_incorrect")
    public static let pinLocked = ErrorCode("pin_locked")
    public static let rateLimited = ErrorCode("rate_limited")
    // Data
    public static let notFound = ErrorCode("not_found")
    public static let alreadyExists = ErrorCode("already_exists")
    public static let invalidTransition = ErrorCode("invalid_transition")
    public static let conflict = ErrorCode("conflict")
    public static let idempotencyKeyReused = ErrorCode("idempotency_key_reused")
    public static let cursorExpired = ErrorCode("cursor_expired")
    public static let upgradeRequired = ErrorCode("upgrade_required")
    /// The driver app is older than the server accepts (`AppVersion`): update it; queued work waits.
    public static let appUpdateRequired = ErrorCode("app_update_required")
    // Inspections and uploads
    public static let inspectionIncomplete = ErrorCode("inspection_incomplete")
    public static let inspectionCompleted = ErrorCode("inspection_completed")
    /// A driver may pick up or deliver only by completing that inspection.
    public static let inspectionRequired = ErrorCode("inspection_required")
    public static let uploadOffsetMismatch = ErrorCode("upload_offset_mismatch")
    public static let uploadLocked = ErrorCode("upload_locked")
    public static let uploadExpired = ErrorCode("upload_expired")
    /// The storage behind an upload lost its bytes: start a new upload.
    public static let uploadLost = ErrorCode("upload_lost")
    public static let checksumMismatch = ErrorCode("checksum_mismatch")
    public static let tusVersionUnsupported = ErrorCode("tus_version_unsupported")
    /// Too many unfinished uploads for one user (429, with Retry-After).
    public static let uploadQuotaExceeded = ErrorCode("upload_quota_exceeded")
    /// The carrier's media storage quota is used up (507).
    public static let storageQuotaExceeded = ErrorCode("storage_quota_exceeded")
    // Server
    public static let internalError = ErrorCode("internal_error")
    /// A transient failure (the database is unreachable, busy or timed out):
    /// answered 503 with `Retry-After`; retrying the same request is safe.
    public static let unavailable = ErrorCode("unavailable")
    /// The server's storage is full (507, with `Retry-After`): nothing
    /// recorded was lost; try again later.
    public static let insufficientStorage = ErrorCode("insufficient_storage")
    /// A cap on connections was reached (realtime sockets per carrier or per server).
    public static let tooManyConnections = ErrorCode("too_many_connections")
}

/// The one error shape every endpoint answers with:
/// `{"error": {"code": "…", "message": "…", …}}`.
public struct APIErrorResponse: Codable, Sendable, Hashable, Error {
    public var error: APIErrorBody

    public init(_ error: APIErrorBody) { self.error = error }
}

public struct APIErrorBody: Codable, Sendable, Hashable {
    public var code: ErrorCode
    /// A sentence a person can read; not meant for parsing.
    public var message: String
    /// The request field at fault, as a JSON path (`pickup.address`).
    public var field: String?
    /// For PIN and code checks: how many tries remain.
    public var attemptsLeft: Int?
    /// For rate limits and unavailability: seconds until a retry can succeed (also in `Retry-After`).
    public var retryAfter: Int?
    /// For a file (CSV import): every bad line, with its field.
    public var problems: [LineProblem]?
    /// For `carrier_required`: the carriers the email has accounts at.
    public var carriers: [CarrierChoice]?

    public init(code: ErrorCode, message: String, field: String? = nil, attemptsLeft: Int? = nil, retryAfter: Int? = nil,
                problems: [LineProblem]? = nil, carriers: [CarrierChoice]? = nil) {
        self.problems = problems
        self.carriers = carriers
        self.code = code
        self.message = message
        self.field = field
        self.attemptsLeft = attemptsLeft
        self.retryAfter = retryAfter
    }

    enum CodingKeys: String, CodingKey {
        case code, message, field, problems, carriers
        case attemptsLeft = "attempts_left"
        case retryAfter = "retry_after"
    }
}

/// One bad line of an imported file.
public struct LineProblem: Codable, Sendable, Hashable {
    /// 1-based; line 1 is the header.
    public var line: Int
    /// The column at fault (or `line`, `file`).
    public var field: String
    public var message: String

    public init(line: Int, field: String, message: String) {
        self.line = line
        self.field = field
        self.message = message
    }
}
