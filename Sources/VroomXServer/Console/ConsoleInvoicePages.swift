import Foundation
import Hummingbird
import VroomXModels

/// Getting paid in the console: the invoices (tabs by status, what is
/// ready to bill), one invoice with its payments and emails, the draft
/// form, receivables aging with the QuickBooks exports, and a customer's
/// statement.
struct ConsoleInvoicePages {
    let console: ConsoleController
    var store: Store { console.store }
    var pages: ConsolePages { console.pages }

    static let pageSize = 50
    /// Charge rows the draft form offers beyond those it has.
    static let blankCharges = 2

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/invoices") { request in try await list(request) }
        console.get(router, "/invoices/new") { request in
            guard let id = ID<Customer>(request.query("customer") ?? "") else { throw AppError.notFound("Customer") }
            let customer = try await store.customers.customer(id, tenant: request.tenant)
            let ready = try await store.invoices.billable(customer: customer.id, except: nil, tenant: request.tenant)
            let terms = PaymentTerms(text: customer.paymentTerms) ?? .net30
            let ticked = ready.filter { !$0.onDraft }.map(\.order)
            let stopCharges = InvoiceRules.newStopCharges(of: ticked, terms: try await stopTerms(request), besides: [])
            return invoiceForm(request, invoice: nil, customer: customer, choices: ready, ticked: Set(ticked.map(\.id)),
                               charges: stopCharges.map(Self.row), values: ["terms": terms.rawValue, "issued_on": LocalDate(store.now).description],
                               errors: FieldErrors(), stopChargesFilled: !stopCharges.isEmpty)
        }
        console.post(router, "/invoices", create)
        console.get(router, "/invoices/:id") { request in try await invoicePage(request) }
        console.get(router, "/invoices/:id/edit") { request in
            let invoice = try await store.invoices.invoice(try request.id("id", "Invoice"), tenant: request.tenant)
            guard invoice.status == .draft else { return ConsolePages.redirect("/invoices/\(invoice.id)") }
            // Detention and dry runs of its orders learnt since the draft was made are filled in, to keep or clear.
            var orders: [Order] = []
            for order in invoice.orders { orders.append(try await store.orders.order(order.id, request.scope)) }
            let stopCharges = InvoiceRules.newStopCharges(of: orders, terms: try await stopTerms(request), besides: invoice.lines)
            return try await draftForm(request, invoice, values: Self.formValues(invoice),
                                       charges: (invoice.lines.filter { $0.kind != .vehicle } + stopCharges).map(Self.row),
                                       ticked: Set(invoice.orders.map(\.id)), errors: FieldErrors(), stopChargesFilled: !stopCharges.isEmpty)
        }
        console.post(router, "/invoices/:id", update)
        console.post(router, "/invoices/:id/send", page: "/invoices/:id", send)
        console.post(router, "/invoices/:id/void", page: "/invoices/:id", void)
        console.post(router, "/invoices/:id/payments", page: "/invoices/:id", recordPayment)
        console.post(router, "/invoices/:id/payments/:payment/remove", page: "/invoices/:id") { request in
            let id: ID<Invoice> = try request.id("id", "Invoice")
            _ = try await store.invoices.removePayment(try request.id("payment", "Payment"), of: id, tenant: request.tenant)
            return ConsolePages.redirect("/invoices/\(id)?removed=1")
        }
        console.post(router, "/invoices/:id/payments/:payment/deposit", page: "/invoices/:id") { request in
            let id: ID<Invoice> = try request.id("id", "Invoice")
            _ = try await store.invoices.deposit(try request.id("payment", "Payment"), of: id, on: nil, tenant: request.tenant)
            return ConsolePages.redirect(request.form["back"] == "receivables" ? "/receivables?deposited=1#held" : "/invoices/\(id)?deposited=1#payments")
        }
        console.get(router, "/invoices/:id/payments/:payment/photos/:photo") { request in
            let (photo, key) = try await store.receipts.paymentPhoto(try request.id("photo", "Photo"), of: try request.id("payment", "Payment"),
                                                                     invoice: try request.id("id", "Invoice"), tenant: request.tenant)
            return try await InspectionController.serve(request.request, contentType: photo.contentType, sha256: photo.sha256, key: key,
                                                        media: console.media)
        }
        console.get(router, "/invoices/:id/invoice.pdf") { request in
            let (name, bytes) = try await InvoiceDocuments(store: store, bills: BillOfLadingService(store: store, media: console.media))
                .pdf(of: try request.id("id", "Invoice"), tenant: request.tenant)
            return DocumentController.pdf(bytes, named: name)
        }
        console.get(router, "/receivables") { request in try await receivables(request) }
        console.get(router, "/receivables/invoices.csv") { request in
            let (from, to) = try Self.period(request)
            return ConsoleCustomerPages.csvFile(try await store.receivables.invoicesCSV(tenant: request.tenant, from: from, to: to),
                                                named: "invoices-\(from)-\(to).csv")
        }
        console.get(router, "/receivables/payments.csv") { request in
            let (from, to) = try Self.period(request)
            return ConsoleCustomerPages.csvFile(try await store.receivables.paymentsCSV(tenant: request.tenant, from: from, to: to),
                                                named: "payments-\(from)-\(to).csv")
        }
        console.get(router, "/customers/:id/statement") { request in try await statement(request) }
    }

    // MARK: The list

    private func list(_ request: ConsoleRequest) async throws -> Response {
        let status = request.query("status").flatMap(InvoiceStatus.init(rawValue:))
        let open = request.query("status") == "open"
        let counts = try await store.invoices.counts(customer: nil, tenant: request.tenant)
        let today = LocalDate(store.now)
        var tabs = [InvoiceTabView(href: "/invoices?status=open", label: "Owed", count: ConsoleFormat.grouped((counts[.sent] ?? 0) + (counts[.partlyPaid] ?? 0)),
                                   current: open)]
        for each in [InvoiceStatus.draft, .sent, .partlyPaid, .paid, .void] {
            tabs.append(InvoiceTabView(href: "/invoices?status=\(each.rawValue)", label: each == .draft ? "Drafts" : each.label,
                                       count: ConsoleFormat.grouped(counts[each] ?? 0), current: status == each))
        }
        tabs.append(InvoiceTabView(href: "/invoices", label: "All", count: ConsoleFormat.grouped(counts.values.reduce(0, +)),
                                   current: status == nil && !open))
        let invoices: [Invoice]
        var pagerView: ConsolePagerView?
        if open {
            invoices = try await store.read { try await InvoiceRepository.open(tenant: request.tenant, $0) }
        } else {
            let total = status.map { counts[$0] ?? 0 } ?? counts.values.reduce(0, +)
            let pager = ConsolePager.clamped(request.query("page").flatMap { Int($0) }, pageSize: Self.pageSize, total: total)
            invoices = try await store.invoices.page(status: status, customer: nil, offset: pager.offset, limit: pager.pageSize, tenant: request.tenant)
            if pager.pages > 1 {
                pagerView = pager.view(shown: invoices.count, label: "Pages of invoices") { page in
                    "/invoices?" + [status.map { "status=\($0.rawValue)" }, page > 1 ? "page=\(page)" : nil].compactMap { $0 }.joined(separator: "&")
                }
            }
        }
        let ready = try await store.invoices.uninvoiced(limit: 50, tenant: request.tenant)
        let names = try await store.customers.some(Array(Set(ready.compactMap(\.customerID))), tenant: request.tenant)
        let owedInvoices = try await store.read { try await InvoiceRepository.open(tenant: request.tenant, $0) }
        let owed = owedInvoices.reduce(0) { $0 + $1.balanceCents }
        let late = owedInvoices.filter { today > $0.dueOn }.reduce(0) { $0 + $1.balanceCents }
        return pages.page("invoices", title: "Invoices", session: request.session, section: "invoices", InvoicesView(
            tabs: tabs, invoices: invoices.map { InvoiceRowView($0, today: today) }, empty: invoices.isEmpty, pager: pagerView,
            ready: ready.map { order in
                ReadyOrderView(id: order.id.rawValue, number: order.number, customerID: order.customerID?.rawValue ?? "",
                               customer: names.first { $0.id == order.customerID }?.name ?? "",
                               delivered: ConsoleFormat.day(order.actualDeliveryDate.map { LocalDate($0) }), revenue: ConsoleFormat.money(order.revenueCents))
            }, hasReady: !ready.isEmpty,
            owed: owedInvoices.isEmpty ? "" : "\(ConsoleFormat.money(owed)) owed on \(ConsoleFormat.count(owedInvoices.count, "invoice"))"
                + (late > 0 ? " · \(ConsoleFormat.money(late)) late" : ""),
            notice: request.query("discarded") == "1" ? "Draft discarded: its orders can be invoiced again." : ""))
    }

    // MARK: One invoice

    private func invoicePage(_ request: ConsoleRequest, paymentValues: [String: String]? = nil, errors: FieldErrors = FieldErrors(),
                             status: HTTPResponse.Status = .ok) async throws -> Response {
        let detail = try await store.invoices.detail(try request.id("id", "Invoice"), tenant: request.tenant)
        let invoice = detail.invoice
        let emails = try await store.invoices.emails(of: invoice.id, tenant: request.tenant)
        let customer = try await store.customers.customer(invoice.customerID, tenant: request.tenant)
        let profile = try await store.carrierProfile.profile(tenant: request.tenant)
        let today = LocalDate(store.now)
        // Orders whose delivery no driver signed for: their bill of lading has no signature to show.
        var unsigned: [String] = []
        // Orders a draft holds before delivery (money collected at pickup): it is sent once they are delivered.
        var undelivered: [String] = []
        if invoice.status != .void {
            for billed in invoice.orders {
                let order = try await store.orders.order(billed.id, request.scope)
                if order.status != .delivered {
                    undelivered.append("\(order.number) (\(order.status.label.lowercased()))")
                    continue
                }
                let inspections = try await store.read { try await InspectionRepository.of(billed.id, tenant: request.tenant, $0) }
                if !inspections.contains(where: { $0.kind == .delivery && $0.completedAt != nil })
                    || !InspectionRules.remaining(order, .delivery, completed: inspections).isEmpty {
                    unsigned.append(billed.number)
                }
            }
        }
        let notice = switch (request.query("sent"), request.query("saved"), request.query("paid"), request.query("removed")) {
        case ("email", _, _, _): "Sent: the invoice is on its way to \(customer.email), with the bill of lading."
        case ("marked", _, _, _): "Marked sent."
        case (_, "1", _, _): "Saved."
        case (_, _, "1", _): "Payment recorded."
        case (_, _, _, "1"): "Payment removed."
        case _ where request.query("deposited") == "1": "Marked deposited."
        default: ""
        }
        let (balanceLabel, balance) = switch (invoice.status, invoice.balanceCents) {
        case (.void, _): ("Void", "")
        case (.paid, 0): ("Paid in full", ConsoleFormat.money(0))
        case (_, ..<0): ("Credit to the customer", ConsoleFormat.money(-invoice.balanceCents))
        case (.draft, _): ("", "")
        default: ("Balance due", ConsoleFormat.money(invoice.balanceCents))
        }
        var values = paymentValues ?? [:]
        if paymentValues == nil {
            values["received_on"] = today.description
            values["amount"] = invoice.balanceCents > 0 ? Self.amountText(invoice.balanceCents) : ""
            values["method"] = PaymentMethod.check.rawValue
        }
        return pages.page("invoice", title: invoice.number.map { "Invoice \($0)" } ?? "Draft invoice", session: request.session,
                          section: "invoices", InvoiceView(
            id: invoice.id.rawValue, number: invoice.number ?? "", heading: invoice.number.map { "Invoice \($0)" } ?? "Draft invoice",
            status: invoice.status.rawValue, statusLabel: invoice.status.label, customerID: customer.id.rawValue, customer: customer.name,
            customerEmail: customer.email, terms: invoice.terms.label, issued: DayFormat.day(invoice.issuedOn), due: DayFormat.day(invoice.dueOn),
            late: InvoiceRowView.late(invoice, today: today),
            lines: invoice.lines.map { InvoiceLineView(kind: $0.kind.label, description: $0.description, orderID: $0.orderID?.rawValue,
                                                       amount: ConsoleFormat.money($0.amountCents)) },
            total: ConsoleFormat.money(invoice.totalCents), paid: ConsoleFormat.money(invoice.paidCents), hasPaid: invoice.paidCents > 0,
            balanceLabel: balanceLabel, balance: balance, notes: invoice.notes, voidReason: invoice.voidReason ?? "",
            orders: invoice.orders.enumerated().map { index, order in
                InvoiceOrderView(id: order.id.rawValue, number: order.number, loadID: order.externalLoadID, delivered: ConsoleFormat.day(order.deliveredOn),
                                 separator: index + 1 < invoice.orders.count ? "; " : "")
            },
            payments: detail.payments.map { InvoicePaymentView(invoice.id, $0) }, hasPayments: !detail.payments.isEmpty,
            emails: emails.reversed().map { InvoiceEmailView(recipient: $0.recipient, state: $0.state.rawValue, stateLabel: Self.label($0.state),
                                                             when: ConsoleFormat.time($0.sentAt ?? $0.createdAt), note: $0.note) },
            undelivered: undelivered.isEmpty ? "" : "Not delivered yet: \(undelivered.joined(separator: ", ")). Send this invoice once the load is delivered.",
            unsigned: unsigned.isEmpty ? "" : "No signed delivery inspection for \(unsigned.joined(separator: ", ")): its bill of lading shows no signature. "
                + "Brokers usually pay against a signed proof of delivery.",
            isDraft: invoice.status == .draft, canEmailAgain: invoice.status != .draft && invoice.status != .void, emailed: !emails.isEmpty,
            noVoid: invoice.status != .void && invoice.paidCents > 0 ? "Payments were recorded against this invoice: remove them to void it." : "",
            canVoid: invoice.status != .void && invoice.paidCents == 0, canPay: invoice.status != .draft && invoice.status != .void,
            paidInFull: invoice.status == .paid && errors.isEmpty,
            factored: profile.factors ? "Payable to \(profile.factoringCompany), which this invoice is assigned to." : "", notice: notice,
            v: values, e: errors.messages, hasErrors: !errors.isEmpty,
            methods: PaymentMethod.allCases.map { ChoiceView(value: $0.rawValue, label: $0.label, selected: values["method"] == $0.rawValue) },
            paymentID: values["payment_id"] ?? ID<InvoicePayment>().rawValue), status: status)
    }

    static func label(_ state: QueuedMailRepository.State) -> String {
        switch state {
        case .queued, .sending: "Sending"
        case .sent: "Sent"
        case .failed: "Not sent"
        }
    }

    private func send(_ request: ConsoleRequest) async throws -> Response {
        let id: ID<Invoice> = try request.id("id", "Invoice")
        let email = request.form["email"] != "no"
        do {
            _ = try await store.invoices.send(id, email: email, tenant: request.tenant)
            return ConsolePages.redirect("/invoices/\(id)?sent=\(email ? "email" : "marked")")
        } catch let error as AppError where error.status < 500 {
            return try await invoicePage(request, errors: Self.refusal(error), status: .init(code: error.status))
        }
    }

    private func void(_ request: ConsoleRequest) async throws -> Response {
        let id: ID<Invoice> = try request.id("id", "Invoice")
        guard !request.form["reason"].isEmpty else {
            var errors = FieldErrors()
            errors.add("reason", "Say why the invoice is void, for the record.")
            return try await invoicePage(request, errors: errors, status: .unprocessableContent)
        }
        do {
            let voided = try await store.invoices.void(id, reason: request.form["reason"], tenant: request.tenant)
            // A draft is thrown away: back to the drafts.
            return ConsolePages.redirect(voided.number == nil ? "/invoices?status=draft&discarded=1" : "/invoices/\(id)")
        } catch let error as AppError where error.status < 500 {
            return try await invoicePage(request, errors: Self.refusal(error, field: "reason"), status: .init(code: error.status))
        }
    }

    /// A refusal shown at the top of the invoice's page (or beside the void reason).
    static func refusal(_ error: AppError, field: String = "action") -> FieldErrors {
        var errors = FieldErrors()
        errors.add(error.body.field == "reason" ? "reason" : field, FieldErrors.besideItsField(error))
        return errors
    }

    private func recordPayment(_ request: ConsoleRequest) async throws -> Response {
        let id: ID<Invoice> = try request.id("id", "Invoice")
        let form = request.form
        var errors = FieldErrors()
        let amount = FormValue.cents(form["amount"], field: "amount", errors: &errors)
        if amount == nil, errors.isEmpty { errors.add("amount", "Enter the amount received.") }
        let method = PaymentMethod(rawValue: form["method"])
        if method == nil { errors.add("method", "Choose how it was paid.") }
        let day = form["received_on"].isEmpty ? LocalDate(store.now) : LocalDate(form["received_on"])
        if day == nil { errors.add("received_on", "Enter the day it was received.") }
        guard errors.isEmpty, let amount, let method, let day else {
            return try await invoicePage(request, paymentValues: form.firstValues, errors: errors, status: .unprocessableContent)
        }
        do {
            _ = try await store.invoices.recordPayment(id, RecordPaymentRequest(id: ID(form["payment_id"]), amountCents: amount, method: method,
                                                                                  reference: form["reference"], receivedOn: day, note: form["note"]),
                                                       tenant: request.tenant)
            return ConsolePages.redirect("/invoices/\(id)?paid=1")
        } catch let error as AppError where error.status < 500 {
            let errors = FieldErrors(error, fallbackField: "action", renamed: ["amount_cents": "amount"])
            var values = form.firstValues
            values["payment_id"] = nil  // a refused payment was not recorded: the next try is a new one
            return try await invoicePage(request, paymentValues: values, errors: errors, status: .init(code: error.status))
        }
    }

    // MARK: Drafts

    /// A line as a row of the form's charges.
    static func row(_ line: InvoiceLine) -> (kind: String, description: String, amount: String) {
        (kind: line.kind.rawValue, description: line.description, amount: amountText(line.amountCents))
    }

    private func stopTerms(_ request: ConsoleRequest) async throws -> StopChargeTerms {
        try await store.carrierProfile.profile(tenant: request.tenant).stopChargeTerms
    }

    static func formValues(_ invoice: Invoice) -> [String: String] {
        ["terms": invoice.terms.rawValue, "issued_on": invoice.issuedOn.description, "notes": invoice.notes, "base_version": String(invoice.version)]
    }

    /// 125050 → "1250.50", -2500 → "-25.00".
    static func amountText(_ cents: Int) -> String {
        (cents < 0 ? "-" : "") + ConsoleFormat.dollars(Int(cents.magnitude))
    }

    private func draftForm(_ request: ConsoleRequest, _ invoice: Invoice, values: [String: String],
                           charges: [(kind: String, description: String, amount: String)], ticked: Set<ID<Order>>, errors: FieldErrors,
                           status: HTTPResponse.Status = .ok, stopChargesFilled: Bool = false) async throws -> Response {
        let customer = try await store.customers.customer(invoice.customerID, tenant: request.tenant)
        var choices: [(order: Order, onDraft: Bool)] = []
        for order in invoice.orders { choices.append((try await store.orders.order(order.id, request.scope), false)) }
        choices += try await store.invoices.billable(customer: customer.id, except: invoice.id, tenant: request.tenant)
        return invoiceForm(request, invoice: invoice, customer: customer, choices: choices, ticked: ticked, charges: charges, values: values,
                    errors: errors, status: status, stopChargesFilled: stopChargesFilled)
    }

    private func invoiceForm(_ request: ConsoleRequest, invoice: Invoice?, customer: Customer, choices: [(order: Order, onDraft: Bool)],
                             ticked: Set<ID<Order>>,
                      charges: [(kind: String, description: String, amount: String)], values: [String: String], errors: FieldErrors,
                      status: HTTPResponse.Status = .ok, stopChargesFilled: Bool = false) -> Response {
        let rows = (charges + Array(repeating: (kind: ChargeKind.detention.rawValue, description: "", amount: ""), count: Self.blankCharges))
            .prefix(InvoiceRules.chargesPerInvoice)
        let heading = invoice == nil ? "New invoice for \(customer.name)" : "Edit draft invoice for \(customer.name)"
        return pages.page("invoice-form", title: heading, session: request.session, section: "invoices", InvoiceFormView(
            editing: invoice != nil, invoiceID: invoice?.id.rawValue ?? "", customerID: customer.id.rawValue, heading: heading,
            customer: customer.name,
            orders: choices.map { order, onDraft in
                InvoiceOrderChoiceView(id: order.id.rawValue, number: order.number,
                                       delivered: ConsoleFormat.day(order.actualDeliveryDate.map { LocalDate($0) }),
                                       amount: ConsoleFormat.money(InvoiceRules.total(of: InvoiceRules.vehicleLines(of: order))),
                                       checked: ticked.contains(order.id), onDraft: onDraft)
            }, hasOrders: !choices.isEmpty,
            charges: rows.enumerated().map { index, row in
                ChargeRowView(index: index, kinds: ChargeKind.allCases.filter { $0 != .vehicle }.map {
                    ChoiceView(value: $0.rawValue, label: $0.label, selected: row.kind == $0.rawValue)
                }, description: row.description, amount: row.amount, descriptionError: errors.messages["charges_\(index)_description"],
                              amountError: errors.messages["charges_\(index)_amount_cents"] ?? errors.messages["c\(index)_amount"])
            },
            terms: PaymentTerms.allCases.map { ChoiceView(value: $0.rawValue, label: $0.label, selected: values["terms"] == $0.rawValue) },
            v: values, e: errors.messages, hasErrors: !errors.isEmpty, stopChargesFilled: stopChargesFilled,
            chargesLeftOut: charges.count > InvoiceRules.chargesPerInvoice
                ? "\(charges.count - InvoiceRules.chargesPerInvoice) more charges of these orders do not fit: an invoice takes \(InvoiceRules.chargesPerInvoice). Bill some orders on another invoice."
                : ""), status: status)
    }

    /// The form's charges (rows without an amount are left out), and its typed rows to show again.
    static func charges(_ form: ConsoleForm, errors: inout FieldErrors) -> ([InvoiceCharge], [(kind: String, description: String, amount: String)]) {
        var charges: [InvoiceCharge] = []
        var rows: [(kind: String, description: String, amount: String)] = []
        for index in 0..<InvoiceRules.chargesPerInvoice {
            let (kind, description, amount) = (form["c\(index)_kind"], form["c\(index)_description"], form["c\(index)_amount"])
            guard !amount.trimmingCharacters(in: .whitespaces).isEmpty || !description.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
            rows.append((kind, description, amount))
            let row = rows.count - 1
            let negative = amount.trimmingCharacters(in: .whitespaces).hasPrefix("-")
            let magnitude = negative ? String(amount.trimmingCharacters(in: .whitespaces).dropFirst()) : amount
            guard let cents = FormValue.cents(magnitude, field: "c\(row)_amount", errors: &errors) else {
                if errors.messages["c\(row)_amount"] == nil { errors.add("c\(row)_amount", "Enter the amount.") }
                continue
            }
            charges.append(InvoiceCharge(kind: ChargeKind(rawValue: kind) ?? .other, description: description, amountCents: negative ? -cents : cents))
        }
        return (charges, rows)
    }

    private func create(_ request: ConsoleRequest) async throws -> Response {
        let form = request.form
        guard let customerID = ID<Customer>(form["customer_id"]) else { throw AppError.notFound("Customer") }
        let customer = try await store.customers.customer(customerID, tenant: request.tenant)
        var errors = FieldErrors()
        let (charges, rows) = Self.charges(form, errors: &errors)
        let orders = form.all("order_ids").compactMap { ID<Order>($0) }
        let ready = try await store.invoices.billable(customer: customer.id, except: nil, tenant: request.tenant)
        let issued = LocalDate(form["issued_on"])
        if issued == nil { errors.add("issued_on", "Enter the invoice date.") }
        if orders.isEmpty { errors.add("order_ids", "Tick the delivered orders this invoice bills.") }
        guard errors.isEmpty else {
            return invoiceForm(request, invoice: nil, customer: customer, choices: ready, ticked: Set(orders), charges: rows, values: form.firstValues,
                        errors: errors, status: .unprocessableContent)
        }
        do {
            let invoice = try await store.invoices.create(CreateInvoiceRequest(orderIDs: orders, charges: charges, terms: PaymentTerms(rawValue: form["terms"]),
                                                                               issuedOn: issued, notes: form["notes"]), tenant: request.tenant)
            return ConsolePages.redirect("/invoices/\(invoice.id)?saved=1")
        } catch let error as AppError where error.status < 500 {
            return invoiceForm(request, invoice: nil, customer: customer, choices: ready, ticked: Set(orders), charges: rows, values: form.firstValues,
                        errors: Self.formErrors(error), status: .init(code: error.status))
        }
    }

    private func update(_ request: ConsoleRequest) async throws -> Response {
        let invoice = try await store.invoices.invoice(try request.id("id", "Invoice"), tenant: request.tenant)
        let form = request.form
        var errors = FieldErrors()
        let (charges, rows) = Self.charges(form, errors: &errors)
        let orders = form.all("order_ids").compactMap { ID<Order>($0) }
        let issued = LocalDate(form["issued_on"])
        if issued == nil { errors.add("issued_on", "Enter the invoice date.") }
        if orders.isEmpty { errors.add("order_ids", "Tick the delivered orders this invoice bills.") }
        guard errors.isEmpty else {
            return try await draftForm(request, invoice, values: form.firstValues, charges: rows, ticked: Set(orders), errors: errors,
                                       status: .unprocessableContent)
        }
        do {
            let edit = UpdateInvoiceRequest(orderIDs: orders, charges: charges, terms: PaymentTerms(rawValue: form["terms"]), issuedOn: issued,
                                            notes: form["notes"], baseVersion: Int(form["base_version"]) ?? 0)
            _ = try await store.invoices.update(invoice.id, edit, tenant: request.tenant)
            return ConsolePages.redirect("/invoices/\(invoice.id)?saved=1")
        } catch let error as AppError where error.status < 500 {
            var values = form.firstValues
            if error.body.field == "base_version" {
                let current = try await store.invoices.invoice(invoice.id, tenant: request.tenant)
                values["base_version"] = String(current.version)
            }
            return try await draftForm(request, invoice, values: values, charges: rows, ticked: Set(orders), errors: Self.formErrors(error),
                                       status: .init(code: error.status))
        }
    }

    /// The service's refusal beside the form's field (`charges[1].amount_cents` is row 1's amount).
    static func formErrors(_ error: AppError) -> FieldErrors {
        var errors = FieldErrors()
        let field = error.body.field ?? "form"
        if field.hasPrefix("charges["), let close = field.firstIndex(of: "]") {
            let index = field[field.index(field.startIndex, offsetBy: 8)..<close]
            errors.add(field.hasSuffix("description") ? "c\(index)_description" : "c\(index)_amount", error.body.message)
        } else if field == "base_version" {
            errors.add("form", "Someone else changed this draft while you were editing; the form keeps what you typed. Check it and save again.")
        } else {
            errors.add(["order_ids", "terms", "issued_on", "notes"].contains(field) ? field : "form", error.body.message)
        }
        return errors
    }

    // MARK: Receivables

    private func receivables(_ request: ConsoleRequest) async throws -> Response {
        let today = LocalDate(store.now)
        let rows = try await store.receivables.aging(tenant: request.tenant)
        var totals = CustomerAging(customerID: ID(), customerName: "Total")
        for row in rows {
            for (cents, bucket) in [(row.currentCents, AgingBucket.current), (row.days1to30Cents, .days1to30), (row.days31to60Cents, .days31to60),
                                    (row.days61to90Cents, .days61to90), (row.over90Cents, .over90)] where cents != 0 {
                totals.add(balanceCents: cents, bucket: bucket)
            }
        }
        totals.openInvoices = rows.reduce(0) { $0 + $1.openInvoices }
        let month = ConsolePeoplePages.month(of: today)
        let held = try await store.invoices.pendingDeposits(tenant: request.tenant)
        return pages.page("receivables", title: "Receivables", session: request.session, section: "invoices", ReceivablesView(
            notice: request.query("deposited") == "1" ? "Marked deposited." : "",
            held: held.map { HeldPaymentView($0.payment, invoice: $0.invoice) }, hasHeld: !held.isEmpty,
            heldTotal: ConsoleFormat.money(held.reduce(0) { $0 + $1.payment.amountCents }),
            rows: rows.map(Self.agingRow), empty: rows.isEmpty, totals: Self.agingRow(totals), asOf: DayFormat.day(today),
            from: month.0.description, to: month.1.description))
    }

    static func agingRow(_ row: CustomerAging) -> AgingRowView {
        func money(_ cents: Int) -> String { cents == 0 ? "—" : ConsoleFormat.money(cents) }
        return AgingRowView(customerID: row.customerID.rawValue, customer: row.customerName, current: money(row.currentCents),
                            days1to30: money(row.days1to30Cents), days31to60: money(row.days31to60Cents), days61to90: money(row.days61to90Cents),
                            over90: money(row.over90Cents), total: ConsoleFormat.money(row.totalCents), invoices: ConsoleFormat.grouped(row.openInvoices))
    }

    static func period(_ request: ConsoleRequest) throws -> (LocalDate, LocalDate) {
        guard let from = LocalDate(request.query("from") ?? ""), let to = LocalDate(request.query("to") ?? ""), from <= to,
              to <= from.adding(days: 550) else {
            throw AppError.validation("from", "Choose a period of up to 550 days: from a day, to the same day or later.")
        }
        return (from, to)
    }

    private func statement(_ request: ConsoleRequest) async throws -> Response {
        let customer = try await store.customers.customer(try request.id("id", "Customer"), tenant: request.tenant)
        let invoices = try await store.receivables.statement(customer: customer.id, tenant: request.tenant)
        let profile = try await store.carrierProfile.profile(tenant: request.tenant)
        let today = LocalDate(store.now)
        var aging = CustomerAging(customerID: customer.id, customerName: customer.name)
        for invoice in invoices {
            aging.add(balanceCents: invoice.balanceCents, bucket: invoice.balanceCents < 0 ? .current : InvoiceRules.bucket(dueOn: invoice.dueOn, today: today))
        }
        let carrier = profile.legalName.isEmpty ? request.session.carrier : profile.legalName
        let remit = InvoiceDocuments.remitTo(profile.invoiceFactoring, carrier: carrier, profile: profile)
        return pages.page("statement", title: "Statement for \(customer.name)", session: request.session, section: "customers", StatementView(
            customerID: customer.id.rawValue, customer: customer.name,
            billing: [customer.billingContact, customer.address, customer.email].filter { !$0.isEmpty }, carrier: carrier,
            carrierLines: [profile.address, [profile.phone, profile.email].filter { !$0.isEmpty }.joined(separator: " · ")].filter { !$0.isEmpty },
            day: DayFormat.day(today),
            rows: invoices.map { invoice in
                StatementRowView(id: invoice.id.rawValue, number: invoice.number ?? "", issued: DayFormat.day(invoice.issuedOn),
                                 due: DayFormat.day(invoice.dueOn), total: ConsoleFormat.money(invoice.totalCents),
                                 paid: invoice.paidCents == 0 ? "—" : ConsoleFormat.money(invoice.paidCents),
                                 balance: ConsoleFormat.money(invoice.balanceCents), late: InvoiceRowView.late(invoice, today: today))
            }, empty: invoices.isEmpty, total: ConsoleFormat.money(aging.totalCents), aging: Self.agingRow(aging), remit: remit,
            notice: profile.noticeOfAssignment))
    }
}
