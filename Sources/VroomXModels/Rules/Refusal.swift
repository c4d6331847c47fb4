import Foundation

/// A rule's "no" as a value: the server answers it in the shared error
/// shape (`code`, `field`, `message`), the app refuses the tap with the
/// same words before anything is queued.
public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: ErrorCode
    public let field: String?
    public let message: String

    public init(_ code: ErrorCode, _ message: String, field: String? = nil) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// A field that breaks its rule (`validation_failed`).
    public static func invalid(_ field: String, _ message: String) -> Refusal {
        Refusal(.validationFailed, message, field: field)
    }

    public var description: String { message }
}

extension FieldProblem {
    public var refusal: Refusal { .invalid(field, message) }
}

extension OrderStatusRefusal {
    public var refusal: Refusal {
        switch self {
        case .invalidTransition(let from, let to):
            return Refusal(.invalidTransition, "An order that is \(from.label) cannot be marked \(to.label).", field: "status")
        case .needsDriver:
            return Refusal(.invalidTransition, "Assign the order to a driver or trip to make it assigned.", field: "status")
        case .badTime(let problem):
            return problem.refusal
        }
    }
}

extension ETARefusal {
    public var refusal: Refusal {
        switch self {
        case .closed, .alreadyPickedUp: return Refusal(.conflict, message, field: field)
        case .outOfRange(let problem): return problem.refusal
        }
    }
}
