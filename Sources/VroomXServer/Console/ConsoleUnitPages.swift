import Foundation
import HTTPTypes
import Hummingbird
import VroomXModels

/// One truck or trailer: add it, edit its details (a dispatcher's edit never
/// overwrites someone else's unseen), give it to a driver, keep its papers
/// and photos. Every change goes through the same store calls as the API.
struct ConsoleUnitPages {
    let console: ConsoleController
    var store: Store { console.store }

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/fleet/new") { request in
            try await unitPage(request, unit: nil, values: ["kind": request.query("kind") == "trailer" ? "trailer" : "truck"], errors: FieldErrors())
        }
        console.post(router, "/fleet/new", create)
        console.get(router, "/fleet/:id") { request in
            let unit = try await store.fleet.unit(try request.id("id", "Unit"), request.scope)
            return try await unitPage(request, unit: unit, values: Self.formValues(unit), errors: FieldErrors())
        }
        console.post(router, "/fleet/:id", update)
        console.post(router, "/fleet/:id/assign", page: "/fleet/:id") { request in
            let id: ID<Equipment> = try request.id("id", "Unit")
            var errors = FieldErrors()
            let driver: ID<Driver>? = FormValue.id(request.form["driver_id"], field: "driver_id", errors: &errors)
            guard errors.isEmpty else { return try await rerender(request, id, errors) }
            do {
                _ = try await store.fleet.assign(id, to: driver, tenant: request.tenant)
            } catch let error as AppError where error.status < 500 && error.status != 404 {
                return try await rerender(request, id, FieldErrors(error, fallbackField: "driver_id"))
            }
            return ConsolePages.redirect("/fleet/\(id)?assigned=1#driver")
        }
        console.post(router, "/fleet/:id/papers", page: "/fleet/:id", addPaper)
        console.post(router, "/fleet/:id/papers/:paper/delete", page: "/fleet/:id") { request in
            let id: ID<Equipment> = try request.id("id", "Unit")
            _ = try await store.fleet.deletePaper(id, document: try request.id("paper", "Document"), tenant: request.tenant)
            return ConsolePages.redirect("/fleet/\(id)#papers")
        }
        console.postFile(router, "/fleet/:id/photos", page: "/fleet/:id", addPhoto)
        console.post(router, "/fleet/:id/photos/:photo/delete", page: "/fleet/:id") { request in
            let id: ID<Equipment> = try request.id("id", "Unit")
            let (_, key) = try await store.fleet.deletePhoto(id, photo: try request.id("photo", "Photo"), user: request.session.identity.user,
                                                          request.scope)
            await console.media.remove(key)
            return ConsolePages.redirect("/fleet/\(id)#photos")
        }
        console.get(router, "/fleet/:id/photos/:photo") { request in
            let (photo, key) = try await store.fleet.photo(try request.id("id", "Unit"), photo: try request.id("photo", "Photo"), request.scope)
            return try await InspectionController.serve(request.request, contentType: photo.contentType, sha256: photo.sha256, key: key,
                                                        media: console.media)
        }
    }

    // MARK: Details

    private func create(_ request: ConsoleRequest) async throws -> Response {
        let kind: EquipmentKind = request.form["kind"] == "trailer" ? .trailer : .truck
        var (fields, errors) = Self.fields(request.form, kind: kind)
        fields.kind = kind
        var problems = Problems()
        var probe = Equipment(id: ID(), kind: kind, unitNumber: "", createdAt: Date(), updatedAt: Date())
        FleetRules.apply(fields, to: &probe, now: Date(), &problems)
        errors.add(problems, renamed: Self.renamed)
        guard errors.isEmpty else {
            return try await unitPage(request, unit: nil, values: ConsoleOrderPages.typed(request, problems.all), errors: errors,
                                      status: .unprocessableContent)
        }
        do {
            let unit = try await store.fleet.create(fields, tenant: request.tenant)
            return ConsolePages.redirect("/fleet/\(unit.id)?added=1")
        } catch let error as AppError where error.status < 500 {
            return try await unitPage(request, unit: nil, values: ConsoleOrderPages.typed(request, [error]),
                                      errors: Self.formErrors(error), status: .init(code: error.status))
        }
    }

    private func update(_ request: ConsoleRequest) async throws -> Response {
        let id: ID<Equipment> = try request.id("id", "Unit")
        let unit = try await store.fleet.unit(id, request.scope)
        var (fields, errors) = Self.fields(request.form, kind: unit.kind)
        var problems = Problems()
        var probe = unit
        FleetRules.apply(fields, to: &probe, now: Date(), &problems)
        errors.add(problems, renamed: Self.renamed)
        guard errors.isEmpty else {
            return try await unitPage(request, unit: unit, values: ConsoleOrderPages.typed(request, problems.all), errors: errors,
                                      status: .unprocessableContent)
        }
        // The form's version: details someone else saved meanwhile are not overwritten unseen
        // (a form without it is refused: 0 is never a version).
        fields.baseVersion = Int(request.form["base_version"]) ?? 0
        do {
            _ = try await store.fleet.update(id, fields, tenant: request.tenant)
            return ConsolePages.redirect("/fleet/\(id)?saved=1")
        } catch let error as AppError where error.status == 409 && error.body.code == .conflict {
            var errors = FieldErrors()
            errors.add("base_version", "Someone else changed this unit while you were editing, so your changes were not saved. "
                       + "The form now shows what is saved; make your changes again.")
            return try await unitPage(request, unit: unit, values: Self.formValues(unit), errors: errors, status: .conflict)
        } catch let error as AppError where error.status < 500 {
            return try await unitPage(request, unit: unit, values: ConsoleOrderPages.typed(request, [error]),
                                      errors: Self.formErrors(error), status: .init(code: error.status))
        }
    }

    /// The details form as the API's fields, and the fields that do not parse
    /// (those stand empty), named next to their field before anything is saved.
    static func fields(_ form: ConsoleForm, kind: EquipmentKind) -> (EquipmentFields, FieldErrors) {
        var errors = FieldErrors()
        if form["unit_number"].isEmpty { errors.add("unit_number", "Enter the unit number painted on the door, like T-12.") }
        let year = form["year"].isEmpty ? nil : FormValue.integer(form["year"], field: "year", range: 1900...2100, errors: &errors)
        let capacity = form["capacity_cars"].isEmpty ? nil
            : FormValue.integer(form["capacity_cars"], field: "capacity_cars", range: FieldLimits.capacityCars.range, errors: &errors)
        let gvwr = form["gvwr_pounds"].isEmpty ? nil
            : FormValue.integer(form["gvwr_pounds"].replacingOccurrences(of: ",", with: ""), field: "gvwr_pounds", range: FieldLimits.gvwrPounds.range, errors: &errors)
        let status = EquipmentStatus(rawValue: form["status"])
        if !form["status"].isEmpty, status == nil { errors.add("status", "Choose a status from the list.") }
        let trailerType = TrailerType(rawValue: form["trailer_type"])
        if kind == .trailer, !form["trailer_type"].isEmpty, trailerType == nil { errors.add("trailer_type", "Choose open or enclosed.") }
        let fuelType = FuelType(rawValue: form["fuel_type"])
        if kind == .truck, !form["fuel_type"].isEmpty, fuelType == nil { errors.add("fuel_type", "Choose a fuel from the list.") }
        let specs = kind == .trailer
            ? EquipmentSpecs(trailerType: trailerType, capacityCars: capacity, gvwrPounds: gvwr)
            : EquipmentSpecs(gvwrPounds: gvwr, fuelType: fuelType)
        return (EquipmentFields(unitNumber: form["unit_number"], make: form["make"], model: form["model"], year: year,
                                vin: form["vin"], plate: form["plate"], plateState: form["plate_state"], status: status,
                                specs: specs, notes: form["notes"], acceptVINWarning: form["accept_vin_warning"] == "yes"), errors)
    }

    static func formValues(_ unit: Equipment) -> [String: String] {
        ["kind": unit.kind.rawValue, "unit_number": unit.unitNumber, "make": unit.make, "model": unit.model,
         "year": unit.year.map(String.init) ?? "", "vin": unit.vin, "plate": unit.plate, "plate_state": unit.plateState,
         "status": unit.status.rawValue, "trailer_type": unit.specs.trailerType?.rawValue ?? "",
         "capacity_cars": unit.specs.capacityCars.map(String.init) ?? "", "gvwr_pounds": unit.specs.gvwrPounds.map(String.init) ?? "",
         "fuel_type": unit.specs.fuelType?.rawValue ?? "", "notes": unit.notes, "base_version": String(unit.version)]
    }

    /// The store's fields the form names otherwise (`specs.capacity_cars` is the form's `capacity_cars`).
    static let renamed = ["specs_capacity_cars": "capacity_cars", "specs_gvwr_pounds": "gvwr_pounds",
                          "specs_trailer_type": "trailer_type", "specs_fuel_type": "fuel_type"]

    static func formErrors(_ error: AppError) -> FieldErrors {
        FieldErrors(error, renamed: renamed)
    }

    // MARK: Papers and photos

    private func addPaper(_ request: ConsoleRequest) async throws -> Response {
        let id: ID<Equipment> = try request.id("id", "Unit")
        var errors = FieldErrors()
        let kind = EquipmentDocumentKind(rawValue: request.form["paper_kind"])
        if kind == nil { errors.add("paper_kind", "Choose which paper this is.") }
        let expires = FormValue.date(request.form["paper_expires"], field: "paper_expires", errors: &errors)
        guard let kind, errors.isEmpty else { return try await rerender(request, id, errors) }
        do {
            _ = try await store.fleet.addPaper(id, AddEquipmentDocumentRequest(
                kind: kind, number: request.form["paper_number"], expiresOn: expires, notes: request.form["paper_notes"]), tenant: request.tenant)
        } catch let error as AppError where error.status < 500 && error.status != 404 {
            return try await rerender(request, id, FieldErrors(error, renamed: ["kind": "paper_kind", "number": "paper_number",
                                                                                "notes": "paper_notes", "expires_on": "paper_expires"]))
        }
        return ConsolePages.redirect("/fleet/\(id)#papers")
    }

    /// The file is the request body (sent by the page's script), streamed
    /// through the same upload path as the API's; answered as the API is.
    private func addPhoto(_ request: ConsoleRequest) async throws -> Response {
        let id: ID<Equipment> = try request.id("id", "Unit")
        try await console.uploads.putWhole(request.request, to: .unitPhoto(id), request.session.identity)
        return try JSONBody.response(try await store.fleet.unit(id, request.scope), status: .created).response
    }

    /// The unit's page again, with what went wrong next to its field.
    private func rerender(_ request: ConsoleRequest, _ id: ID<Equipment>, _ errors: FieldErrors) async throws -> Response {
        let unit = try await store.fleet.unit(id, request.scope)
        return try await unitPage(request, unit: unit, values: Self.formValues(unit).merging(request.form.firstValues) { $1 }, errors: errors,
                                  status: .unprocessableContent)
    }

    // MARK: Page

    private func unitPage(_ request: ConsoleRequest, unit: Equipment?, values: [String: String], errors: FieldErrors,
                          status: HTTPResponse.Status = .ok) async throws -> Response {
        let kind = unit?.kind ?? (values["kind"] == "trailer" ? .trailer : .truck)
        var saved: UnitView.Saved?
        var notice = ""
        if let unit {
            let drivers = try await store.people.drivers(tenant: request.tenant)
            let names = Dictionary(drivers.map { ($0.userID, $0.name) }) { first, _ in first }
            let today = LocalDate(store.now)
            let vehicle = [unit.year.map(String.init), unit.make, unit.model].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
            var fuel: FuelView?
            if unit.kind == .truck {
                fuel = FuelView(try await store.fleet.fuelReport(unit.id, from: LocalDate(today.startOfDay.addingTimeInterval(-89 * 86_400)), to: today,
                                                           tenant: request.tenant))
            }
            notice = request.query("saved") == "1" ? "Saved." : request.query("added") == "1" ? "Added \(unit.unitNumber)."
                    : request.query("assigned") == "1" ? (unit.driverID == nil ? "\(unit.unitNumber) is back in the yard."
                        : "Given to \(drivers.first { $0.id == unit.driverID }?.name ?? "the driver"); any \(unit.kind.rawValue) they had before went back to the yard.")
                    : ""
            saved = UnitView.Saved(
                unitID: unit.id.rawValue, unitNumber: unit.unitNumber,
                summary: [ConsoleFleetPages.capitalized(unit.kind.rawValue), vehicle].filter { !$0.isEmpty }.joined(separator: " · "),
                status: unit.status.rawValue, statusLabel: unit.status.label, version: unit.version,
                drivers: drivers.filter { $0.deactivatedAt == nil || $0.id == unit.driverID }.map {
                    .init(id: $0.id.rawValue, name: $0.name, selected: $0.id == unit.driverID)
                },
                driver: unit.driverID.flatMap { id in drivers.first { $0.id == id }?.name },
                retired: unit.status == .retired, odometer: unit.odometerMiles.map { "\(ConsoleFormat.grouped($0)) mi" },
                odometerAt: ConsoleFormat.time(unit.odometerAt),
                papers: unit.documents.map { paper in
                    // The paper's own `unit_id` is what its Remove form's address reads (it shadows the page's).
                    var view = PaperView(paper, today: today)
                    view.unitID = unit.id.rawValue
                    return view
                },
                photos: unit.photos.map { photo in
                    .init(id: photo.id.rawValue, src: "/fleet/\(unit.id)/photos/\(photo.id)", taken: ConsoleFormat.time(photo.uploadedAt),
                          by: names[photo.uploadedBy] ?? "Dispatch", size: ByteCountFormatter.string(fromByteCount: photo.sizeBytes, countStyle: .file))
                },
                hasPapers: !unit.documents.isEmpty, hasPhotos: !unit.photos.isEmpty, photoCount: unit.photos.count,
                photoRoom: EquipmentPhoto.maxPerUnit - unit.photos.count, photosFull: unit.photos.count >= EquipmentPhoto.maxPerUnit,
                maxPhotos: EquipmentPhoto.maxPerUnit, maxPhotoMb: console.uploads.limits.maxPhotoBytes >> 20, fuel: fuel)
        }
        let page = UnitView(
            new: unit == nil, v: values, e: errors.messages, hasErrors: !errors.isEmpty && errors.messages["base_version"] == nil,
            trailer: kind == .trailer, truck: kind == .truck, kind: kind.rawValue,
            statuses: EquipmentStatus.allCases.map { .init(value: $0.rawValue, label: $0.label, selected: values["status"] == $0.rawValue) },
            trailerTypes: TrailerType.allCases.map { .init(value: $0.rawValue, selected: values["trailer_type"] == $0.rawValue) },
            fuelTypes: FuelType.allCases.map { .init(value: $0.rawValue, selected: values["fuel_type"] == $0.rawValue) },
            paperKinds: EquipmentDocumentKind.allCases.map {
                .init(value: $0.rawValue, label: ConsoleFleetPages.capitalized($0.label), selected: values["paper_kind"] == $0.rawValue)
            },
            notice: notice, saved: saved)
        let title = unit?.unitNumber ?? "New \(kind.rawValue)"
        return console.pages.page("unit", title: title, session: request.session, section: "fleet", page, status: status)
    }
}
