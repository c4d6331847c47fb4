import Foundation
import VroomXModels

/// A tab of the invoice list.
struct InvoiceTabView: ConsoleView {
    let href: String
    let label: String
    let count: String
    let current: Bool
}

/// One invoice in a list.
struct InvoiceRowView: ConsoleView {
    let id: String
    let number: String
    let draft: Bool
    let customer: String
    let orders: String
    let issued: String
    let due: String
    let total: String
    let balance: String
    let status: String
    let statusLabel: String
    /// "12 days late"; empty when not late.
    let late: String

    init(_ invoice: Invoice, today: LocalDate) {
        id = invoice.id.rawValue
        number = invoice.number ?? "Draft"
        draft = invoice.number == nil
        customer = invoice.customerName
        orders = invoice.orders.map(\.number).joined(separator: ", ")
        issued = DayFormat.day(invoice.issuedOn)
        due = DayFormat.day(invoice.dueOn)
        total = ConsoleFormat.money(invoice.totalCents)
        balance = invoice.status == .void || invoice.status == .draft ? "" : ConsoleFormat.money(invoice.balanceCents)
        status = invoice.status.rawValue
        statusLabel = invoice.status.label
        late = Self.late(invoice, today: today)
    }

    static func late(_ invoice: Invoice, today: LocalDate) -> String {
        guard invoice.status.isOpen, today > invoice.dueOn else { return "" }
        let days = Int((today.startOfDay.timeIntervalSince(invoice.dueOn.startOfDay) / 86_400).rounded())
        return NumberText.count(days, "day") + " late"
    }
}

/// A delivered order no invoice bills yet.
struct ReadyOrderView: ConsoleView {
    let id: String
    let number: String
    let customerID: String
    let customer: String
    let delivered: String
    let revenue: String
}

/// The invoice list: tabs by status, one page, and what is ready to bill.
struct InvoicesView: ConsoleView {
    let tabs: [InvoiceTabView]
    let invoices: [InvoiceRowView]
    let empty: Bool
    let pager: ConsolePagerView?
    let ready: [ReadyOrderView]
    let hasReady: Bool
    /// "$12,400.00 owed on 6 invoices · $3,100.00 late".
    let owed: String
    let notice: String
}

struct InvoiceLineView: ConsoleView {
    let kind: String
    let description: String
    let orderID: String?
    let amount: String
}

struct InvoiceOrderView: ConsoleView {
    let id: String
    let number: String
    let loadID: String?
    let delivered: String
    /// "; " between orders, nothing after the last.
    let separator: String
}

struct InvoicePaymentView: ConsoleView {
    let invoiceID: String
    let id: String
    let day: String
    let method: String
    let reference: String
    let amount: String
    let note: String
    let by: String
    /// Collected by a driver (COD, COP): the photos of the check, and whether it is banked yet.
    let collected: Bool
    let pendingDeposit: Bool
    let depositedOn: String
    let photos: [PhotoLinkView]

    init(_ invoice: ID<Invoice>, _ payment: InvoicePayment) {
        invoiceID = invoice.rawValue
        id = payment.id.rawValue
        day = DayFormat.day(payment.receivedOn)
        method = payment.method.label
        reference = payment.reference
        amount = ConsoleFormat.money(payment.amountCents)
        note = payment.note
        by = payment.recordedBy
        collected = payment.collectedBy != nil
        pendingDeposit = payment.pendingDeposit
        depositedOn = payment.depositedOn.map(DayFormat.day) ?? ""
        photos = payment.photos.enumerated().map { index, photo in
            PhotoLinkView(url: "/invoices/\(invoice)/payments/\(payment.id)/photos/\(photo.id)",
                             label: payment.photos.count == 1 ? "Photo" : "Photo \(index + 1)")
        }
    }
}

/// Money a driver collected and holds until it is banked: who, for which order and invoice, how, its photos.
struct HeldPaymentView: ConsoleView {
    let invoiceID: String
    let id: String
    let invoice: String
    let customer: String
    let order: String
    let driver: String
    let day: String
    let method: String
    let reference: String
    let amount: String
    let photos: [PhotoLinkView]

    init(_ payment: InvoicePayment, invoice: Invoice) {
        let row = InvoicePaymentView(invoice.id, payment)
        invoiceID = invoice.id.rawValue
        id = payment.id.rawValue
        self.invoice = invoice.number ?? "Draft"
        customer = invoice.customerName
        order = invoice.orders.first { $0.id == payment.orderID }?.number ?? ""
        driver = payment.recordedBy
        day = row.day
        method = row.method
        reference = row.reference
        amount = row.amount
        photos = row.photos
    }
}

struct PhotoLinkView: ConsoleView {
    let url: String
    let label: String
}

struct InvoiceEmailView: ConsoleView {
    let recipient: String
    let state: String
    let stateLabel: String
    let when: TimeView?
    let note: String
}

/// One invoice: what it bills, where it stands, what was paid, and the actions it allows.
struct InvoiceView: ConsoleView {
    let id: String
    let number: String
    let heading: String
    let status: String
    let statusLabel: String
    let customerID: String
    let customer: String
    let customerEmail: String
    let terms: String
    let issued: String
    let due: String
    let late: String
    let lines: [InvoiceLineView]
    let total: String
    let paid: String
    let hasPaid: Bool
    let balanceLabel: String
    let balance: String
    let notes: String
    let voidReason: String
    let orders: [InvoiceOrderView]
    let payments: [InvoicePaymentView]
    let hasPayments: Bool
    let emails: [InvoiceEmailView]
    /// Orders not delivered yet (a draft prepared when money was collected at pickup).
    let undelivered: String
    /// Orders billed without a signed delivery, said before sending.
    let unsigned: String
    let isDraft: Bool
    let canEmailAgain: Bool
    /// Emailed before: "Email again" rather than "Email to …".
    let emailed: Bool
    /// Why an invoice that is not void cannot be voided.
    let noVoid: String
    let canVoid: Bool
    let canPay: Bool
    /// Paid in full: recording more (an overpayment) is folded away.
    let paidInFull: Bool
    let factored: String
    let notice: String
    /// The payment form: values, errors beside their fields, the methods, and its id (a double click records once).
    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    let methods: [ChoiceView]
    let paymentID: String
}

/// A charge row of the draft form.
struct ChargeRowView: ConsoleView {
    let index: Int
    let kinds: [ChoiceView]
    let description: String
    let amount: String
    let descriptionError: String?
    let amountError: String?
}

/// An order the draft may bill, ticked when it does.
struct InvoiceOrderChoiceView: ConsoleView {
    let id: String
    let number: String
    let delivered: String
    let amount: String
    let checked: Bool
    /// On a draft of its own: ticked, it moves to this invoice.
    let onDraft: Bool
}

/// The form for a new invoice or a draft's edit.
struct InvoiceFormView: ConsoleView {
    let editing: Bool
    let invoiceID: String
    let customerID: String
    let heading: String
    let customer: String
    let orders: [InvoiceOrderChoiceView]
    let hasOrders: Bool
    let charges: [ChargeRowView]
    let terms: [ChoiceView]
    let v: [String: String]
    let e: [String: String]
    let hasErrors: Bool
    /// Detention or dry-run charges of the orders were filled in.
    var stopChargesFilled = false
    /// How many charges did not fit the form, said when some did not.
    var chargesLeftOut = ""
}

struct AgingRowView: ConsoleView {
    let customerID: String
    let customer: String
    let current: String
    let days1to30: String
    let days31to60: String
    let days61to90: String
    let over90: String
    let total: String
    let invoices: String
}

/// What customers owe, by how late, and the exports for the books.
struct ReceivablesView: ConsoleView {
    let notice: String
    /// Money drivers collected that is not banked yet.
    let held: [HeldPaymentView]
    let hasHeld: Bool
    let heldTotal: String
    let rows: [AgingRowView]
    let empty: Bool
    let totals: AgingRowView
    let asOf: String
    let from: String
    let to: String
}

struct StatementRowView: ConsoleView {
    let id: String
    let number: String
    let issued: String
    let due: String
    let total: String
    let paid: String
    let balance: String
    let late: String
}

/// A customer's statement: their open invoices and what is owed, to print or send.
struct StatementView: ConsoleView {
    let customerID: String
    let customer: String
    let billing: [String]
    let carrier: String
    let carrierLines: [String]
    let day: String
    let rows: [StatementRowView]
    let empty: Bool
    let total: String
    let aging: AgingRowView
    let remit: [String]
    let notice: String
}
