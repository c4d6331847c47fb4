import Foundation
import VroomXModels

/// What customers owe the carrier: aging by customer, a customer's
/// statement, and the files a bookkeeper loads into QuickBooks Online.
struct Receivables: Sendable {
    let store: Store

    /// Each customer who owes money, the balance of their open invoices in
    /// the columns of how late it is on `today`; the largest total first.
    func aging(tenant: ID<Tenant>, today: LocalDate) async throws -> [CustomerAging] {
        let open = try await store.read { try await InvoiceRepository.open(tenant: tenant, $0) }
        var rows: [ID<Customer>: CustomerAging] = [:]
        for invoice in open {
            var row = rows[invoice.customerID] ?? CustomerAging(customerID: invoice.customerID, customerName: invoice.customerName)
            row.add(balanceCents: invoice.balanceCents, bucket: InvoiceRules.bucket(dueOn: invoice.dueOn, today: today))
            rows[invoice.customerID] = row
        }
        return rows.values.sorted { ($0.totalCents, $1.customerName) > ($1.totalCents, $0.customerName) }
    }

    /// A customer's open invoices, oldest due first.
    func statement(customer: ID<Customer>, tenant: ID<Tenant>) async throws -> [Invoice] {
        try await store.read { try await InvoiceRepository.open(tenant: tenant, customer: customer, $0) }
    }

    // MARK: QuickBooks Online

    /// QuickBooks Online's invoice import: one row per line, the invoice's
    /// fields repeated on each (dates MM/DD/YYYY, amounts without symbols).
    /// Void invoices are left out: QuickBooks has nothing to import for them.
    static let invoiceColumns = ["InvoiceNo", "Customer", "InvoiceDate", "DueDate", "Terms", "Memo", "Item(Product/Service)", "ItemDescription",
                                 "ItemQuantity", "ItemRate", "ItemAmount", "Service Date"]

    func invoicesCSV(tenant: ID<Tenant>, from: LocalDate, to: LocalDate) async throws -> String {
        let invoices = try await store.read { try await InvoiceRepository.issued(tenant: tenant, from: from, to: to, $0) }
        var lines = [Self.invoiceColumns.joined(separator: ",")]
        for invoice in invoices where invoice.status != .void {
            let memo = invoice.orders.map { "Order \($0.number)" + ($0.externalLoadID.map { " load \($0)" } ?? "") }.joined(separator: "; ")
            for line in invoice.lines {
                let service = invoice.orders.first { $0.id == line.orderID }?.deliveredOn ?? invoice.issuedOn
                lines.append([Self.field(invoice.number ?? ""), Self.field(invoice.customerName), Self.day(invoice.issuedOn), Self.day(invoice.dueOn),
                              Self.field(invoice.terms.label), Self.field(memo), Self.field(Self.item(line.kind)), Self.field(line.description),
                              "1", Self.amount(line.amountCents), Self.amount(line.amountCents), Self.day(service)].joined(separator: ","))
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Payments received in a period, with the invoice each one pays.
    static let paymentColumns = ["PaymentDate", "Customer", "PaymentMethod", "RefNo", "Amount", "InvoiceNo", "Memo"]

    func paymentsCSV(tenant: ID<Tenant>, from: LocalDate, to: LocalDate) async throws -> String {
        let payments = try await store.read { try await InvoiceRepository.received(tenant: tenant, from: from, to: to, $0) }
        var lines = [Self.paymentColumns.joined(separator: ",")]
        for (payment, invoice) in payments {
            lines.append([Self.day(payment.receivedOn), Self.field(invoice.customerName), Self.field(payment.method.label), Self.field(payment.reference),
                          Self.amount(payment.amountCents), Self.field(invoice.number ?? ""), Self.field(payment.note)].joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The product or service a line books to in QuickBooks.
    static func item(_ kind: ChargeKind) -> String {
        kind == .vehicle ? "Vehicle transport" : kind.label
    }

    static func day(_ date: LocalDate) -> String {
        (date.month < 10 ? "0" : "") + "\(date.month)/" + (date.day < 10 ? "0" : "") + "\(date.day)/\(date.year)"
    }

    /// 125050 → "1250.50", -500 → "-5.00": what a spreadsheet reads as a number.
    static func amount(_ cents: Int) -> String {
        let magnitude = cents.magnitude
        return (cents < 0 ? "-" : "") + "\(magnitude / 100)." + (magnitude % 100 < 10 ? "0" : "") + "\(magnitude % 100)"
    }

    static func field(_ value: String) -> String { ConsolePeoplePages.csvField(value) }
}

extension Store {
    var receivables: Receivables { Receivables(store: self) }
}
