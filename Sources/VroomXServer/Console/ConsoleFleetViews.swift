import Foundation
import VroomXModels

/// A unit's paper as the pages show it: expired, due within the notice period, or fine.
struct PaperView: ConsoleView {
    let id: String
    let kind: String
    let number: String
    let notes: String
    let expires: String?
    let state: String
    let expired: Bool
    let due: Bool
    let days: String
    /// On the fleet's list of papers due: whose they are.
    var unit: String = ""
    var unitID: String = ""

    init(_ paper: EquipmentDocument, today: LocalDate) {
        let (state, days): (String, String) = switch paper.standing(on: today) {
        case .noExpiry: ("ok", "")
        case .expired(let ago): ("expired", "\(ago) days ago")
        case .due(let left): ("due", "in \(left) days")
        case .valid(let left): ("ok", "in \(left) days")
        }
        id = paper.id.rawValue
        kind = ConsoleFleetPages.capitalized(paper.kind.label)
        number = paper.number
        notes = paper.notes
        expires = paper.expiresOn.map(DayFormat.day)
        self.state = state
        expired = state == "expired"
        due = state == "due"
        self.days = days
    }
}

/// A truck's fuel over a period.
struct FuelView: ConsoleView {
    let mpg: String?
    let costPerMile: String?
    let spent: String
    let fills: Int

    /// Nil when the truck bought no fuel in the period.
    init?(_ report: FuelReport) {
        guard report.fills > 0 else { return nil }
        mpg = report.milesPerGallon.map { String(format: "%.1f mpg", $0) }
        costPerMile = report.costPerMileCents.map { String(format: "$%.2f/mi", $0 / 100) }
        spent = ConsoleFormat.money(report.costCents)
        fills = report.fills
    }
}

/// Every truck and trailer, and the papers running out.
struct FleetView: ConsoleView {
    struct Row: ConsoleView {
        let id: String
        let photos: String
        let unit: String
        let kind: String
        let truck: Bool
        let vehicle: String
        let vin: String
        let plate: String
        let status: String
        let statusLabel: String
        let spec: String
        let driver: String?
        let odometer: String?
        let odometerAt: TimeView?
        let papers: [PaperView]
        let fuel: FuelView?
    }

    let units: [Row]
    let empty: Bool
    let due: [PaperView]
    let hasDue: Bool
    let imported: String
    let trucks: Int
    let trailers: Int
}

/// A unit's page, or the form for a new one.
struct UnitView: ConsoleView {
    struct Photo: ConsoleView {
        let id: String
        let src: String
        let taken: TimeView?
        let by: String
        let size: String
    }

    /// What only a saved unit shows.
    struct Saved: ConsoleView {
        let unitID: String
        let unitNumber: String
        let summary: String
        let status: String
        let statusLabel: String
        let version: Int
        let drivers: [OptionView]
        let driver: String?
        let retired: Bool
        let odometer: String?
        let odometerAt: TimeView?
        let papers: [PaperView]
        let photos: [Photo]
        let hasPapers: Bool
        let hasPhotos: Bool
        let photoCount: Int
        let photoRoom: Int
        let photosFull: Bool
        let maxPhotos: Int
        let maxPhotoMb: Int64
        let fuel: FuelView?
    }

    let new: Bool
    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    let trailer: Bool
    let truck: Bool
    let kind: String
    let statuses: [ChoiceView]
    let trailerTypes: [ChoiceView]
    let fuelTypes: [ChoiceView]
    let paperKinds: [ChoiceView]
    let notice: String
    let saved: Saved?

    var fallback: (any ConsoleView)? { saved }
}
