import Foundation

/// How a driver's weekly settlement is figured, written once: the server
/// figures the open week and freezes it on approval, the phone shows it.
///
/// - Trip pay: each trip of the driver's completed by the week's last day
///   that no settlement paid yet: the trip's driver pay (set by the
///   driver's terms when the trip was built, or by hand), rounded by
///   `MoneyRules` once.
/// - Reimbursements: every expense the driver recorded (the driver paid
///   it; what the company's fuel card paid is a deduction), dated by then.
/// - Bonuses (earnings), advances and one-off deductions dispatch entered, dated by then.
/// - Each recurring deduction whose span meets the week, once per week.
/// - Corrections: a trip or expense settled before whose amount changed
///   since (or that went away) gets a line for the difference; nothing
///   already approved is rewritten.
/// - A settlement that came out negative carries its balance to the next.
public enum SettlementRules {
    /// Weeks run Monday to Sunday.
    public static func week(of day: LocalDate) -> (start: LocalDate, end: LocalDate) {
        // 1970-01-01 was a Thursday: days since then, shifted so Monday is 0.
        let days = Int((day.startOfDay.timeIntervalSince1970 / 86_400).rounded(.down))
        let weekday = ((days + 3) % 7 + 7) % 7
        let monday = day.adding(days: -weekday)
        return (monday, monday.adding(days: 6))
    }

    public struct Totals: Sendable, Hashable {
        public var earnings = 0
        public var reimbursements = 0
        public var deductions = 0
        public var net = 0
    }

    /// The settlement's figures from its lines, exact (each line is a
    /// bounded amount and a week holds a bounded number of them; a week
    /// past the money field is refused at approval, `totalsFit`).
    public static func totals(of lines: [SettlementLine]) -> Totals {
        var totals = Totals()
        for line in lines {
            switch bucket(line.kind, expense: line.expenseID != nil) {
            case 0: totals.earnings = add(totals.earnings, line.amountCents)
            case 1: totals.reimbursements = add(totals.reimbursements, line.amountCents)
            default: totals.deductions = add(totals.deductions, -line.amountCents)
            }
            totals.net = add(totals.net, line.amountCents)
        }
        return totals
    }

    /// What the week holds for the driver, besides what earlier settlements took.
    public struct Inputs: Sendable {
        public var driver: ID<Driver>
        public var weekStart: LocalDate
        public var weekEnd: LocalDate
        /// The driver's completed trips by the week's end, and every trip an earlier settlement paid (as it is now).
        public var trips: [Trip]
        /// The driver's expenses by the week's end, and every expense an earlier settlement reimbursed that still exists.
        public var expenses: [Expense]
        /// Pay items no settlement took yet.
        public var payItems: [DriverPayItem]
        public var deductions: [RecurringDeduction]
        /// What earlier settlements paid per trip and per expense (trip pay, reimbursements and their corrections).
        public var settledTrips: [ID<Trip>: Int]
        public var settledExpenses: [ID<Expense>: Int]
        /// Earlier settlements' words for the expenses they reimbursed that are gone since.
        public var settledExpenseWords: [ID<Expense>: String] = [:]
        /// The numbers of the trips the expenses are on.
        public var tripNumbers: [ID<Trip>: String] = [:]
        /// Earlier settlements that came out negative, not carried yet.
        public var negativeBalances: [(settlement: ID<Settlement>, weekStart: LocalDate, netCents: Int)]
        /// The weeks (their Mondays) each recurring deduction was already taken for.
        public var deductionsTaken: Set<String>

        public init(driver: ID<Driver>, weekStart: LocalDate, weekEnd: LocalDate, trips: [Trip], expenses: [Expense], payItems: [DriverPayItem],
                    deductions: [RecurringDeduction], settledTrips: [ID<Trip>: Int], settledExpenses: [ID<Expense>: Int],
                    negativeBalances: [(settlement: ID<Settlement>, weekStart: LocalDate, netCents: Int)], deductionsTaken: Set<String>) {
            self.driver = driver
            self.weekStart = weekStart
            self.weekEnd = weekEnd
            self.trips = trips
            self.expenses = expenses
            self.payItems = payItems
            self.deductions = deductions
            self.settledTrips = settledTrips
            self.settledExpenses = settledExpenses
            self.negativeBalances = negativeBalances
            self.deductionsTaken = deductionsTaken
        }
    }

    /// The key `deductionsTaken` holds for a deduction's week.
    public static func deductionWeekKey(_ deduction: ID<RecurringDeduction>, _ weekStart: LocalDate) -> String {
        "\(deduction.rawValue)@\(weekStart)"
    }

    /// The week's lines, in the order a statement reads: earnings (trip
    /// pay, bonuses, their corrections), reimbursements (and theirs), then
    /// what is taken off; by date within each.
    public static func lines(_ inputs: Inputs) -> [SettlementLine] {
        var earnings: [SettlementLine] = [], reimbursements: [SettlementLine] = [], taken: [SettlementLine] = []
        var seenTrips = Set<ID<Trip>>()
        for trip in inputs.trips where seenTrips.insert(trip.id).inserted {
            let settled = inputs.settledTrips[trip.id]
            let owed = owes(trip, inputs, settledBefore: settled != nil) ? trip.driverPayCents : 0
            let route = [trip.origin, trip.destination].filter { !$0.isEmpty }.joined(separator: " – ")
            let name = trip.number + (route.isEmpty ? "" : " · \(route)")
            if let settled {
                guard owed != settled else { continue }
                earnings.append(SettlementLine(kind: .correction, description: "\(name): pay now \(MoneyFormat.dollars(owed)), "
                                               + "\(MoneyFormat.dollars(settled)) settled before", amountCents: owed - settled,
                                               date: trip.completedOn, tripID: trip.id))
            } else if owed > 0 {
                earnings.append(SettlementLine(kind: .tripPay, description: name + (trip.miles > 0 ? " · \(trip.miles) mi" : ""),
                                               amountCents: owed, date: trip.completedOn, tripID: trip.id))
            }
        }
        // A trip an earlier settlement paid that is gone (deleted): its pay comes back.
        for (trip, settled) in inputs.settledTrips.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where !seenTrips.contains(trip) && settled != 0 {
            earnings.append(SettlementLine(kind: .correction, description: "A trip settled before was removed: \(MoneyFormat.dollars(settled)) taken back",
                                           amountCents: -settled, tripID: trip))
        }
        var seenExpenses = Set<ID<Expense>>()
        for expense in inputs.expenses where seenExpenses.insert(expense.id).inserted {
            let owed = owes(expense, inputs) ? expense.amountCents : 0
            let name = describe(expense, trip: inputs.tripNumbers[expense.tripID])
            if let settled = inputs.settledExpenses[expense.id] {
                guard owed != settled else { continue }
                reimbursements.append(SettlementLine(kind: .correction, description: "\(name): now \(MoneyFormat.dollars(owed)), "
                                                     + "\(MoneyFormat.dollars(settled)) reimbursed before", amountCents: owed - settled,
                                                     date: expense.date, expenseID: expense.id))
            } else if owed > 0 {
                reimbursements.append(SettlementLine(kind: .reimbursement, description: name, amountCents: owed, date: expense.date,
                                                     expenseID: expense.id))
            }
        }
        for (expense, settled) in inputs.settledExpenses.sorted(by: { $0.key.rawValue < $1.key.rawValue })
        where !seenExpenses.contains(expense) && settled != 0 {
            let was = inputs.settledExpenseWords[expense].map { " (\($0))" } ?? ""
            reimbursements.append(SettlementLine(kind: .correction, description: "Expense reimbursed before, since deleted\(was): "
                                                 + "\(MoneyFormat.dollars(settled)) taken back", amountCents: -settled, expenseID: expense))
        }
        for item in inputs.payItems where item.driverID == inputs.driver && item.settlementID == nil && item.date <= inputs.weekEnd {
            let line = SettlementLine(kind: item.kind.lineKind, description: item.description,
                                      amountCents: item.kind == .bonus ? item.amountCents : -item.amountCents, date: item.date, payItemID: item.id)
            if item.kind == .bonus { earnings.append(line) } else { taken.append(line) }
        }
        for deduction in inputs.deductions
        where deduction.driverID == inputs.driver && deduction.applies(toWeekFrom: inputs.weekStart, through: inputs.weekEnd)
            && !inputs.deductionsTaken.contains(deductionWeekKey(deduction.id, inputs.weekStart)) {
            taken.append(SettlementLine(kind: .deduction, description: deduction.description, amountCents: -deduction.amountCents,
                                        date: inputs.weekStart, deductionID: deduction.id))
        }
        for balance in inputs.negativeBalances where balance.netCents < 0 {
            taken.append(SettlementLine(kind: .carriedBalance, description: "Balance of the week of \(DayFormat.day(balance.weekStart)), carried over",
                                        amountCents: balance.netCents, date: balance.weekStart, carriedFrom: balance.settlement))
        }
        return byDate(earnings) + byDate(reimbursements) + byDate(taken)
    }

    /// Lines by date (undated last), keeping their order within a day.
    private static func byDate(_ lines: [SettlementLine]) -> [SettlementLine] {
        lines.enumerated().sorted { first, second in
            let (a, b) = (first.element.date?.description ?? "9999", second.element.date?.description ?? "9999")
            return a == b ? first.offset < second.offset : a < b
        }.map(\.element)
    }

    /// Whether the driver earns the trip's pay by the week's end: their
    /// trip, completed by then. A trip paid before stays owed while it is
    /// theirs and completed, whenever it was last touched.
    static func owes(_ trip: Trip, _ inputs: Inputs, settledBefore: Bool) -> Bool {
        guard let driver = trip.driverID, driver == inputs.driver, let day = trip.completedOn else { return false }
        return settledBefore || day <= inputs.weekEnd
    }

    /// Whether the driver is reimbursed the expense by the week's end: they recorded it, so they paid it.
    static func owes(_ expense: Expense, _ inputs: Inputs) -> Bool {
        guard let recordedBy = expense.driverID, recordedBy == inputs.driver else { return false }
        return expense.date <= inputs.weekEnd
    }

    /// Whether the lines' totals fit a money field exactly (each is capped
    /// at $100,000,000): a week past that is refused, never shown capped.
    public static func totalsFit(_ lines: [SettlementLine]) -> Bool {
        var sums = [0, 0, 0, 0]
        for line in lines {
            for index in [bucket(line.kind, expense: line.expenseID != nil), 3] {
                let (sum, overflow) = sums[index].addingReportingOverflow(line.amountCents)
                guard !overflow, sum.magnitude <= MoneyFormat.largestCents.magnitude else { return false }
                sums[index] = sum
            }
        }
        return true
    }

    /// Which total a line counts in: 0 earnings, 1 reimbursements, 2 deductions.
    static func bucket(_ kind: SettlementLineKind, expense: Bool) -> Int {
        switch kind {
        case .tripPay, .bonus: 0
        case .correction: expense ? 1 : 0
        case .reimbursement: 1
        case .advance, .deduction, .carriedBalance: 2
        }
    }

    /// "Fuel on T-1002: Pilot #412 · receipt".
    private static func describe(_ expense: Expense, trip: String?) -> String {
        var words = expense.category.label + (trip.map { " on \($0)" } ?? "")
        if !expense.notes.isEmpty { words += ": " + firstLine(expense.notes) }
        words += expense.receipts.isEmpty ? " · no receipt" : " · receipt"
        return words
    }

    private static func firstLine(_ text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.count > 60 ? String(line.prefix(59)) + "…" : line
    }

    /// A sum that cannot trap (it would take a billion lines of the largest amount to overflow).
    private static func add(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b < 0 ? Int.min : Int.max) : sum
    }

    /// Dispatch's money for a driver: an amount and its words.
    public static func itemProblem(amountCents: Int, description: String, field: String = "amount_cents") -> Refusal? {
        guard FieldLimits.payItemAmountCents.range.contains(amountCents) else { return FieldLimits.payItemAmountCents.refusal(field: field) }
        guard FieldLimits.payItemDescription.allows(description) else { return FieldLimits.payItemDescription.refusal() }
        guard TextLimit.isOneVisibleLine(description) else {
            return .invalid("description", "description is one line of visible characters (no line breaks, tabs or invisible marks).")
        }
        return nil
    }
}
