import Foundation
import VroomXModels

/// An order as a line of the board, of a trip's page, and the head of its own page.
struct OrderRowView: ConsoleView {
    let id: String
    let number: String
    let vehicle: String
    let vin: String
    let pickupName: String
    let pickupCity: String
    let pickupWindow: String
    let deliveryName: String
    let deliveryCity: String
    let deliveryWindow: String
    let status: String
    let statusLabel: String
    let driver: String
    let trip: String
    let tripID: String
    let revenue: String
    /// Only vehicles not yet on a truck change trips.
    let movable: Bool
    let customer: String
    let customerID: String
    let loadID: String
    /// The day it was delivered, or cancelled ("Cancelled" then).
    let closed: String
    /// "Pickup late", "Delivery at risk"… (`Order.timeliness`), or empty.
    let timeliness: String
    let late: Bool
    /// The latest problem the driver reported at a stop still ahead or
    /// under way ("Keys missing at pickup"), or empty.
    let problem: String

    init(_ order: Order, _ names: ConsoleOrderPages.Names, today: LocalDate) {
        // While it is open (and a cancelled one's dry run, which is billed): the latest, and how many more.
        let shown = order.status.isOpen ? order.problems : order.status == .cancelled ? order.problems.filter { $0.kind == .dryRun } : []
        problem = shown.last.map { "\($0.kind.label) at \($0.stop.rawValue)" + (shown.count > 1 ? " +\(shown.count - 1) more" : "") } ?? ""

        let standing = order.timeliness(today: today)
        timeliness = standing?.label ?? ""
        late = standing?.isLate ?? false
        id = order.id.rawValue
        number = order.number
        vehicle = order.vehiclesSummary.isEmpty ? "—" : order.vehiclesSummary
        vin = order.vehicles.count > 1 ? order.vehicles.map(\.vin).filter { !$0.isEmpty }.joined(separator: " · ") : order.vehicle.vin
        pickupName = order.pickup.name
        pickupCity = ConsoleFormat.city(order.pickup.address)
        pickupWindow = ConsoleFormat.window(order.pickup)
        deliveryName = order.delivery.name
        deliveryCity = ConsoleFormat.city(order.delivery.address)
        deliveryWindow = ConsoleFormat.window(order.delivery)
        status = order.status.rawValue
        statusLabel = order.status.title
        driver = order.driverID.flatMap { names.drivers[$0]?.name } ?? "—"
        trip = order.tripID.flatMap { names.trips[$0]?.number } ?? ""
        tripID = order.tripID?.rawValue ?? ""
        revenue = ConsoleFormat.money(order.revenueCents)
        movable = order.status.isWaiting
        customer = order.customerID.flatMap { names.customers[$0]?.name } ?? ""
        customerID = order.customerID?.rawValue ?? ""
        loadID = order.externalLoadID ?? ""
        closed = order.status == .cancelled ? "Cancelled" : order.actualDeliveryDate.map { "Delivered " + DayFormat.day(LocalDate($0)) } ?? ""
    }
}

/// A moment as every console page shows it: a `<time>` element's machine
/// value and its text (scripts show it in the dispatcher's zone).
struct TimeView: ConsoleView {
    let iso: String
    let text: String
}

/// The load board: a tab per status, one page of its orders.
struct BoardView: ConsoleView {
    struct Tab: ConsoleView {
        let label: String
        let count: String
        let href: String
        let current: Bool
        let hit: Bool
    }

    let tabs: [Tab]
    let matching: Bool
    let tooSlow: Bool
    /// Tabs where a search found orders when this one found none.
    let elsewhere: [Tab]
    let foundElsewhere: Bool
    let status: String
    let statusLabel: String
    let q: String
    let imported: String
    let orders: [OrderRowView]
    let empty: Bool
    let pager: ConsolePagerView
    let sortAscHref: String
    let sortDescHref: String
    let sortDesc: Bool
}

/// An order's page and its bill of lading: its head (`row`, whose keys the
/// page answers too), the vehicle and stops, what happened, the inspections.
struct OrderPageView: ConsoleView {
    struct Point: ConsoleView {
        let text: String
        let radius: Int
    }

    struct StopView: ConsoleView {
        let name: String
        let address: String
        let contactName: String
        let contactPhone: String
        let window: String
        let arrived: TimeView?
        /// Whether the truck's position or the driver's report of waiting says so.
        let arrivedHow: String
        let point: Point?
        /// How the visit ended ("Left", "Until marked picked up") and when, and the time on site;
        /// or, while there, since when.
        let visitHow: String
        let visitEnd: TimeView?
        let onSite: String
        let onSiteSince: TimeView?
        /// "30 min of detention (2 h free) · $25.00".
        let detention: String
        /// The same on the bill of lading, without the money: "Detention 30 min (2 h free)".
        let detentionTime: String
        /// When the vehicle was picked up (delivered) there, for the bill of lading.
        let done: TimeView?
        let doneLabel: String
        let problems: [ProblemLine]

        init(_ order: Order, _ kind: StopKind, terms: StopChargeTerms, now: Date) {
            let stop = order.stop(kind)
            name = stop.name
            address = stop.address
            contactName = stop.contactName
            contactPhone = stop.contactPhone
            window = ConsoleFormat.window(stop)
            point = stop.location.map { Point(text: $0.text, radius: LocationRules.feet(fromMetres: stop.geofenceRadiusMeters ?? LocationRules.defaultRadiusMeters)) }
            let visit = order.visit(kind)
            // The arrival time on site counts from, as the bill of lading says it: the fence's, or the driver's report of waiting.
            arrived = ConsoleFormat.time(visit.arrivedAt)
            arrivedHow = visit.arrivedAt == nil ? "" : visit.arrivedAt == order.arrived(at: kind) ? "(truck's position)" : "(the driver reported waiting)"
            visitHow = visit.endsAtStatusMark ? "Until marked \(kind == .pickup ? "picked up" : "delivered")" : "Left"
            if let onSite = visit.onSite {
                (visitEnd, onSiteSince) = (ConsoleFormat.time(visit.departedAt), nil)
                self.onSite = StopTimes.duration(onSite)
            } else {
                (visitEnd, onSiteSince) = (nil, ConsoleFormat.time(visit.arrivedAt))
                self.onSite = visit.arrivedAt.map { StopTimes.duration(now.timeIntervalSince($0)) } ?? ""
            }
            let minutes = order.detentionMinutes(at: kind, terms: terms)
            let cents = StopTimes.detentionCents(minutes: minutes, centsPerHour: terms.detentionCentsPerHour)
            detentionTime = minutes == 0 ? "" : "Detention \(StopTimes.duration(TimeInterval(minutes * 60))) "
                + "(\(StopTimes.duration(TimeInterval(terms.freeMinutes * 60))) free)"
            done = ConsoleFormat.time(kind == .pickup ? order.actualPickupDate : order.actualDeliveryDate)
            doneLabel = kind == .pickup ? "Picked up" : "Delivered"
            detention = minutes == 0 ? "" : "\(StopTimes.duration(TimeInterval(minutes * 60))) of detention beyond \(StopTimes.duration(TimeInterval(terms.freeMinutes * 60))) free"
                + (cents > 0 ? " · \(MoneyFormat.dollars(cents))" : "")
            problems = order.problems(at: kind).map { problem in
                ProblemLine(label: problem.kind.label, note: problem.note, time: ConsoleFormat.time(problem.reportedAt),
                            photos: problem.photos.map { "/orders/\(order.id)/problems/\(problem.id)/photos/\($0.id)" },
                            far: problem.truckWasNear ? "" : "The truck was \(LocationRules.distanceText(problem.truckDistanceMeters ?? 0)) from the stop"
                                + (problem.kind == .waiting ? ": not counted as time on site." : "."))
            }
        }
    }

    /// A problem the driver reported at a stop.
    struct ProblemLine: ConsoleView {
        let label: String
        let note: String
        let time: TimeView?
        /// Where the driver's photos of it open.
        let photos: [String]
        /// Said when the truck's position put it far from the stop then.
        let far: String
    }

    struct Details: ConsoleView {
        let pickup: StopView
        let delivery: StopView
        let vehicles: [VehicleLine]
        let vehicleCount: String

        init(_ order: Order, terms: StopChargeTerms, now: Date) {
            pickup = StopView(order, .pickup, terms: terms, now: now)
            delivery = StopView(order, .delivery, terms: terms, now: now)
            vehicles = order.vehicles.enumerated().map { VehicleLine($1, number: $0 + 1) }
            vehicleCount = order.vehicles.count == 1 ? "Vehicle" : "\(order.vehicles.count) vehicles"
        }
    }

    /// One vehicle of the order, as its page lists it.
    struct VehicleLine: ConsoleView {
        let number: Int
        let summary: String
        let color: String
        let vin: String
        let type: String
        let inoperable: Bool
        let lot: String
        let price: String

        init(_ vehicle: Vehicle, number: Int) {
            self.number = number
            summary = vehicle.summary.isEmpty ? "Vehicle" : vehicle.summary
            color = vehicle.color
            vin = vehicle.vin
            type = vehicle.type?.label ?? ""
            inoperable = !vehicle.operable
            lot = vehicle.lotNumber ?? ""
            price = ConsoleFormat.money(vehicle.priceCents ?? 0)
        }
    }

    /// An ETA named in a line of the timeline.
    struct ETA: ConsoleView {
        let label: String
        let iso: String
        let text: String
    }

    /// A line of what happened: `text`, the ETAs it gave, what follows them,
    /// and when it reached the server if that was much later.
    struct Event: ConsoleView {
        let time: TimeView?
        let text: String
        var etas: [ETA] = []
        var after: String = ""
        var reported: TimeView? = nil
    }

    struct Media: ConsoleView {
        let src: String
        var name: String = ""
        var type: String = ""
        /// When and where the phone took it, when it said.
        var taken: TimeView? = nil
        var place: String = ""
    }

    struct DamageView: ConsoleView {
        let location: String
        let type: String
        let severity: String
        let note: String
        /// Marked at delivery where the same vehicle's pickup had none there of that type.
        var new = false
    }

    struct InspectionView: ConsoleView {
        let kind: String
        let completed: TimeView?
        let incomplete: Bool
        let odometer: String
        let notes: String
        let customerUnavailable: Bool
        let photos: [Media]
        let video: Media?
        let signature: Media?
        var damages: [DamageView]
        let noDamages: Bool
        let missing: String
        /// The signer's name in print, when the driver typed it.
        var signer = ""
    }

    let row: OrderRowView
    let order: Details
    let notice: String
    let timeline: [Event]
    let pickupETA: TimeView?
    let deliveryETA: TimeView?
    let computedETA: TimeView?
    let computedStop: String
    let distance: String?
    let seen: TimeView?
    let inspections: [InspectionView]
    let noInspections: Bool
    /// The order is still open: its driver's inspections may yet come.
    let inspectionsAwaited: Bool
    let canCancel: Bool
    let driverTold: Bool
    let canEdit: Bool
    let paymentTerms: String
    /// Dispatch may mark the vehicle picked up (assigned) or delivered (picked up) for a driver who did not.
    let canMarkPickedUp: Bool
    let canMarkDelivered: Bool
    /// The customer's tracking link: the live one, or whether one can be made.
    /// Absent when there is no link and none can be made (a closed order): no empty heading.
    let tracking: TrackingPanel?
    /// The completed inspections whose bill of lading can be emailed again.
    let emailKinds: [String]
    /// What the printed bill of lading says of the carrier.
    var carrierHeader: CarrierHeader? = nil
    /// The invoice billing the order: "Invoice INV-1001 · Sent" or "Draft invoice".
    var invoice: InvoiceLink? = nil

    struct InvoiceLink: ConsoleView {
        let id: String
        let label: String
    }

    struct CarrierHeader: ConsoleView {
        let name: String
        let lines: [String]
        let terms: String
    }

    struct TrackingPanel: ConsoleView {
        let url: String?
        let expires: TimeView?
        /// A link can still be made (the order is not long done).
        let canCreate: Bool
    }

    var fallback: (any ConsoleView)? { row }
}

/// Creating or editing an order.
struct OrderFormView: ConsoleView {
    struct TripOption: ConsoleView {
        let id: String
        let number: String
        let route: String
        let selected: Bool
    }

    let editing: Bool
    let orderID: String
    let v: [String: String]
    let e: [String: String]
    let geocoder: Bool
    let defaultRadiusFeet: Int
    let hasErrors: Bool
    let originals: [HiddenField]
    let trips: [TripOption]
    /// The carrier's customers, for the customer field's suggestions (and their terms, filled in when the order has none).
    let customers: [CustomerOption]

    struct CustomerOption: ConsoleView {
        let name: String
        let terms: String
    }
    /// What a customer added from the form is.
    let customerKinds: [ChoiceView]
    /// Every vehicle row the form may hold, those beyond the vehicles hidden (`OrderFormVehicles`).
    let vehicles: [VehicleRow]
    /// The sum of the prices typed so far (the page keeps it up to date as they change).
    let vehiclesTotal: String

    struct VehicleRow: ConsoleView {
        let index: Int
        let number: Int
        let hidden: Bool
        let id: String
        let vin: String
        let year: String
        let make: String
        let model: String
        let color: String
        let lot: String
        let price: String
        let inoperable: Bool
        let types: [ChoiceView]
        /// Messages by the row's field (`vin`, `price`, …).
        let e: [String: String]
    }
}

/// Importing orders or units from a CSV file, and the problems that stopped it.
struct ImportView: ConsoleView {
    struct Problem: ConsoleView {
        let line: Int
        let field: String
        let message: String
    }

    let heading: String
    let orders: Bool
    let units: Bool
    var customers = false
    let action: String
    let back: String
    let backLabel: String
    /// A file to start from: the header and an example line.
    var template = ""
    var problems: [Problem] = []
    var moreProblems: Int? = nil
    var problemsFound: String = ""
    var hasProblems = false
    var csv = ""

    /// The page with an import's problems (the first 200), and the file kept for another try.
    func refused(_ lines: [(line: Int, field: String, message: String)], csv: String) -> ImportView {
        var page = self
        page.problems = lines.prefix(200).map { Problem(line: $0.line, field: $0.field, message: $0.message) }
        page.moreProblems = lines.count > 200 ? lines.count - 200 : nil
        page.problemsFound = ConsoleFormat.count(lines.count, "problem")
        page.hasProblems = true
        page.csv = csv.count <= 200_000 ? csv : ""
        return page
    }
}
