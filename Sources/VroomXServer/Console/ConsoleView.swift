import Foundation
import Logging
// Each stored property of a view's type with its key path, read once a type (`_forEachFieldWithKeyPath`).
@_spi(Reflection) import Swift
import Synchronization

/// A console page, or a part of one, as its template reads it: each stored
/// property is a key (`statusLabel` is `{{status_label}}`), so a key
/// misspelt in Swift does not compile, and one misspelt in a template is
/// reported (`ConsoleFrame`). A nil property is an absent section. A view
/// is a struct (its stored properties are its keys).
protocol ConsoleView: TemplateScope {
    /// A view whose keys this one also answers (a trip page answers its row's).
    var fallback: (any ConsoleView)? { get }
}

extension ConsoleView {
    var fallback: (any ConsoleView)? { nil }

    func lookup(_ key: TemplateKey) -> TemplateValue? {
        ConsoleKeys.value(of: self, key: key) ?? fallback?.lookup(key)
    }
}

/// Template keys to Swift property names, and the reports of keys that
/// name nothing.
enum ConsoleKeys {
    /// Words Swift names write in capitals after the first (`trip_id` → `tripID`).
    private static let acronyms: [Substring: String] = ["id": "ID", "eta": "ETA", "url": "URL", "vin": "VIN", "csv": "CSV"]

    /// `status_label` → `statusLabel`, `trip_id` → `tripID`.
    static func propertyName(_ key: String) -> String {
        key.split(separator: "_").enumerated().map { index, word in
            index == 0 ? String(word) : acronyms[word] ?? word.prefix(1).uppercased() + word.dropFirst()
        }.joined()
    }

    /// The property's value; `false` for a nil one (so the section is absent
    /// and the lookup stops here); nil when the view has no such property.
    static func value<View: ConsoleView>(of view: View, key: TemplateKey) -> TemplateValue? {
        guard let field = fields(of: View.self, covering: key.id).byKey[key.id] else { return nil }
        // Each path was made for `View`, and its kind checked against its value's type when the table was made.
        switch field.kind {
        case .string:
            return .text(read(view, field, as: String.self))
        case .optionalString:
            return read(view, field, as: String?.self).map(TemplateValue.text) ?? .flag(false)
        case .bool:
            return .flag(read(view, field, as: Bool.self))
        case .int:
            return .text(String(read(view, field, as: Int.self)))
        case .other(let optional):
            let value = view[keyPath: unsafeDowncast(field.path, to: PartialKeyPath<View>.self)]
            guard optional else { return templateValue(value) }
            return (value as? any OptionalProperty)?.wrapped.map(templateValue) ?? .flag(false)
        }
    }

    /// A stored property of a common type. Straight from where it is stored
    /// in the struct: a key path applied generically costs ~700 instructions,
    /// and a trips page reads 8,000 properties.
    private static func read<View: ConsoleView, Value>(_ view: View, _ field: Field, as type: Value.Type) -> Value {
        guard let offset = field.offset else { return view[keyPath: unsafeDowncast(field.path, to: KeyPath<View, Value>.self)] }
        return withUnsafeBytes(of: view) { $0.load(fromByteOffset: offset, as: Value.self) }
    }

    /// Any other property's value, by its type.
    private static func templateValue(_ value: Any) -> TemplateValue {
        switch value {
        case let text as String: .text(text)
        case let flag as Bool: .flag(flag)
        case let view as any ConsoleView: .scope(view)
        case let views as any ViewList: .list(views.templateValues)
        case let texts as [String]: .list(texts.map(TemplateValue.text))
        case let values as [String: String]: .dictionary(values)
        case let number as any Numeric: .text(String(describing: number))
        default: unsupported(value)
        }
    }

    /// A property of a type templates cannot read into (a struct that is
    /// not a view, a set): written as text, and reported once a type, as a
    /// misspelt key is.
    private static func unsupported(_ value: Any) -> TemplateValue {
        let type = String(reflecting: Swift.type(of: value))
        if reported.withLock({ $0.insert("type " + type).inserted }) {
            logger.error("a console view has a property of a type templates cannot read", metadata: ["type": .string(type)])
        }
        return .text(String(describing: value))
    }

    /// How a stored property is read: the common types through a key path
    /// of their own type, the rest as `Any`.
    private struct Field: @unchecked Sendable {
        enum Kind {
            case string, optionalString, bool, int
            case other(optional: Bool)
        }
        let path: AnyKeyPath
        let kind: Kind
        /// Where a struct stores it (`MemoryLayout.offset(of:)`); nil reads it through `path`.
        let offset: Int?
    }

    /// A view type's properties by template key number (nil: the type has no such property).
    private final class Fields: Sendable {
        let byKey: [Field?]
        init(byKey: [Field?]) { self.byKey = byKey }
    }

    /// Bounded by the view types and the templates' keys: keys come from templates, never from requests.
    private static let tables = Mutex<[ObjectIdentifier: Fields]>([:])

    /// The type's table, made (by reflection, once; a page of 300 rows asks
    /// for thousands of keys) when first asked for, and again when a key was
    /// numbered after it was made.
    private static func fields<View: ConsoleView>(of type: View.Type, covering id: Int) -> Fields {
        if let known = tables.withLock({ $0[ObjectIdentifier(type)] }), id < known.byKey.count { return known }
        var optional: Set<String> = []
        _forEachField(of: type) { label, _, _, kind in
            if kind == .optional { optional.insert(String(cString: label)) }
            return true
        }
        var properties: [String: Field] = [:]
        _forEachFieldWithKeyPath(of: type) { label, path in
            let name = String(cString: label)
            let kind: Field.Kind = switch path {
            case is KeyPath<View, String>: .string
            case is KeyPath<View, String?>: .optionalString
            case is KeyPath<View, Bool>: .bool
            case is KeyPath<View, Int>: .int
            default: .other(optional: optional.contains(name))
            }
            properties[name] = Field(path: path, kind: kind, offset: MemoryLayout<View>.offset(of: path))
            return true
        }
        let table = Fields(byKey: TemplateKey.all.map { properties[propertyName($0)] })
        tables.withLock { $0[ObjectIdentifier(type)] = table }
        return table
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

/// A list of views a section repeats.
private protocol ViewList {
    var templateValues: [TemplateValue] { get }
}

extension Array: ViewList where Element: ConsoleView {
    fileprivate var templateValues: [TemplateValue] { map { .scope($0) } }
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
struct ConsoleFrame: TemplateScope {
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

    func lookup(_ key: TemplateKey) -> TemplateValue? {
        switch key.name {
        case "title": return .text(title)
        case "session": return session.map { .scope(Signed(email: $0.email, carrier: $0.carrier, csrf: $0.csrfToken)) } ?? .flag(false)
        case "csrf": return session.map { .text($0.csrfToken) } ?? .flag(false)
        default:
            if key.name.hasPrefix("section_") { return .flag(key.name == "section_" + section) }
            if let value = body.lookup(key) { return value }
            ConsoleKeys.reportUnknown(key.name, template: template)
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
