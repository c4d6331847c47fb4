import VroomXModels

/// An error the API answers with: an HTTP status and the shared error body.
/// Thrown from any layer; the error middleware renders it.
public struct AppError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var body: APIErrorBody
    public var headers: [String: String] = [:]

    public init(_ status: Int, _ code: ErrorCode, _ message: String, field: String? = nil,
                attemptsLeft: Int? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.body = APIErrorBody(code: code, message: message, field: field, attemptsLeft: attemptsLeft, retryAfter: retryAfter)
        if let retryAfter { headers["Retry-After"] = String(retryAfter) }
    }

    public var code: ErrorCode { body.code }
    public var description: String { "\(status) \(body.code): \(body.message)" }

    static func notFound(_ what: String) -> AppError {
        AppError(404, .notFound, "\(what) not found.")
    }

    static func validation(_ field: String, _ message: String) -> AppError {
        AppError(422, .validationFailed, message, field: field)
    }

    static func forbidden(_ message: String) -> AppError {
        AppError(403, .forbidden, message)
    }

    static func invalidTransition(from: String, to: String) -> AppError {
        AppError(409, .invalidTransition, "Cannot change status from \(from) to \(to).", field: "status")
    }

    static func conflict(_ message: String) -> AppError {
        AppError(409, .conflict, message)
    }

    static let accountDeactivated = AppError(403, .accountDeactivated,
                                             "Your carrier has deactivated this driver account. Contact your dispatcher.")

    static let sessionEnded = AppError(401, .sessionRevoked, "This session has ended; sign in again.")

    /// A client-chosen id the caller cannot use: taken by a different record
    /// of theirs, by another driver's, or by anyone's anywhere. One answer
    /// for all, so it never tells where the id is used.
    static let idTaken = AppError(409, .alreadyExists, "This id is already in use. Send the record again with a new id.", field: "id")

    /// A shared rule's refusal as an answer: 409 for what the record's
    /// state forbids, 422 for what the request got wrong.
    init(_ refusal: Refusal) {
        let status = switch refusal.code {
        case .invalidTransition, .conflict, .inspectionRequired, .inspectionCompleted, .alreadyExists: 409
        case .notFound: 404
        default: 422
        }
        self.init(status, refusal.code, refusal.message, field: refusal.field)
    }

    init(_ refusal: OrderStatusRefusal) { self.init(refusal.refusal) }

    init(_ refusal: ETARefusal) { self.init(refusal.refusal) }

    static func rateLimited(retryAfter: Int) -> AppError {
        AppError(429, .rateLimited, "Too many requests. Try again in \(retryAfter) s.", retryAfter: retryAfter)
    }
}
