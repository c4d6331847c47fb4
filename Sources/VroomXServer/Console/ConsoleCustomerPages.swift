import Foundation
import Hummingbird
import NIOCore
import VroomXModels

/// Customers: the list (searchable), one customer's page with their open
/// and past orders and revenue, the form, and the CSV import. Also the
/// template files the imports offer.
struct ConsoleCustomerPages {
    let console: ConsoleController
    var store: Store { console.store }
    var pages: ConsolePages { console.pages }

    static let pageSize = 50
    /// Past orders a customer's page lists (the latest).
    static let pastShown = 50

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/customers") { request in try await list(request) }
        console.get(router, "/customers/new") { request in
            form(request, customer: nil, values: ["kind": CustomerKind.broker.rawValue], errors: FieldErrors())
        }
        console.post(router, "/customers", create)
        console.get(router, "/customers/import") { request in
            pages.page("import", title: "Import customers", session: request.session, section: "customers", Self.importPage)
        }
        console.post(router, "/customers/import", importCSV)
        console.get(router, "/customers/:id") { request in try await customerPage(request) }
        console.get(router, "/customers/:id/edit") { request in
            let customer = try await store.customers.customer(try request.id("id", "Customer"), tenant: request.tenant)
            return form(request, customer: customer, values: Self.formValues(customer), originals: Self.formValues(customer), errors: FieldErrors())
        }
        console.post(router, "/customers/:id", update)
        console.get(router, "/orders/import/template.csv") { _ in Self.csvFile(OrderImport.template, named: "orders-template.csv") }
        console.get(router, "/customers/import/template.csv") { _ in Self.csvFile(Self.template, named: "customers-template.csv") }
    }

    static let importPage = ImportView(heading: "Import customers", orders: false, units: false, customers: true, action: "/customers/import",
                                       back: "/customers", backLabel: "Customers", template: "/customers/import/template.csv")

    static let template = CustomerImport.columns.joined(separator: ",") + "\n"
        + "Example Broker (replace me),broker,Dana Reyes,billing@example.com,555-0100,\"200 W Adams St, Chicago, IL 60606\",Net 15,Send the BOL with the invoice\n"

    static func csvFile(_ text: String, named name: String) -> Response {
        var headers = ConsolePages.securityHeaders
        headers[.contentType] = "text/csv; charset=utf-8"
        headers[.contentDisposition] = "attachment; filename=\"\(name)\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    // MARK: The list

    private func list(_ request: ConsoleRequest) async throws -> Response {
        let search = request.searchText("q")
        let (total, everyone) = try await store.customers.count(search.isEmpty ? nil : search, tenant: request.tenant)
        let pager = ConsolePager.clamped(request.query("page").flatMap { Int($0) }, pageSize: Self.pageSize, total: total)
        let customers = try await store.customers.page(search.isEmpty ? nil : search, offset: pager.offset, limit: pager.pageSize,
                                                       tenant: request.tenant)
        let standings = try await store.customers.standings(of: customers.map(\.id), tenant: request.tenant)
        func link(_ page: Int) -> String {
            var parts: [String] = []
            if !search.isEmpty { parts.append("q=" + ConsolePages.queryValue(search)) }
            if page > 1 { parts.append("page=\(page)") }
            return "/customers" + (parts.isEmpty ? "" : "?" + parts.joined(separator: "&"))
        }
        let rows = customers.map { customer in
            let standing = standings[customer.id] ?? CustomerStanding()
            return CustomersView.Row(id: customer.id.rawValue, name: customer.name, kind: customer.kind.label, contact: customer.billingContact,
                                     email: customer.email, phone: customer.phone, open: ConsoleFormat.grouped(standing.openOrders),
                                     delivered: ConsoleFormat.grouped(standing.deliveredOrders),
                                     revenue: ConsoleFormat.money(standing.deliveredRevenueCents))
        }
        let imported = request.query("created").flatMap { Int($0) }.map { created in
            "Imported: \(created) new, \(request.query("updated").flatMap { Int($0) } ?? 0) updated." } ?? ""
        return pages.page("customers", title: "Customers", session: request.session, section: "customers", CustomersView(
            q: search, customers: rows, empty: rows.isEmpty, none: everyone == 0,
            pager: pager.pages > 1 ? pager.view(shown: rows.count, label: "Pages of customers", link: link) : nil, imported: imported))
    }

    // MARK: One customer

    private func customerPage(_ request: ConsoleRequest) async throws -> Response {
        let customer = try await store.customers.customer(try request.id("id", "Customer"), tenant: request.tenant)
        let standing = try await store.customers.standing(of: customer.id, tenant: request.tenant)
        let open = try await store.orders.ofCustomer(customer.id, open: true, limit: nil, tenant: request.tenant)
        let past = try await store.orders.ofCustomer(customer.id, open: false, limit: Self.pastShown, tenant: request.tenant)
        let names = try await ConsoleOrderPages.Names.load(store, tenant: request.tenant, of: open + past)
        let pastCount = standing.deliveredOrders + standing.cancelledOrders
        let notice = request.query("added") == "1" ? "\(customer.name) added." : request.query("saved") == "1" ? "Saved." : ""
        let owed = try await store.receivables.statement(customer: customer.id, tenant: request.tenant)
        let ready = try await store.invoices.uninvoiced(customer: customer.id, limit: InvoiceRules.ordersPerInvoice, tenant: request.tenant)
        let today = LocalDate(store.now)
        return pages.page("customer", title: customer.name, session: request.session, section: "customers", CustomerView(
            id: customer.id.rawValue, name: customer.name, kind: customer.kind.label, billingContact: customer.billingContact,
            email: customer.email, phone: customer.phone, address: customer.address, paymentTerms: customer.paymentTerms, notes: customer.notes,
            notice: notice, openCount: ConsoleFormat.grouped(standing.openOrders), deliveredCount: ConsoleFormat.grouped(standing.deliveredOrders),
            cancelledCount: ConsoleFormat.grouped(standing.cancelledOrders), deliveredRevenue: ConsoleFormat.money(standing.deliveredRevenueCents),
            openRevenue: ConsoleFormat.money(standing.openRevenueCents), lastOrder: ConsoleFormat.time(standing.lastOrderAt),
            openOrders: open.map { OrderRowView($0, names, today: LocalDate(store.now)) }, pastOrders: past.map { OrderRowView($0, names, today: LocalDate(store.now)) },
            hasOpen: !open.isEmpty, hasPast: !past.isEmpty,
            morePast: pastCount > past.count ? "The latest \(past.count) of \(ConsoleFormat.grouped(pastCount))." : "",
            openInvoices: owed.map { InvoiceRowView($0, today: today) }, hasOpenInvoices: !owed.isEmpty,
            owed: ConsoleFormat.money(owed.reduce(0) { $0 + $1.balanceCents }), readyToInvoice: ready.isEmpty ? "" : ConsoleFormat.count(ready.count, "delivered order")))
    }

    // MARK: The form

    static func formValues(_ customer: Customer) -> [String: String] {
        ["name": customer.name, "kind": customer.kind.rawValue, "billing_contact": customer.billingContact, "email": customer.email,
         "phone": customer.phone, "address": customer.address, "payment_terms": customer.paymentTerms, "notes": customer.notes,
         "base_version": String(customer.version)]
    }

    /// The edit form's fields as the dispatcher reads them.
    static let conflict = EditConflict(fields: [
        ("name", "Name"), ("kind", "Kind"), ("billing_contact", "Billing contact"), ("email", "Email"), ("phone", "Phone"),
        ("address", "Billing address"), ("payment_terms", "Payment terms"), ("notes", "Notes"),
    ])

    /// `originals`: the values the edit form was filled with (see `EditConflict`).
    private func form(_ request: ConsoleRequest, customer: Customer?, values: [String: String], originals: [String: String] = [:],
                      errors: FieldErrors, status: HTTPResponse.Status = .ok) -> Response {
        let heading = customer.map { "Edit \($0.name)" } ?? "New customer"
        return pages.page("customer-form", title: heading, session: request.session, section: "customers", CustomerFormView(
            editing: customer != nil, customerID: customer?.id.rawValue ?? "", heading: heading, v: values, e: errors.messages,
            hasErrors: !errors.isEmpty, kinds: CustomerKind.allCases.map {
                ChoiceView(value: $0.rawValue, label: $0.label, selected: values["kind"] == $0.rawValue)
            }, originals: customer == nil ? [] : Self.conflict.hiddenFields(originals)), status: status)
    }

    /// The form's fields as an edit (every field present: an emptied one is cleared).
    static func edit(_ form: ConsoleForm) -> UpdateCustomerRequest {
        UpdateCustomerRequest(name: form["name"], kind: CustomerKind(rawValue: form["kind"]), billingContact: form["billing_contact"],
                              email: form["email"], phone: form["phone"], address: form["address"], paymentTerms: form["payment_terms"],
                              notes: form["notes"])
    }

    private func create(_ request: ConsoleRequest) async throws -> Response {
        let edit = Self.edit(request.form)
        let body = CreateCustomerRequest(name: edit.name ?? "", kind: edit.kind, billingContact: edit.billingContact, email: edit.email,
                                         phone: edit.phone, address: edit.address, paymentTerms: edit.paymentTerms, notes: edit.notes)
        var problems = Problems()
        _ = CustomerService.checked(body, &problems)
        guard problems.all.isEmpty else {
            return form(request, customer: nil, values: request.form.firstValues, errors: Self.errors(problems), status: .unprocessableContent)
        }
        do {
            let customer = try await store.customers.create(body, tenant: request.tenant)
            return ConsolePages.redirect("/customers/\(customer.id)?added=1")
        } catch let error as AppError where error.status < 500 {
            return form(request, customer: nil, values: request.form.firstValues, errors: FieldErrors(error), status: .init(code: error.status))
        }
    }

    private func update(_ request: ConsoleRequest) async throws -> Response {
        let customer = try await store.customers.customer(try request.id("id", "Customer"), tenant: request.tenant)
        var edit = Self.edit(request.form)
        // A form without its version is refused (0 is never one) rather than saved over someone's change unseen.
        edit.baseVersion = Int(request.form["base_version"]) ?? 0
        var problems = Problems()
        _ = CustomerService.edited(customer, by: edit, &problems)
        let originals = Self.conflict.originals(request.form)
        guard problems.all.isEmpty else {
            return form(request, customer: customer, values: request.form.firstValues, originals: originals, errors: Self.errors(problems),
                        status: .unprocessableContent)
        }
        do {
            let saved = try await store.customers.update(customer.id, edit, tenant: request.tenant)
            return ConsolePages.redirect("/customers/\(saved.id)?saved=1")
        } catch let error as AppError where error.status == 409 && error.body.field == "base_version" {
            // The form shows the customer as saved now, with what this dispatcher typed marked beside each field they changed.
            let saved = Self.formValues(try await store.customers.customer(customer.id, tenant: request.tenant))
            let errors = Self.conflict.errors(record: "customer", typed: request.form.firstValues, originals: originals, saved: saved)
            return form(request, customer: customer, values: saved, originals: saved, errors: errors, status: .conflict)
        } catch let error as AppError where error.status < 500 {
            return form(request, customer: customer, values: request.form.firstValues, originals: originals, errors: FieldErrors(error),
                        status: .init(code: error.status))
        }
    }

    static func errors(_ problems: Problems) -> FieldErrors {
        var errors = FieldErrors()
        errors.add(problems)
        return errors
    }

    // MARK: Import

    private func importCSV(_ request: ConsoleRequest) async throws -> Response {
        let text = request.form.values["csv"]?.first ?? ""
        do {
            let result = try await CustomerImport.run(text, store: store, tenant: request.tenant)
            return ConsolePages.redirect("/customers?created=\(result.created)&updated=\(result.updated)")
        } catch let error as AppError where error.body.code == .importFailed {
            let lines = (error.body.problems ?? []).map { ($0.line, $0.field, $0.message) }
            return pages.page("import", title: "Import customers", session: request.session, section: "customers",
                              Self.importPage.refused(lines, csv: text), status: .unprocessableContent)
        }
    }
}
