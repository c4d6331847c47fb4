import Foundation
import VroomXModels

/// What an invoice document says: the carrier (or its factor) to pay, the
/// customer billed, the lines, what was paid and what is due.
struct InvoiceDocument: Sendable {
    let carrierName: String
    let profile: CarrierProfile
    let invoice: Invoice
    let customer: Customer?
    let payments: [InvoicePayment]
    let now: Date
}

/// Lays an invoice out on Letter pages.
struct InvoicePDF: PDFPageLayout {
    var pdf = PDFWriter()
    var y = 0.0

    static func make(_ document: InvoiceDocument) throws -> [UInt8] {
        var layout = InvoicePDF()
        layout.draw(document)
        let name = document.invoice.number.map { "Invoice \($0)" } ?? "Draft invoice"
        let footer = "\(name) · \(document.invoice.customerName)"
        layout.footers(footer)
        return try layout.pdf.bytes(title: name, now: document.now)
    }

    private mutating func draw(_ document: InvoiceDocument) {
        let (invoice, profile) = (document.invoice, document.profile)
        y = 48
        let carrier = profile.legalName.isEmpty ? document.carrierName : profile.legalName
        pdf.text(PDFText.fitted(carrier, width: width - 250, size: 15, bold: true), x: left, y: y + 15, size: 15, bold: true)
        y += 18
        let numbers = [profile.mcNumber.isEmpty ? nil : "MC \(profile.mcNumber)", profile.dotNumber.isEmpty ? nil : "USDOT \(profile.dotNumber)"]
            .compactMap { $0 }.joined(separator: " · ")
        var top = y + 4
        for line in profile.address.split(separator: "\n").map(String.init)
            + [[profile.phone, profile.email].filter { !$0.isEmpty }.joined(separator: " · "), numbers] where !line.isEmpty {
            pdf.text(PDFText.fitted(line, width: width - 250, size: 9), x: left, y: top + 12, size: 9, gray: 0.25)
            top += 12
        }
        rightAligned(invoice.status == .void ? "VOID INVOICE" : "INVOICE", y: y, size: 15, bold: true)
        rightAligned(invoice.number.map { "Invoice \($0)" } ?? "Draft: no number yet", y: y + 16, size: 10, bold: true)
        rightAligned("Date \(DayFormat.day(invoice.issuedOn))", y: y + 28, size: 9)
        rightAligned("Terms \(invoice.terms.label) · due \(DayFormat.day(invoice.dueOn))", y: y + 40, size: 9)
        y = max(top, y + 52) + 14
        rule()

        let customer = document.customer
        let billTo = [invoice.customerName, customer?.billingContact ?? "", customer?.address ?? "", customer?.email ?? ""].filter { !$0.isEmpty }
        // A void invoice asks for no payment; a sent one keeps the factor it was sent under.
        let factoring = invoice.status == .draft ? profile.invoiceFactoring : invoice.factoring
        if invoice.status == .void {
            columns(("BILL TO", billTo), ("", []))
        } else {
            columns(("BILL TO", billTo), ("REMIT PAYMENT TO", InvoiceDocuments.remitTo(factoring, carrier: carrier, profile: profile)))
        }

        // The lines: what each charge is for, and its amount.
        ensure(40)
        pdf.fill(x: left, y: y, width: width, height: 18, gray: 0.92)
        pdf.text("DESCRIPTION", x: left + 6, y: y + 12.5, size: 8, bold: true, gray: 0.3)
        amount("AMOUNT", y: y + 12.5, size: 8, bold: true, gray: 0.3)
        y += 24
        for line in invoice.lines {
            let label = line.kind == .vehicle ? line.description : "\(line.kind.label)\(line.description == line.kind.label ? "" : ": \(line.description)")"
            let wrapped = PDFText.wrap(label, width: width - 120, size: 9.5)
            ensure(Double(wrapped.count) * 12 + 8)
            for (index, text) in wrapped.enumerated() {
                pdf.text(text, x: left + 6, y: y + 10 + Double(index) * 12, size: 9.5)
            }
            amount(MoneyFormat.dollars(line.amountCents), y: y + 10, size: 9.5)
            y += Double(wrapped.count) * 12 + 6
            pdf.line(from: (left, y - 2), to: (right, y - 2), width: 0.3, gray: 0.8)
        }
        y += 6
        ensure(60)
        total("Total", invoice.totalCents, bold: true)
        if invoice.paidCents > 0 {
            for payment in document.payments {
                let reference = payment.reference.isEmpty ? "" : " \(payment.reference)"
                total("Paid \(DayFormat.day(payment.receivedOn)) · \(payment.method.label)\(reference)", -payment.amountCents)
            }
        }
        if invoice.status == .void {
            total("Void: nothing is owed on this invoice", 0, bold: true)
        } else if invoice.balanceCents == 0, invoice.paidCents > 0 {  // paid, or a draft whose money the driver collected
            total("Paid in full", 0, bold: true)
        } else if invoice.balanceCents < 0 {
            total("Credit to the customer", -invoice.balanceCents, bold: true)
        } else {
            total("Balance due \(DayFormat.day(invoice.dueOn))", invoice.balanceCents, bold: true)
        }
        y += 10

        if !invoice.orders.isEmpty {
            let delivered = invoice.orders.map { order in
                "\(order.number)\(order.externalLoadID.map { " (load \($0))" } ?? "")\(order.deliveredOn.map { " delivered \(DayFormat.day($0))" } ?? "")"
            }
            paragraph("Orders: " + delivered.joined(separator: "; ") + ".", size: 8.5, gray: 0.3)
        }
        if !invoice.notes.isEmpty { paragraph(invoice.notes, size: 9.5) }
        if let factoring, invoice.status != .void {
            y += 6
            let notice = PDFText.wrap(factoring.notice, width: width - 20, size: 9, bold: true)
            ensure(Double(notice.count) * 11.5 + 26)
            pdf.fill(x: left, y: y, width: width, height: Double(notice.count) * 11.5 + 14, gray: 0.94)
            for (index, text) in notice.enumerated() {
                pdf.text(text, x: left + 10, y: y + 14 + Double(index) * 11.5, size: 9, bold: true)
            }
            y += Double(notice.count) * 11.5 + 22
        }
    }
}
