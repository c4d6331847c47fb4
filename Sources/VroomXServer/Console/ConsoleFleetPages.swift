import Foundation
import Hummingbird
import VroomXModels

/// The fleet: every truck and trailer with its driver, odometer, papers
/// (expired and due ones flagged) and, for trucks, the last 30 days of fuel;
/// each unit's own page is `ConsoleUnitPages`.
struct ConsoleFleetPages {
    let console: ConsoleController
    var store: Store { console.store }

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/fleet") { request in try await fleet(request) }
        console.get(router, "/fleet/import") { request in
            console.pages.page("import", title: "Import units", session: request.session, section: "fleet", Self.importPage)
        }
        console.post(router, "/fleet/import", importCSV)
    }

    static let importPage = ImportView(heading: "Import trucks and trailers", orders: false, units: true, action: "/fleet/import",
                                       back: "/fleet", backLabel: "Fleet")

    /// A CSV of units: created, or updated by unit number; all lines or none.
    private func importCSV(_ request: ConsoleRequest) async throws -> Response {
        let text = request.form.values["csv"]?.first ?? ""
        do {
            let result = try await EquipmentImport.run(text, store: store, tenant: request.tenant)
            return ConsolePages.redirect("/fleet?created=\(result.created)&updated=\(result.updated)")
        } catch let error as AppError where error.body.code == .importFailed {
            let lines = (error.body.problems ?? []).map { ($0.line, $0.field, $0.message) }
            return console.pages.page("import", title: "Import units", session: request.session, section: "fleet",
                                      Self.importPage.refused(lines, csv: text),
                                      status: .unprocessableContent)
        }
    }

    /// "annual DOT inspection" → "Annual DOT inspection".
    static func capitalized(_ label: String) -> String { label.prefix(1).uppercased() + label.dropFirst() }

    private func fleet(_ request: ConsoleRequest) async throws -> Response {
        // T-9 before T-10, as people count.
        let units = try await store.fleet.all(tenant: request.tenant)
            .sorted { $0.unitNumber.localizedStandardCompare($1.unitNumber) == .orderedAscending }
        let drivers = Dictionary(try await store.people.drivers(tenant: request.tenant).map { ($0.id, $0.name) }) { first, _ in first }
        let today = LocalDate(store.now)
        let monthAgo = LocalDate(today.startOfDay.addingTimeInterval(-29 * 86_400))
        var rows: [FleetView.Row] = []
        var due: [PaperView] = []
        for unit in units {
            var fuel: FuelView?
            if unit.kind == .truck {
                fuel = FuelView(try await store.fleet.fuelReport(unit.id, from: monthAgo, to: today, tenant: request.tenant))
            }
            let papers = unit.documents.map { PaperView($0, today: today) }
            for var paper in papers where paper.state != "ok" {
                paper.unit = unit.unitNumber
                paper.unitID = unit.id.rawValue
                due.append(paper)
            }
            rows.append(FleetView.Row(
                id: unit.id.rawValue, photos: unit.photos.isEmpty ? "" : unit.photos.count == 1 ? "1 photo" : "\(unit.photos.count) photos",
                unit: unit.unitNumber, kind: unit.kind.rawValue, truck: unit.kind == .truck,
                vehicle: [unit.year.map(String.init), unit.make, unit.model].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " "),
                vin: unit.vin, plate: [unit.plate, unit.plateState.isEmpty ? "" : "(\(unit.plateState))"].filter { !$0.isEmpty }.joined(separator: " "),
                status: unit.status.rawValue, statusLabel: unit.status.label,
                spec: [unit.specs.trailerType.map { "\($0.rawValue) trailer" }, unit.specs.capacityCars.map { "\($0) cars" },
                       unit.specs.fuelType?.rawValue].compactMap { $0 }.joined(separator: ", "),
                driver: unit.driverID.map { drivers[$0] ?? "—" }, odometer: unit.odometerMiles.map { "\(ConsoleFormat.grouped($0)) mi" },
                odometerAt: ConsoleFormat.time(unit.odometerAt), papers: papers, fuel: fuel))
        }
        return console.pages.page("fleet", title: "Fleet", session: request.session, section: "fleet", FleetView(
            units: rows, empty: rows.isEmpty, due: due, hasDue: !due.isEmpty,
            imported: request.query("created").flatMap { Int($0) }.map { created in
                "Imported: \(created) new, \(request.query("updated").flatMap { Int($0) } ?? 0) updated." } ?? "",
            trucks: units.filter { $0.kind == .truck }.count, trailers: units.filter { $0.kind == .trailer }.count))
    }
}
