import Foundation
import Hummingbird
import NIOCore
import VroomXModels

/// Trucks, trailers, their papers, odometer and fuel; what a VIN says; CSV
/// imports of units and orders.
struct FleetController {
    let store: Store

    /// An import is a few thousand lines at most.
    static let maxCSVBytes = 4 << 20

    func register(_ routes: Routes) {
        routes.on(.decodeVIN) { _, context in
            // The path segment as typed: %20 is the space a VIN may be written with.
            let raw = context.parameters.get("vin") ?? ""
            let text = raw.removingPercentEncoding ?? raw
            guard text.utf8.count <= 64 else { throw AppError(400, .invalidParameter, "A VIN is 17 characters.", field: "vin") }
            let decoded = VIN.decode(text, currentYear: LocalDate(store.now).year)
            // A well-formed VIN is answered whatever its check digit says (the answer says it); anything else is not a VIN.
            guard decoded.isWellFormed else {
                throw AppError(422, .validationFailed, decoded.problems.first ?? "This is not a VIN.", field: "vin")
            }
            return try JSONBody.response(decoded)
        }

        // A driver's own units
        routes.on(.equipment) { request, context in
            JSONBody.items(try await store.fleet.documents(try context.caller().scope, page: try request.page()))
        }
        routes.on(.equipmentUnit) { _, context in
            JSONBody.document(try await store.fleet.document(try context.id(), try context.caller().scope))
        }
        routes.on(.recordOdometer) { request, context in
            let body = try await request.decodeJSON(RecordOdometerRequest.self)
            return try JSONBody.response(try await store.fleet.recordOdometer(body, try context.caller().scope).reading, status: .created)
        }

        // Dispatch
        routes.on(.dispatchEquipment) { request, context in
            JSONBody.items(try await store.fleet.documents(try context.caller().scope, kind: try request.value(.equipmentKind, as: EquipmentKind.self),
                                                              status: try request.value(.equipmentStatus, as: EquipmentStatus.self),
                                                              page: try request.page()))
        }
        routes.on(.dispatchCreateEquipment) { request, context in
            let body = try await request.decodeJSON(EquipmentFields.self)
            return try JSONBody.response(try await store.fleet.create(body, tenant: try context.caller().tenant), status: .created)
        }
        routes.on(.dispatchEquipmentUnit) { _, context in
            JSONBody.document(try await store.fleet.document(try context.id(), try context.caller().scope))
        }
        routes.on(.dispatchUpdateEquipment) { request, context in
            let body = try await request.decodeJSON(EquipmentFields.self)
            return try JSONBody.response(try await store.fleet.update(try context.id(), body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchAssignEquipment) { request, context in
            let body = try await request.decodeJSON(AssignEquipmentRequest.self)
            return try JSONBody.response(try await store.fleet.assign(try context.id(), to: body.driverID, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchEquipmentStatus) { request, context in
            let body = try await request.decodeJSON(EquipmentStatusChange.self)
            return try JSONBody.response(Items(try await store.fleet.setStatus(body, tenant: try context.caller().tenant)))
        }
        routes.on(.dispatchImportEquipment) { request, context in
            let text = try await Self.csv(request)
            return try JSONBody.response(try await EquipmentImport.run(text, store: store, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchImportOrders) { request, context in
            let text = try await Self.csv(request)
            do {
                let outcome = try await OrderImport.run(text, store: store, tenant: try context.caller().tenant)
                return try JSONBody.response(ImportResult(created: outcome.count, updated: 0))
            } catch let problems as OrderImport.Problems {
                throw EquipmentImport.failure(problems.lines.map { LineProblem(line: $0.line, field: $0.field, message: $0.message) })
            }
        }
        routes.on(.dispatchImportCustomers) { request, context in
            let text = try await Self.csv(request)
            return try JSONBody.response(try await CustomerImport.run(text, store: store, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchAddEquipmentDocument) { request, context in
            let body = try await request.decodeJSON(AddEquipmentDocumentRequest.self)
            return try JSONBody.response(try await store.fleet.addPaper(try context.id(), body, tenant: try context.caller().tenant),
                                         status: .created)
        }
        routes.on(.dispatchDeleteEquipmentDocument) { _, context in
            try JSONBody.response(try await store.fleet.deletePaper(try context.id(), document: try context.id("document"),
                                                                          tenant: try context.caller().tenant))
        }
        routes.on(.dispatchExpiringDocuments) { request, context in
            let days = try request.count(.withinDays) ?? FleetRules.expiryNoticeDays
            return try JSONBody.response(Items(try await store.fleet.expiringPapers(within: days, tenant: try context.caller().tenant)))
        }
        routes.on(.dispatchOdometerReadings) { request, context in
            JSONBody.items(try await store.fleet.odometerReadings(try context.id(), tenant: try context.caller().tenant, page: try request.page()))
        }
        routes.on(.dispatchFuelReport) { request, context in
            let today = LocalDate(store.now)
            let to = try request.date(.toDate) ?? today
            let from = try request.date(.fromDate) ?? max(LocalDate(to.startOfDay.addingTimeInterval(-29 * 86_400)), LocalDate(year: 1900, month: 1, day: 1)!)
            guard to.startOfDay.timeIntervalSince(from.startOfDay) <= 3 * 366 * 86_400 else {
                throw AppError(400, .invalidParameter, "A fuel report covers at most three years.", field: "from")
            }
            return try JSONBody.response(try await store.fleet.fuelReport(try context.id(), from: from, to: to, tenant: try context.caller().tenant))
        }
    }

    /// A CSV body: `text/csv` (or `text/plain`), UTF-8, at most `maxCSVBytes`.
    static func csv(_ request: Request) async throws -> String {
        let type = request.headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("text/csv") || type.hasPrefix("text/plain") else {
            throw AppError(415, .unsupportedMediaType, "Send the file as text/csv.")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxCSVBytes)
        } catch is NIOTooManyBytesError {
            throw AppError(413, .payloadTooLarge, "The file is larger than \(maxCSVBytes >> 20) MiB.")
        }
        guard let text = String(validating: buffer.readableBytesView, as: UTF8.self) else {
            throw AppError(422, .validationFailed, "The file is not UTF-8 text.", field: "file")
        }
        return text
    }
}
