import Foundation
import VroomXModels

/// An invoice as a PDF, made from what is stored, and the delivery bills
/// of lading that go with it.
struct InvoiceDocuments: Sendable {
    let store: Store
    let bills: BillOfLadingService

    func pdf(of id: ID<Invoice>, tenant: ID<Tenant>) async throws -> (name: String, bytes: [UInt8]) {
        let detail = try await store.invoices.detail(id, tenant: tenant)
        let customer = try await store.read { try await CustomerRepository.find(detail.invoice.customerID, tenant: tenant, $0) }
        let document = InvoiceDocument(carrierName: try await store.people.tenant(tenant).name,
                                       profile: try await store.carrierProfile.profile(tenant: tenant), invoice: detail.invoice,
                                       customer: customer, payments: detail.payments, now: store.now)
        return (Self.filename(detail.invoice), try InvoicePDF.make(document))
    }

    /// Where payment goes: the factor's name and address (its first line left out when it repeats the name), or the carrier's.
    static func remitTo(_ factoring: InvoiceFactoring?, carrier: String, profile: CarrierProfile) -> [String] {
        guard let factoring else { return [carrier] + profile.address.split(separator: "\n").map(String.init) }
        var address = factoring.remitTo.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if address.first?.lowercased() == factoring.company.lowercased() { address.removeFirst() }
        return [factoring.company] + address
    }

    static func filename(_ invoice: Invoice) -> String {
        "invoice-\(invoice.number ?? "draft").pdf"
    }

    /// Each order's bill of lading, sharing what one email can carry of photos.
    func billsOfLading(of invoice: Invoice, tenant: ID<Tenant>) async throws -> [MailAttachment] {
        let budget = BillOfLadingService.emailPicturesBudget / Int64(max(1, invoice.orders.count))
        var attachments: [MailAttachment] = []
        for order in invoice.orders {
            let (number, bytes) = try await bills.pdf(of: order.id, tenant: tenant, picturesBudget: budget)
            attachments.append(MailAttachment(filename: "bill-of-lading-\(number).pdf", contentType: "application/pdf", bytes: bytes))
        }
        return attachments
    }
}

/// The email of an invoice a dispatcher sent: the invoice PDF and the
/// orders' bills of lading, to the customer's email.
extension InvoiceDocuments {
    func message(for entry: QueuedMailRepository.Entry) async throws -> MailMessage {
        guard let id = ID<Invoice>(entry.subject) else { throw AppError.notFound("Invoice") }
        let invoice = try await store.invoices.invoice(id, tenant: entry.tenant)
        let profile = try await store.carrierProfile.profile(tenant: entry.tenant)
        let carrier = profile.legalName.isEmpty ? try await store.people.tenant(entry.tenant).name : profile.legalName
        let (filename, file) = try await pdf(of: invoice.id, tenant: entry.tenant)
        let number = invoice.number ?? "draft"
        let orders = invoice.orders.map { order in order.number + (order.externalLoadID.map { " (load \($0))" } ?? "") }
        var lines = ["Invoice \(number) from \(carrier) for \(invoice.orders.count == 1 ? "order" : "orders") \(orders.joined(separator: ", ")).",
                     "",
                     "Amount: \(MoneyFormat.dollars(invoice.totalCents))"
                        + (invoice.paidCents > 0 ? ", \(MoneyFormat.dollars(invoice.balanceCents)) still due" : ""),
                     "Terms: \(invoice.terms.label), due \(DayFormat.day(invoice.dueOn))",
                     "",
                     "The invoice and the bill of lading \(invoice.orders.count == 1 ? "are" : "of each order are") attached."]
        if let factoring = invoice.factoring {
            lines += ["", factoring.notice, "Remit to: " + InvoiceDocuments.remitTo(factoring, carrier: carrier, profile: profile).joined(separator: ", ")]
        }
        if !profile.phone.isEmpty || !profile.email.isEmpty {
            lines += ["", "Questions: \([profile.phone, profile.email].filter { !$0.isEmpty }.joined(separator: " · "))"]
        }
        lines += ["", "— \(carrier)"]
        let attachments = [MailAttachment(filename: filename, contentType: "application/pdf", bytes: file)]
            + (try await billsOfLading(of: invoice, tenant: entry.tenant))
        return MailMessage(to: entry.recipient, subject: "Invoice \(number) from \(carrier): \(MoneyFormat.dollars(invoice.balanceCents)) due \(DayFormat.day(invoice.dueOn))",
                           body: lines.joined(separator: "\n"), attachments: attachments, replyTo: profile.email.isEmpty ? nil : profile.email,
                           senderName: carrier)
    }
}
