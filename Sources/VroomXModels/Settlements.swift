import Foundation

/// Where a driver's settlement for a week stands. Open: figured from what
/// the week holds, and it changes as trips complete and money is entered.
/// Approved: frozen, its statement emailed to the driver. Paid: the money
/// went out. Nothing changes an approved or paid settlement: a later
/// correction is a line of the next one.
public enum SettlementStatus: String, Codable, Sendable, CaseIterable {
    case open
    case approved
    case paid

    public var label: String {
        switch self {
        case .open: "Open"
        case .approved: "Approved"
        case .paid: "Paid"
        }
    }
}

/// What a settlement line is for. Trip pay, reimbursements and bonuses add
/// to the driver's pay; advances and deductions take from it; a correction
/// (a settled trip's pay or a reimbursed expense changed since) and a
/// balance carried from a settlement that came out negative may do either.
public enum SettlementLineKind: String, Codable, Sendable, CaseIterable {
    case tripPay = "trip_pay"
    case reimbursement
    case bonus
    case advance
    case deduction
    case correction
    case carriedBalance = "carried_balance"

    public var label: String {
        switch self {
        case .tripPay: "Trip pay"
        case .reimbursement: "Reimbursement"
        case .bonus: "Bonus"
        case .advance: "Advance"
        case .deduction: "Deduction"
        case .correction: "Correction"
        case .carriedBalance: "Balance carried over"
        }
    }
}

/// One line of a settlement, with what it came from.
public struct SettlementLine: Codable, Sendable, Hashable {
    public var kind: SettlementLineKind
    public var description: String
    /// What the line adds to the driver's pay (negative: what it takes off).
    public var amountCents: Int
    public var date: LocalDate?
    public var tripID: ID<Trip>?
    public var expenseID: ID<Expense>?
    public var payItemID: ID<DriverPayItem>?
    public var deductionID: ID<RecurringDeduction>?
    /// The settlement whose negative balance this line carries.
    public var carriedFrom: ID<Settlement>?

    public init(kind: SettlementLineKind, description: String, amountCents: Int, date: LocalDate? = nil, tripID: ID<Trip>? = nil,
                expenseID: ID<Expense>? = nil, payItemID: ID<DriverPayItem>? = nil, deductionID: ID<RecurringDeduction>? = nil,
                carriedFrom: ID<Settlement>? = nil) {
        self.kind = kind
        self.description = description
        self.amountCents = amountCents
        self.date = date
        self.tripID = tripID
        self.expenseID = expenseID
        self.payItemID = payItemID
        self.deductionID = deductionID
        self.carriedFrom = carriedFrom
    }

    enum CodingKeys: String, CodingKey {
        case kind, description, date
        case amountCents = "amount_cents"
        case tripID = "trip_id"
        case expenseID = "expense_id"
        case payItemID = "pay_item_id"
        case deductionID = "deduction_id"
        case carriedFrom = "carried_from"
    }
}

/// A driver's pay for one week: trip pay by the driver's terms, the
/// expenses the driver paid, less advances and deductions.
public struct Settlement: Codable, Sendable, Hashable {
    /// Nil while open (an open settlement is figured, not stored).
    public var id: ID<Settlement>?
    public var driverID: ID<Driver>
    public var driverName: String
    public var periodStart: LocalDate
    public var periodEnd: LocalDate
    public var status: SettlementStatus
    public var lines: [SettlementLine]
    /// Trip pay, bonuses, and corrections of trip pay.
    public var earningsCents: Int
    /// Expenses the driver paid, and corrections of them.
    public var reimbursementsCents: Int
    /// Advances, deductions and a carried balance, as a positive amount taken off.
    public var deductionsCents: Int
    public var netCents: Int
    public var approvedAt: Date?
    public var approvedBy: String?
    public var paidOn: LocalDate?
    public var paidReference: String

    public init(id: ID<Settlement>? = nil, driverID: ID<Driver>, driverName: String, periodStart: LocalDate, periodEnd: LocalDate,
                status: SettlementStatus, lines: [SettlementLine], approvedAt: Date? = nil, approvedBy: String? = nil,
                paidOn: LocalDate? = nil, paidReference: String = "") {
        self.id = id
        self.driverID = driverID
        self.driverName = driverName
        self.periodStart = periodStart
        self.periodEnd = periodEnd
        self.status = status
        self.lines = lines
        let totals = SettlementRules.totals(of: lines)
        (earningsCents, reimbursementsCents, deductionsCents, netCents) = (totals.earnings, totals.reimbursements, totals.deductions, totals.net)
        self.approvedAt = approvedAt
        self.approvedBy = approvedBy
        self.paidOn = paidOn
        self.paidReference = paidReference
    }

    enum CodingKeys: String, CodingKey {
        case id, status, lines
        case driverID = "driver_id"
        case driverName = "driver_name"
        case periodStart = "period_start"
        case periodEnd = "period_end"
        case earningsCents = "earnings_cents"
        case reimbursementsCents = "reimbursements_cents"
        case deductionsCents = "deductions_cents"
        case netCents = "net_cents"
        case approvedAt = "approved_at"
        case approvedBy = "approved_by"
        case paidOn = "paid_on"
        case paidReference = "paid_reference"
    }
}

/// Money dispatch enters for one driver once: an advance (cash or a fuel
/// advance on the road), a one-off deduction, a bonus. It goes on the first
/// settlement approved for a week ending on or after its date.
public enum PayItemKind: String, Codable, Sendable, CaseIterable {
    case advance
    case deduction
    case bonus

    public var label: String {
        switch self {
        case .advance: "Advance"
        case .deduction: "Deduction"
        case .bonus: "Bonus"
        }
    }

    /// The line it makes, and the sign of its amount there.
    public var lineKind: SettlementLineKind {
        switch self {
        case .advance: .advance
        case .deduction: .deduction
        case .bonus: .bonus
        }
    }
}

public struct DriverPayItem: Codable, Sendable, Hashable {
    public var id: ID<DriverPayItem>
    public var driverID: ID<Driver>
    public var kind: PayItemKind
    public var description: String
    /// Always positive; the kind says which way it goes.
    public var amountCents: Int
    public var date: LocalDate
    /// The settlement that took it, once one did.
    public var settlementID: ID<Settlement>?
    public var createdAt: Date

    public init(id: ID<DriverPayItem>, driverID: ID<Driver>, kind: PayItemKind, description: String, amountCents: Int, date: LocalDate,
                settlementID: ID<Settlement>? = nil, createdAt: Date) {
        self.id = id
        self.driverID = driverID
        self.kind = kind
        self.description = description
        self.amountCents = amountCents
        self.date = date
        self.settlementID = settlementID
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, description, date
        case driverID = "driver_id"
        case amountCents = "amount_cents"
        case settlementID = "settlement_id"
        case createdAt = "created_at"
    }
}

/// A deduction taken from every weekly settlement from its first week
/// (insurance, escrow, the fuel card, a truck lease) until it ends.
public struct RecurringDeduction: Codable, Sendable, Hashable {
    public var id: ID<RecurringDeduction>
    public var driverID: ID<Driver>
    public var description: String
    public var amountCents: Int
    public var startsOn: LocalDate
    /// The last day a week may start on and still take it; nil: no end.
    public var endsOn: LocalDate?
    public var createdAt: Date

    public init(id: ID<RecurringDeduction>, driverID: ID<Driver>, description: String, amountCents: Int, startsOn: LocalDate,
                endsOn: LocalDate? = nil, createdAt: Date) {
        self.id = id
        self.driverID = driverID
        self.description = description
        self.amountCents = amountCents
        self.startsOn = startsOn
        self.endsOn = endsOn
        self.createdAt = createdAt
    }

    /// Whether the week starting on `weekStart` takes it.
    public func applies(toWeekFrom weekStart: LocalDate, through weekEnd: LocalDate) -> Bool {
        startsOn <= weekEnd && (endsOn.map { $0 >= weekStart } ?? true)
    }

    enum CodingKeys: String, CodingKey {
        case id, description
        case driverID = "driver_id"
        case amountCents = "amount_cents"
        case startsOn = "starts_on"
        case endsOn = "ends_on"
        case createdAt = "created_at"
    }
}

// MARK: Requests and answers

public struct CreatePayItemRequest: Codable, Sendable, Hashable {
    public var kind: PayItemKind
    public var description: String
    public var amountCents: Int
    /// Today when not given.
    public var date: LocalDate?

    public init(kind: PayItemKind, description: String, amountCents: Int, date: LocalDate? = nil) {
        self.kind = kind
        self.description = description
        self.amountCents = amountCents
        self.date = date
    }

    enum CodingKeys: String, CodingKey {
        case kind, description, date
        case amountCents = "amount_cents"
    }
}

public struct CreateRecurringDeductionRequest: Codable, Sendable, Hashable {
    public var description: String
    public var amountCents: Int
    /// This week's Monday when not given.
    public var startsOn: LocalDate?
    public var endsOn: LocalDate?

    public init(description: String, amountCents: Int, startsOn: LocalDate? = nil, endsOn: LocalDate? = nil) {
        self.description = description
        self.amountCents = amountCents
        self.startsOn = startsOn
        self.endsOn = endsOn
    }

    enum CodingKeys: String, CodingKey {
        case description
        case amountCents = "amount_cents"
        case startsOn = "starts_on"
        case endsOn = "ends_on"
    }
}

public struct ApproveSettlementRequest: Codable, Sendable, Hashable {
    /// Any day of the week to settle.
    public var week: LocalDate
    /// Email the statement to the driver (the default).
    public var email: Bool?

    public init(week: LocalDate, email: Bool? = nil) {
        self.week = week
        self.email = email
    }
}

public struct MarkSettlementPaidRequest: Codable, Sendable, Hashable {
    /// Today when not given.
    public var paidOn: LocalDate?
    /// The check number or transfer reference.
    public var reference: String?

    public init(paidOn: LocalDate? = nil, reference: String? = nil) {
        self.paidOn = paidOn
        self.reference = reference
    }

    enum CodingKeys: String, CodingKey {
        case reference
        case paidOn = "paid_on"
    }
}

/// A driver's pay: this week so far, and the settlements approved before.
public struct Earnings: Codable, Sendable, Hashable {
    public var current: Settlement
    /// Newest first.
    public var settlements: [Settlement]

    public init(current: Settlement, settlements: [Settlement]) {
        self.current = current
        self.settlements = settlements
    }
}

/// Dispatch's view of one driver's pay: the week's settlement (open or
/// stored), what is entered for the driver, and the recurring deductions.
public struct DriverPaySetup: Codable, Sendable, Hashable {
    public var settlement: Settlement
    public var unsettledItems: [DriverPayItem]
    public var deductions: [RecurringDeduction]
    /// The first day of work (a completed trip, an expense) from before the
    /// driver's first settlement that no settlement took: its week is still
    /// open and no later week takes it. Nil when there is none.
    public var earlierUnsettledFrom: LocalDate?

    public init(settlement: Settlement, unsettledItems: [DriverPayItem], deductions: [RecurringDeduction], earlierUnsettledFrom: LocalDate? = nil) {
        self.settlement = settlement
        self.unsettledItems = unsettledItems
        self.deductions = deductions
        self.earlierUnsettledFrom = earlierUnsettledFrom
    }

    enum CodingKeys: String, CodingKey {
        case settlement, deductions
        case unsettledItems = "unsettled_items"
        case earlierUnsettledFrom = "earlier_unsettled_from"
    }
}
