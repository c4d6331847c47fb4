import Foundation
import VroomXModels

/// A driver's settlement statement as a PDF, and the email that carries it.
struct SettlementDocuments: Sendable {
    let store: Store

    func pdf(of id: ID<Settlement>, driver: ID<Driver>? = nil, tenant: ID<Tenant>) async throws -> (name: String, bytes: [UInt8]) {
        let settlement = try await store.settlements.stored(id, driver: driver, tenant: tenant)
        return try await pdf(of: settlement, tenant: tenant)
    }

    /// Any settlement's statement, an open week's included (marked as not final).
    func pdf(of settlement: Settlement, tenant: ID<Tenant>) async throws -> (name: String, bytes: [UInt8]) {
        let document = StatementDocument(carrierName: try await store.people.tenant(tenant).name,
                                         profile: try await store.carrierProfile.profile(tenant: tenant), settlement: settlement, now: store.now)
        return (Self.filename(settlement), try SettlementPDF.make(document))
    }

    static func filename(_ settlement: Settlement) -> String {
        let name = settlement.driverName.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" }
        return "settlement-\(String(name).split(separator: "-").joined(separator: "-"))-\(settlement.periodStart).pdf"
    }

    func message(for entry: QueuedMailRepository.Entry) async throws -> MailMessage {
        guard let id = ID<Settlement>(entry.subject) else { throw AppError.notFound("Settlement") }
        let settlement = try await store.settlements.stored(id, tenant: entry.tenant)
        let profile = try await store.carrierProfile.profile(tenant: entry.tenant)
        let carrier = profile.legalName.isEmpty ? try await store.people.tenant(entry.tenant).name : profile.legalName
        let (filename, file) = try await pdf(of: settlement, tenant: entry.tenant)
        let week = DayFormat.span(settlement.periodStart, settlement.periodEnd) ?? ""
        var lines = ["Your settlement for \(week) is \(settlement.status == .paid ? "paid" : "approved").", "",
                     "Earnings (trip pay, bonuses): \(MoneyFormat.dollars(settlement.earningsCents))",
                     "Reimbursements: \(MoneyFormat.dollars(settlement.reimbursementsCents))",
                     "Deductions (advances, deductions): \(MoneyFormat.dollars(-settlement.deductionsCents))",
                     "Net pay: \(MoneyFormat.dollars(settlement.netCents))" + (settlement.netCents < 0 ? " (nothing to pay: it goes on next week's)" : "")]
        if let paidOn = settlement.paidOn {
            lines.append("Paid \(DayFormat.day(paidOn))" + (settlement.paidReference.isEmpty ? "" : ", reference \(settlement.paidReference)"))
        }
        lines += ["", "The statement is attached; the app shows it under Earnings.",
                  "Something missing or wrong? Tell dispatch: it goes on next week's settlement.", "", "— \(carrier)"]
        return MailMessage(to: entry.recipient, subject: "Settlement for \(week): \(MoneyFormat.dollars(settlement.netCents)) net",
                           body: lines.joined(separator: "\n"),
                           attachments: [MailAttachment(filename: filename, contentType: "application/pdf", bytes: file)],
                           replyTo: profile.email.isEmpty ? nil : profile.email, senderName: carrier)
    }
}

struct StatementDocument: Sendable {
    let carrierName: String
    let profile: CarrierProfile
    let settlement: Settlement
    let now: Date
}

/// Lays a settlement statement out on Letter pages: the carrier, the
/// driver and week, each line with its date, then the totals and net pay.
struct SettlementPDF: PDFPageLayout {
    var pdf = PDFWriter()
    var y = 0.0

    static func make(_ document: StatementDocument) throws -> [UInt8] {
        var layout = SettlementPDF()
        layout.draw(document)
        let settlement = document.settlement
        let title = "Settlement \(settlement.driverName) \(settlement.periodStart)"
        layout.footers("Settlement · \(settlement.driverName) · \(DayFormat.span(settlement.periodStart, settlement.periodEnd) ?? "")")
        return try layout.pdf.bytes(title: title, now: document.now)
    }

    private mutating func draw(_ document: StatementDocument) {
        let (settlement, profile) = (document.settlement, document.profile)
        y = 48
        let carrier = profile.legalName.isEmpty ? document.carrierName : profile.legalName
        pdf.text(PDFText.fitted(carrier, width: width - 250, size: 15, bold: true), x: left, y: y + 15, size: 15, bold: true)
        var top = y + 22
        for line in profile.address.split(separator: "\n").map(String.init) + [[profile.phone, profile.email].filter { !$0.isEmpty }
            .joined(separator: " · ")] where !line.isEmpty {
            pdf.text(PDFText.fitted(line, width: width - 250, size: 9), x: left, y: top + 12, size: 9, gray: 0.25)
            top += 12
        }
        rightAligned("DRIVER SETTLEMENT", y: y, size: 15, bold: true)
        rightAligned(settlement.driverName, y: y + 16, size: 10, bold: true)
        rightAligned("Week \(DayFormat.span(settlement.periodStart, settlement.periodEnd) ?? "")", y: y + 28, size: 9)
        let status = switch settlement.status {
        case .open: "Open: not approved, figures may change"
        case .approved: "Approved \(settlement.approvedAt.map { DayFormat.day(LocalDate($0)) } ?? "")"
        case .paid: "Paid \(settlement.paidOn.map(DayFormat.day) ?? "")" + (settlement.paidReference.isEmpty ? "" : " · \(settlement.paidReference)")
        }
        rightAligned(status, y: y + 40, size: 9)
        y = max(top, y + 52) + 14
        rule()

        ensure(40)
        pdf.fill(x: left, y: y, width: width, height: 18, gray: 0.92)
        pdf.text("DATE", x: left + 6, y: y + 12.5, size: 8, bold: true, gray: 0.3)
        pdf.text("DESCRIPTION", x: left + 86, y: y + 12.5, size: 8, bold: true, gray: 0.3)
        amount("AMOUNT", y: y + 12.5, size: 8, bold: true, gray: 0.3)
        y += 24
        if settlement.lines.isEmpty { paragraph("Nothing this week.", size: 9.5, gray: 0.3) }
        for line in settlement.lines {
            let words = line.description.isEmpty ? line.kind.label : "\(line.kind.label): \(line.description)"
            let wrapped = PDFText.wrap(words, width: width - 200, size: 9.5)
            ensure(Double(wrapped.count) * 12 + 8)
            if let date = line.date { pdf.text(DayFormat.day(date), x: left + 6, y: y + 10, size: 9.5) }
            for (index, text) in wrapped.enumerated() {
                pdf.text(text, x: left + 86, y: y + 10 + Double(index) * 12, size: 9.5)
            }
            amount(MoneyFormat.dollars(line.amountCents), y: y + 10, size: 9.5)
            y += Double(wrapped.count) * 12 + 6
            pdf.line(from: (left, y - 2), to: (right, y - 2), width: 0.3, gray: 0.8)
        }
        y += 6
        ensure(80)
        total("Earnings (trip pay, bonuses)", settlement.earningsCents)
        total("Reimbursements", settlement.reimbursementsCents)
        total("Deductions (advances, deductions)", -settlement.deductionsCents)
        total(settlement.netCents < 0 ? "Net pay (nothing to pay: carried to next week)" : "Net pay", settlement.netCents, bold: true)
        y += 10
        paragraph("Questions or corrections: tell dispatch. A settlement once paid is not changed; corrections go on the next week's.",
                  size: 8.5, gray: 0.3)
    }
}
