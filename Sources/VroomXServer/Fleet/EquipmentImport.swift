import Foundation
import VroomXModels

/// Trucks and trailers from a CSV file (a header line, then one unit per
/// line). A line whose unit number the carrier already has updates that
/// unit with the columns given; any other line creates one. Every line is
/// checked by the API's rules before anything is written; one bad line and
/// nothing is imported.
enum EquipmentImport {
    static let maxLines = 2_000

    static let columns = [
        "unit_number", "kind", "make", "model", "year", "vin", "vin_confirmed", "plate", "plate_state", "status",
        "trailer_type", "capacity_cars", "gvwr_pounds", "fuel_type", "notes",
    ]

    static func run(_ text: String, store: Store, tenant: ID<Tenant>) async throws -> ImportResult {
        let (rows, problems) = try parse(text)
        // What only the stored units can tell is checked in the same pass: every bad line named at once.
        let all = problems + (try await store.importRefusals(rows, tenant: tenant))
        guard all.isEmpty else { throw failure(all.sorted { $0.line < $1.line }) }
        return try await store.importEquipment(rows, tenant: tenant)
    }

    /// Each good line's fields, and every problem of the others' values; a
    /// file whose shape is wrong (its header, its size) throws.
    static func parse(_ text: String) throws -> (rows: [(line: Int, fields: EquipmentFields)], problems: [LineProblem]) {
        var problems: [LineProblem] = []
        let rows: [CSV.Row]
        do {
            rows = try CSV.rows(text, maxRows: maxLines + 1)
        } catch {
            throw failure([LineProblem(line: error.line, field: "file", message: error.message)])
        }
        guard let header = rows.first, !(header.fields.count == 1 && header.fields[0].isEmpty) else {
            throw failure([LineProblem(line: 1, field: "file", message: "The file is empty. The first line names the columns: unit_number, kind, …")])
        }
        let (names, repeated) = CSV.header(header)
        for (index, name) in names.enumerated() where !columns.contains(name) {
            problems.append(LineProblem(line: header.line, field: name.isEmpty ? "column \(index + 1)" : name,
                                        message: "Unknown column. Columns are: \(columns.joined(separator: ", "))."))
        }
        if let repeated { problems.append(LineProblem(line: header.line, field: repeated, message: "The \(repeated) column appears twice.")) }
        if !names.contains("unit_number") {
            problems.append(LineProblem(line: header.line, field: "unit_number", message: "The unit_number column is required."))
        }
        let filled = rows.dropFirst().filter { !$0.fields.allSatisfy { $0.trimmingCharacters(in: .whitespaces).isEmpty } }
        if filled.count > maxLines {
            problems.append(LineProblem(line: filled[filled.startIndex + maxLines].line, field: "file", message: "At most \(maxLines) units per file."))
        }
        guard problems.isEmpty else { throw failure(problems) }

        var parsed: [(line: Int, fields: EquipmentFields)] = []
        var seen: [String: Int] = [:]
        for row in rows.dropFirst() where !row.fields.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
            guard problems.count < OrderImport.maxProblems else { break }
            guard row.fields.count <= names.count else {
                problems.append(LineProblem(line: row.line, field: "line", message: "This line has \(row.fields.count) fields; the header has \(names.count)."))
                continue
            }
            var value: [String: String] = [:]
            for (index, name) in names.enumerated() where index < row.fields.count {
                let text = row.fields[index].trimmingCharacters(in: .whitespacesAndNewlines)
                if !text.isEmpty { value[name] = text }
            }
            do {
                let fields = try fields(value)
                let key = FleetRules.key(fields.unitNumber ?? "")
                if let earlier = seen[key] {
                    throw Refusal(field: "unit_number", message: "Unit \(fields.unitNumber ?? "") is also on line \(earlier).")
                }
                seen[key] = row.line
                try check(fields)
                parsed.append((row.line, fields))
            } catch let refusal as Refusal {
                problems.append(LineProblem(line: row.line, field: refusal.field, message: refusal.message))
            } catch let error as AppError {
                problems.append(LineProblem(line: row.line, field: column(for: error.body.field), message: error.body.message))
            }
        }
        if problems.isEmpty, parsed.isEmpty {
            throw failure([LineProblem(line: 2, field: "file", message: "The file has a header but no units.")])
        }
        return (parsed, problems)
    }

    /// The line's values by the API's rules, so that one answer names every
    /// bad line (the rules that need the stored unit run again on import).
    static func check(_ fields: EquipmentFields) throws {
        var probe = Equipment(id: ID(), kind: fields.kind ?? .truck, unitNumber: "", createdAt: Date(), updatedAt: Date())
        var values = fields
        if fields.kind == nil { values.specs = nil }  // which specs fit depends on the stored unit's kind
        try FleetRules.apply(values, to: &probe, now: Date())
    }

    struct Refusal: Error {
        let field: String
        let message: String
    }

    /// The API fields of one line; the values are checked when applied.
    static func fields(_ value: [String: String]) throws -> EquipmentFields {
        func word<T: RawRepresentable>(_ name: String, _ type: T.Type) throws -> T? where T.RawValue == String, T: CaseIterable {
            guard let text = value[name] else { return nil }
            guard let word = T(rawValue: text.lowercased().replacingOccurrences(of: " ", with: "_")) else {
                throw Refusal(field: name, message: "\(name) is one of \(T.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            return word
        }
        func number(_ name: String, _ range: ClosedRange<Int64>) throws -> Int? {
            guard let text = value[name] else { return nil }
            guard let number = DecimalText.int64(text, in: range) else {
                throw Refusal(field: name, message: "\(name) is a whole number from \(range.lowerBound) to \(range.upperBound).")
            }
            return Int(number)
        }
        guard let unitNumber = value["unit_number"] else { throw Refusal(field: "unit_number", message: "unit_number is required.") }
        var specs: EquipmentSpecs?
        let trailerType = try word("trailer_type", TrailerType.self)
        let capacity = try number("capacity_cars", FieldLimits.capacityCars.range64)
        let gvwr = try number("gvwr_pounds", FieldLimits.gvwrPounds.range64)
        let fuelType = try word("fuel_type", FuelType.self)
        if trailerType != nil || capacity != nil || gvwr != nil || fuelType != nil {
            specs = EquipmentSpecs(trailerType: trailerType, capacityCars: capacity, gvwrPounds: gvwr, fuelType: fuelType)
        }
        let confirmed = value["vin_confirmed"].map { ["yes", "true", "1", "y"].contains($0.lowercased()) } ?? false
        return EquipmentFields(kind: try word("kind", EquipmentKind.self), unitNumber: unitNumber, make: value["make"],
                               model: value["model"], year: try number("year", 0...9_999), vin: value["vin"], plate: value["plate"],
                               plateState: value["plate_state"], status: try word("status", EquipmentStatus.self), specs: specs,
                               notes: value["notes"], acceptVINWarning: confirmed)
    }

    static func failure(_ problems: [LineProblem]) -> AppError {
        let lines = Set(problems.map(\.line)).count
        let counted = problems.count >= OrderImport.maxProblems ? "At least \(NumberText.grouped(lines)) lines"
            : lines == 1 ? "1 line" : "\(NumberText.grouped(lines)) lines"
        var error = AppError(422, .importFailed, "\(counted) of the file \(lines == 1 ? "is" : "are") wrong; nothing was imported.",
                             field: problems.first?.field)
        error.body.problems = Array(problems.prefix(1_000))
        return error
    }

    /// The file's column for an API field (`specs.capacity_cars` → `capacity_cars`).
    static func column(for field: String?) -> String {
        guard let field else { return "line" }
        return field.hasPrefix("specs.") ? String(field.dropFirst("specs.".count)) : field
    }
}

extension Store {
    /// The lines the stored units refuse (a new unit without its kind, a
    /// kind that would change), read before anything is written.
    func importRefusals(_ rows: [(line: Int, fields: EquipmentFields)], tenant: ID<Tenant>) async throws -> [LineProblem] {
        let stored = try await read { try await EquipmentRepository.kinds(tenant: tenant, $0) }
        return rows.compactMap { line, fields in
            if let current = stored[FleetRules.key(fields.unitNumber ?? "")] {
                guard let kind = fields.kind, kind.rawValue != current.kind else { return nil }
                return LineProblem(line: line, field: "kind", message: "Unit \(current.number) is a \(current.kind); its kind cannot change.")
            }
            guard fields.kind == nil else { return nil }
            return LineProblem(line: line, field: "kind", message: "A new unit needs its kind: truck or trailer.")
        }
    }

    /// Creates or updates the units of an import in one transaction.
    func importEquipment(_ rows: [(line: Int, fields: EquipmentFields)], tenant: ID<Tenant>) async throws -> ImportResult {
        try await write(tenant: tenant) { tx in
            var result = ImportResult(created: 0, updated: 0)
            var problems: [LineProblem] = []
            for (line, fields) in rows {
                do {
                    if let existing = try await EquipmentRepository.id(ofUnit: fields.unitNumber ?? "", tenant: tenant, tx.db),
                       let current = try await EquipmentRepository.find(existing, .dispatch(tenant: tenant), locking: true, tx.db) {
                        if let kind = fields.kind, kind != current.kind {
                            throw AppError.validation("kind", "Unit \(current.unitNumber) is a \(current.kind.rawValue); its kind cannot change.")
                        }
                        let edit = try FleetRules.edit(current, with: fields, now: tx.now)
                        if edit.changed {
                            try await fleet.save(edit.unit, from: current, detailsChanged: edit.detailsChanged, statusChanged: edit.statusChanged, tx)
                            result.updated += 1
                        }
                    } else {
                        guard fields.kind != nil else { throw AppError.validation("kind", "A new unit needs its kind: truck or trailer.") }
                        _ = try await fleet.insert(fields, tx)
                        result.created += 1
                    }
                } catch let error as AppError where error.status == 422 {
                    problems.append(LineProblem(line: line, field: EquipmentImport.column(for: error.body.field), message: error.body.message))
                }
            }
            guard problems.isEmpty else { throw EquipmentImport.failure(problems) }
            return result
        }
    }
}
