import Foundation
import Logging
import ServiceLifecycle
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

/// Sends each invoice email a dispatcher asked for: the invoice PDF and
/// the orders' bills of lading to the customer's email. Claimed before
/// sending, so any number of instances send it at most once; a send that
/// was never taken is retried with backoff, an interrupted one is left for
/// a dispatcher to send again (it may have arrived).
final class InvoiceMailService: Service, Sendable {
    let store: Store
    let documents: InvoiceDocuments
    let mailer: any Mailer
    let logger: Logger
    let checkInterval: Duration

    init(store: Store, documents: InvoiceDocuments, mailer: any Mailer, checkInterval: Duration = .seconds(2), logger: Logger) {
        (self.store, self.documents, self.mailer, self.checkInterval, self.logger) = (store, documents, mailer, checkInterval, logger)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.sendDue()
                try? await Task.sleep(for: self.checkInterval)
            }
        }
    }

    func sendDue() async {
        do {
            guard try await store.read({ try await InvoiceMailRepository.anyWaiting($0) }) else { return }
            let cutoff = store.now.addingTimeInterval(-DocumentMailService.sendingLease)
            try await store.writeRows { try await InvoiceMailRepository.abandon(sendingBefore: cutoff, $0) }
            while let entry = try await store.writeRows({ try await InvoiceMailRepository.claimDue(now: self.store.now, $0) }) {
                await send(entry)
            }
        } catch {
            logger.warning("invoice mail: \(error)")
        }
    }

    private func send(_ entry: InvoiceMailRepository.Entry) async {
        var settled: (InvoiceMailRepository.State, String, Date?, Date?)
        do {
            try await mailer.send(try await message(for: entry))
            settled = (.sent, "", store.now, nil)
            logger.info("invoice mailed", metadata: ["invoice": "\(entry.invoice)"])
        } catch let error as AppError where error.status == 404 {
            settled = (.failed, "The invoice is gone.", nil, nil)
        } catch {
            let failure = DocumentMailService.failure(error, attempts: entry.attempts, now: store.now, sendAgainFrom: "the invoice's page")
            settled = (failure.next == nil ? .failed : .queued, failure.note, nil, failure.next)
            logger.warning("invoice mail not sent", metadata: ["invoice": "\(entry.invoice)", "error": "\(error)"])
        }
        let (state, note, sentAt, next) = settled
        _ = try? await store.writeRows { db in
            try await InvoiceMailRepository.settle(entry.id, state: state, note: note, sentAt: sentAt, nextAttempt: next, db)
        }
    }

    private func message(for entry: InvoiceMailRepository.Entry) async throws -> MailMessage {
        let invoice = try await store.invoices.invoice(entry.invoice, tenant: entry.tenant)
        let profile = try await store.carrierProfile.profile(tenant: entry.tenant)
        let carrier = profile.legalName.isEmpty ? try await store.people.tenant(entry.tenant).name : profile.legalName
        let (filename, pdf) = try await documents.pdf(of: invoice.id, tenant: entry.tenant)
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
        let attachments = [MailAttachment(filename: filename, contentType: "application/pdf", bytes: pdf)]
            + (try await documents.billsOfLading(of: invoice, tenant: entry.tenant))
        return MailMessage(to: entry.recipient, subject: "Invoice \(number) from \(carrier): \(MoneyFormat.dollars(invoice.balanceCents)) due \(DayFormat.day(invoice.dueOn))",
                           body: lines.joined(separator: "\n"), attachments: attachments, replyTo: profile.email.isEmpty ? nil : profile.email,
                           senderName: carrier)
    }
}
