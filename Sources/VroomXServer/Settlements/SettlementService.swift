import Foundation
import VroomXModels

/// Paying drivers: each driver's week figured from what it holds
/// (`SettlementRules`), approved (frozen, its statement emailed once),
/// marked paid; advances, bonuses, one-off and recurring deductions
/// dispatch enters. The policy and the transactions; the SQL is
/// `SettlementRepository`'s.
public struct SettlementService: Sendable {
    let store: Store

    /// How many settlements a driver's Earnings list.
    static let historyLength = 26

    // MARK: Reads

    /// The driver's settlement of the week around `day`: stored when approved, else figured now.
    public func settlement(driver: ID<Driver>, week day: LocalDate, tenant: ID<Tenant>) async throws -> Settlement {
        try await store.read { db in
            guard let found = try await DriverRepository.find(driver, tenant: tenant, db) else { throw AppError.notFound("Driver") }
            return try await Self.settlement(of: found, week: SettlementRules.week(of: day), tenant: tenant, db)
        }
    }

    /// What dispatch sees of a driver's pay for a week.
    public func setup(driver: ID<Driver>, week day: LocalDate, tenant: ID<Tenant>) async throws -> DriverPaySetup {
        try await store.read { db in
            guard let found = try await DriverRepository.find(driver, tenant: tenant, db) else { throw AppError.notFound("Driver") }
            let week = SettlementRules.week(of: day)
            let since = min(week.start, try await SettlementRepository.firstWeek(driver: driver, tenant: tenant, db) ?? week.start)
            return DriverPaySetup(settlement: try await Self.settlement(of: found, week: week, tenant: tenant, db),
                                  unsettledItems: try await SettlementRepository.unsettledItems(driver: driver, tenant: tenant, db),
                                  deductions: try await SettlementRepository.deductions(driver: driver, tenant: tenant, db),
                                  earlierUnsettledFrom: try await SettlementRepository.earliestUnsettled(driver: driver, before: since,
                                                                                                         tenant: tenant, db))
        }
    }

    /// Every active driver's settlement of a week (and any stored one of a driver since deactivated), by name.
    public func week(_ day: LocalDate, tenant: ID<Tenant>) async throws -> [Settlement] {
        let week = SettlementRules.week(of: day)
        return try await store.read { db in
            let stored = try await SettlementRepository.of(weekStart: week.start, tenant: tenant, db)
            var settlements: [Settlement] = stored
            for driver in try await DriverRepository.all(tenant: tenant, db) where !stored.contains(where: { $0.driverID == driver.id }) {
                let open = try await Self.settlement(of: driver, week: week, tenant: tenant, db)
                // A driver since deactivated shows while something is still owed to or by them.
                if driver.deactivatedAt == nil || !open.lines.isEmpty { settlements.append(open) }
            }
            return settlements.sorted { ($0.driverName.lowercased(), $0.driverID) < ($1.driverName.lowercased(), $1.driverID) }
        }
    }

    /// A driver's Earnings: this week so far (or as approved), and the settlements before it.
    public func earnings(driver: ID<Driver>, tenant: ID<Tenant>) async throws -> Earnings {
        let today = LocalDate(store.now)
        return try await store.read { db in
            guard let found = try await DriverRepository.find(driver, tenant: tenant, db) else { throw AppError.notFound("Driver") }
            let week = SettlementRules.week(of: today)
            let current = try await Self.settlement(of: found, week: week, tenant: tenant, db)
            let history = try await SettlementRepository.of(driver: driver, limit: Self.historyLength + 1, tenant: tenant, db)
                .filter { $0.periodStart != week.start }
            return Earnings(current: current, settlements: Array(history.prefix(Self.historyLength)))
        }
    }

    /// A stored settlement; for a driver, only their own.
    public func stored(_ id: ID<Settlement>, driver: ID<Driver>? = nil, tenant: ID<Tenant>) async throws -> Settlement {
        guard let found = try await store.read({ try await SettlementRepository.find(id, tenant: tenant, $0) }),
              driver.map({ $0 == found.driverID }) ?? true else { throw AppError.notFound("Settlement") }
        return found
    }

    func emails(of id: ID<Settlement>, tenant: ID<Tenant>) async throws -> [QueuedMailRepository.Entry] {
        try await store.read { try await QueuedMailRepository.statements.of(id.rawValue, tenant: tenant, $0) }
    }

    static func settlement(of driver: Driver, week: (start: LocalDate, end: LocalDate), tenant: ID<Tenant>,
                           _ db: any SQLExecutor) async throws -> Settlement {
        if let stored = try await SettlementRepository.find(driver: driver.id, weekStart: week.start, tenant: tenant, db) { return stored }
        let inputs = try await SettlementRepository.inputs(driver: driver.id, week: week, tenant: tenant, db)
        return Settlement(driverID: driver.id, driverName: driver.name, periodStart: week.start, periodEnd: week.end, status: .open,
                          lines: SettlementRules.lines(inputs))
    }

    // MARK: Approving and paying

    /// Freezes the driver's week as it stands and emails the statement
    /// (unless `email` is false). A week not begun yet, one already
    /// approved, or one with nothing on it is refused.
    public func approve(driver: ID<Driver>, _ request: ApproveSettlementRequest, tenant: ID<Tenant>) async throws -> Settlement {
        let week = SettlementRules.week(of: request.week)
        return try await store.write(tenant: tenant) { tx in
            guard let found = try await DriverRepository.lock(driver, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            guard week.start <= LocalDate(tx.now) else {
                throw AppError.validation("week", "The week of \(DayFormat.day(week.start)) has not begun: settle it once it has.")
            }
            if try await SettlementRepository.find(driver: driver, weekStart: week.start, tenant: tenant, tx.db) != nil {
                throw AppError(409, .alreadyExists, "\(found.name)'s week of \(DayFormat.day(week.start)) is approved already.", field: "week")
            }
            let open = try await Self.settlement(of: found, week: week, tenant: tenant, tx.db)
            guard !open.lines.isEmpty else {
                throw AppError(422, .validationFailed, "\(found.name) has nothing to settle for the week of \(DayFormat.day(week.start)).", field: "week")
            }
            guard SettlementRules.totalsFit(open.lines) else {
                throw AppError(422, .validationFailed, "This week comes to more than \(MoneyFormat.dollars(MoneyFormat.largestCents)): check the trips' pay.",
                               field: "week")
            }
            let id = ID<Settlement>()
            let by = try await tx.actingUser.asyncMap { try await AccountRepository.user($0, tenant: tenant, tx.db)?.email } ?? nil
            let approved = Settlement(id: id, driverID: driver, driverName: found.name, periodStart: week.start, periodEnd: week.end,
                                      status: .approved, lines: open.lines, approvedAt: tx.now, approvedBy: by ?? "")
            do {
                try await SettlementRepository.insert(approved, id: id, tx)
            } catch DatabaseConstraintError.unique {
                // Another dispatcher approved it (or took one of its lines) first.
                throw AppError(409, .alreadyExists, "\(found.name)'s week of \(DayFormat.day(week.start)) was approved meanwhile.", field: "week")
            }
            if request.email ?? true { try await Self.queueStatement(approved, to: found, tx) }
            return approved
        }
    }

    /// Emails an approved or paid settlement's statement again (a send still on its way is not doubled).
    public func emailStatement(_ id: ID<Settlement>, tenant: ID<Tenant>) async throws -> Settlement {
        try await store.write(tenant: tenant) { tx in
            guard let settlement = try await SettlementRepository.find(id, tenant: tenant, tx.db) else { throw AppError.notFound("Settlement") }
            guard let driver = try await DriverRepository.find(settlement.driverID, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            try await Self.queueStatement(settlement, to: driver, tx)
            return settlement
        }
    }

    private static func queueStatement(_ settlement: Settlement, to driver: Driver, _ tx: TenantTransaction) async throws {
        guard let id = settlement.id else { return }
        guard !driver.email.isEmpty else { throw AppError.validation("email", "\(driver.name) has no email address to send the statement to.") }
        let waiting = try await QueuedMailRepository.statements.of(id.rawValue, tenant: tx.tenant, tx.db).contains(where: \.isWaiting)
        if !waiting { try await QueuedMailRepository.statements.enqueue(id.rawValue, recipient: driver.email, tx) }
    }

    /// The money went out: on `paidOn` (today when not given; not before
    /// the week began nor in the future), with its check or transfer number.
    /// Marking it again with the same figures changes nothing.
    public func markPaid(_ id: ID<Settlement>, _ request: MarkSettlementPaidRequest, tenant: ID<Tenant>) async throws -> Settlement {
        let reference = TextLimit.normalized(request.reference ?? "")
        guard FieldLimits.settlementReference.allows(reference) else { throw AppError(FieldLimits.settlementReference.refusal()) }
        guard TextLimit.isOneVisibleLine(reference) else {
            throw AppError.validation("reference", "reference is one line of visible characters (no line breaks, tabs or invisible marks).")
        }
        return try await store.write(tenant: tenant) { tx in
            guard var settlement = try await SettlementRepository.find(id, tenant: tenant, lock: true, tx.db) else {
                throw AppError.notFound("Settlement")
            }
            let paidOn = request.paidOn ?? LocalDate(tx.now)
            guard paidOn <= LocalDate(tx.now), paidOn >= settlement.periodStart else {
                throw AppError.validation("paid_on", "Enter a day from the week's first (\(DayFormat.day(settlement.periodStart))) to today.")
            }
            guard settlement.netCents >= 0 else {
                throw AppError(409, .invalidTransition, "Nothing is paid on a week that came out negative: its balance goes on the next week.",
                               field: "status")
            }
            if settlement.status == .paid {
                guard settlement.paidOn == paidOn, settlement.paidReference == reference else {
                    throw AppError(409, .invalidTransition, "This settlement was marked paid on \(settlement.paidOn.map(DayFormat.day) ?? "?") already.",
                                   field: "status")
                }
                return settlement
            }
            settlement.status = .paid
            settlement.paidOn = paidOn
            settlement.paidReference = reference
            try await SettlementRepository.markPaid(settlement, tx)
            return settlement
        }
    }

    /// Takes an approved settlement back to open (to add what was missed); a paid one stays.
    public func reopen(_ id: ID<Settlement>, tenant: ID<Tenant>) async throws -> Settlement {
        try await store.write(tenant: tenant) { tx in
            guard let settlement = try await SettlementRepository.find(id, tenant: tenant, lock: true, tx.db) else {
                throw AppError.notFound("Settlement")
            }
            guard settlement.status == .approved else {
                throw AppError(409, .invalidTransition, "A paid settlement stays as it was paid: corrections go on the next week's.", field: "status")
            }
            _ = try await DriverRepository.lock(settlement.driverID, tenant: tenant, tx.db)
            // A later week figured from this one (its balance carried, what it took left out): reopening would count twice.
            guard try await !SettlementRepository.hasLater(driver: settlement.driverID, than: settlement.periodStart, tenant: tenant, tx.db) else {
                throw AppError(409, .invalidTransition, "A later week of this driver's is approved: reopen that one first, or put what is missing on the next week.",
                               field: "status")
            }
            try await SettlementRepository.delete(id, tx)
            guard let driver = try await DriverRepository.find(settlement.driverID, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            return try await Self.settlement(of: driver, week: (settlement.periodStart, settlement.periodEnd), tenant: tenant, tx.db)
        }
    }

    // MARK: What dispatch enters

    static let unsettledItemsPerDriver = 200
    static let deductionsPerDriver = 20

    public func addItem(driver: ID<Driver>, _ request: CreatePayItemRequest, tenant: ID<Tenant>) async throws -> DriverPayItem {
        let description = TextLimit.normalized(request.description)
        if let refusal = SettlementRules.itemProblem(amountCents: request.amountCents, description: description) { throw AppError(refusal) }
        return try await store.write(tenant: tenant) { tx in
            guard try await DriverRepository.lock(driver, tenant: tenant, tx.db) != nil else { throw AppError.notFound("Driver") }
            let date = try Self.checked(request.date ?? LocalDate(tx.now), field: "date", now: tx.now)
            guard try await SettlementRepository.countUnsettledItems(driver: driver, tenant: tenant, tx.db) < Self.unsettledItemsPerDriver else {
                throw AppError(409, .conflict, "This driver has \(Self.unsettledItemsPerDriver) entries waiting for a settlement: approve one first.",
                               field: "driver_id")
            }
            let by = try await tx.actingUser.asyncMap { try await AccountRepository.user($0, tenant: tenant, tx.db)?.email } ?? nil
            let item = DriverPayItem(id: ID(), driverID: driver, kind: request.kind, description: description, amountCents: request.amountCents,
                                     date: date, createdAt: tx.now)
            try await SettlementRepository.insert(item, by: by ?? "", tx)
            return item
        }
    }

    /// Removes an entry no settlement took yet.
    public func removeItem(_ id: ID<DriverPayItem>, driver: ID<Driver>, tenant: ID<Tenant>) async throws {
        try await store.write(tenant: tenant) { tx in
            guard let item = try await SettlementRepository.item(id, driver: driver, tenant: tenant, tx.db) else { throw AppError.notFound("Pay item") }
            guard item.settlementID == nil else {
                throw AppError(409, .invalidTransition, "A settlement took this entry: reopen it first, or enter the opposite next week.",
                               field: "status")
            }
            try await SettlementRepository.deleteItem(id, tx)
        }
    }

    public func addDeduction(driver: ID<Driver>, _ request: CreateRecurringDeductionRequest, tenant: ID<Tenant>) async throws -> RecurringDeduction {
        let description = TextLimit.normalized(request.description)
        if let refusal = SettlementRules.itemProblem(amountCents: request.amountCents, description: description) { throw AppError(refusal) }
        guard !description.isEmpty else { throw AppError(FieldLimits.payItemDescription.refusal(empty: true)) }
        return try await store.write(tenant: tenant) { tx in
            guard try await DriverRepository.lock(driver, tenant: tenant, tx.db) != nil else { throw AppError.notFound("Driver") }
            let startsOn = try Self.checked(request.startsOn ?? SettlementRules.week(of: LocalDate(tx.now)).start, field: "starts_on", now: tx.now)
            let endsOn = try request.endsOn.map { try Self.checked($0, field: "ends_on", now: tx.now, yearsAhead: 10) }
            if let endsOn, endsOn < startsOn { throw AppError.validation("ends_on", "ends_on is on or after starts_on.") }
            let thisWeek = SettlementRules.week(of: LocalDate(tx.now)).start
            let running = try await SettlementRepository.deductions(driver: driver, tenant: tenant, tx.db).filter { ($0.endsOn ?? thisWeek) >= thisWeek }
            guard running.count < Self.deductionsPerDriver else {
                throw AppError(409, .conflict, "This driver has \(Self.deductionsPerDriver) recurring deductions running, the most one takes.",
                               field: "driver_id")
            }
            let deduction = RecurringDeduction(id: ID(), driverID: driver, description: description, amountCents: request.amountCents,
                                               startsOn: startsOn, endsOn: endsOn, createdAt: tx.now)
            try await SettlementRepository.insert(deduction, tx)
            return deduction
        }
    }

    /// Stops a recurring deduction: weeks from this one on no longer take
    /// it (one never taken is removed; weeks already approved keep theirs).
    public func endDeduction(_ id: ID<RecurringDeduction>, driver: ID<Driver>, tenant: ID<Tenant>) async throws {
        try await store.write(tenant: tenant) { tx in
            guard let deduction = try await SettlementRepository.deductions(driver: driver, tenant: tenant, tx.db).first(where: { $0.id == id }) else {
                throw AppError.notFound("Deduction")
            }
            guard try await SettlementRepository.wasTaken(id, tenant: tenant, tx.db) else {
                return try await SettlementRepository.deleteDeduction(id, tx)
            }
            let lastWeek = SettlementRules.week(of: LocalDate(tx.now)).start.adding(days: -1)
            try await SettlementRepository.endDeduction(id, endsOn: max(deduction.startsOn, min(lastWeek, deduction.endsOn ?? lastWeek)), tx)
        }
    }

    /// A day dispatch gives: within a year back and `yearsAhead` ahead.
    static func checked(_ day: LocalDate, field: String, now: Date, yearsAhead: Int = 1) throws -> LocalDate {
        let today = LocalDate(now)
        guard day >= today.adding(days: -366), day <= today.adding(days: 366 * yearsAhead) else {
            throw AppError.validation(field, "\(field) is from a year ago to \(yearsAhead == 1 ? "a year" : "\(yearsAhead) years") from today.")
        }
        return day
    }
}

extension Store {
    public var settlements: SettlementService { SettlementService(store: self) }
}
