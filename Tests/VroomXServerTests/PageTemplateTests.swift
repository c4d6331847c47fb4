import Foundation
import HTTPTypes
import Mustache
import Synchronization
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The console's template renderer: Mustache's rules for what the console
/// writes, keys read from views' stored properties, and every page of the
/// demo carrier rendered as a reference Mustache implementation renders it.
@Suite("Console: page templates")
struct PageTemplateTests {
    struct Row: ConsoleView {
        let tripID: String
        let statusLabel: String
        let count: Int
        let size: Int64
        let note: String?
        let missing: String?
        let empty: String
        let rows: [String]
        let stops: [Stop]
        let noStops: [Stop]
        let first: Stop?
        let v: [String: String]
        let urgent: Bool

        struct Stop: ConsoleView {
            let name: String
            let late: Bool
        }
    }

    static let row = Row(tripID: "T-1", statusLabel: "Under way", count: 3, size: 12, note: "careful", missing: nil, empty: "", rows: ["a", "b"],
                         stops: [.init(name: "Tulsa", late: true), .init(name: "Dallas", late: false)], noStops: [],
                         first: .init(name: "Tulsa", late: true), v: ["notes": "<b>&'\"</b>"], urgent: false)

    static func render(_ source: String, _ scope: any TemplateScope = row, partials: [String: String] = [:]) throws -> String? {
        try PageTemplates(sources: partials.merging(["page": source]) { $1 }).render(scope, template: "page")
    }

    @Test("keys name properties (snake case, acronyms); numbers, flags, nil and empty text, lists and dotted names")
    func keys() throws {
        // Twice: the second render reads the tables the first made.
        for _ in 0..<2 {
            #expect(try Self.render("{{trip_id}} {{status_label}} {{count}} {{size}} {{urgent}}") == "T-1 Under way 3 12 false")
            #expect(try Self.render("{{#note}}({{note}}){{/note}}{{#missing}}x{{/missing}}{{^missing}}none{{/missing}}") == "(careful)none")
            #expect(try Self.render("{{#empty}}x{{/empty}}{{^empty}}blank{{/empty}}") == "blank")
            #expect(try Self.render("{{#rows}}[{{.}}]{{/rows}}{{#no_stops}}x{{/no_stops}}{{^no_stops}}no stops{{/no_stops}}") == "[a][b]no stops")
            #expect(try Self.render("{{#stops}}{{name}}{{#late}} late{{/late}}, {{/stops}}") == "Tulsa late, Dallas, ")
            #expect(try Self.render("{{#first}}{{name}} of {{trip_id}}{{/first}} {{first.name}} {{v.notes}} {{v.other}}.") ==
                    "Tulsa of T-1 Tulsa &lt;b&gt;&amp;&#39;&quot;&lt;/b&gt; .")
            #expect(try Self.render("{{{v.notes}}} {{&v.notes}} {{unknown}}{{#unknown}}x{{/unknown}}{{^unknown}}y{{/unknown}}") == "<b>&'\"</b> <b>&'\"</b> y")
        }
    }

    @Test("a quote or bracket is escaped even where a combining mark follows it (one Character with it), so text cannot leave an attribute")
    func escapingByBytes() throws {
        struct Field: ConsoleView { let q: String }
        let typed = "x\"\u{301} autofocus onfocus=alert(1) x=\"<\u{301}b>"
        #expect(try Self.render("<input value=\"{{q}}\">", Field(q: typed))
                == "<input value=\"x&quot;\u{301} autofocus onfocus=alert(1) x=&quot;&lt;\u{301}b&gt;\">")
        #expect(try Self.render("{{q}}", Field(q: "Zoë & Søren’s “Car” 🚗")) == "Zoë &amp; Søren’s “Car” 🚗")
    }

    @Test("a tag alone on its line takes its line; partials, layouts with blocks, comments")
    func structure() throws {
        #expect(try Self.render("<ul>\n  {{#rows}}\n  <li>{{.}}</li>\n  {{/rows}}\n</ul>\n") == "<ul>\n  <li>a</li>\n  <li>b</li>\n</ul>\n")
        #expect(try Self.render("a {{#rows}}{{.}}{{/rows}} b\n{{! a note }}\nc") == "a ab b\nc")
        #expect(try Self.render("{{#stops}}{{> stop}}{{/stops}}", partials: ["stop": "<{{name}}>"]) == "<Tulsa><Dallas>")
        let layout = "<title>{{$title}}VroomX{{/title}}</title>\n<main>{{$body}}{{/body}}</main>"
        #expect(try Self.render("{{<layout}}{{$body}}{{trip_id}}{{/body}}{{/layout}}", partials: ["layout": layout])
                == "<title>VroomX</title>\n<main>T-1</main>")
        #expect(try Self.render("{{<layout}}\n{{$title}}Trip{{/title}}\n{{$body}}\n{{count}}\n{{/body}}\n{{/layout}}\n", partials: ["layout": layout])
                == "<title>Trip</title>\n<main>3\n</main>")
    }

    @Test("a template that cannot be read, or includes one that does not exist, stops the start")
    func syntax() {
        for source in ["{{#a}}x", "{{#a}}x{{/b}}", "x{{/a}}", "{{a", "{{> missing}}", "{{=<% %>=}}", "{{}}", "{{<layout}}text{{/layout}}"] {
            #expect(throws: ConsoleResourceError.self, "\(source)") { _ = try Self.render(source, partials: ["layout": ""]) }
        }
    }

    @Test("every page of the demo carrier renders as a reference Mustache implementation renders it", arguments: [TestBackend.sqlite])
    func matchesReference(_ backend: TestBackend) async throws {
        let (server, _) = try await DemoDataTests.seeded(backend)
        let sources = try Self.templateSources()
        let reference = try MustacheLibrary(templates: sources.mapValues { try MustacheTemplate(string: $0) })
        let checked = Mutex<[String: Int]>([:])
        let differences = Mutex<[String]>([])
        let audit: @Sendable (String, any TemplateScope, String) -> Void = { template, root, html in
            let expected = reference.render(ReferenceScope.wrap(.scope(root)), withTemplate: template) ?? ""
            checked.withLock { $0[template, default: 0] += 1 }
            if Self.normalized(expected) != Self.normalized(html) {
                differences.withLock { $0.append("\(template):\n\(Self.firstDifference(Self.normalized(expected), Self.normalized(html)))") }
            }
        }
        // Only this test's pages: other tests render pages beside it.
        try await PageTemplates.$audit.withValue(audit) { try await server.run { api in
            let cookie = ["Cookie": try await server.services.consoleSignIn(email: DemoData.dispatcherEmail)]
            // Every page a dispatcher can reach by following the console's links.
            var queue = ["/board", "/trips", "/drivers", "/fleet", "/map", "/pay", "/receivables", "/invoices", "/customers", "/messages",
                         "/orders/new", "/trips/new", "/settings", "/import"]
            var seen = Set(queue)
            var visited = 0
            while let path = queue.first, visited < 400 {
                queue.removeFirst()
                visited += 1
                let page = try await api.raw(.get, path, headers: cookie)
                guard page.headers[.contentType]?.hasPrefix("text/html") == true else { continue }
                for match in page.text.matches(of: /href="(\/[^"#]*)"/) {
                    let link = String(match.1).replacingOccurrences(of: "&amp;", with: "&")
                    guard !link.hasPrefix("/static") && !link.hasPrefix("/v1") && !link.contains("/media") && !link.hasSuffix(".pdf")
                            && !link.hasSuffix(".csv") && !link.contains("sign-out") && seen.insert(link).inserted else { continue }
                    queue.append(link)
                }
            }
            // A form sent back with mistakes: values and errors rendered beside the fields.
            _ = try await api.raw(.post, "/trips/new", body: "_csrf=x&number=&miles=-4", headers: cookie.merging(["Content-Type": "application/x-www-form-urlencoded"]) { $1 })
            // The sign-in page, outside the frame's session.
            _ = try await api.raw(.get, "/sign-in")
        } }
        let pages = checked.withLock { $0 }
        #expect(differences.withLock { $0 }.isEmpty, "\(differences.withLock { $0 }.joined(separator: "\n\n"))")
        for template in ["board", "trips", "trip", "order", "drivers", "driver-pay", "fleet", "unit", "map", "pay", "receivables", "invoices",
                         "invoice", "customers", "customer", "messages", "conversation", "order-form", "trip-form", "settings", "sign-in"] {
            #expect(pages[template] ?? 0 > 0, "no \(template) page was rendered: \(pages)")
        }
    }

    static func templateSources() throws -> [String: String] {
        let folder = try #require(ConsolePages.templateFolder)
        var sources: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".mustache") {
            sources[String(file.dropLast(".mustache".count))] = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
        }
        return sources
    }

    /// Whitespace between tags is laid out differently by the two (where a
    /// partial's lines are indented); any run of it is one space here.
    static func normalized(_ html: String) -> String {
        html.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    static func firstDifference(_ expected: String, _ rendered: String) -> String {
        let common = zip(expected, rendered).prefix { $0 == $1 }.count
        return "reference: …\(expected.dropFirst(max(0, common - 80)).prefix(240))\nrendered:  …\(rendered.dropFirst(max(0, common - 80)).prefix(240))"
    }
}

/// A template value as the reference library reads it.
private struct ReferenceScope: MustacheParent {
    let scope: any TemplateScope

    func child(named name: String) -> Any? {
        scope.lookup(TemplateKey.named(name)).map(Self.wrap)
    }

    static func wrap(_ value: TemplateValue) -> Any {
        switch value {
        case .text(let text): ReferenceText(text: text)
        case .flag(let flag): flag
        case .scope(let scope): ReferenceScope(scope: scope)
        case .list(let items): items.map(wrap)
        case .dictionary(let values): values.mapValues { ReferenceText(text: $0) }
        }
    }
}

/// Text as the console's templates treat it: empty is absent.
private struct ReferenceText: MustacheCustomRenderable {
    let text: String
    var renderText: String { text }
    var isNull: Bool { text.isEmpty }
}
