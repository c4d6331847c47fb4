import Foundation
import Logging
import Mustache
// Each stored property of a view's type with its key path, read once a type (`_forEachFieldWithKeyPath`).
@_spi(Reflection) import Swift
import Synchronization

/// A console page, or a part of one, as its template reads it: each stored
/// property is a key (`statusLabel` is `{{status_label}}`), so a key
/// misspelt in Swift does not compile, and one misspelt in a template is
/// reported (`ConsoleFrame`). A nil property is an absent section. A view
/// is a struct (its stored properties are its keys).
protocol ConsoleView: MustacheParent, Sendable {}

extension ConsoleView {
    func child(named key: String) -> Any? { ConsoleKeys.value(of: self, key: key) }
}

/// Template keys to Swift property names, and the reports of keys that
/// name nothing.
enum ConsoleKeys {
    /// Words Swift names write in capitals after the first (`trip_id` → `tripID`).
    private static let acronyms: [Substring: String] = ["id": "ID", "eta": "ETA", "url": "URL", "vin": "VIN", "csv": "CSV"]

    /// `status_label` → `statusLabel`, `trip_id` → `tripID` (worked out once a
    /// type and key: `fields` keeps what it found).
    static func propertyName(_ key: String) -> String {
        key.split(separator: "_").enumerated().map { index, word in
            index == 0 ? String(word) : acronyms[word] ?? word.prefix(1).uppercased() + word.dropFirst()
        }.joined()
    }

    /// The property's value; `false` for a nil one (so the section is absent
    /// and the lookup stops here); nil when the view has no such property.
    static func value<View>(of view: View, key: String) -> Any? {
        switch field(of: View.self, key: key) {
        case .property(let path, let optional):
            // The path was made for `View`: reading it needs no cast of the view.
            let value = view[keyPath: unsafeDowncast(path, to: PartialKeyPath<View>.self)]
            guard optional else { return value }
            return (value as? any OptionalProperty)?.wrapped ?? false
        case .none:
            return nil
        }
    }

    /// How a key of a view's type is read.
    private enum Field: @unchecked Sendable {
        /// A stored property of a struct: by its key path (made once; a
        /// page of 300 rows asks for thousands of keys, and reflecting the
        /// view for each took two thirds of the trips page's time).
        case property(AnyKeyPath, optional: Bool)
        /// The type has no such stored property.
        case none
    }

    private struct FieldKey: Hashable {
        let type: ObjectIdentifier
        let key: String
    }

    /// Bounded by the templates' keys: keys come from templates, never from requests.
    private static let fields = Mutex<[FieldKey: Field]>([:])

    private static func field<View>(of type: View.Type, key: String) -> Field {
        let fieldKey = FieldKey(type: ObjectIdentifier(type), key: key)
        if let known = fields.withLock({ $0[fieldKey] }) { return known }
        let name = propertyName(key)
        var found = Field.none
        var optional: [String: Bool] = [:]
        _forEachField(of: type) { label, _, _, kind in
            optional[String(cString: label)] = kind == .optional
            return true
        }
        _forEachFieldWithKeyPath(of: type) { label, path in
            guard String(cString: label) == name else { return true }
            found = .property(path, optional: optional[name] ?? false)
            return false
        }
        fields.withLock { $0[fieldKey] = found }
        return found
    }

    /// Keys templates asked for that nothing on the page answered, once each.
    private static let reported = Mutex<Set<String>>([])
    static let logger = Logger(label: "vroomx.console")

    static func reportUnknown(_ key: String, template: String) {
        let entry = "\(template): \(key)"
        guard reported.withLock({ $0.insert(entry).inserted }) else { return }
        logger.error("console template asks for an unknown key", metadata: ["template": .string(template), "key": .string(key)])
    }
}

/// An optional property's value, whatever it wraps.
private protocol OptionalProperty {
    var wrapped: Any? { get }
}

extension Optional: OptionalProperty {
    var wrapped: Any? { map { $0 } }
}

/// The frame every page is rendered in: the layout's keys (title, the
/// signed-in dispatcher, the CSRF token, which section is current), then the
/// page's own. A key neither answers is a template's typo, and is reported.
struct ConsoleFrame: MustacheParent {
    let template: String
    let title: String
    let section: String
    let session: ConsoleSession?
    let body: any ConsoleView

    struct Signed: ConsoleView {
        let email: String
        let carrier: String
        let csrf: String
    }

    func child(named key: String) -> Any? {
        switch key {
        case "title": return title
        case "session": return session.map { Signed(email: $0.email, carrier: $0.carrier, csrf: $0.csrfToken) } ?? false
        case "csrf": return session?.csrfToken ?? false
        default:
            if key.hasPrefix("section_") { return key == "section_" + section }
            if let value = body.child(named: key) { return value }
            ConsoleKeys.reportUnknown(key, template: template)
            return nil
        }
    }
}

/// A `<select>` option naming a record (a driver, by id).
struct OptionView: ConsoleView {
    let id: String
    let name: String
    let selected: Bool
}

/// A `<select>` option of a fixed choice (a status, pay terms), shown by its label or its value.
struct ChoiceView: ConsoleView {
    let value: String
    var label: String = ""
    let selected: Bool
}
