import VroomXModels

extension CSV {
    /// A file's lines read as values by column, after the checks every
    /// import makes of its shape: a header naming known columns once each,
    /// the required ones present, at most `maxLines` lines. Values are
    /// trimmed; empty ones are left out.
    struct Table {
        struct Line {
            let line: Int
            let values: [String: String]
        }

        /// The lines whose shape is right.
        let lines: [Line]
        /// Lines with more fields than the header names.
        let problems: [LineProblem]

        /// A file whose shape is wrong (header, size, an open quote) throws
        /// its problems; `noun` names what a line is ("orders", "customers").
        init(_ text: String, columns: [String], required: [String], maxLines: Int, noun: String) throws(ShapeRefusal) {
            let rows: [Row]
            do {
                rows = try CSV.rows(text, maxRows: maxLines + 1)
            } catch {
                throw ShapeRefusal([LineProblem(line: error.line, field: "file", message: error.message)])
            }
            guard let header = rows.first, !(header.fields.count == 1 && header.fields[0].isEmpty) else {
                throw ShapeRefusal([LineProblem(line: 1, field: "file",
                                                message: "The file is empty. The first line names the columns: \(required.joined(separator: ", ")), …")])
            }
            var problems: [LineProblem] = []
            let (names, repeated) = CSV.header(header)
            for (index, name) in names.enumerated() where !columns.contains(name) {
                problems.append(LineProblem(line: header.line, field: name.isEmpty ? "column \(index + 1)" : name,
                                            message: "Unknown column. Columns are: \(columns.joined(separator: ", "))."))
            }
            if let repeated { problems.append(LineProblem(line: header.line, field: repeated, message: "The \(repeated) column appears twice.")) }
            for name in required where !names.contains(name) {
                problems.append(LineProblem(line: header.line, field: name, message: "The \(name) column is required."))
            }
            let filled = rows.dropFirst().filter { !$0.fields.allSatisfy { $0.trimmingCharacters(in: .whitespaces).isEmpty } }
            if filled.count > maxLines {
                problems.append(LineProblem(line: filled[filled.startIndex + maxLines].line, field: "file", message: "At most \(maxLines) \(noun) per file."))
            }
            guard problems.isEmpty else { throw ShapeRefusal(problems) }
            guard !filled.isEmpty else { throw ShapeRefusal([LineProblem(line: 2, field: "file", message: "The file has a header but no \(noun).")]) }
            var lines: [Line] = []
            for row in filled {
                guard row.fields.count <= names.count else {
                    problems.append(LineProblem(line: row.line, field: "line", message: "This line has \(row.fields.count) fields; the header has \(names.count)."))
                    continue
                }
                var values: [String: String] = [:]
                for (index, name) in names.enumerated() where index < row.fields.count {
                    let text = row.fields[index].trimmingCharacters(in: .whitespacesAndNewlines)
                    if !text.isEmpty { values[name] = text }
                }
                lines.append(Line(line: row.line, values: values))
            }
            self.lines = lines
            self.problems = problems
        }
    }

    /// A file refused for its shape, with every problem found.
    struct ShapeRefusal: Error {
        let problems: [LineProblem]
        init(_ problems: [LineProblem]) { self.problems = problems }
    }

    /// Yes-like words a spreadsheet writes in a yes/no column.
    static func isYes(_ text: String?) -> Bool { ["yes", "true", "1", "y"].contains((text ?? "").lowercased()) }
}
