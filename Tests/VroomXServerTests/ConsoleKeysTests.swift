import Foundation
import Mustache
import Testing
@testable import VroomXServer

/// How a console template's keys reach a view's stored properties: by key
/// path, learnt once a type.
@Suite("Console: template keys")
struct ConsoleKeysTests {
    struct Row: ConsoleView {
        let tripID: String
        let statusLabel: String
        let count: Int
        let note: String?
        let missing: String?
        let rows: [String]
    }

    @Test("keys name properties (snake case, acronyms), a nil property is a closed section, an unknown key answers nothing")
    func keys() throws {
        let row = Row(tripID: "T-1", statusLabel: "Under way", count: 3, note: "careful", missing: nil, rows: ["a", "b"])
        // Twice: the second read comes from what the first learnt.
        for _ in 0..<2 {
            #expect(row.child(named: "trip_id") as? String == "T-1")
            #expect(row.child(named: "status_label") as? String == "Under way")
            #expect(row.child(named: "count") as? Int == 3)
            #expect(row.child(named: "note") as? String == "careful")
            #expect(row.child(named: "missing") as? Bool == false)
            #expect(row.child(named: "rows") as? [String] == ["a", "b"])
            #expect(row.child(named: "status") == nil && row.child(named: "trip") == nil)
        }
        // Through a template, as pages are rendered.
        let template = try MustacheTemplate(string: "{{trip_id}} {{status_label}} {{#note}}({{note}}){{/note}}{{^missing}}none{{/missing}} {{#rows}}{{.}}{{/rows}}")
        #expect(template.render(row) == "T-1 Under way (careful)none ab")
    }
}
