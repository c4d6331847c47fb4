import Foundation
import Hummingbird
import VroomXModels

/// The invoice API: dispatch's alone.
struct InvoiceController {
    let store: Store
    let documents: InvoiceDocuments

    func register(_ routes: Routes) {
        routes.on(.dispatchInvoices) { request, context in
            JSONBody.items(try await store.invoices.documents(tenant: try context.caller().tenant,
                                                              status: try request.value(.invoiceStatus, as: InvoiceStatus.self),
                                                              customer: try request.id(.customerFilter), page: try request.page()))
        }
        routes.on(.dispatchCreateInvoice) { request, context in
            let body = try await request.decodeJSON(CreateInvoiceRequest.self)
            return try JSONBody.response(try await store.invoices.create(body, tenant: try context.caller().tenant), status: .created)
        }
        routes.on(.dispatchInvoice) { _, context in
            try JSONBody.response(try await store.invoices.detail(try context.id(), tenant: try context.caller().tenant))
        }
        routes.on(.dispatchUpdateInvoice) { request, context in
            let body = try await request.decodeJSON(UpdateInvoiceRequest.self)
            return try JSONBody.response(try await store.invoices.update(try context.id(), body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchSendInvoice) { request, context in
            let body = try await request.decodeOptionalJSON(SendInvoiceRequest.self)
            return try JSONBody.response(try await store.invoices.send(try context.id(), email: body?.email ?? true, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchVoidInvoice) { request, context in
            let body = try await request.decodeJSON(VoidInvoiceRequest.self)
            return try JSONBody.response(try await store.invoices.void(try context.id(), reason: body.reason, tenant: try context.caller().tenant))
        }
        routes.onResponse(.dispatchInvoicePDF) { _, context in
            let (name, bytes) = try await documents.pdf(of: try context.id(), tenant: try context.caller().tenant)
            return DocumentController.pdf(bytes, named: name)
        }
        routes.on(.dispatchRecordPayment) { request, context in
            let body = try await request.decodeJSON(RecordPaymentRequest.self)
            return try JSONBody.response(try await store.invoices.recordPayment(try context.id(), body, tenant: try context.caller().tenant),
                                         status: .created)
        }
        routes.on(.dispatchRemovePayment) { _, context in
            try JSONBody.response(try await store.invoices.removePayment(try context.id("payment"), of: try context.id(),
                                                                         tenant: try context.caller().tenant))
        }
        routes.on(.dispatchReceivables) { request, context in
            let asOf = try request.date(.asOfDate) ?? LocalDate(store.now)
            return try JSONBody.response(ReceivablesReport(asOf: asOf, customers: try await store.receivables.aging(tenant: try context.caller().tenant,
                                                                                                                   asOf: asOf)))
        }
        routes.onResponse(.dispatchInvoicesExport) { request, context in
            let (from, to) = try Self.period(request, now: store.now)
            return ConsoleCustomerPages.csvFile(try await store.receivables.invoicesCSV(tenant: try context.caller().tenant, from: from, to: to),
                                                named: "invoices-\(from)-\(to).csv")
        }
        routes.onResponse(.dispatchPaymentsExport) { request, context in
            let (from, to) = try Self.period(request, now: store.now)
            return ConsoleCustomerPages.csvFile(try await store.receivables.paymentsCSV(tenant: try context.caller().tenant, from: from, to: to),
                                                named: "payments-\(from)-\(to).csv")
        }
    }

    /// An export's days: this month when not given; at most about a year and a half at once.
    static func period(_ request: Request, now: Date) throws -> (LocalDate, LocalDate) {
        let month = ConsolePeoplePages.month(of: LocalDate(now))
        let (from, to) = (try request.date(.fromDate) ?? month.0, try request.date(.toDate) ?? month.1)
        guard from <= to else { throw AppError.validation("to", "to is on or after from.") }
        guard to <= from.adding(days: 550) else { throw AppError.validation("to", "Export at most 550 days at once.") }
        return (from, to)
    }
}
