import Foundation
import Hummingbird
import VroomXModels

/// Paying drivers in the console: every driver's week (what each is owed,
/// approved, paid), one driver's week with its lines and actions, and what
/// dispatch enters for a driver (advances, bonuses, deductions, recurring
/// deductions).
struct ConsoleSettlementPages {
    let console: ConsoleController
    var store: Store { console.store }
    var pages: ConsolePages { console.pages }

    /// A week's state as both Pay pages name it: an open week with nothing on it yet is "Nothing yet".
    static func statusLabel(_ settlement: Settlement) -> String {
        settlement.lines.isEmpty && settlement.status == .open ? "Nothing yet" : settlement.status.label
    }

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/pay") { request in try await week(request) }
        console.get(router, "/pay.csv") { request in try await weekCSV(request) }
        console.get(router, "/drivers/:id/pay") { request in try await driverWeek(request) }
        console.post(router, "/drivers/:id/pay/approve", page: "/drivers/:id/pay") { request in
            let driver: ID<Driver> = try request.id("id", "Driver")
            let day = try anchor(request)
            do {
                _ = try await store.settlements.approve(driver: driver, ApproveSettlementRequest(week: day, email: request.form["email"] == "yes"),
                                                        tenant: request.tenant)
            } catch let error as AppError where error.status < 500 {
                return try await driverWeek(request, errors: FieldErrors(error, fallbackField: "approve"), status: .init(code: error.status))
            }
            return ConsolePages.redirect("/drivers/\(driver)/pay?date=\(day)&approved=1")
        }
        console.post(router, "/drivers/:id/pay/items", page: "/drivers/:id/pay") { request in try await addItem(request) }
        console.post(router, "/drivers/:id/pay/items/:item/remove", page: "/drivers/:id/pay") { request in
            let driver: ID<Driver> = try request.id("id", "Driver")
            try await store.settlements.removeItem(try request.id("item", "Entry"), driver: driver, tenant: request.tenant)
            return ConsolePages.redirect("/drivers/\(driver)/pay?date=\(try anchor(request))&removed=1#entries")
        }
        console.post(router, "/drivers/:id/pay/deductions", page: "/drivers/:id/pay") { request in try await addDeduction(request) }
        console.post(router, "/drivers/:id/pay/deductions/:deduction/stop", page: "/drivers/:id/pay") { request in
            let driver: ID<Driver> = try request.id("id", "Driver")
            try await store.settlements.endDeduction(try request.id("deduction", "Deduction"), driver: driver, tenant: request.tenant)
            return ConsolePages.redirect("/drivers/\(driver)/pay?date=\(try anchor(request))&stopped=1#deductions")
        }
        console.post(router, "/drivers/:id/pay/paid", page: "/drivers/:id/pay") { request in
            let driver: ID<Driver> = try request.id("id", "Driver")
            let settlement = try await stored(request)
            var errors = FieldErrors()
            let day = request.form["paid_on"].isEmpty ? LocalDate(store.now) : LocalDate(request.form["paid_on"])
            if day == nil { errors.add("paid_on", "Enter the day it was paid.") }
            guard errors.isEmpty else { return try await driverWeek(request, errors: errors, status: .unprocessableContent) }
            do {
                _ = try await store.settlements.markPaid(settlement, MarkSettlementPaidRequest(paidOn: day, reference: request.form["reference"]),
                                                         tenant: request.tenant)
            } catch let error as AppError where error.status < 500 {
                return try await driverWeek(request, errors: FieldErrors(error, fallbackField: "paid_on", renamed: ["status": "approve"]),
                                            status: .init(code: error.status))
            }
            return ConsolePages.redirect("/drivers/\(driver)/pay?date=\(try anchor(request))&paid=1")
        }
        console.post(router, "/drivers/:id/pay/reopen", page: "/drivers/:id/pay") { request in
            let driver: ID<Driver> = try request.id("id", "Driver")
            do {
                _ = try await store.settlements.reopen(try await stored(request), tenant: request.tenant)
            } catch let error as AppError where error.status < 500 {
                return try await driverWeek(request, errors: FieldErrors(error, fallbackField: "approve", renamed: ["status": "approve"]),
                                            status: .init(code: error.status))
            }
            return ConsolePages.redirect("/drivers/\(driver)/pay?date=\(try anchor(request))&reopened=1")
        }
        console.post(router, "/drivers/:id/pay/email", page: "/drivers/:id/pay") { request in
            let driver: ID<Driver> = try request.id("id", "Driver")
            do {
                _ = try await store.settlements.emailStatement(try await stored(request), tenant: request.tenant)
            } catch let error as AppError where error.status < 500 {
                return try await driverWeek(request, errors: FieldErrors(error, fallbackField: "approve"), status: .init(code: error.status))
            }
            return ConsolePages.redirect("/drivers/\(driver)/pay?date=\(try anchor(request))&emailed=1")
        }
        console.get(router, "/drivers/:id/pay/statement.pdf") { request in
            let settlement = try await store.settlements.settlement(driver: try request.id("id", "Driver"), week: try anchor(request),
                                                                    tenant: request.tenant)
            let (name, bytes) = try await SettlementDocuments(store: store).pdf(of: settlement, tenant: request.tenant)
            return DocumentController.pdf(bytes, named: name)
        }
    }

    /// The day whose week a page shows: `date` in the query or the form,
    /// else today. One that is no date is refused, never taken as today.
    func anchor(_ request: ConsoleRequest) throws -> LocalDate {
        let text = request.query("date") ?? request.form["date"]
        guard !text.isEmpty else { return LocalDate(store.now) }
        guard let day = LocalDate(text) else { throw AppError.validation("date", "\(text) is not a day (YYYY-MM-DD).") }
        return day
    }

    /// The stored settlement of the driver's week the form names.
    private func stored(_ request: ConsoleRequest) async throws -> ID<Settlement> {
        let settlement = try await store.settlements.settlement(driver: try request.id("id", "Driver"), week: try anchor(request),
                                                                tenant: request.tenant)
        guard let id = settlement.id else { throw AppError(409, .invalidTransition, "This week is not approved yet.", field: "approve") }
        return id
    }

    // MARK: Every driver's week

    private func week(_ request: ConsoleRequest) async throws -> Response {
        let day = try anchor(request)
        let week = SettlementRules.week(of: day)
        let settlements = try await store.settlements.week(day, tenant: request.tenant)
        // No link past the calendar the server keeps (1900 to 2999): such a date is refused.
        func link(_ day: LocalDate) -> String? { LocalDate(day.description).map { "/pay?date=\($0)" } }
        return pages.page("pay", title: "Driver pay", session: request.session, section: "pay", PayWeekView(
            days: DayFormat.span(week.start, week.end) ?? "", prevHref: link(week.start.adding(days: -7)), nextHref: link(week.start.adding(days: 7)),
            thisWeekHref: "/pay?date=\(LocalDate(store.now))", csvHref: "/pay.csv?date=\(week.start)",
            rows: settlements.map { settlement in
                PayWeekView.Row(href: "/drivers/\(settlement.driverID)/pay?date=\(week.start)", driver: settlement.driverName,
                                status: Self.statusLabel(settlement),
                                statusKey: settlement.status.rawValue,
                                earnings: ConsoleFormat.money(settlement.earningsCents),
                                reimbursements: ConsoleFormat.money(settlement.reimbursementsCents),
                                deductions: ConsoleFormat.money(-settlement.deductionsCents), net: ConsoleFormat.money(settlement.netCents),
                                negative: settlement.netCents < 0)
            },
            none: settlements.isEmpty,
            owed: ConsoleFormat.money(settlements.filter { $0.status != .paid }.reduce(0) { $0 + max(0, $1.netCents) }),
            paid: ConsoleFormat.money(settlements.filter { $0.status == .paid }.reduce(0) { $0 + max(0, $1.netCents) })))
    }

    private func weekCSV(_ request: ConsoleRequest) async throws -> Response {
        let week = SettlementRules.week(of: try anchor(request))
        var text = "driver,week_start,status,kind,date,description,amount\r\n"
        for settlement in try await store.settlements.week(week.start, tenant: request.tenant) {
            for line in settlement.lines {
                text += [settlement.driverName, week.start.description, settlement.status.rawValue, line.kind.rawValue, line.date?.description ?? "",
                         line.description, ConsoleFormat.dollars(line.amountCents)].map(ConsolePeoplePages.csvField).joined(separator: ",") + "\r\n"
            }
        }
        return ConsoleCustomerPages.csvFile(text, named: "driver-pay-\(week.start)-to-\(week.end).csv")
    }

    // MARK: One driver's week

    private func driverWeek(_ request: ConsoleRequest, errors: FieldErrors = FieldErrors(),
                            status: HTTPResponse.Status = .ok) async throws -> Response {
        let driverID: ID<Driver> = try request.id("id", "Driver")
        let day = try anchor(request)
        let week = SettlementRules.week(of: day)
        guard let driver = try await store.people.driver(driverID, tenant: request.tenant) else { throw AppError.notFound("Driver") }
        let setup = try await store.settlements.setup(driver: driverID, week: day, tenant: request.tenant)
        let settlement = setup.settlement
        let emails = try await settlement.id.asyncMap { try await store.settlements.emails(of: $0, tenant: request.tenant) } ?? []
        let base = "/drivers/\(driverID)/pay"
        let today = LocalDate(store.now)
        let thisWeek = SettlementRules.week(of: today)
        let notices = ["approved": "Approved." + (emails.isEmpty ? "" : " The statement is on its way to \(driver.email)."),
                       "paid": "Marked paid.", "reopened": "Reopened: the week is figured again as it stands.",
                       "emailed": "The statement is on its way to \(driver.email).", "added": "Added: it goes on the first week approved that ends on or after its date.",
                       "removed": "Entry removed.", "deduction": "Recurring deduction added.", "stopped": "Recurring deduction stopped from this week on."]
        let notice = notices.first { request.query($0.key) == "1" }?.value ?? ""
        // What a new entry is dated when no day is typed: the week on screen, or today in the week under way.
        let defaultDay = week.end < today ? week.start : max(today, week.start)
        var values = request.form.firstValues
        values["item_date"] = values["item_date"] ?? defaultDay.description
        values["starts_on"] = values["starts_on"] ?? week.start.description
        let heading = switch settlement.status {
        case .open where week.start > today: "Coming week (open)"
        case .open where week.end < today: "Open: not approved yet"
        case .open: "This week so far"
        case .approved, .paid: "As approved"
        }
        return pages.page("driver-pay", title: "\(driver.name) · pay", session: request.session, section: "pay", DriverPayView(
            driverName: driver.name, driverEmail: driver.email, terms: ConsoleFormat.label(driver.payType, rate: driver.payRate),
            days: DayFormat.span(week.start, week.end) ?? "", weekDate: week.start.description, heading: heading,
            prevHref: LocalDate(week.start.adding(days: -7).description).map { "\(base)?date=\($0)" },
            nextHref: LocalDate(week.start.adding(days: 7).description).map { "\(base)?date=\($0)" },
            weekHref: "/pay?date=\(week.start)", base: base, pdfHref: "\(base)/statement.pdf?date=\(week.start)",
            status: Self.statusLabel(settlement), statusKey: settlement.status.rawValue,
            isOpen: settlement.status == .open, isApproved: settlement.status == .approved,
            canApprove: settlement.status == .open && week.start <= today && !settlement.lines.isEmpty,
            approveConfirm: "Approve \(driver.name)'s week of \(DayFormat.span(week.start, week.end) ?? "")? Its figures freeze."
                + (week.end >= today ? " The week is not over: what comes later goes on next week." : ""),
            canPay: settlement.status == .approved && settlement.netCents >= 0, notBegun: week.start > today,
            earlier: setup.earlierUnsettledFrom.map { from in
                let start = SettlementRules.week(of: from).start
                return DriverPayView.Earlier(text: "Work from the week of \(DayFormat.day(start)) is not settled, and no later week takes it: approve that week first.",
                                             href: "\(base)?date=\(start)")
            },
            approvedLine: settlement.approvedAt.map { "Approved \(DayFormat.day(LocalDate($0)))" + ((settlement.approvedBy ?? "").isEmpty ? "" : " by \(settlement.approvedBy ?? "")") } ?? "",
            paidLine: settlement.paidOn.map { "Paid \(DayFormat.day($0))" + (settlement.paidReference.isEmpty ? "" : " · reference \(settlement.paidReference)") } ?? "",
            emailLine: emails.last.map { "Statement \(ConsoleInvoicePages.label($0.state).lowercased()) to \($0.recipient)" + ($0.note.isEmpty ? "" : ": \($0.note)") } ?? "",
            lines: settlement.lines.map { line in
                DriverPayView.Line(kind: line.kind.label, date: ConsoleFormat.day(line.date), description: line.description,
                                   tripHref: line.tripID.map { "/trips/\($0)" }, amount: ConsoleFormat.money(line.amountCents), negative: line.amountCents < 0)
            },
            empty: settlement.lines.isEmpty,
            earnings: ConsoleFormat.money(settlement.earningsCents), reimbursements: ConsoleFormat.money(settlement.reimbursementsCents),
            deductions: ConsoleFormat.money(-settlement.deductionsCents), net: ConsoleFormat.money(settlement.netCents),
            negativeNet: settlement.netCents < 0,
            entries: setup.unsettledItems.map { item in
                DriverPayView.Entry(id: item.id.rawValue, kind: item.kind.label, description: item.description, day: ConsoleFormat.day(item.date),
                                    amount: ConsoleFormat.money(item.kind == .bonus ? item.amountCents : -item.amountCents))
            },
            hasEntries: !setup.unsettledItems.isEmpty,
            deductionRows: setup.deductions.map { deduction in
                DriverPayView.Deduction(id: deduction.id.rawValue, description: deduction.description, amount: ConsoleFormat.money(deduction.amountCents),
                                        span: deduction.endsOn.map { DayFormat.span(deduction.startsOn, $0) ?? "" } ?? "from \(DayFormat.day(deduction.startsOn))",
                                        ended: deduction.endsOn.map { $0 < thisWeek.start } ?? false)
            },
            kinds: PayItemKind.allCases.map { .init(value: $0.rawValue, label: $0.label, selected: (values["kind"] ?? "advance") == $0.rawValue) },
            today: today.description, v: values, e: errors.messages, hasErrors: !errors.isEmpty, notice: notice), status: status)
    }

    private func addItem(_ request: ConsoleRequest) async throws -> Response {
        let driver: ID<Driver> = try request.id("id", "Driver")
        let form = request.form
        var errors = FieldErrors()
        let amount = FormValue.cents(form["amount"], field: "amount", errors: &errors)
        if amount == nil, errors.isEmpty { errors.add("amount", "Enter the amount.") }
        let kind = PayItemKind(rawValue: form["kind"])
        if kind == nil { errors.add("kind", "Choose what it is.") }
        let day = form["item_date"].isEmpty ? LocalDate(store.now) : LocalDate(form["item_date"])
        if day == nil { errors.add("item_date", "Enter the day (YYYY-MM-DD).") }
        guard errors.isEmpty, let amount, let kind, let day else { return try await driverWeek(request, errors: errors, status: .unprocessableContent) }
        do {
            _ = try await store.settlements.addItem(driver: driver, CreatePayItemRequest(kind: kind, description: form["description"], amountCents: amount,
                                                                                         date: day), tenant: request.tenant)
        } catch let error as AppError where error.status < 500 {
            return try await driverWeek(request, errors: FieldErrors(error, fallbackField: "amount",
                                                                     renamed: ["amount_cents": "amount", "date": "item_date"]),
                                        status: .init(code: error.status))
        }
        return ConsolePages.redirect("/drivers/\(driver)/pay?date=\(try anchor(request))&added=1#entries")
    }

    private func addDeduction(_ request: ConsoleRequest) async throws -> Response {
        let driver: ID<Driver> = try request.id("id", "Driver")
        let form = request.form
        var errors = FieldErrors()
        let amount = FormValue.cents(form["weekly_amount"], field: "weekly_amount", errors: &errors)
        if amount == nil, errors.isEmpty { errors.add("weekly_amount", "Enter the amount taken each week.") }
        if form["deduction_description"].trimmingCharacters(in: .whitespaces).isEmpty { errors.add("deduction_description", "Say what it is for.") }
        let start = form["starts_on"].isEmpty ? nil : LocalDate(form["starts_on"])
        if !form["starts_on"].isEmpty, start == nil { errors.add("starts_on", "Enter the first day.") }
        guard errors.isEmpty, let amount else { return try await driverWeek(request, errors: errors, status: .unprocessableContent) }
        do {
            _ = try await store.settlements.addDeduction(driver: driver, CreateRecurringDeductionRequest(
                description: form["deduction_description"], amountCents: amount, startsOn: start), tenant: request.tenant)
        } catch let error as AppError where error.status < 500 {
            return try await driverWeek(request, errors: FieldErrors(error, fallbackField: "weekly_amount",
                                                                     renamed: ["amount_cents": "weekly_amount", "description": "deduction_description"]),
                                        status: .init(code: error.status))
        }
        return ConsolePages.redirect("/drivers/\(driver)/pay?date=\(try anchor(request))&deduction=1#deductions")
    }
}

struct PayWeekView: ConsoleView {
    struct Row: ConsoleView {
        let href: String
        let driver: String
        let status: String
        let statusKey: String
        let earnings: String
        let reimbursements: String
        let deductions: String
        let net: String
        let negative: Bool
    }

    let days: String
    let prevHref: String?
    let nextHref: String?
    let thisWeekHref: String
    let csvHref: String
    let rows: [Row]
    let none: Bool
    let owed: String
    let paid: String
}

struct DriverPayView: ConsoleView {
    struct Line: ConsoleView {
        let kind: String
        let date: String
        let description: String
        let tripHref: String?
        let amount: String
        let negative: Bool
    }

    struct Entry: ConsoleView {
        let id: String
        let kind: String
        let description: String
        let day: String
        let amount: String
    }

    struct Deduction: ConsoleView {
        let id: String
        let description: String
        let amount: String
        let span: String
        let ended: Bool
    }

    struct Choice: ConsoleView {
        let value: String
        let label: String
        let selected: Bool
    }

    struct Earlier: ConsoleView {
        let text: String
        let href: String
    }

    let driverName: String
    let driverEmail: String
    let terms: String
    let days: String
    /// The week's Monday, which every form on the page sends back.
    let weekDate: String
    let heading: String
    let prevHref: String?
    let nextHref: String?
    let weekHref: String
    let base: String
    let pdfHref: String
    let status: String
    let statusKey: String
    let isOpen: Bool
    let isApproved: Bool
    let canApprove: Bool
    let approveConfirm: String
    let canPay: Bool
    let notBegun: Bool
    let earlier: Earlier?
    let approvedLine: String
    let paidLine: String
    let emailLine: String
    let lines: [Line]
    let empty: Bool
    let earnings: String
    let reimbursements: String
    let deductions: String
    let net: String
    let negativeNet: Bool
    let entries: [Entry]
    let hasEntries: Bool
    let deductionRows: [Deduction]
    let kinds: [Choice]
    let today: String
    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    let notice: String
}
