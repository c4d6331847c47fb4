import Foundation

/// When a customer pays: on delivery or pickup (the driver collects), in
/// a couple of days for a fee (quick pay), or net a number of days after
/// the invoice date.
public enum PaymentTerms: String, Codable, Sendable, CaseIterable {
    case cod
    case cop
    case quickPay = "quick_pay"
    case net15 = "net_15"
    case net30 = "net_30"
    case net45 = "net_45"

    public var label: String {
        switch self {
        case .cod: "COD"
        case .cop: "COP"
        case .quickPay: "Quick pay"
        case .net15: "Net 15"
        case .net30: "Net 30"
        case .net45: "Net 45"
        }
    }

    /// Days from the invoice date to the due date.
    public var days: Int {
        switch self {
        case .cod, .cop: 0
        case .quickPay: 2
        case .net15: 15
        case .net30: 30
        case .net45: 45
        }
    }

    /// The terms a customer's or order's free text names ("Net 30",
    /// "net-15", "COD", "Quick Pay"), nil when it names none.
    public init?(text: String) {
        let key = text.lowercased().filter { $0.isLetter || $0.isNumber }
        switch key {
        case "cod", "cashondelivery": self = .cod
        case "cop", "cashonpickup": self = .cop
        case "quickpay", "qp": self = .quickPay
        case "net15", "15", "15days": self = .net15
        case "net30", "30", "30days": self = .net30
        case "net45", "45", "45days": self = .net45
        default: return nil
        }
    }
}

/// Where an invoice stands. Draft until it is sent; then by what was paid.
public enum InvoiceStatus: String, Codable, Sendable, CaseIterable {
    case draft
    case sent
    case partlyPaid = "partly_paid"
    case paid
    case void

    public var label: String {
        switch self {
        case .draft: "Draft"
        case .sent: "Sent"
        case .partlyPaid: "Partly paid"
        case .paid: "Paid"
        case .void: "Void"
        }
    }

    /// Sent and not settled: money the customer owes.
    public var isOpen: Bool { self == .sent || self == .partlyPaid }
}

/// What an invoice line charges for: a vehicle moved, or a charge beside it.
public enum ChargeKind: String, Codable, Sendable, CaseIterable {
    case vehicle
    case detention
    case dryRun = "dry_run"
    case fuelSurcharge = "fuel_surcharge"
    case other

    public var label: String {
        switch self {
        case .vehicle: "Vehicle"
        case .detention: "Detention"
        case .dryRun: "Dry run"
        case .fuelSurcharge: "Fuel surcharge"
        case .other: "Other"
        }
    }
}

/// One line of an invoice. Vehicle lines come from the orders (their
/// prices); charges are typed by the dispatcher.
public struct InvoiceLine: Codable, Sendable, Hashable {
    public var kind: ChargeKind
    public var description: String
    /// The order the line bills for (every vehicle line has one).
    public var orderID: ID<Order>?
    /// May be negative on an `other` line: a discount or a credit.
    public var amountCents: Int

    public init(kind: ChargeKind, description: String, orderID: ID<Order>? = nil, amountCents: Int) {
        self.kind = kind
        self.description = description
        self.orderID = orderID
        self.amountCents = amountCents
    }

    enum CodingKeys: String, CodingKey {
        case kind, description
        case orderID = "order_id"
        case amountCents = "amount_cents"
    }
}

/// An order an invoice bills for, as the invoice names it.
public struct InvoicedOrder: Codable, Sendable, Hashable {
    public var id: ID<Order>
    public var number: String
    public var externalLoadID: String?
    public var deliveredOn: LocalDate?

    public init(id: ID<Order>, number: String, externalLoadID: String? = nil, deliveredOn: LocalDate? = nil) {
        self.id = id
        self.number = number
        self.externalLoadID = externalLoadID
        self.deliveredOn = deliveredOn
    }

    enum CodingKeys: String, CodingKey {
        case id, number
        case externalLoadID = "external_load_id"
        case deliveredOn = "delivered_on"
    }
}

/// Whom a factored invoice tells the customer to pay, as the carrier's
/// profile said when it was sent (a later change of factor leaves it).
public struct InvoiceFactoring: Codable, Sendable, Hashable {
    public var company: String
    public var remitTo: String
    public var notice: String

    public init(company: String, remitTo: String, notice: String) {
        self.company = company
        self.remitTo = remitTo
        self.notice = notice
    }

    enum CodingKeys: String, CodingKey {
        case company, notice
        case remitTo = "remit_to"
    }
}

/// A bill to a customer for one or more delivered orders. Its number is
/// given when it is first sent (the carrier's numbers run without gaps);
/// what was paid and the status follow the payments recorded against it.
public struct Invoice: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Invoice>
    /// "INV-1001"; nil while a draft.
    public var number: String?
    public var customerID: ID<Customer>
    public var customerName: String
    public var orders: [InvoicedOrder]
    public var lines: [InvoiceLine]
    public var terms: PaymentTerms
    /// The invoice date; the due date follows from it and the terms.
    public var issuedOn: LocalDate
    public var dueOn: LocalDate
    public var notes: String
    public var totalCents: Int
    public var paidCents: Int
    public var status: InvoiceStatus
    /// The last time it went out by email (nil: never).
    public var sentAt: Date?
    public var voidReason: String?
    /// Set when sent while the carrier factors: pay the factor.
    public var factoring: InvoiceFactoring?
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: ID<Invoice>, number: String? = nil, customerID: ID<Customer>, customerName: String, orders: [InvoicedOrder],
                lines: [InvoiceLine], terms: PaymentTerms, issuedOn: LocalDate, notes: String = "", paidCents: Int = 0,
                status: InvoiceStatus = .draft, sentAt: Date? = nil, voidReason: String? = nil, version: Int = 1, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.number = number
        self.customerID = customerID
        self.customerName = customerName
        self.orders = orders
        self.lines = lines
        self.terms = terms
        self.issuedOn = issuedOn
        self.dueOn = InvoiceRules.dueDate(issuedOn: issuedOn, terms: terms)
        self.notes = notes
        self.totalCents = InvoiceRules.total(of: lines)
        self.paidCents = paidCents
        self.status = status
        self.sentAt = sentAt
        self.voidReason = voidReason
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// What is still owed; below zero when the customer paid more (a credit); nothing once void.
    public var balanceCents: Int { status == .void ? 0 : totalCents - paidCents }

    enum CodingKeys: String, CodingKey {
        case id, number, orders, lines, terms, notes, status, version
        case customerID = "customer_id"
        case customerName = "customer_name"
        case issuedOn = "issued_on"
        case dueOn = "due_on"
        case totalCents = "total_cents"
        case paidCents = "paid_cents"
        case balanceCents = "balance_cents"
        case sentAt = "sent_at"
        case voidReason = "void_reason"
        case factoring
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(VroomXModels.ID<Invoice>.self, forKey: .id)
        number = try c.decodeIfPresent(String.self, forKey: .number)
        customerID = try c.decode(VroomXModels.ID<Customer>.self, forKey: .customerID)
        customerName = try c.decode(String.self, forKey: .customerName)
        orders = try c.decode([InvoicedOrder].self, forKey: .orders)
        lines = try c.decode([InvoiceLine].self, forKey: .lines)
        terms = try c.decode(PaymentTerms.self, forKey: .terms)
        issuedOn = try c.decode(LocalDate.self, forKey: .issuedOn)
        dueOn = try c.decode(LocalDate.self, forKey: .dueOn)
        notes = try c.decode(String.self, forKey: .notes)
        totalCents = try c.decode(Int.self, forKey: .totalCents)
        paidCents = try c.decode(Int.self, forKey: .paidCents)
        status = try c.decode(InvoiceStatus.self, forKey: .status)
        sentAt = try c.decodeIfPresent(Date.self, forKey: .sentAt)
        voidReason = try c.decodeIfPresent(String.self, forKey: .voidReason)
        factoring = try c.decodeIfPresent(InvoiceFactoring.self, forKey: .factoring)
        version = try c.decode(Int.self, forKey: .version)
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        updatedAt = try c.decode(Date.self, forKey: .updatedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encodeIfPresent(number, forKey: .number)
        try c.encode(customerID, forKey: .customerID)
        try c.encode(customerName, forKey: .customerName)
        try c.encode(orders, forKey: .orders)
        try c.encode(lines, forKey: .lines)
        try c.encode(terms, forKey: .terms)
        try c.encode(issuedOn, forKey: .issuedOn)
        try c.encode(dueOn, forKey: .dueOn)
        try c.encode(notes, forKey: .notes)
        try c.encode(totalCents, forKey: .totalCents)
        try c.encode(paidCents, forKey: .paidCents)
        try c.encode(balanceCents, forKey: .balanceCents)
        try c.encode(status, forKey: .status)
        try c.encodeIfPresent(sentAt, forKey: .sentAt)
        try c.encodeIfPresent(voidReason, forKey: .voidReason)
        try c.encodeIfPresent(factoring, forKey: .factoring)
        try c.encode(version, forKey: .version)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
    }
}

/// How a payment came in.
public enum PaymentMethod: String, Codable, Sendable, CaseIterable {
    case check
    case ach
    case wire
    case cash
    case card
    case other

    public var label: String {
        switch self {
        case .check: "Check"
        case .ach: "ACH"
        case .wire: "Wire"
        case .cash: "Cash"
        case .card: "Card"
        case .other: "Other"
        }
    }
}

/// Money received against an invoice.
public struct InvoicePayment: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<InvoicePayment>
    public var invoiceID: ID<Invoice>
    public var amountCents: Int
    public var method: PaymentMethod
    /// The check number, ACH trace or wire reference.
    public var reference: String
    public var receivedOn: LocalDate
    public var note: String
    /// Who recorded it (a dispatcher's email, or the driver's name).
    public var recordedBy: String
    /// The driver who collected it on delivery (COD) or at pickup (COP); nil when dispatch recorded money received.
    public var collectedBy: ID<Driver>?
    /// The order a driver collected it for.
    public var orderID: ID<Order>?
    /// When dispatch took money a driver collected to the bank; until then it is paid, pending deposit.
    public var depositedOn: LocalDate?
    /// The check or cash receipt, photographed.
    public var photos: [ReceiptPhoto]
    public var createdAt: Date

    /// Collected by a driver and not yet taken to the bank.
    public var pendingDeposit: Bool { collectedBy != nil && depositedOn == nil }

    public init(id: ID<InvoicePayment>, invoiceID: ID<Invoice>, amountCents: Int, method: PaymentMethod, reference: String = "",
                receivedOn: LocalDate, note: String = "", recordedBy: String = "", collectedBy: ID<Driver>? = nil, orderID: ID<Order>? = nil,
                depositedOn: LocalDate? = nil, photos: [ReceiptPhoto] = [], createdAt: Date) {
        self.collectedBy = collectedBy
        self.orderID = orderID
        self.depositedOn = depositedOn
        self.photos = photos
        self.id = id
        self.invoiceID = invoiceID
        self.amountCents = amountCents
        self.method = method
        self.reference = reference
        self.receivedOn = receivedOn
        self.note = note
        self.recordedBy = recordedBy
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, method, reference, note
        case invoiceID = "invoice_id"
        case amountCents = "amount_cents"
        case receivedOn = "received_on"
        case recordedBy = "recorded_by"
        case collectedBy = "collected_by"
        case orderID = "order_id"
        case depositedOn = "deposited_on"
        case photos
        case pendingDeposit = "pending_deposit"
        case createdAt = "created_at"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(VroomXModels.ID<InvoicePayment>.self, forKey: .id)
        invoiceID = try container.decode(VroomXModels.ID<Invoice>.self, forKey: .invoiceID)
        amountCents = try container.decode(Int.self, forKey: .amountCents)
        method = try container.decode(PaymentMethod.self, forKey: .method)
        reference = try container.decodeIfPresent(String.self, forKey: .reference) ?? ""
        receivedOn = try container.decode(LocalDate.self, forKey: .receivedOn)
        note = try container.decodeIfPresent(String.self, forKey: .note) ?? ""
        recordedBy = try container.decodeIfPresent(String.self, forKey: .recordedBy) ?? ""
        collectedBy = try container.decodeIfPresent(VroomXModels.ID<Driver>.self, forKey: .collectedBy)
        orderID = try container.decodeIfPresent(VroomXModels.ID<Order>.self, forKey: .orderID)
        depositedOn = try container.decodeIfPresent(LocalDate.self, forKey: .depositedOn)
        photos = try container.decodeIfPresent([ReceiptPhoto].self, forKey: .photos) ?? []
        createdAt = try container.decode(Date.self, forKey: .createdAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(invoiceID, forKey: .invoiceID)
        try container.encode(amountCents, forKey: .amountCents)
        try container.encode(method, forKey: .method)
        try container.encode(reference, forKey: .reference)
        try container.encode(receivedOn, forKey: .receivedOn)
        try container.encode(note, forKey: .note)
        try container.encode(recordedBy, forKey: .recordedBy)
        try container.encodeIfPresent(collectedBy, forKey: .collectedBy)
        try container.encodeIfPresent(orderID, forKey: .orderID)
        try container.encodeIfPresent(depositedOn, forKey: .depositedOn)
        try container.encode(photos, forKey: .photos)
        try container.encode(pendingDeposit, forKey: .pendingDeposit)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// A charge a dispatcher adds to an invoice.
public struct InvoiceCharge: Codable, Sendable, Hashable {
    /// Detention, dry run, fuel surcharge or other (never vehicle: those come from the orders).
    public var kind: ChargeKind
    public var description: String?
    public var amountCents: Int

    public init(kind: ChargeKind, description: String? = nil, amountCents: Int) {
        self.kind = kind
        self.description = description
        self.amountCents = amountCents
    }

    enum CodingKeys: String, CodingKey {
        case kind, description
        case amountCents = "amount_cents"
    }
}

/// A new draft invoice for delivered orders of one customer.
public struct CreateInvoiceRequest: Codable, Sendable, Hashable {
    public var orderIDs: [ID<Order>]
    public var charges: [InvoiceCharge]?
    /// The customer's terms when not said (or Net 30 when theirs name none).
    public var terms: PaymentTerms?
    public var issuedOn: LocalDate?
    public var notes: String?
    /// Adds the orders' detention and dry-run charges (`Order.stopCharges`) not among `charges`.
    public var stopCharges: Bool?

    public init(orderIDs: [ID<Order>], charges: [InvoiceCharge]? = nil, terms: PaymentTerms? = nil, issuedOn: LocalDate? = nil, notes: String? = nil,
                stopCharges: Bool? = nil) {
        self.stopCharges = stopCharges
        self.orderIDs = orderIDs
        self.charges = charges
        self.terms = terms
        self.issuedOn = issuedOn
        self.notes = notes
    }

    enum CodingKeys: String, CodingKey {
        case charges, terms, notes
        case orderIDs = "order_ids"
        case issuedOn = "issued_on"
        case stopCharges = "stop_charges"
    }
}

/// A dispatcher's edit of a draft: the fields present change; `charges`
/// and `order_ids` replace the lists.
public struct UpdateInvoiceRequest: Codable, Sendable, Hashable {
    public var orderIDs: [ID<Order>]?
    public var charges: [InvoiceCharge]?
    public var terms: PaymentTerms?
    public var issuedOn: LocalDate?
    public var notes: String?
    public var baseVersion: Int?

    public init(orderIDs: [ID<Order>]? = nil, charges: [InvoiceCharge]? = nil, terms: PaymentTerms? = nil, issuedOn: LocalDate? = nil,
                notes: String? = nil, baseVersion: Int? = nil) {
        self.orderIDs = orderIDs
        self.charges = charges
        self.terms = terms
        self.issuedOn = issuedOn
        self.notes = notes
        self.baseVersion = baseVersion
    }

    enum CodingKeys: String, CodingKey {
        case charges, terms, notes
        case orderIDs = "order_ids"
        case issuedOn = "issued_on"
        case baseVersion = "base_version"
    }
}

/// Sending an invoice: by email to the customer (the default), or only
/// marked sent when it was handed over another way.
public struct SendInvoiceRequest: Codable, Sendable, Hashable {
    public var email: Bool?

    public init(email: Bool? = nil) { self.email = email }
}

/// Voiding an invoice: why, for the record.
public struct VoidInvoiceRequest: Codable, Sendable, Hashable {
    public var reason: String

    public init(reason: String) { self.reason = reason }
}

/// A payment received. `id` is the client's: recording the same payment
/// again (a lost answer, a double click) records it once.
public struct RecordPaymentRequest: Codable, Sendable, Hashable {
    public var id: ID<InvoicePayment>?
    public var amountCents: Int
    public var method: PaymentMethod
    public var reference: String?
    /// Today when not said.
    public var receivedOn: LocalDate?
    public var note: String?

    public init(id: ID<InvoicePayment>? = nil, amountCents: Int, method: PaymentMethod, reference: String? = nil, receivedOn: LocalDate? = nil,
                note: String? = nil) {
        self.id = id
        self.amountCents = amountCents
        self.method = method
        self.reference = reference
        self.receivedOn = receivedOn
        self.note = note
    }

    enum CodingKeys: String, CodingKey {
        case id, method, reference, note
        case amountCents = "amount_cents"
        case receivedOn = "received_on"
    }
}

/// An invoice with what was paid against it and its emails.
public struct InvoiceDetail: Codable, Sendable, Hashable {
    public var invoice: Invoice
    public var payments: [InvoicePayment]

    public init(invoice: Invoice, payments: [InvoicePayment]) {
        self.invoice = invoice
        self.payments = payments
    }
}

/// What one customer owes, by how late: not yet due, then 1–30, 31–60,
/// 61–90 and over 90 days past the due date.
public struct CustomerAging: Codable, Sendable, Hashable {
    public var customerID: ID<Customer>
    public var customerName: String
    public var currentCents: Int
    public var days1to30Cents: Int
    public var days31to60Cents: Int
    public var days61to90Cents: Int
    public var over90Cents: Int
    public var openInvoices: Int

    public init(customerID: ID<Customer>, customerName: String) {
        self.customerID = customerID
        self.customerName = customerName
        (currentCents, days1to30Cents, days31to60Cents, days61to90Cents, over90Cents, openInvoices) = (0, 0, 0, 0, 0, 0)
    }

    public var totalCents: Int { currentCents + days1to30Cents + days31to60Cents + days61to90Cents + over90Cents }

    /// Adds an open invoice's balance to its column.
    public mutating func add(balanceCents: Int, bucket: AgingBucket) {
        switch bucket {
        case .current: currentCents += balanceCents
        case .days1to30: days1to30Cents += balanceCents
        case .days31to60: days31to60Cents += balanceCents
        case .days61to90: days61to90Cents += balanceCents
        case .over90: over90Cents += balanceCents
        }
        openInvoices += 1
    }

    enum CodingKeys: String, CodingKey {
        case customerID = "customer_id"
        case customerName = "customer_name"
        case currentCents = "current_cents"
        case days1to30Cents = "days_1_30_cents"
        case days31to60Cents = "days_31_60_cents"
        case days61to90Cents = "days_61_90_cents"
        case over90Cents = "over_90_cents"
        case openInvoices = "open_invoices"
    }
}

/// What customers owe on a day: a row per customer with a balance.
public struct ReceivablesReport: Codable, Sendable, Hashable {
    public var asOf: LocalDate
    /// The largest total first.
    public var customers: [CustomerAging]

    public init(asOf: LocalDate, customers: [CustomerAging]) {
        self.asOf = asOf
        self.customers = customers
    }

    enum CodingKeys: String, CodingKey {
        case customers
        case asOf = "as_of"
    }
}

/// The columns of a receivables aging report.
public enum AgingBucket: String, Codable, Sendable, CaseIterable {
    case current
    case days1to30 = "1_30"
    case days31to60 = "31_60"
    case days61to90 = "61_90"
    case over90 = "over_90"

    public var label: String {
        switch self {
        case .current: "Current"
        case .days1to30: "1–30 days"
        case .days31to60: "31–60 days"
        case .days61to90: "61–90 days"
        case .over90: "Over 90 days"
        }
    }
}
