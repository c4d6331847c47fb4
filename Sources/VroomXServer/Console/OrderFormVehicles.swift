import Foundation
import VroomXModels

/// The order form's vehicles: one row per vehicle, its inputs named
/// `v0_vin` … `v11_price`. A row left empty is no vehicle; a saved
/// vehicle's row carries its id, so an edit keeps the vehicle (and what
/// happened to it) rather than replacing it.
enum OrderFormVehicles {
    static let rows = FieldLimits.vehiclesPerOrder
    /// The inputs a dispatcher types in, by their short names.
    static let typed = ["vin", "year", "make", "model", "color", "lot", "price"]

    static func name(_ row: Int, _ field: String) -> String { "v\(row)_\(field)" }

    /// The vehicles the form lists, in row order, with the row each came
    /// from (for naming refusals), and the inputs it could not read.
    static func read(_ form: ConsoleForm, errors: inout FieldErrors) -> (vehicles: [Vehicle], rows: [Int]) {
        var vehicles: [Vehicle] = []
        var rows: [Int] = []
        for row in 0..<Self.rows {
            func value(_ field: String) -> String { form[name(row, field)] }
            guard typed.contains(where: { !value($0).trimmingCharacters(in: .whitespaces).isEmpty }) else { continue }
            let year = FormValue.integer(value("year"), field: name(row, "year"), range: FieldLimits.vehicleYear.range, errors: &errors)
            let price = FormValue.cents(value("price"), field: name(row, "price"), errors: &errors)
            if price == nil, errors.messages[name(row, "price")] == nil {
                errors.add(name(row, "price"), "Enter what moving this vehicle pays, in dollars.")
            }
            vehicles.append(Vehicle(id: ID(value("id")), year: year, make: value("make"), model: value("model"), vin: value("vin").uppercased(),
                                    color: value("color"), type: VehicleType(rawValue: value("type")), operable: value("operable") != "no",
                                    lotNumber: value("lot"), priceCents: price ?? 0))
            rows.append(row)
        }
        if vehicles.isEmpty { errors.add("vehicles", "Add the vehicle this order moves: its VIN, or its year, make and model.") }
        return (vehicles, rows)
    }

    /// What the prices typed add up to (those that read as money).
    static func total(_ values: [String: String]) -> Int {
        var ignored = FieldErrors()
        return (0..<rows).compactMap { FormValue.cents(values[name($0, "price")] ?? "", field: "", errors: &ignored) }
            .reduce(0) { $0 + min($1, MoneyFormat.largestCents) }
    }

    /// The form's values for saved vehicles (a row without one as the
    /// page shows it: no type, runs), so an edit conflict compares like with like.
    static func values(_ vehicles: [Vehicle]) -> [String: String] {
        var values: [String: String] = [:]
        for row in 0..<rows { values[name(row, "operable")] = "yes" }
        for (row, vehicle) in vehicles.prefix(rows).enumerated() {
            values[name(row, "id")] = vehicle.id?.rawValue ?? ""
            values[name(row, "vin")] = vehicle.vin
            values[name(row, "year")] = vehicle.year.map(String.init) ?? ""
            values[name(row, "make")] = vehicle.make
            values[name(row, "model")] = vehicle.model
            values[name(row, "color")] = vehicle.color
            values[name(row, "type")] = vehicle.type?.rawValue ?? ""
            values[name(row, "operable")] = vehicle.operable ? "yes" : "no"
            values[name(row, "lot")] = vehicle.lotNumber ?? ""
            values[name(row, "price")] = ConsoleFormat.dollars(vehicle.priceCents ?? 0)
        }
        return values
    }

    /// The store's names for a listed vehicle's fields, as the form names
    /// them: `vehicles[1].vin` is the VIN input of the row it came from.
    static func renamed(rows: [Int]) -> [String: String] {
        var renamed = ["revenue_cents": "vehicles"]
        for (index, row) in rows.enumerated() {
            for (api, form) in [("vin", "vin"), ("year", "year"), ("make", "make"), ("model", "model"), ("color", "color"),
                                ("lot_number", "lot"), ("price_cents", "price"), ("id", "vin")] {
                renamed["vehicles[\(index)]_\(api)"] = name(row, form)
            }
        }
        return renamed
    }

    /// The form's labels of each row's inputs, for an edit someone else saved meanwhile (`EditConflict`).
    static let conflictFields: [(String, String)] = (0..<rows).flatMap { row in
        [("vin", "VIN"), ("year", "Year"), ("make", "Make"), ("model", "Model"), ("color", "Color"), ("type", "Type"),
         ("operable", "Runs"), ("lot", "Lot or buyer number"), ("price", "Price")].map { (name(row, $0.0), "Vehicle \(row + 1) \($0.1.lowercased())") }
    }

    /// The rows the form shows: those with something in them (at least
    /// one), the rest hidden until "Add a vehicle" brings the next.
    static func views(values: [String: String], errors: [String: String]) -> [OrderFormView.VehicleRow] {
        func filled(_ row: Int) -> Bool {
            (typed + ["id"]).contains { !(values[name(row, $0)] ?? "").isEmpty } || errors.keys.contains { $0.hasPrefix("v\(row)_") }
        }
        let shown = max(1, ((0..<rows).last(where: filled) ?? 0) + 1)
        return (0..<rows).map { row in
            let value = { (field: String) in values[name(row, field)] ?? "" }
            let type = value("type")
            return OrderFormView.VehicleRow(
                index: row, number: row + 1, hidden: row >= shown, id: value("id"), vin: value("vin"), year: value("year"),
                make: value("make"), model: value("model"), color: value("color"), lot: value("lot"), price: value("price"),
                inoperable: value("operable") == "no",
                types: [ChoiceView(value: "", label: "—", selected: type.isEmpty)]
                    + VehicleType.allCases.map { ChoiceView(value: $0.rawValue, label: $0.label, selected: type == $0.rawValue) },
                e: Dictionary(uniqueKeysWithValues: (typed + ["type"]).compactMap { field in errors[name(row, field)].map { (field, $0) } }))
        }
    }
}
