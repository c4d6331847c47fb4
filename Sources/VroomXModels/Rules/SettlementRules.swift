import Foundation

/// How a driver's weekly settlement is figured, written once: the server
/// figures the open week and freezes it on approval, the phone shows it.
///
/// - Trip pay: each completed trip of the driver's whose pay day (its end,
///   or its start without one) is on or before the week's last day and no
///   settlement paid yet: the trip's driver pay (set by the driver's terms
///   when the trip was built, or by hand), rounded by `MoneyRules` once.
/// - Reimbursements: every expense the driver recorded (the driver paid
///   it; what the company's fuel card paid is a deduction), dated by then.
/// - Advances, bonuses and one-off deductions dispatch entered, dated by then.
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

    /// The settlement's figures from its lines. Sums saturate at the largest
    /// amount a money field holds, so no list of lines can trap.
    public static func totals(of lines: [SettlementLine]) -> Totals {
        var totals = Totals()
        for line in lines {
            switch line.kind {
            case .tripPay, .correction: totals.earnings = add(totals.earnings, line.amountCents)
            case .reimbursement, .bonus: totals.reimbursements = add(totals.reimbursements, line.amountCents)
            case .advance, .deduction, .carriedBalance: totals.deductions = add(totals.deductions, -line.amountCents)
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

    /// The week's lines, in the order a statement reads: earnings,
    /// reimbursements and bonuses, then what is taken off.
    public static func lines(_ inputs: Inputs) -> [SettlementLine] {
        var earnings: [SettlementLine] = [], reimbursements: [SettlementLine] = [], taken: [SettlementLine] = []
        var seenTrips = Set<ID<Trip>>()
        let byPayDay = inputs.trips.sorted { first, second in
            let (a, b) = (first.payDay?.description ?? "", second.payDay?.description ?? "")
            return a == b ? first.number < second.number : a < b
        }
        for trip in byPayDay where seenTrips.insert(trip.id).inserted {
            let owed = owes(trip, inputs) ? trip.driverPayCents : 0
            let route = [trip.origin, trip.destination].filter { !$0.isEmpty }.joined(separator: " → ")
            let name = trip.number + (route.isEmpty ? "" : " · \(route)")
            if let settled = inputs.settledTrips[trip.id] {
                guard owed != settled else { continue }
                earnings.append(SettlementLine(kind: .correction, description: "\(name): pay now \(MoneyFormat.dollars(owed)), "
                                               + "\(MoneyFormat.dollars(settled)) settled before", amountCents: owed - settled,
                                               date: trip.payDay, tripID: trip.id))
            } else if owed > 0 {
                earnings.append(SettlementLine(kind: .tripPay, description: name + (trip.miles > 0 ? " · \(trip.miles) mi" : ""),
                                               amountCents: owed, date: trip.payDay, tripID: trip.id))
            }
        }
        // A trip an earlier settlement paid that this driver no longer has at all (deleted): its pay comes back.
        for (trip, settled) in inputs.settledTrips.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where !seenTrips.contains(trip) && settled != 0 {
            earnings.append(SettlementLine(kind: .correction, description: "A trip settled before was removed: \(MoneyFormat.dollars(settled)) back",
                                           amountCents: -settled, tripID: trip))
        }
        var seenExpenses = Set<ID<Expense>>()
        for expense in inputs.expenses.sorted(by: { $0.date == $1.date ? $0.createdAt < $1.createdAt : $0.date < $1.date }) where seenExpenses.insert(expense.id).inserted {
            let owed = owes(expense, inputs) ? expense.amountCents : 0
            let name = describe(expense)
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
            reimbursements.append(SettlementLine(kind: .correction, description: "An expense reimbursed before was deleted: "
                                                 + "\(MoneyFormat.dollars(settled)) back", amountCents: -settled, expenseID: expense))
        }
        for item in inputs.payItems.sorted(by: { $0.date == $1.date ? $0.createdAt < $1.createdAt : $0.date < $1.date })
        where item.driverID == inputs.driver && item.settlementID == nil && item.date <= inputs.weekEnd {
            let line = SettlementLine(kind: item.kind.lineKind, description: item.description.isEmpty ? item.kind.label : item.description,
                                      amountCents: item.kind == .bonus ? item.amountCents : -item.amountCents, date: item.date, payItemID: item.id)
            if item.kind == .bonus { reimbursements.append(line) } else { taken.append(line) }
        }
        for deduction in inputs.deductions.sorted(by: { $0.startsOn == $1.startsOn ? $0.description < $1.description : $0.startsOn < $1.startsOn })
        where deduction.driverID == inputs.driver && deduction.applies(toWeekFrom: inputs.weekStart, through: inputs.weekEnd)
            && !inputs.deductionsTaken.contains(deductionWeekKey(deduction.id, inputs.weekStart)) {
            taken.append(SettlementLine(kind: .deduction, description: deduction.description, amountCents: -deduction.amountCents,
                                        date: inputs.weekStart, deductionID: deduction.id))
        }
        for balance in inputs.negativeBalances.sorted(by: { $0.weekStart < $1.weekStart }) where balance.netCents < 0 {
            taken.append(SettlementLine(kind: .carriedBalance, description: "Balance of the week of \(DayFormat.day(balance.weekStart))",
                                        amountCents: balance.netCents, date: balance.weekStart, carriedFrom: balance.settlement))
        }
        return earnings + reimbursements + taken
    }

    /// Whether the driver earns the trip's pay by the week's end.
    static func owes(_ trip: Trip, _ inputs: Inputs) -> Bool {
        guard let driver = trip.driverID, driver == inputs.driver, trip.status == .completed, let day = trip.payDay else { return false }
        return day <= inputs.weekEnd
    }

    /// Whether the driver is reimbursed the expense by the week's end: they recorded it, so they paid it.
    static func owes(_ expense: Expense, _ inputs: Inputs) -> Bool {
        guard let recordedBy = expense.driverID, recordedBy == inputs.driver else { return false }
        return expense.date <= inputs.weekEnd
    }

    /// "Fuel, Nov 24, 2026: Pilot #412 · receipt".
    private static func describe(_ expense: Expense) -> String {
        var words = expense.category.label + ", " + DayFormat.day(expense.date)
        if !expense.notes.isEmpty { words += ": " + firstLine(expense.notes) }
        words += expense.receipts.isEmpty ? " · no receipt" : " · receipt"
        return words
    }

    private static func firstLine(_ text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.count > 60 ? String(line.prefix(59)) + "…" : line
    }

    private static func add(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { return b < 0 ? -MoneyFormat.largestCents : MoneyFormat.largestCents }
        return max(-MoneyFormat.largestCents, min(MoneyFormat.largestCents, sum))
    }

    /// Dispatch's money for a driver: an amount and its words.
    public static func itemProblem(amountCents: Int, description: String, field: String = "amount_cents") -> Refusal? {
        guard FieldLimits.payItemAmountCents.range.contains(amountCents) else { return FieldLimits.payItemAmountCents.refusal(field: field) }
        guard FieldLimits.payItemDescription.allows(description), TextLimit.isOneVisibleLine(description) else {
            return FieldLimits.payItemDescription.refusal()
        }
        return nil
    }
}
