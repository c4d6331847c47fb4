import Foundation
import VroomXModels

/// Driver settlements in the database: stored (approved, paid) weeks and
/// their lines, what dispatch entered for drivers, and what a week to
/// figure reads. The SQL and the row mapping; `SettlementService` has the policy.
enum SettlementRepository {
    /// How many unsettled trips or expenses one week takes at most (the rest follow the next week).
    static let sourcesPerWeek = 500

    // MARK: Stored settlements

    static func find(_ id: ID<Settlement>, tenant: ID<Tenant>, lock: Bool = false, _ db: any SQLExecutor) async throws -> Settlement? {
        try await db.first("""
            SELECT doc FROM settlements WHERE tenant_id = \(tenant) AND id = \(id)\(lock ? Store.lockingRows(db) : "")
            """).map(settlement)
    }

    static func find(driver: ID<Driver>, weekStart: LocalDate, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Settlement? {
        try await db.first("""
            SELECT doc FROM settlements WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND period_start = \(weekStart)
            """).map(settlement)
    }

    /// A driver's settlements, newest week first.
    static func of(driver: ID<Driver>, limit: Int, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Settlement] {
        try await db.query("""
            SELECT doc FROM settlements WHERE tenant_id = \(tenant) AND driver_id = \(driver) ORDER BY period_start DESC LIMIT \(limit)
            """).map(settlement)
    }

    /// Every driver's settlement of a week.
    static func of(weekStart: LocalDate, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Settlement] {
        try await db.query("SELECT doc FROM settlements WHERE tenant_id = \(tenant) AND period_start = \(weekStart)").map(settlement)
    }

    /// The week the driver's settling began: that of the first settlement approved (an earlier week approved later
    /// settles its own week's work, and does not move the start back over what was paid before VroomX).
    static func firstWeek(driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> LocalDate? {
        try await db.first("""
            SELECT period_start FROM settlements WHERE tenant_id = \(tenant) AND driver_id = \(driver) ORDER BY approved_at, period_start LIMIT 1
            """)?.optionalString("period_start").flatMap(LocalDate.init)
    }

    static func insert(_ settlement: Settlement, id: ID<Settlement>, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO settlements (id, tenant_id, driver_id, period_start, period_end, status, net_cents, approved_at, approved_by,
                                     paid_on, paid_reference, doc)
            VALUES (\(id), \(tx.tenant), \(settlement.driverID), \(settlement.periodStart), \(settlement.periodEnd),
                    \(settlement.status.rawValue), \(settlement.netCents), \(settlement.approvedAt ?? tx.now), \(settlement.approvedBy ?? ""),
                    \(settlement.paidOn), \(settlement.paidReference), \(try WireDocument.encode(settlement)))
            """)
        for (position, line) in settlement.lines.enumerated() {
            try await tx.execute("""
                INSERT INTO settlement_lines (tenant_id, settlement_id, driver_id, position, kind, amount_cents, week_start, trip_id, expense_id,
                                              pay_item_id, deduction_id, carried_from)
                VALUES (\(tx.tenant), \(id), \(settlement.driverID), \(position), \(line.kind.rawValue), \(line.amountCents), \(settlement.periodStart),
                        \(line.tripID), \(line.expenseID), \(line.payItemID), \(line.deductionID), \(line.carriedFrom))
                """)
        }
        let items = settlement.lines.compactMap(\.payItemID)
        if !items.isEmpty {
            try await tx.execute("""
                UPDATE driver_pay_items SET settlement_id = \(id)
                WHERE tenant_id = \(tx.tenant) AND settlement_id IS NULL AND id IN (\(SQL.list(items.map(\.rawValue))))
                """)
        }
    }

    static func markPaid(_ settlement: Settlement, _ tx: TenantTransaction) async throws {
        guard let id = settlement.id else { return }
        try await tx.execute("""
            UPDATE settlements SET status = \(settlement.status.rawValue), paid_on = \(settlement.paidOn), paid_reference = \(settlement.paidReference),
                doc = \(try WireDocument.encode(settlement))
            WHERE tenant_id = \(tx.tenant) AND id = \(id)
            """)
    }

    /// Takes an approved settlement back to open: its lines go, and what it took is free again.
    static func delete(_ id: ID<Settlement>, _ tx: TenantTransaction) async throws {
        try await tx.execute("UPDATE driver_pay_items SET settlement_id = NULL WHERE tenant_id = \(tx.tenant) AND settlement_id = \(id)")
        try await tx.execute("DELETE FROM settlement_lines WHERE tenant_id = \(tx.tenant) AND settlement_id = \(id)")
        try await tx.execute("DELETE FROM settlement_mail WHERE tenant_id = \(tx.tenant) AND settlement_id = \(id)")
        try await tx.execute("DELETE FROM settlements WHERE tenant_id = \(tx.tenant) AND id = \(id)")
    }

    // MARK: What a week to figure reads

    /// The week's inputs for one driver (see `SettlementRules.lines`): the
    /// completed trips and the expenses since the driver's settling began
    /// that no settlement paid yet, what earlier settlements paid whose
    /// source changed or went since, and what dispatch entered.
    static func inputs(driver: ID<Driver>, week: (start: LocalDate, end: LocalDate), tenant: ID<Tenant>,
                       _ db: any SQLExecutor) async throws -> SettlementRules.Inputs {
        let since = min(week.start, try await firstWeek(driver: driver, tenant: tenant, db) ?? week.start)
        // A completed trip no longer changes: its last change is when it was completed.
        var trips = try await db.query("""
            SELECT \(Trip.columns) FROM trips t
            WHERE t.tenant_id = \(tenant) AND t.driver_id = \(driver) AND t.status = 'completed'
              AND t.updated_at >= \(since.startOfDay) AND t.updated_at < \(week.end.adding(days: 1).startOfDay)
              AND NOT EXISTS (SELECT 1 FROM settlement_lines l WHERE l.tenant_id = t.tenant_id AND l.driver_id = \(driver)
                              AND l.trip_id = t.id AND l.kind = 'trip_pay')
            ORDER BY t.updated_at, t.number LIMIT \(sourcesPerWeek)
            """).map(Trip.init(row:))
        // Settled trips of the driver's touched since their latest approval (trips are never deleted): their pay may differ
        // now. Every approval takes the corrections pending, so older touches are settled already.
        var settledTrips: [ID<Trip>: Int] = [:]
        let lastApproval = try await db.first("""
            SELECT MAX(approved_at) AS last FROM settlements WHERE tenant_id = \(tenant) AND driver_id = \(driver)
            """)?.optionalDate("last")
        for row in try await lastApproval.asyncMap({ last in try await db.query("""
            SELECT l.trip_id, SUM(l.amount_cents) AS settled FROM settlement_lines l
            WHERE l.tenant_id = \(tenant) AND l.driver_id = \(driver)
              AND l.trip_id IN (SELECT t.id FROM trips t WHERE t.tenant_id = \(tenant) AND t.driver_id = \(driver) AND t.updated_at > \(last))
            GROUP BY l.trip_id
            LIMIT \(sourcesPerWeek)
            """) }) ?? [] {
            guard let trip = ID<Trip>(try row.string("trip_id")) else { continue }
            settledTrips[trip] = try row.int("settled")
            if let current = try await TripRepository.find(trip, .dispatch(tenant: tenant), db) { trips.append(current) }
        }
        let expenses = try await db.query("""
            SELECT \(Expense.columns) FROM trip_expenses x
            WHERE x.tenant_id = \(tenant) AND x.driver_id = \(driver) AND x.expense_date BETWEEN \(since) AND \(week.end)
              AND NOT EXISTS (SELECT 1 FROM settlement_lines l WHERE l.tenant_id = x.tenant_id AND l.driver_id = \(driver)
                              AND l.expense_id = x.id AND l.kind = 'reimbursement')
            ORDER BY x.expense_date, x.created_at LIMIT \(sourcesPerWeek)
            """).map(Expense.init(row:))
        // Reimbursed expenses deleted since: what was paid for them comes back.
        var settledExpenses: [ID<Expense>: Int] = [:]
        for row in try await db.query("""
            SELECT l.expense_id, SUM(l.amount_cents) AS settled FROM settlement_lines l
            WHERE l.tenant_id = \(tenant) AND l.driver_id = \(driver) AND l.expense_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM trip_expenses x WHERE x.tenant_id = l.tenant_id AND x.id = l.expense_id)
            GROUP BY l.expense_id HAVING SUM(l.amount_cents) <> 0
            LIMIT \(sourcesPerWeek)
            """) {
            if let expense = ID<Expense>(try row.string("expense_id")) { settledExpenses[expense] = try row.int("settled") }
        }
        // What the statement that reimbursed a deleted expense called it.
        var settledExpenseWords: [ID<Expense>: String] = [:]
        for expense in settledExpenses.keys {
            if let row = try await db.first("""
                SELECT s.doc FROM settlement_lines l JOIN settlements s ON s.tenant_id = l.tenant_id AND s.id = l.settlement_id
                WHERE l.tenant_id = \(tenant) AND l.driver_id = \(driver) AND l.expense_id = \(expense) AND l.kind = 'reimbursement' LIMIT 1
                """), let line = try settlement(row).lines.first(where: { $0.expenseID == expense && $0.kind == .reimbursement }) {
                settledExpenseWords[expense] = line.description + (line.date.map { ", \(DayFormat.day($0))" } ?? "")
            }
        }
        var tripNumbers: [ID<Trip>: String] = [:]
        for trip in Set(expenses.map(\.tripID)) {
            if let row = try await db.first("SELECT number FROM trips WHERE tenant_id = \(tenant) AND id = \(trip)") {
                tripNumbers[trip] = try row.string("number")
            }
        }
        let negative = try await db.query("""
            SELECT s.id, s.period_start, s.net_cents FROM settlements s
            WHERE s.tenant_id = \(tenant) AND s.driver_id = \(driver) AND s.net_cents < 0 AND s.period_start < \(week.start)
              AND NOT EXISTS (SELECT 1 FROM settlement_lines l WHERE l.tenant_id = s.tenant_id AND l.carried_from = s.id)
            """).compactMap { row -> (settlement: ID<Settlement>, weekStart: LocalDate, netCents: Int)? in
                guard let id = ID<Settlement>(try row.string("id")), let start = LocalDate(try row.string("period_start")) else { return nil }
                return (id, start, try row.int("net_cents"))
            }
        let deductions = try await Self.deductions(driver: driver, tenant: tenant, db)
        var taken = Set<String>()
        for row in try await db.query("""
            SELECT deduction_id FROM settlement_lines
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND deduction_id IS NOT NULL AND week_start = \(week.start)
            """) {
            if let id = ID<RecurringDeduction>(try row.string("deduction_id")) { taken.insert(SettlementRules.deductionWeekKey(id, week.start)) }
        }
        var inputs = SettlementRules.Inputs(driver: driver, weekStart: week.start, weekEnd: week.end, trips: trips, expenses: expenses,
                                            payItems: try await unsettledItems(driver: driver, tenant: tenant, db), deductions: deductions,
                                            settledTrips: settledTrips, settledExpenses: settledExpenses, negativeBalances: negative,
                                            deductionsTaken: taken)
        inputs.settledExpenseWords = settledExpenseWords
        inputs.tripNumbers = tripNumbers
        return inputs
    }

    /// The first day of work no settlement took that lies before the
    /// driver's settling began (and so goes on no later week by itself):
    /// a completed trip or a recorded expense within 12 weeks before `since`.
    static func earliestUnsettled(driver: ID<Driver>, before since: LocalDate, tenant: ID<Tenant>,
                                  _ db: any SQLExecutor) async throws -> LocalDate? {
        let from = since.adding(days: -84)
        let trip = try await db.first("""
            SELECT MIN(t.updated_at) AS first FROM trips t
            WHERE t.tenant_id = \(tenant) AND t.driver_id = \(driver) AND t.status = 'completed'
              AND t.updated_at >= \(from.startOfDay) AND t.updated_at < \(since.startOfDay)
              AND NOT EXISTS (SELECT 1 FROM settlement_lines l WHERE l.tenant_id = t.tenant_id AND l.driver_id = \(driver)
                              AND l.trip_id = t.id AND l.kind = 'trip_pay')
            """)?.optionalDate("first").map { LocalDate($0) }
        let expense = try await db.first("""
            SELECT MIN(x.expense_date) AS first FROM trip_expenses x
            WHERE x.tenant_id = \(tenant) AND x.driver_id = \(driver) AND x.expense_date >= \(from) AND x.expense_date < \(since)
              AND NOT EXISTS (SELECT 1 FROM settlement_lines l WHERE l.tenant_id = x.tenant_id AND l.driver_id = \(driver)
                              AND l.expense_id = x.id AND l.kind = 'reimbursement')
            """)?.optionalString("first").flatMap(LocalDate.init)
        return [trip, expense].compactMap { $0 }.min()
    }

    /// Whether a settlement of the driver's covers a later week than `weekStart`.
    static func hasLater(driver: ID<Driver>, than weekStart: LocalDate, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Bool {
        try await db.first("""
            SELECT 1 AS one FROM settlements WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND period_start > \(weekStart) LIMIT 1
            """) != nil
    }

    // MARK: Pay items and recurring deductions

    static func unsettledItems(driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [DriverPayItem] {
        try await db.query("""
            SELECT \(itemColumns) FROM driver_pay_items
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND settlement_id IS NULL ORDER BY date, created_at LIMIT \(sourcesPerWeek)
            """).map(item)
    }

    static func item(_ id: ID<DriverPayItem>, driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> DriverPayItem? {
        try await db.first("""
            SELECT \(itemColumns) FROM driver_pay_items WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND id = \(id)
            """).map(item)
    }

    static func countUnsettledItems(driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Int {
        try await db.first("""
            SELECT COUNT(*) AS n FROM driver_pay_items WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND settlement_id IS NULL
            """)?.int("n") ?? 0
    }

    static func insert(_ item: DriverPayItem, by user: String, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO driver_pay_items (id, tenant_id, driver_id, kind, description, amount_cents, date, created_by, created_at)
            VALUES (\(item.id), \(tx.tenant), \(item.driverID), \(item.kind.rawValue), \(item.description), \(item.amountCents), \(item.date),
                    \(user), \(item.createdAt))
            """)
    }

    static func deleteItem(_ id: ID<DriverPayItem>, _ tx: TenantTransaction) async throws {
        try await tx.execute("DELETE FROM driver_pay_items WHERE tenant_id = \(tx.tenant) AND id = \(id) AND settlement_id IS NULL")
    }

    static func deductions(driver: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [RecurringDeduction] {
        try await db.query("""
            SELECT id, driver_id, description, amount_cents, starts_on, ends_on, created_at FROM driver_deductions
            WHERE tenant_id = \(tenant) AND driver_id = \(driver) ORDER BY starts_on, description
            """).map { row in
                guard let id = ID<RecurringDeduction>(try row.string("id")), let start = LocalDate(try row.string("starts_on")) else {
                    throw AppError(500, .internalError, "A stored deduction is unreadable.")
                }
                return RecurringDeduction(id: id, driverID: try row.id("driver_id"), description: try row.string("description"),
                                          amountCents: try row.int("amount_cents"), startsOn: start,
                                          endsOn: try row.optionalString("ends_on").flatMap(LocalDate.init), createdAt: try row.date("created_at"))
            }
    }

    static func insert(_ deduction: RecurringDeduction, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO driver_deductions (id, tenant_id, driver_id, description, amount_cents, starts_on, ends_on, created_at)
            VALUES (\(deduction.id), \(tx.tenant), \(deduction.driverID), \(deduction.description), \(deduction.amountCents),
                    \(deduction.startsOn), \(deduction.endsOn), \(deduction.createdAt))
            """)
    }

    /// Whether any settlement took the deduction.
    static func wasTaken(_ id: ID<RecurringDeduction>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Bool {
        try await db.first("SELECT 1 AS one FROM settlement_lines WHERE tenant_id = \(tenant) AND deduction_id = \(id) LIMIT 1") != nil
    }

    static func endDeduction(_ id: ID<RecurringDeduction>, endsOn: LocalDate, _ tx: TenantTransaction) async throws {
        try await tx.execute("UPDATE driver_deductions SET ends_on = \(endsOn) WHERE tenant_id = \(tx.tenant) AND id = \(id)")
    }

    static func deleteDeduction(_ id: ID<RecurringDeduction>, _ tx: TenantTransaction) async throws {
        try await tx.execute("DELETE FROM driver_deductions WHERE tenant_id = \(tx.tenant) AND id = \(id)")
    }

    // MARK: Rows

    private static let itemColumns: SQL = "id, driver_id, kind, description, amount_cents, date, settlement_id, created_at"

    private static func item(_ row: SQLRow) throws -> DriverPayItem {
        guard let id = ID<DriverPayItem>(try row.string("id")), let kind = PayItemKind(rawValue: try row.string("kind")),
              let date = LocalDate(try row.string("date")) else { throw AppError(500, .internalError, "A stored pay item is unreadable.") }
        return DriverPayItem(id: id, driverID: try row.id("driver_id"), kind: kind, description: try row.string("description"),
                             amountCents: try row.int("amount_cents"), date: date,
                             settlementID: try row.optionalString("settlement_id").flatMap(ID<Settlement>.init), createdAt: try row.date("created_at"))
    }

    private static func settlement(_ row: SQLRow) throws -> Settlement {
        try WireDocument.decode(Settlement.self, from: try row.string("doc"))
    }
}
