import Foundation
import Observation
import VroomXModels

/// The driver's truck and trailer (seed 002): details, papers that run out,
/// the odometer, fuel bought, photos; readings and fills work offline.
@MainActor @Observable
public final class UnitsViewModel {
    public private(set) var lastError: String?
    /// What the last action did, for a confirmation line.
    public private(set) var confirmation: String?
    let app: DriverApp
    let units: LiveQuery<[Equipment]>
    let trips: LiveQuery<[Trip]>

    public init(app: DriverApp) {
        self.app = app
        units = LiveQuery(app.database, placeholder: [], AppDatabase.equipment)
        trips = LiveQuery(app.database, placeholder: [], AppDatabase.trips)
    }

    public var truck: Equipment? { units.value.first { $0.kind == .truck } }
    public var trailer: Equipment? { units.value.first { $0.kind == .trailer } }
    public var isEmpty: Bool { units.value.isEmpty }
    public static let emptyMessage = "No truck or trailer is assigned to you. Dispatch assigns them."

    /// Papers of a unit, each with how soon it runs out in words ("expired 3 days ago", "expires in 18 days").
    public func papers(of unit: Equipment, today: LocalDate = LocalDate(Date(), in: .current)) -> [(paper: EquipmentDocument, note: String, urgent: Bool)] {
        unit.documents.map { paper in
            let standing = paper.standing(on: today)
            let note = switch standing {
            case .noExpiry: "No expiry"
            case .expired(let ago): "Expired \(ago) day\(ago == 1 ? "" : "s") ago"
            case .due(let left): "Expires in \(left) day\(left == 1 ? "" : "s")"
            case .valid: "Expires \(paper.expiresOn?.description ?? "")"
            }
            return (paper, note, standing.needsRenewal)
        }
    }

    /// The trip a fuel fill-up is logged on: the one under way, else the next planned.
    public var fuelTrip: Trip? {
        trips.value.first { $0.status == .inProgress } ?? trips.value.first { $0.status == .planned }
    }

    /// An odometer reading as typed ("413,480").
    public func recordOdometer(_ text: String, unit: ID<Equipment>) {
        guard let miles = DriverInput.miles(text) else { return fail(DriverInput.milesRule) }
        attempt("Recorded \(miles) mi.") { try app.recordOdometer(unit, miles: miles) }
    }

    /// A fill-up of the truck: amount paid, gallons, and the odometer if known.
    public func recordFuel(amount: String, gallons: String, odometer: String) {
        guard let truck else { return fail("No truck is assigned to you.") }
        guard let trip = fuelTrip else { return fail("Fuel is logged on a trip; you have none.") }
        guard let cents = DriverInput.cents(amount), cents > 0 else { return fail("The amount looks like 412.80.") }
        guard let milli = DriverInput.milli(gallons), milli > 0 else { return fail("Gallons look like 118.25.") }
        let miles = odometer.trimmingCharacters(in: .whitespaces).isEmpty ? nil : DriverInput.miles(odometer)
        if !odometer.trimmingCharacters(in: .whitespaces).isEmpty, miles == nil { return fail(DriverInput.milesRule) }
        attempt("Logged the fill-up on trip \(trip.number).") {
            try app.createExpense(trip: trip.id, category: .fuel, amountCents: cents,
                                  fuel: FuelPurchase(equipmentID: truck.id, quantityMilli: milli, unit: .gallon, odometerMiles: miles))
        }
    }

    /// A photo of a unit (from the camera), uploaded when there is signal.
    public func addPhoto(_ file: URL, to unit: ID<Equipment>) async {
        do {
            try await app.addUnitPhoto(file, to: unit)
            lastError = nil
            confirmation = "Photo added; it uploads when there is signal."
        } catch {
            fail((error as? LocalRejection)?.message ?? "\(error)")
        }
    }

    private func attempt(_ done: String, _ action: () throws -> Void) {
        do {
            try action()
            lastError = nil
            confirmation = done
        } catch {
            fail((error as? LocalRejection)?.message ?? "\(error)")
        }
    }

    private func fail(_ message: String) {
        lastError = message
        confirmation = nil
    }
}

/// Files still on the device (seed 000): progress, and for refused ones
/// Retry or Discard.
@MainActor @Observable
public final class UploadsViewModel {
    let app: DriverApp

    public init(app: DriverApp) { self.app = app }

    public var items: [UploadItem] { app.status.pendingUploads }
    public var failed: [UploadItem] { items.filter { $0.status == .failed } }
    public var summary: String? {
        guard !items.isEmpty else { return nil }
        let failedCount = failed.count
        return "\(items.count) file\(items.count == 1 ? "" : "s") waiting" + (failedCount > 0 ? ", \(failedCount) refused" : "")
    }

    public func retry(_ id: String) { try? app.retryUpload(id) }
    public func discard(_ id: String) async { try? await app.discardUpload(id) }
}
