import Foundation
import Synchronization

/// The console's templates, in the Mustache the console writes: values
/// (`{{name}}`, `{{v.notes}}`, `{{.}}`), sections and inverted sections,
/// partials (`{{> pager}}`) and a layout whose blocks a page fills
/// (`{{<layout}}{{$body}}…{{/body}}{{/layout}}`). Parsed once at start;
/// each name is a number from then on, so rendering a value is an array
/// read and a key path, written straight into the page.
///
/// A general Mustache library spent about 600,000 instructions on each row
/// of a board page (dynamic casts, hashing each name, escaping character
/// by character); this renderer spends a few thousand.
struct PageTemplates: Sendable {
    private let templates: [String: [TemplateNode]]

    /// Templates by name; every partial and layout they name must be among them.
    init(sources: [String: String]) throws {
        var templates: [String: [TemplateNode]] = [:]
        for (name, source) in sources {
            do {
                templates[name] = try TemplateParser.parse(source)
            } catch let error as TemplateSyntaxError {
                throw ConsoleResourceError(description: "template \(name): \(error.description)")
            }
        }
        for (name, nodes) in templates {
            for used in TemplateNode.templatesNamed(in: nodes) where templates[used] == nil {
                throw ConsoleResourceError(description: "template \(name) includes \(used), which does not exist")
            }
        }
        self.templates = templates
    }

    /// Every `.mustache` file of a folder, named without the extension.
    static func load(directory: URL) throws -> PageTemplates {
        var sources: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".mustache") {
            sources[String(file.dropLast(".mustache".count))] = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
        }
        return try PageTemplates(sources: sources)
    }

    /// The template filled from `root`; nil when there is no such template.
    func render(_ root: any TemplateScope, template name: String) -> String? {
        guard let nodes = templates[name] else { return nil }
        var renderer = TemplateRenderer(templates: templates, stack: [.scope(root)])
        renderer.render(nodes)
        if let audit = Self.audit { audit(name, root, renderer.output) }
        return renderer.output
    }

    /// Called with every page rendered within the task that set it (and the
    /// tasks it starts): the tests compare each page with a reference
    /// Mustache implementation's, and other tests running beside them stay
    /// out of the comparison. Nil in service.
    @TaskLocal static var audit: (@Sendable (_ template: String, _ root: any TemplateScope, _ html: String) -> Void)?
}

/// A part of a parsed template.
indirect enum TemplateNode: Sendable {
    case text(String)
    /// `{{name}}`, HTML-escaped; `{{{name}}}` and `{{&name}}` as they are.
    case value(TemplatePath, escaped: Bool)
    /// `{{#name}}…{{/name}}`, or `{{^name}}…{{/name}}` when inverted.
    case section(TemplatePath, [TemplateNode], inverted: Bool)
    /// `{{> name}}`: another template, in the same context.
    case partial(String)
    /// `{{< name}}…{{/name}}`: another template with some of its blocks replaced.
    case parent(String, blocks: [String: [TemplateNode]])
    /// `{{$name}}…{{/name}}`: content a parent's caller may replace.
    case block(String, [TemplateNode])

    /// The templates these nodes include, as partials or parents.
    static func templatesNamed(in nodes: [TemplateNode]) -> [String] {
        nodes.flatMap { node -> [String] in
            switch node {
            case .text, .value: []
            case .section(_, let inner, _), .block(_, let inner): templatesNamed(in: inner)
            case .partial(let name): [name]
            case .parent(let name, let blocks): [name] + blocks.values.flatMap { templatesNamed(in: $0) }
            }
        }
    }
}

/// A dotted name (`v.notes`); no keys is `.`, the current value itself.
struct TemplatePath: Sendable {
    let keys: [TemplateKey]
}

/// A name as templates write it, with the number every template shares for it.
struct TemplateKey: Sendable, Hashable {
    let id: Int
    let name: String

    /// Numbers handed out as templates are parsed; bounded by the templates' names (never a request's).
    private static let known = Mutex<(ids: [String: Int], names: [String])>(([:], []))

    static func named(_ name: String) -> TemplateKey {
        known.withLock { known in
            if let id = known.ids[name] { return TemplateKey(id: id, name: name) }
            known.names.append(name)
            known.ids[name] = known.names.count - 1
            return TemplateKey(id: known.names.count - 1, name: name)
        }
    }

    /// Every name so far, by number.
    static var all: [String] { known.withLock { $0.names } }
}

/// Something a template reads names from: a view, the page's frame.
protocol TemplateScope: Sendable {
    /// The value a name has here; nil when it names nothing here (the
    /// lookup goes on to the enclosing scope).
    func lookup(_ key: TemplateKey) -> TemplateValue?
}

/// A value as a template sees it.
enum TemplateValue {
    /// Text; an empty one is an absent section (`{{#color}} · {{color}}{{/color}}`).
    case text(String)
    case flag(Bool)
    case scope(any TemplateScope)
    case list([TemplateValue])
    case dictionary([String: String])

    /// The value of a name inside this one (`v.notes`), without looking outside it.
    func child(_ key: TemplateKey) -> TemplateValue? {
        switch self {
        case .scope(let scope): scope.lookup(key)
        case .dictionary(let values): values[key.name].map(TemplateValue.text)
        case .text, .flag, .list: nil
        }
    }
}

/// Renders nodes into one string.
private struct TemplateRenderer {
    let templates: [String: [TemplateNode]]
    /// Innermost last: a name is looked up from the innermost scope outwards.
    var stack: [TemplateValue]
    /// Blocks replaced by the parents being rendered.
    var blocks: [String: [TemplateNode]] = [:]
    var output = ""

    init(templates: [String: [TemplateNode]], stack: [TemplateValue]) {
        self.templates = templates
        self.stack = stack
        output.reserveCapacity(32 * 1024)
    }

    mutating func render(_ nodes: [TemplateNode]) {
        for node in nodes {
            switch node {
            case .text(let text):
                output += text
            case .value(let path, let escaped):
                switch resolve(path) {
                case .text(let text): escaped ? HTMLText.append(text, to: &output) : output.append(text)
                case .flag(let flag): output += flag ? "true" : "false"
                case .scope, .list, .dictionary, nil: break
                }
            case .section(let path, let inner, let inverted):
                let value = resolve(path)
                if inverted {
                    if !Self.isPresent(value) { render(inner) }
                    continue
                }
                switch value {
                case nil, .flag(false): break
                case .flag(true): render(inner)
                case .text(let text): if !text.isEmpty { render(inner, in: value!) }
                case .list(let items): for item in items { render(inner, in: item) }
                case .scope, .dictionary: render(inner, in: value!)
                }
            case .partial(let name):
                render(templates[name] ?? [])
            case .parent(let name, let replaced):
                let outer = blocks
                // The outermost caller's block wins, as in Mustache's inheritance.
                blocks = outer.merging(replaced) { outer, _ in outer }
                render(templates[name] ?? [])
                blocks = outer
            case .block(let name, let inner):
                render(blocks[name] ?? inner)
            }
        }
    }

    private mutating func render(_ nodes: [TemplateNode], in scope: TemplateValue) {
        stack.append(scope)
        render(nodes)
        stack.removeLast()
    }

    /// A name's value: its first key from the innermost scope that has it,
    /// the rest inside that value.
    private func resolve(_ path: TemplatePath) -> TemplateValue? {
        guard let first = path.keys.first else { return stack.last }
        var value: TemplateValue?
        for scope in stack.reversed() {
            if let found = scope.child(first) {
                value = found
                break
            }
        }
        for key in path.keys.dropFirst() { value = value?.child(key) }
        return value
    }

    /// What an inverted section is skipped for.
    private static func isPresent(_ value: TemplateValue?) -> Bool {
        switch value {
        case nil: false
        case .flag(let flag): flag
        case .text(let text): !text.isEmpty
        case .list(let items): !items.isEmpty
        case .scope, .dictionary: true
        }
    }
}

/// Text made safe inside HTML elements and quoted attributes.
enum HTMLText {
    static func append(_ text: String, to output: inout String) {
        var text = text
        let plain = text.withUTF8 { bytes in !bytes.contains { replacement(for: $0) != nil } }
        if plain {
            output += text
            return
        }
        text.withUTF8 { bytes in
            var start = 0
            for index in bytes.indices {
                guard let replacement = replacement(for: bytes[index]) else { continue }
                output += String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                output += replacement
                start = index + 1
            }
            output += String(decoding: UnsafeBufferPointer(rebasing: bytes[start...]), as: UTF8.self)
        }
    }

    private static func replacement(for byte: UInt8) -> String? {
        switch byte {
        case UInt8(ascii: "&"): "&amp;"
        case UInt8(ascii: "<"): "&lt;"
        case UInt8(ascii: ">"): "&gt;"
        case UInt8(ascii: "\""): "&quot;"
        case UInt8(ascii: "'"): "&#39;"
        default: nil
        }
    }
}

struct TemplateSyntaxError: Error, CustomStringConvertible {
    let description: String
}

/// Mustache text to nodes. A tag of a section, partial, parent, block or
/// comment alone on its line takes the line with it, as Mustache specifies,
/// so templates can be laid out on lines of their own.
private enum TemplateParser {
    private enum Piece {
        case text(String)
        /// The sigil (`#`, `^`, `/`, `>`, `<`, `$`, `!`, `&`; a space for a value) and the name.
        case tag(UInt8, String, line: Int)

        var standaloneKind: Bool {
            guard case .tag(let sigil, _, _) = self else { return false }
            return Array("#^/><$!".utf8).contains(sigil)
        }
    }

    static func parse(_ source: String) throws -> [TemplateNode] {
        var pieces = try split(source)
        trimStandaloneLines(&pieces)
        var index = 0
        let nodes = try build(pieces, from: &index, closing: nil)
        return nodes
    }

    /// Text and tags, in order.
    private static func split(_ source: String) throws -> [Piece] {
        let bytes = Array(source.utf8)
        var pieces: [Piece] = []
        var textStart = 0
        var index = 0
        var line = 1
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "{"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "{") else {
                if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                index += 1
                continue
            }
            if textStart < index { pieces.append(.text(text(textStart..<index))) }
            let triple = index + 2 < bytes.count && bytes[index + 2] == UInt8(ascii: "{")
            let contentStart = index + (triple ? 3 : 2)
            var close = contentStart
            while close + 1 < bytes.count, !(bytes[close] == UInt8(ascii: "}") && bytes[close + 1] == UInt8(ascii: "}")) { close += 1 }
            guard close + 1 < bytes.count else { throw TemplateSyntaxError(description: "line \(line): a tag is not closed with }}") }
            var end = close + 2
            if triple {
                guard end < bytes.count, bytes[end] == UInt8(ascii: "}") else {
                    throw TemplateSyntaxError(description: "line \(line): {{{ is not closed with }}}")
                }
                end += 1
            }
            var content = text(contentStart..<close).trimmingCharacters(in: .whitespaces)
            var sigil = UInt8(ascii: " ")
            if triple {
                sigil = UInt8(ascii: "&")
            } else if let first = content.utf8.first, Array("#^/><$!&=".utf8).contains(first) {
                guard first != UInt8(ascii: "=") else { throw TemplateSyntaxError(description: "line \(line): changing delimiters is not supported") }
                sigil = first
                content = String(content.dropFirst()).trimmingCharacters(in: .whitespaces)
            }
            guard sigil == UInt8(ascii: "!") || !content.isEmpty else { throw TemplateSyntaxError(description: "line \(line): a tag names nothing") }
            pieces.append(.tag(sigil, content, line: line))
            line += bytes[index..<end].lazy.filter { $0 == UInt8(ascii: "\n") }.count
            index = end
            textStart = end
        }
        if textStart < bytes.count { pieces.append(.text(text(textStart..<bytes.count))) }
        return pieces
    }

    /// Removes the lines of standalone tags: the whitespace before such a
    /// tag on its line and the end of its line. Decided on the text as
    /// written, then trimmed, so two such lines in a row both go.
    private static func trimStandaloneLines(_ pieces: inout [Piece]) {
        var trimTail = Set<Int>()  // pieces whose whitespace after their last line break goes
        var trimHead = Set<Int>()  // pieces whose whitespace up to and with their first line break goes
        for (index, piece) in pieces.enumerated() where piece.standaloneKind {
            let before: Bool
            if index == 0 {
                before = true
            } else if case .text(let text) = pieces[index - 1] {
                let tail = text.split(separator: "\n", omittingEmptySubsequences: false).last ?? ""
                before = tail.allSatisfy { $0 == " " || $0 == "\t" } && (text.contains("\n") || index == 1)
            } else {
                before = false
            }
            let after: Bool
            if index == pieces.count - 1 {
                after = true
            } else if case .text(let text) = pieces[index + 1] {
                let head = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                after = head.allSatisfy { $0 == " " || $0 == "\t" || $0 == "\r" } && (text.contains("\n") || index + 1 == pieces.count - 1)
            } else {
                after = false
            }
            if before && after {
                if index > 0 { trimTail.insert(index - 1) }
                if index < pieces.count - 1 { trimHead.insert(index + 1) }
            }
        }
        for index in pieces.indices {
            guard case .text(var text) = pieces[index] else { continue }
            if trimTail.contains(index) {
                text = text.lastIndex(of: "\n").map { String(text[...$0]) } ?? ""
            }
            if trimHead.contains(index) {
                text = text.firstIndex(of: "\n").map { String(text[text.index(after: $0)...]) } ?? ""
            }
            pieces[index] = .text(text)
        }
    }

    /// Nodes up to the tag closing `closing` (or the end, when nil).
    private static func build(_ pieces: [Piece], from index: inout Int, closing: String?) throws -> [TemplateNode] {
        var nodes: [TemplateNode] = []
        while index < pieces.count {
            let piece = pieces[index]
            index += 1
            switch piece {
            case .text(let text):
                if !text.isEmpty { nodes.append(.text(text)) }
            case .tag(let sigil, let name, let line):
                switch sigil {
                case UInt8(ascii: "/"):
                    guard name == closing else {
                        throw TemplateSyntaxError(description: "line \(line): {{/\(name)}} closes " + (closing.map { "nothing open; \($0) is" } ?? "nothing"))
                    }
                    return nodes
                case UInt8(ascii: "#"), UInt8(ascii: "^"):
                    let inner = try build(pieces, from: &index, closing: name)
                    nodes.append(.section(path(name), inner, inverted: sigil == UInt8(ascii: "^")))
                case UInt8(ascii: "$"):
                    nodes.append(.block(name, try build(pieces, from: &index, closing: name)))
                case UInt8(ascii: "<"):
                    var blocks: [String: [TemplateNode]] = [:]
                    for node in try build(pieces, from: &index, closing: name) {
                        switch node {
                        case .block(let block, let inner): blocks[block] = inner
                        case .text(let text) where text.allSatisfy(\.isWhitespace): break
                        default: throw TemplateSyntaxError(description: "line \(line): {{<\(name)}} may hold only blocks ({{$name}})")
                        }
                    }
                    nodes.append(.parent(name, blocks: blocks))
                case UInt8(ascii: ">"):
                    nodes.append(.partial(name))
                case UInt8(ascii: "!"):
                    break
                default:
                    nodes.append(.value(path(name), escaped: sigil != UInt8(ascii: "&")))
                }
            }
        }
        if let closing { throw TemplateSyntaxError(description: "{{#\(closing)}} is never closed") }
        return nodes
    }

    private static func path(_ name: String) -> TemplatePath {
        name == "." ? TemplatePath(keys: []) : TemplatePath(keys: name.split(separator: ".").map { TemplateKey.named(String($0)) })
    }
}
