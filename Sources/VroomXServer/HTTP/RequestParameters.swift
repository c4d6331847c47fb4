import Foundation
import HTTPTypes
import Hummingbird
import VroomXModels

/// Reads the query parameters and headers an endpoint declares, each
/// through its declaration: a number is a decimal within its range before
/// any arithmetic sees it (Swift traps on overflow, and a trap would end
/// the process for every carrier), anything else is its declared kind.
/// Absent is nil; present but invalid is `400 invalid_parameter`.
extension Request {
    func text(_ parameter: Parameter) -> String? {
        switch parameter.location {
        case .query: return uri.queryParameters.get(parameter.name)
        case .header: return HTTPField.Name(parameter.name).flatMap { headers[$0] }
        }
    }

    func integer(_ parameter: Parameter) throws -> Int64? {
        guard let text = text(parameter) else { return nil }
        guard let range = parameter.range, let value = DecimalText.int64(text, in: range) else {
            throw Self.invalid(parameter, "an integer from \(parameter.range?.lowerBound ?? 0) to \(parameter.range?.upperBound ?? 0)")
        }
        return value
    }

    /// An integer parameter that is an `Int` count (a page size).
    func count(_ parameter: Parameter) throws -> Int? {
        try integer(parameter).map { Int($0) }
    }

    func boolean(_ parameter: Parameter) throws -> Bool? {
        guard let text = text(parameter) else { return nil }
        switch text {
        case "true": return true
        case "false": return false
        default: throw Self.invalid(parameter, "true or false")
        }
    }

    func value<Value: RawRepresentable>(_ parameter: Parameter, as type: Value.Type) throws -> Value? where Value.RawValue == String {
        guard let text = text(parameter) else { return nil }
        guard case .oneOf(let allowed) = parameter.kind, allowed.contains(text), let value = Value(rawValue: text) else {
            throw Self.invalid(parameter, "one of \(Self.allowed(parameter))")
        }
        return value
    }

    func id<Entity>(_ parameter: Parameter, as type: Entity.Type = Entity.self) throws -> ID<Entity>? {
        guard let text = text(parameter) else { return nil }
        guard let id = ID<Entity>(text) else { throw Self.invalid(parameter, "a UUID") }
        return id
    }

    func date(_ parameter: Parameter) throws -> LocalDate? {
        guard let text = text(parameter) else { return nil }
        guard case .date = parameter.kind, text.utf8.count == 10, let date = LocalDate(text) else {
            throw Self.invalid(parameter, "a date, YYYY-MM-DD")
        }
        return date
    }

    /// Words typed into a search box: trimmed, at most the declared length.
    func search(_ parameter: Parameter) throws -> String? {
        guard let text = formText(parameter)?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        guard case .text(let maxLength) = parameter.kind, text.unicodeScalars.count <= maxLength,
              !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw Self.invalid(parameter, "at most \(FieldLimits.searchText) characters of text")
        }
        // Composed, as names are stored: an "é" typed as e + accent finds one stored as é.
        return text.precomposedStringWithCanonicalMapping
    }

    /// A query parameter as forms and most clients write it: `+` is a space
    /// (a plus sign itself comes as %2B), then percent-escapes are decoded.
    private func formText(_ parameter: Parameter) -> String? {
        guard parameter.location == .query, let query = uri.query else { return text(parameter) }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.first == Substring(parameter.name) else { continue }
            let raw = parts.count > 1 ? String(parts[1]).replacingOccurrences(of: "+", with: " ") : ""
            return raw.removingPercentEncoding ?? raw
        }
        return nil
    }

    /// Which page of a list: `limit` (default `Page.defaultLimit`) and `cursor`.
    func page() throws -> PageRequest {
        PageRequest(limit: try count(.pageLimit) ?? Page.defaultLimit, cursor: text(.pageCursor))
    }

    private static func allowed(_ parameter: Parameter) -> String {
        if case .oneOf(let words) = parameter.kind { return words.joined(separator: ", ") }
        return ""
    }

    static func invalid(_ parameter: Parameter, _ expected: String) -> AppError {
        AppError(400, .invalidParameter, "\(parameter.name) must be \(expected).", field: parameter.name)
    }
}
