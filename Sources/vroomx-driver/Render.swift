import DriverKit
import Foundation
import VroomXModels

/// Turns DriverKit's view state into terminal text. No logic beyond
/// presentation lives here.
@MainActor
struct Render {
    let terminal: Terminal

    static let timeFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        formatter.dateFormat = "MMM d HH:mm"
        return formatter
    }()

    func time(_ date: Date?) -> String { date.map(Render.timeFormatter.string(from:)) ?? "—" }
    func money(_ cents: Int) -> String { MoneyFormat.dollars(cents) }
    func shortID(_ id: String) -> String { String(id.prefix(8)) }

    func status(_ status: OrderStatus) -> String {
        switch status {
        case .new: return terminal.style(status.title, .dim)
        case .assigned: return terminal.style(status.title, .blue)
        case .pickedUp: return terminal.style(status.title, .yellow)
        case .delivered: return terminal.style(status.title, .green)
        case .cancelled: return terminal.style(status.title, .red)
        }
    }

    func status(_ status: TripStatus) -> String {
        switch status {
        case .planned: return terminal.style(status.title, .blue)
        case .inProgress: return terminal.style(status.title, .yellow)
        case .completed: return terminal.style(status.title, .green)
        case .cancelled: return terminal.style(status.title, .red)
        }
    }

    func dates(_ trip: Trip) -> String {
        DayFormat.span(trip.startDate, trip.endDate) ?? "undated"
    }

    func trips(_ trips: [Trip]) {
        guard !trips.isEmpty else { return terminal.line("No trips yet.") }
        terminal.table(["TRIP", "STATUS", "DATES", "ROUTE", "PAY", "ID"], trips.map { trip in
            [trip.number, status(trip.status), dates(trip), "\(trip.origin) → \(trip.destination)", money(trip.driverPayCents), shortID(trip.id.rawValue)]
        })
    }

    /// Each order with its status, marked when it is late or at risk of it (`Order.timeliness`, UTC days as windows are kept).
    func orders(_ orders: [Order], today: LocalDate = LocalDate(Date())) {
        guard !orders.isEmpty else { return terminal.line("No orders.") }
        terminal.table(["ORDER", "STATUS", "VEHICLE", "PICKUP", "DELIVERY", "ID"], orders.map { order in
            let standing = order.timeliness(today: today).map { " " + terminal.style($0.label, $0.isLate ? .red : .yellow) } ?? ""
            return [order.number, status(order.status) + standing, order.vehiclesSummary, order.pickup.address, order.delivery.address,
                    shortID(order.id.rawValue)]
        })
    }

    /// With `trips` (every expense of the driver), a TRIP column: a trip
    /// dispatch gave to another driver since reads so.
    func expenses(_ expenses: [Expense], trips: [ID<Trip>: String]? = nil) {
        guard !expenses.isEmpty else { return terminal.line("No expenses.") }
        let header = (trips == nil ? [] : ["TRIP"]) + ["DATE", "CATEGORY", "AMOUNT", "NOTE", "ID"]
        terminal.table(header, expenses.map { expense in
            let receipts = expense.receipts.isEmpty ? "" : NumberText.count(expense.receipts.count, "receipt")
            let note = [fuel(expense), expense.notes, receipts].filter { !$0.isEmpty }.joined(separator: " · ")
            let trip = trips.map { [$0[expense.tripID] ?? terminal.style("another driver's now", .dim)] } ?? []
            return trip + [DayFormat.day(expense.date), expense.category.rawValue, money(expense.amountCents), note, shortID(expense.id.rawValue)]
        })
        terminal.line("Total \(money(expenses.reduce(0) { $0 + $1.amountCents }))")
    }

    /// "120.5 gal at 412350 mi, $4.004/gal" for a fuel fill-up.
    func fuel(_ expense: Expense) -> String {
        expense.fuel?.text(amountCents: expense.amountCents) ?? ""
    }

    /// Money collected for the order: what reached dispatch, what waits on the phone, what was refused.
    func collections(_ records: [CollectionRecord]) {
        for record in records {
            let state = switch record.state {
            case .recorded: terminal.style("reached dispatch", .dim)
            case .waiting: terminal.style("waiting to sync", .yellow)
            case .refused(let why): terminal.style("refused: \(why)", .red)
            }
            let day = record.collectedOn.map { " on \(DayFormat.day($0))" } ?? ""
            terminal.line("Collected ".padding(toLength: 10, withPad: " ", startingAt: 0) + "\(record.summary)\(day) · \(state)")
        }
    }

    func order(_ order: Order) {
        terminal.line(terminal.style("Order \(order.number)", .bold) + "  " + status(order.status) + "  " + terminal.style(order.id.rawValue, .dim))
        for (index, vehicle) in order.vehicles.enumerated() {
            let label = order.vehicles.count == 1 ? "Vehicle" : "Vehicle \(index + 1)"
            let facts = [vehicle.summary, vehicle.color, vehicle.type?.label.lowercased() ?? "", vehicle.vin,
                         vehicle.lotNumber.map { "lot \($0)" } ?? "", vehicle.operable ? "" : "inoperable"]
            terminal.line(label.padding(toLength: 10, withPad: " ", startingAt: 0)
                          + facts.filter { !$0.isEmpty }.joined(separator: " · "))
        }
        // The reference the broker or the auction gate asks for.
        if let load = order.externalLoadID { terminal.line("Load ID   \(load)") }
        for (label, stop, eta, actual, arrived) in [("Pickup", order.pickup, order.pickupETA, order.actualPickupDate, order.arrivedAtPickup),
                                                    ("Delivery", order.delivery, order.deliveryETA, order.actualDeliveryDate, order.arrivedAtDelivery)] {
            terminal.line("\(label.padding(toLength: 9, withPad: " ", startingAt: 0)) \(stop.address)")
            let contact = [stop.name, stop.contactName, stop.contactPhone].filter { !$0.isEmpty }.joined(separator: " · ")
            if !contact.isEmpty { terminal.line("          \(contact)") }
            let window = DayFormat.span(stop.windowStart, stop.windowEnd) ?? "—"
            terminal.line("          window \(window)  ETA \(time(eta))  done \(time(actual))")
            if let point = stop.location {
                terminal.line("          map point \(point.text)" + (arrived.map { "  " + terminal.style("arrived \(time($0))", .green) } ?? ""))
            }
            let kind: StopKind = label == "Pickup" ? .pickup : .delivery
            let visit = order.visit(kind)
            if let left = visit.departedAt, let onSite = visit.onSite {
                let how = visit.endsAtStatusMark ? "until marked \(kind == .pickup ? "picked up" : "delivered")" : "left \(time(left))"
                terminal.line("          \(how) · \(StopTimes.duration(onSite)) on site")
            }
            for problem in order.problems(at: kind) {
                terminal.line("          " + terminal.style("problem: \(problem.kind.label)", .yellow)
                              + (problem.note.isEmpty ? "" : " — \(problem.note)") + "  \(time(problem.reportedAt))"
                              + (problem.photos.isEmpty ? "" : "  \(NumberText.count(problem.photos.count, "photo"))"))
            }
        }
        terminal.line("Revenue   \(money(order.revenueCents))\(order.paymentTerms.isEmpty ? "" : " (\(order.paymentTerms))")")
    }

    /// One line per inspection, pickup first and a load's vehicle by vehicle: complete or open, files on the
    /// server and still on the device.
    func inspections(_ inspections: [Inspection], of order: Order, uploads: [UploadItem]) {
        func position(_ inspection: Inspection) -> Int { InspectionRules.position(of: inspection, in: order) }
        for inspection in inspections.sorted(by: { ($0.kind == .pickup ? 0 : 1, position($0)) < ($1.kind == .pickup ? 0 : 1, position($1)) }) {
            let mine = uploads.filter { $0.inspectionID == inspection.id && $0.status != .completed }
            let which = order.vehicles.count > 1 ? " of vehicle \(position(inspection) + 1)" : ""
            let state = inspection.completedAt.map { "complete \(time($0))" } ?? "open"
            var parts = ["\(inspection.media.count) file\(inspection.media.count == 1 ? "" : "s") on the server"]
            if !mine.isEmpty { parts.append("\(mine.count) waiting to upload") }
            if !inspection.damages.isEmpty { parts.append("\(inspection.damages.count) damage\(inspection.damages.count == 1 ? "" : "s")") }
            // A photo on its way is not missing.
            let missing = inspection.missingSlots.filter { slot in !mine.contains { $0.slot == slot } }
            if !missing.isEmpty && inspection.completedAt == nil {
                parts.append("missing " + missing.map(\.title).joined(separator: ", "))
            }
            terminal.line("\(inspection.kind.rawValue.capitalized.padding(toLength: 9, withPad: " ", startingAt: 0)) inspection\(which) \(state) · "
                + parts.joined(separator: " · "))
            for item in mine where item.status == .failed {
                terminal.line(terminal.style("          \(item.slot): \(item.lastError ?? "refused")", .red))
            }
        }
    }

    /// `waiting`: what has not reached dispatch, in the words `sync` uses ("3 changes and 6 files"), or nil.
    func home(_ state: HomeState, unread: Int, waiting: String?) {
        terminal.line(terminal.style("Hi\(state.driverName.map { ", \($0)" } ?? "")!", .bold))
        if let trip = state.currentTrip {
            terminal.line("Current trip  \(trip.number)  \(status(trip.status))  \(trip.origin) → \(trip.destination)  \(dates(trip))")
        } else {
            terminal.line("No trip planned.")
        }
        if let next = state.nextStop {
            terminal.line("Next \(next.kind.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(next.order.number) \(next.order.vehiclesSummary) at \(next.stop.address)  ETA \(time(next.eta))")
        }
        if !state.upcomingTrips.isEmpty {
            terminal.line("Upcoming      " + state.upcomingTrips.map { "\($0.number) (\($0.startDate.map(DayFormat.day) ?? "undated"))" }.joined(separator: ", "))
        }
        terminal.line("Messages      \(unread) unread")
        if let waiting { terminal.line(terminal.style("Waiting       \(waiting) (vroomx-driver sync)", .yellow)) }
    }

    func messages(_ state: MessagesState) {
        guard !state.isEmpty else {
            terminal.line(MessagesState.emptyTitle)
            terminal.line(terminal.style(MessagesState.emptyBody, .dim))
            return
        }
        for section in state.sections {
            terminal.line(terminal.style(section.title, .bold))
            for row in section.rows {
                let marker = row.isUnread ? terminal.style("●", .blue) : " "
                let title = row.isUnread ? terminal.style(row.notification.title, .bold) : row.notification.title
                let urgent = row.notification.type == .urgent ? terminal.style(" URGENT", .red) : ""
                terminal.line(" \(marker) \(title)\(urgent)  \(terminal.style(row.timeLabel, .dim))  \(terminal.style(shortID(row.id.rawValue), .dim))")
                terminal.line("   \(row.notification.body.replacingOccurrences(of: "\n", with: " ").prefix(100))")
            }
        }
        terminal.line("\(state.unreadCount) unread")
    }

    func earnings(_ state: EarningsState) {
        terminal.line(terminal.style("Earned \(money(state.totalCents))", .bold) + "  (upcoming \(money(state.upcomingPayCents)))")
        if !state.weeks.isEmpty {
            terminal.table(["WEEK", "TRIPS", "PAY"], state.weeks.map { [$0.title, String($0.trips), money($0.payCents)] })
        }
        if !state.months.isEmpty {
            terminal.table(["MONTH", "TRIPS", "PAY"], state.months.map { [$0.title, String($0.trips), money($0.payCents)] })
        }
        if !state.completed.isEmpty {
            terminal.table(["TRIP", "COMPLETED", "PAY", "EXPENSES"], state.completed.map {
                [$0.trip.number, DayFormat.day(LocalDate($0.completedAt, in: .current)), money($0.payCents), money($0.expensesCents)]
            })
        }
    }

    /// This week so far and the weeks dispatch settled, as the server last said.
    func settlements(_ record: EarningsRecord) {
        let current = record.earnings.current
        terminal.line("")
        terminal.line(terminal.style("This week (\(DayFormat.span(current.periodStart, current.periodEnd) ?? "")): \(money(current.netCents)) net", .bold)
                      + "  \(Self.settlementStatus(current))" + (current.netCents < 0 ? " (nothing to pay: the balance goes on next week's)" : ""))
        if !current.lines.isEmpty {
            terminal.table(["DATE", "WHAT", "DESCRIPTION", "AMOUNT"], current.lines.map {
                [$0.date.map(DayFormat.day) ?? "", $0.kind.label, $0.description, money($0.amountCents)]
            })
        }
        if !record.earnings.settlements.isEmpty {
            terminal.table(["WEEK", "STATUS", "EARNINGS", "REIMBURSED", "DEDUCTED", "NET"], record.earnings.settlements.map {
                [DayFormat.span($0.periodStart, $0.periodEnd) ?? "", Self.settlementStatus($0),
                 money($0.earningsCents), money($0.reimbursementsCents), money(-$0.deductionsCents), money($0.netCents)]
            })
        }
        terminal.line(terminal.style((record.isKeptCopy ? "Dispatch could not be reached: settlements" : "Settlements") + " as of \(time(record.fetchedAt)).",
                                     .dim))
    }

    /// "Paid Nov 30, 2026 · CHK 77", "Approved", "Open".
    static func settlementStatus(_ settlement: Settlement) -> String {
        guard settlement.status == .paid else { return settlement.status.label }
        return "Paid \(settlement.paidOn.map(DayFormat.day) ?? "")" + (settlement.paidReference.isEmpty ? "" : " · \(settlement.paidReference)")
    }

    func syncState(_ waiting: WaitingWork, lastSynced: Date?, setAside: [SetAsideWork]) {
        terminal.line("Last synced   \(time(lastSynced))")
        // The same count Home shows as "Not yet synced".
        terminal.line("Waiting       " + (waiting.waitingCount == 0 ? "nothing" : Self.waitingCounts(waiting)))
        for group in Self.grouped(waiting.changes) {
            let change = group[0]
            let what = change.entry.mutation.kind == .recordLocations
                ? NumberText.count(group.reduce(0) { total, change in
                    if case .recordLocations(let batch) = change.entry.mutation.payload { return total + batch.fixes.count }
                    return total
                }, "position") + (group.count > 1 ? " in \(group.count) batches" : "")
                : change.entry.description + (group.count > 1 ? " (\(group.count) changes)" : "")
            let text = "  \(shortID(change.entry.id.rawValue))  \(what): \(change.why)"
            terminal.line(change.entry.failure == .transient ? terminal.style(text, .red) : text)
        }
        for file in waiting.files {
            let text = "  \(shortID(file.item.id))  \(file.about) (\(Self.size(file.item.size))): \(file.why)"
            terminal.line(file.item.status == .failed ? terminal.style(text, .red) : text)
        }
        let refusals = waiting.refusals
        if !refusals.isEmpty {
            terminal.line(terminal.style("Refused       \(refusals.count)", .red)
                          + terminal.style("  (dispatch sees these too; once read, drop one with: vroomx-driver discard <id>)", .dim))
            for refusal in refusals {
                terminal.line("  \(shortID(refusal.id.rawValue))  \(refusal.text)")
            }
        }
        if !waiting.evidence.isEmpty {
            terminal.line(terminal.style("Kept          \(NumberText.count(waiting.evidence.count, "inspection")) the server will not take (vroomx-driver evidence)", .yellow))
        }
        for other in setAside { terminal.line(terminal.style(other.notice, .dim)) }
    }

    /// Waiting changes, one line for each run of the same thing waiting for
    /// the same reason (an inspection saved twice; a drive's batches of positions).
    static func grouped(_ changes: [WaitingWork.Change]) -> [[WaitingWork.Change]] {
        var groups: [[WaitingWork.Change]] = []
        for change in changes {
            if let last = groups.last?.first, last.why == change.why,
               last.entry.mutation.kind == .recordLocations ? change.entry.mutation.kind == .recordLocations
                                                           : last.entry.description == change.entry.description {
                groups[groups.count - 1].append(change)
            } else {
                groups.append([change])
            }
        }
        return groups
    }

    /// What the server did with positions the phone sent: "67 reached
    /// dispatch", and what it left out and why.
    func positions(_ report: PositionReport, label: String = "") {
        var line = "\(label)\(NumberText.count(report.reached, "position")) reached dispatch"
        if report.future > 0 {
            line += "; \(NumberText.grouped(report.future)) left out: stamped ahead of the server's clock (check this device's time)"
        }
        if report.dropped > 0 { line += "; \(NumberText.grouped(report.dropped)) left out: inaccurate, too old, or after the trip ended" }
        terminal.line(report.leftOut > 0 ? terminal.style(line + ".", .yellow) : line + ".")
    }

    /// "2 changes and 1 file".
    static func waitingCounts(_ waiting: WaitingWork) -> String {
        [waiting.changes.isEmpty ? nil : NumberText.count(waiting.changes.count, "change"),
         waiting.files.isEmpty ? nil : NumberText.count(waiting.files.count, "file")].compactMap { $0 }.joined(separator: " and ")
    }

    /// "850 KB", "50.2 MB".
    static func size(_ bytes: Int64) -> String {
        bytes < 1 << 20 ? "\(max(1, bytes / 1024)) KB" : String(format: "%.1f MB", Double(bytes) / Double(1 << 20))
    }
}
