import Testing
@testable import VroomXServer

/// A row's columns found by name: every name, the first of two alike, none for a name the result lacks.
@Suite struct SQLColumnsTests {
    @Test func everyColumnIsFoundWhereItIs() {
        for count in [0, 1, 7, 8, 45, 300] {
            let names = (0..<count).map { "column_\($0)_" + String(repeating: "x", count: $0 % 9) }
            let columns = SQLColumns(names)
            for (position, name) in names.enumerated() { #expect(columns.position(of: name) == position, "\(name) of \(count)") }
            #expect(columns.position(of: "missing") == nil && columns.position(of: "") == nil)
        }
    }

    @Test func theFirstOfTwoColumnsOfOneNameAnswers() {
        let columns = SQLColumns(["id", "doc", "id", "version", "doc"])
        #expect(columns.position(of: "id") == 0 && columns.position(of: "doc") == 1 && columns.position(of: "version") == 3)
        let row = SQLRow(columns: columns, values: [.text("a"), .text("b"), .text("c"), .integer(4), .text("e")])
        #expect(row["id"] == .text("a") && row["version"] == .integer(4) && row["nothing"] == .null)
    }
}
