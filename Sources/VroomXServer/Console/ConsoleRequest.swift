import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import VroomXModels

/// A console request from a signed-in dispatcher, with what pages need:
/// the session, the form that was posted, query values and ids.
struct ConsoleRequest: Sendable {
    let request: Request
    let context: AppRequestContext
    let session: ConsoleSession
    /// The posted form (empty for GET).
    let form: ConsoleForm

    var tenant: ID<Tenant> { session.identity.tenant }
    var scope: Scope { .dispatch(tenant: session.identity.tenant) }

    /// A query value as a browser's GET form sends it: `+` is a space,
    /// `%2B` a plus.
    func query(_ name: String) -> String? {
        for pair in (request.uri.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.first.map({ $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }) == name else { continue }
            let raw = parts.count > 1 ? String(parts[1]) : ""
            return raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
        }
        return nil
    }

    /// Search text from the query (or the form that carried it on): control characters (line breaks, NUL) made
    /// spaces, spaces trimmed, at most `FieldLimits.searchText` characters — counted as Unicode scalars, so
    /// a letter with thousands of combining marks cannot carry kilobytes into the search.
    func searchText(_ name: String) -> String {
        var text = String.UnicodeScalarView()
        for scalar in (query(name) ?? form.values[name]?.first ?? "").unicodeScalars {
            text.append(scalar.properties.generalCategory == .control ? " " : scalar)
        }
        let trimmed = String(text).trimmingCharacters(in: .whitespaces)
        return String(String.UnicodeScalarView(trimmed.unicodeScalars.prefix(FieldLimits.searchText))).trimmingCharacters(in: .whitespaces)
    }

    /// A path id; anything that is not one of ours is simply not found.
    func id<Entity>(_ name: String = "id", _ what: String) throws -> ID<Entity> {
        guard let text = context.parameters.get(name), let id = ID<Entity>(text) else { throw AppError.notFound(what) }
        return id
    }
}

/// An `application/x-www-form-urlencoded` body.
struct ConsoleForm: Sendable {
    var values: [String: [String]] = [:]

    init(values: [String: [String]] = [:]) { self.values = values }

    init(encoded: String) {
        for pair in encoded.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = Self.decode(parts[0]) else { continue }
            let value = parts.count > 1 ? Self.decode(parts[1]) ?? "" : ""
            values[key, default: []].append(value)
        }
    }

    private static func decode(_ part: Substring) -> String? {
        part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// The field's value, trimmed; "" when absent.
    subscript(_ name: String) -> String {
        (values[name]?.first ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func all(_ name: String) -> [String] { values[name] ?? [] }

    /// The form with each field left as the page showed it holding its saved
    /// text: a one-line input drops the line breaks an import or the API saved
    /// ("10 Yard Rd⏎Savannah"), and a field nobody touched must not change.
    func keeping(_ saved: [String: String], shown: [String: String]) -> ConsoleForm {
        func oneLine(_ text: String) -> String {
            text.filter { !$0.isNewline }.trimmingCharacters(in: .whitespaces)
        }
        var kept = self
        for (field, text) in saved where text.contains(where: \.isNewline) {
            guard let original = shown[field], oneLine(original) == oneLine(text), oneLine(self[field]) == oneLine(original) else { continue }
            kept.values[field] = [text]
        }
        return kept
    }

    /// Every field's first value, for refilling a form after an error.
    var firstValues: [String: String] { values.compactMapValues { $0.first } }
}

/// Fields a form could not even parse, each with its message, shown next
/// to the field (the store's validation speaks for the rest).
struct FieldErrors: Error, Sendable {
    var messages: [String: String] = [:]
    var isEmpty: Bool { messages.isEmpty }

    mutating func add(_ field: String, _ message: String) {
        if messages[field] == nil { messages[field] = message }
    }

    /// Runs one of the store's own rules (`Validate`) before the save, so its
    /// refusal shows together with the form's other problems, not a round later.
    mutating func check(_ rule: () throws -> Void) {
        var problems = Problems()
        problems.check(()) { try rule() }
        add(problems)
    }

    /// Another set of messages, where this one has none for the field.
    mutating func add(_ other: FieldErrors) {
        for (field, message) in other.messages { add(field, message) }
    }

    /// The store's refusals, each next to its field; a field the form
    /// already marked keeps the form's own message.
    mutating func add(_ problems: Problems, renamed: [String: String] = [:]) {
        for error in problems.all {
            for (field, message) in FieldErrors(error, renamed: renamed).messages { add(field, message) }
        }
    }

    /// The API's error as a field message: its field in form-field terms
    /// (`pickup.address` is the form's `pickup_address`).
    /// `renamed` maps API fields a form names otherwise (`revenue_cents` is typed as `revenue`).
    /// Shown next to its field, a message that starts with the API's name
    /// for it ("end_date ends before it starts.") says "This" instead.
    init(_ error: AppError, fallbackField: String = "form", renamed: [String: String] = [:]) {
        let field = (error.body.field ?? fallbackField).replacingOccurrences(of: ".", with: "_")
        messages[renamed[field] ?? field] = Self.besideItsField(error)
    }

    /// The error's message as read next to (or beside the name of) its field.
    static func besideItsField(_ error: AppError) -> String {
        guard let apiName = error.body.field, error.body.message.hasPrefix(apiName + " ") else { return error.body.message }
        return "This" + error.body.message.dropFirst(apiName.count)
    }

    init() {}
}

/// Parsing of the form values that are not text.
enum FormValue {
    /// "1,250.00", "$1250" or "1250" → cents; nil for empty.
    static func cents(_ text: String, field: String, errors: inout FieldErrors) -> Int? {
        var cleaned = text.replacingOccurrences(of: "$", with: "").trimmingCharacters(in: .whitespaces)
        // Commas only as thousands separators ("1,250.50"); "1250,50" is refused, never read as 125050.
        if cleaned.contains(",") {
            let whole = cleaned.split(separator: ".", maxSplits: 1).first.map(String.init) ?? ""
            let groups = whole.split(separator: ",", omittingEmptySubsequences: false)
            guard groups.count > 1, (1...3).contains(groups[0].count), groups.dropFirst().allSatisfy({ $0.count == 3 }) else {
                errors.add(field, "Use a dot for cents, like 1250.50 (commas only between thousands).")
                return nil
            }
            cleaned = cleaned.replacingOccurrences(of: ",", with: "")
        }
        guard !cleaned.isEmpty else { return nil }
        let parts = cleaned.split(separator: ".", omittingEmptySubsequences: false)
        let largest = MoneyFormat.largestCents / 100
        // All digits but past the limit (or past Int itself): say the limit, not the format.
        if parts.count <= 2, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }),
           Int(parts[0]).map({ $0 > largest }) ?? true {
            errors.add(field, "At most \(MoneyFormat.dollars(largest * 100)).")
            return nil
        }
        guard parts.count <= 2, let whole = Int(parts[0].isEmpty ? "0" : String(parts[0])), whole >= 0, whole <= largest,
              parts[0].allSatisfy(\.isASCII), parts.count == 1 || (parts[1].count <= 2 && parts[1].allSatisfy(\.isNumber) && parts[1].allSatisfy(\.isASCII)) else {
            errors.add(field, "Enter an amount in dollars, like 1250 or 1250.50.")
            return nil
        }
        let fraction = parts.count == 2 ? Int(String(parts[1]).padding(toLength: 2, withPad: "0", startingAt: 0)) ?? 0 : 0
        return whole * 100 + fraction
    }

    /// A whole number within `range`; nil for empty.
    /// "latitude, longitude" as pasted from a map; nil for empty.
    static func point(_ text: String, field: String, errors: inout FieldErrors) -> GeoPoint? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        guard trimmed.utf8.count <= 64, let point = GeoPoint(text: trimmed) else {
            errors.add(field, "Enter latitude, longitude in degrees, e.g. 32.08090, -81.09120.")
            return nil
        }
        return point
    }

    static func integer(_ text: String, field: String, range: ClosedRange<Int>, errors: inout FieldErrors) -> Int? {
        let cleaned = text.replacingOccurrences(of: ",", with: "")
        guard !cleaned.isEmpty else { return nil }
        guard cleaned.utf8.count <= 12, cleaned.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(cleaned), range.contains(value) else {
            errors.add(field, "Enter a whole number from \(range.lowerBound) to \(range.upperBound).")
            return nil
        }
        return value
    }

    /// YYYY-MM-DD (what a date input sends); nil for empty.
    /// A calendar day as a date field sends it (2026-11-29) or as American
    /// spreadsheets write it (11/29/2026, 11/29/26).
    static func date(_ text: String, field: String, errors: inout FieldErrors) -> LocalDate? {
        guard !text.isEmpty else { return nil }
        if let date = LocalDate(text) { return date }
        switch monthDayYear(text) {
        case .some(let date?): return date
        case .some(nil): errors.add(field, "There is no such day as \(text).")
        case nil: errors.add(field, "Enter a date as YYYY-MM-DD or MM/DD/YYYY.")
        }
        return nil
    }

    /// 11/29/2026 or 11/29/26 as a day; `.some(nil)` for one written so
    /// that does not exist (11/31/2026); nil for text not written so.
    private static func monthDayYear(_ text: String) -> LocalDate?? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count <= 2, parts[1].count <= 2, parts[2].count == 4 || parts[2].count == 2,
              let month = DecimalText.int64(parts[0]), let day = DecimalText.int64(parts[1]), let year = DecimalText.int64(parts[2]) else {
            return nil
        }
        // Two-digit years as spreadsheets read them: 00–29 this century, 30–99 the last.
        let fullYear = parts[2].count == 4 ? year : year < 30 ? 2000 + year : 1900 + year
        return .some(LocalDate(year: Int(fullYear), month: Int(month), day: Int(day)))
    }

    static func id<Entity>(_ text: String, field: String, errors: inout FieldErrors) -> ID<Entity>? {
        guard !text.isEmpty else { return nil }
        guard let id = ID<Entity>(text) else {
            errors.add(field, "Choose one from the list.")
            return nil
        }
        return id
    }
}
