import Foundation
import VroomXModels

/// What customers owe the carrier: aging by customer, a customer's
/// statement, and the files a bookkeeper loads into QuickBooks Online.
struct Receivables: Sendable {
    let store: Store

    /// Each customer with a balance on `asOf` (today when nil): their sent
    /// invoices' balances then, in the columns of how late each was; a
    /// credit (paid more than billed) counts as current, against what they
    /// owe. The largest total first.
    func aging(tenant: ID<Tenant>, asOf: LocalDate? = nil) async throws -> [CustomerAging] {
        let today = LocalDate(store.now)
        let day = asOf ?? today
        let owed = try await store.read { try await InvoiceRepository.owed(tenant: tenant, asOf: day, today: today, $0) }
        var rows: [ID<Customer>: CustomerAging] = [:]
        for (invoice, balance) in owed {
            var row = rows[invoice.customerID] ?? CustomerAging(customerID: invoice.customerID, customerName: invoice.customerName)
            row.add(balanceCents: balance, bucket: balance < 0 ? .current : InvoiceRules.bucket(dueOn: invoice.dueOn, today: day))
            rows[invoice.customerID] = row
        }
        return rows.values.sorted { ($0.totalCents, $1.customerName) > ($1.totalCents, $0.customerName) }
    }

    /// A customer's invoices with a balance today (owed, or a credit), oldest due first.
    func statement(customer: ID<Customer>, tenant: ID<Tenant>) async throws -> [Invoice] {
        let today = LocalDate(store.now)
        return try await store.read { try await InvoiceRepository.owed(tenant: tenant, customer: customer, asOf: today, today: today, $0) }.map(\.invoice)
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
                          Self.amount(payment.amountCents), Self.field(invoice.number ?? ""), Self.field(Self.memo(payment))].joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// A payment's memo: its note, and for money a driver collected, who and whether it is banked —
    /// what a bookkeeper matches against the bank's deposits.
    static func memo(_ payment: InvoicePayment) -> String {
        guard payment.collectedBy != nil else { return payment.note }
        let banked = payment.depositedOn.map { "deposited \(Self.day($0))" } ?? "pending deposit"
        return (["Collected by \(payment.recordedBy); \(banked)"] + (payment.note.isEmpty ? [] : [payment.note])).joined(separator: ". ")
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
