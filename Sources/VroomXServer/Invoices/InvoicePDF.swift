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
struct InvoicePDF {
    private var pdf = PDFWriter()
    private var y = 0.0
    private let left = 40.0, right = PDFWriter.pageWidth - 40.0
    private var width: Double { right - left }
    private let bottom = PDFWriter.pageHeight - 56
    /// Where the amount column ends its figures.
    private var amountRight: Double { right - 6 }

    static func make(_ document: InvoiceDocument) throws -> [UInt8] {
        var layout = InvoicePDF()
        layout.draw(document)
        let name = document.invoice.number.map { "Invoice \($0)" } ?? "Draft invoice"
        let footer = "\(name) · \(document.invoice.customerName)"
        layout.pdf.eachPage { page, number, count in
            page.line(from: (40, PDFWriter.pageHeight - 40), to: (PDFWriter.pageWidth - 40, PDFWriter.pageHeight - 40))
            page.text(footer, x: 40, y: PDFWriter.pageHeight - 28, size: 8, gray: 0.4)
            let pages = "Page \(number) of \(count)"
            page.text(pages, x: PDFWriter.pageWidth - 40 - PDFText.width(PDFText.winAnsi(pages), size: 8, bold: false),
                      y: PDFWriter.pageHeight - 28, size: 8, gray: 0.4)
        }
        return try layout.pdf.bytes(title: name, now: document.now)
    }

    private mutating func draw(_ document: InvoiceDocument) {
        let (invoice, profile) = (document.invoice, document.profile)
        y = 48
        let carrier = profile.legalName.isEmpty ? document.carrierName : profile.legalName
        pdf.text(BillOfLadingPDF.fitted(carrier, width: width - 250, size: 15, bold: true), x: left, y: y + 15, size: 15, bold: true)
        y += 18
        let numbers = [profile.mcNumber.isEmpty ? nil : "MC \(profile.mcNumber)", profile.dotNumber.isEmpty ? nil : "USDOT \(profile.dotNumber)"]
            .compactMap { $0 }.joined(separator: " · ")
        var top = y + 4
        for line in profile.address.split(separator: "\n").map(String.init)
            + [[profile.phone, profile.email].filter { !$0.isEmpty }.joined(separator: " · "), numbers] where !line.isEmpty {
            pdf.text(BillOfLadingPDF.fitted(line, width: width - 250, size: 9), x: left, y: top + 12, size: 9, gray: 0.25)
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
        let remit = profile.factors ? [profile.factoringCompany] + profile.factoringRemitTo.split(separator: "\n").map(String.init)
            : [carrier] + profile.address.split(separator: "\n").map(String.init)
        columns(("BILL TO", billTo), ("REMIT PAYMENT TO", remit))

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
            total("Void: \(invoice.voidReason ?? "")", 0, bold: true)
        } else if invoice.status == .paid, invoice.balanceCents == 0 {
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
            paragraph("Orders: " + delivered.joined(separator: "; ") + ". The signed bill of lading for each is attached to the email.",
                      size: 8.5, gray: 0.3)
        }
        if !invoice.notes.isEmpty { paragraph(invoice.notes, size: 9.5) }
        if profile.factors {
            y += 6
            let notice = PDFText.wrap(profile.noticeOfAssignment, width: width - 20, size: 9, bold: true)
            ensure(Double(notice.count) * 11.5 + 26)
            pdf.fill(x: left, y: y, width: width, height: Double(notice.count) * 11.5 + 14, gray: 0.94)
            for (index, text) in notice.enumerated() {
                pdf.text(text, x: left + 10, y: y + 14 + Double(index) * 11.5, size: 9, bold: true)
            }
            y += Double(notice.count) * 11.5 + 22
        }
    }

    private mutating func total(_ label: String, _ cents: Int, bold: Bool = false) {
        ensure(16)
        let bytes = BillOfLadingPDF.fitted(label, width: 300, size: 10, bold: bold)
        pdf.text(bytes, x: amountRight - 110 - PDFText.width(bytes, size: 10, bold: bold), y: y + 11, size: 10, bold: bold)
        amount(MoneyFormat.dollars(cents), y: y + 11, size: 10, bold: bold)
        y += 16
    }

    private mutating func amount(_ text: String, y: Double, size: Double, bold: Bool = false, gray: Double = 0) {
        let bytes = PDFText.winAnsi(text)
        pdf.text(bytes, x: amountRight - PDFText.width(bytes, size: size, bold: bold), y: y, size: size, bold: bold, gray: gray)
    }

    private mutating func columns(_ first: (String, [String]), _ second: (String, [String])) {
        let half = width / 2 - 10
        let wrapped = [first.1, second.1].map { lines in lines.flatMap { PDFText.wrap($0, width: half, size: 9.5) } }
        ensure(Double(max(wrapped[0].count, wrapped[1].count)) * 12 + 24)
        for (index, (label, _)) in [first, second].enumerated() {
            let x = left + Double(index) * (half + 20)
            pdf.text(label, x: x, y: y + 10, size: 8, bold: true, gray: 0.4)
            for (number, line) in wrapped[index].enumerated() {
                pdf.text(line, x: x, y: y + 24 + Double(number) * 12, size: 9.5, bold: number == 0)
            }
        }
        y += Double(max(wrapped[0].count, wrapped[1].count)) * 12 + 30
    }

    private mutating func paragraph(_ string: String, size: Double, gray: Double = 0) {
        for line in string.split(separator: "\n", omittingEmptySubsequences: false).flatMap({ PDFText.wrap(String($0), width: width, size: size) }) {
            ensure(size + 4)
            pdf.text(line, x: left, y: y + size, size: size, gray: gray)
            y += size + 3
        }
        y += 4
    }

    private mutating func rightAligned(_ string: String, y: Double, size: Double, bold: Bool = false) {
        let bytes = BillOfLadingPDF.fitted(string, width: 240, size: size, bold: bold)
        pdf.text(bytes, x: right - PDFText.width(bytes, size: size, bold: bold), y: y + size, size: size, bold: bold)
    }

    private mutating func rule() {
        pdf.line(from: (left, y), to: (right, y), width: 1, gray: 0.2)
        y += 10
    }

    private mutating func ensure(_ height: Double) {
        guard y + height > bottom else { return }
        pdf.newPage()
        y = 48
    }
}
