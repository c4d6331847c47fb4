import Foundation
import Logging
import Mustache
import Synchronization

/// A console page, or a part of one, as its template reads it: each stored
/// property is a key (`statusLabel` is `{{status_label}}`), so a key
/// misspelt in Swift does not compile, and one misspelt in a template is
/// reported (`ConsoleFrame`). A nil property is an absent section.
protocol ConsoleView: MustacheParent, Sendable {}

extension ConsoleView {
    func child(named key: String) -> Any? { ConsoleKeys.value(of: self, key: key) }
}

/// Template keys to Swift property names, and the reports of keys that
/// name nothing.
enum ConsoleKeys {
    private static let names = Mutex<[String: String]>([:])

    /// Words Swift names write in capitals after the first (`trip_id` → `tripID`).
    private static let acronyms: [Substring: String] = ["id": "ID", "eta": "ETA", "url": "URL", "vin": "VIN", "csv": "CSV"]

    /// `status_label` → `statusLabel`, `trip_id` → `tripID`.
    static func propertyName(_ key: String) -> String {
        if let known = names.withLock({ $0[key] }) { return known }
        let words = key.split(separator: "_")
        let name = words.enumerated().map { index, word in
            index == 0 ? String(word) : acronyms[word] ?? word.prefix(1).uppercased() + word.dropFirst()
        }.joined()
        names.withLock { $0[key] = name }
        return name
    }

    /// The property's value; `false` for a nil one (so the section is absent
    /// and the lookup stops here); nil when the view has no such property.
    static func value(of view: Any, key: String) -> Any? {
        let name = propertyName(key)
        let mirror = Mirror(reflecting: view)
        let children = mirror.children
        let child: Mirror.Child
        if mirror.displayStyle == .struct {
            // Reflecting a property costs a look-up of its type; only the one asked for is reflected (its place in
            // the type is learnt once), not each before it: a board of 50 rows asks for hundreds of keys.
            guard let offset = offsets(of: type(of: view), children)[name] else { return nil }
            child = children[children.index(children.startIndex, offsetBy: offset)]
        } else {
            // An enum's children depend on its case: no fixed places to learn.
            guard let found = children.first(where: { $0.label == name }) else { return nil }
            child = found
        }
        let value = Mirror(reflecting: child.value)
        guard value.displayStyle == .optional else { return child.value }
        return value.children.first?.value ?? false
    }

    private static let layouts = Mutex<[ObjectIdentifier: [String: Int]]>([:])

    /// Where each property of a view's type is among its reflected children.
    private static func offsets(of type: Any.Type, _ children: Mirror.Children) -> [String: Int] {
        if let known = layouts.withLock({ $0[ObjectIdentifier(type)] }) { return known }
        var offsets: [String: Int] = [:]
        for (offset, child) in children.enumerated() {
            if let label = child.label { offsets[label] = offset }
        }
        layouts.withLock { $0[ObjectIdentifier(type)] = offsets }
        return offsets
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
