import Foundation
import VroomXModels

/// The rules of a unit's fields, applied the same way by the API, the CSV
/// import and the console.
enum FleetRules {
    static let maxDocuments = 50
    static let expiryNoticeDays = EquipmentDocument.noticeDays

    /// Unit numbers are unique regardless of case, width and composition
    /// ("Café-1" written either way, "ＤＵＰ-1" and "DUP-1" are one unit).
    static func key(_ unitNumber: String) -> String { unitNumber.precomposedStringWithCompatibilityMapping.lowercased() }

    static func unitNumberTaken(_ number: String) -> AppError {
        AppError(409, .alreadyExists, "Unit \(number) already exists in this carrier.", field: "unit_number")
    }

    /// What dispatch edits (not status, driver or odometer), for change detection.
    static func details(of unit: Equipment) -> [String] {
        [unit.unitNumber, unit.make, unit.model, unit.year.map(String.init) ?? "", unit.vin, unit.plate, unit.plateState,
         unit.specs.trailerType?.rawValue ?? "", unit.specs.capacityCars.map(String.init) ?? "",
         unit.specs.gvwrPounds.map(String.init) ?? "", unit.specs.fuelType?.rawValue ?? "", unit.notes]
    }

    /// A unit with a dispatcher's fields applied (an edit, a line of an
    /// import), and which parts changed; a unit retired lets go of its driver.
    struct Edit {
        let unit: Equipment
        let detailsChanged: Bool
        let statusChanged: Bool
        var changed: Bool { detailsChanged || statusChanged }
    }

    static func edit(_ current: Equipment, with fields: EquipmentFields, now: Date) throws -> Edit {
        var unit = current
        try apply(fields, to: &unit, now: now)
        let statusChanged = unit.status != current.status
        if statusChanged, unit.status == .retired { unit.driverID = nil }
        return Edit(unit: unit, detailsChanged: details(of: unit) != details(of: current), statusChanged: statusChanged)
    }

    /// Applies the fields present, each checked.
    static func apply(_ fields: EquipmentFields, to unit: inout Equipment, now: Date) throws {
        var edited = unit
        try Problems.first { apply(fields, to: &edited, now: now, &$0) }
        unit = edited
    }

    /// Applies the fields present, each refusal kept in `problems` (a refused field stays as it was).
    static func apply(_ fields: EquipmentFields, to unit: inout Equipment, now: Date, _ problems: inout Problems) {
        if let number = fields.unitNumber {
            unit.unitNumber = problems.check(unit.unitNumber) {
                let number = try Validate.text(number, FieldLimits.unitNumber).precomposedStringWithCanonicalMapping
                // One line of visible text: no line breaks, tabs or direction overrides that make two numbers look alike.
                guard number.unicodeScalars.count <= 32,
                      !number.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }) else {
                    throw AppError.validation("unit_number", "A unit number is up to 32 letters, digits and signs on one line.")
                }
                return number
            }
        } else if unit.unitNumber.isEmpty {
            problems.check(()) { throw AppError.validation("unit_number", "unit_number is required.") }
        }
        let before = unit
        if let make = fields.make { unit.make = problems.check(before.make) { try Validate.text(make, FieldLimits.unitMake) } }
        if let model = fields.model { unit.model = problems.check(before.model) { try Validate.text(model, FieldLimits.unitModel) } }
        if let year = fields.year { unit.year = problems.check(before.year) { try Validate.modelYear(year, field: "year", now: now) } }
        if let vin = fields.vin {
            // A VIN already saved was confirmed when it was: only a new one is questioned.
            let saved = !before.vin.isEmpty && vin.trimmingCharacters(in: .whitespaces).uppercased() == before.vin
            unit.vin = problems.check(before.vin) { try Validate.vin(vin, field: "vin", acceptWarning: saved || fields.acceptVINWarning == true, now: now) }
        }
        if let plate = fields.plate {
            unit.plate = problems.check(before.plate) {
                let plate = try Validate.text(plate, FieldLimits.plate).uppercased()
                guard plate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == " " || $0 == "-") }) else {
                    throw AppError.validation("plate", "A plate is letters, digits, spaces and dashes.")
                }
                return plate
            }
        }
        if let state = fields.plateState {
            unit.plateState = problems.check(before.plateState) {
                let state = state.trimmingCharacters(in: .whitespaces).uppercased()
                guard state.isEmpty || (state.count == 2 && state.allSatisfy({ $0.isASCII && $0.isLetter })) else {
                    throw AppError.validation("plate_state", "plate_state is the two-letter state or province code.")
                }
                return state
            }
        }
        if let status = fields.status { unit.status = status }
        if let specs = fields.specs {
            let kind = unit.kind
            unit.specs = problems.check(before.specs) {
                if let capacity = specs.capacityCars, !FieldLimits.capacityCars.allows(capacity) {
                    throw AppError(FieldLimits.capacityCars.refusal(field: "specs.capacity_cars"))
                }
                if let gvwr = specs.gvwrPounds, !FieldLimits.gvwrPounds.allows(gvwr) {
                    throw AppError(FieldLimits.gvwrPounds.refusal(field: "specs.gvwr_pounds", unit: "pounds"))
                }
                if kind == .truck, specs.trailerType != nil || specs.capacityCars != nil {
                    throw AppError.validation("specs.trailer_type", "Trailer type and car capacity describe a trailer, not a truck.")
                }
                if kind == .trailer, specs.fuelType != nil {
                    throw AppError.validation("specs.fuel_type", "A trailer has no fuel type.")
                }
                return specs
            }
        }
        if let notes = fields.notes { unit.notes = problems.check(before.notes) { try Validate.text(notes, FieldLimits.unitNotes) } }
    }
}
