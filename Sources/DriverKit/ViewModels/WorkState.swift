import Foundation
import VroomXModels

/// The Home tab: the trip on the road (or the next one) and the next stop.
public struct HomeState: Sendable, Hashable {
    public struct NextStop: Sendable, Hashable {
        public typealias Kind = StopKind
        public let kind: Kind
        public let order: Order
        public var stop: Stop { kind == .pickup ? order.pickup : order.delivery }
        public var eta: Date? { kind == .pickup ? order.pickupETA : order.deliveryETA }
    }

    public let driverName: String?
    public let currentTrip: Trip?
    public let nextStop: NextStop?
    public let upcomingTrips: [Trip]

    public init(driver: Driver?, trips: [Trip], orders: [Order], today: LocalDate) {
        driverName = driver?.name
        let active = trips.filter { $0.status == .inProgress }.sorted { ($0.startDate ?? today) < ($1.startDate ?? today) }
        let undated = LocalDate(year: 2999, month: 12, day: 31)!
        let planned = trips.filter { $0.status == .planned }
            .sorted { ($0.startDate ?? undated, $0.number) < ($1.startDate ?? undated, $1.number) }
        let current = active.first ?? planned.first
        currentTrip = current
        upcomingTrips = planned.filter { $0.id != current?.id }
        let onTrip = current.map { trip in orders.filter { $0.tripID == trip.id } } ?? []
        nextStop = Order.nextStop(among: onTrip, today: today).map { NextStop(kind: $0.kind, order: $0.order) }
    }
}

/// A trip's detail: its orders, expenses and what they add up to.
public struct TripDetailState: Sendable, Hashable {
    public let trip: Trip
    public let orders: [Order]
    public let expenses: [Expense]
    public var expensesTotalCents: Int { expenses.reduce(0) { $0 + $1.amountCents } }
    public var deliveredCount: Int { orders.filter { $0.status == .delivered }.count }
    public var route: String { "\(trip.origin) → \(trip.destination)" }
    /// The driver may start it ahead of the first pickup (which starts it anyway).
    public var canStart: Bool { trip.status == .planned }
    /// What the trip's header says beside its status, when there is something to say.
    public var progressNote: String? {
        if trip.readyToComplete(Trip.Vehicles(orders)) { return "Every vehicle is delivered: dispatch closes the trip." }
        if trip.status == .planned { return "Starts at the first pickup, or start it now to share your route to it." }
        return nil
    }

    public init(trip: Trip, orders: [Order], expenses: [Expense]) {
        self.trip = trip
        self.orders = orders.sorted { ($0.number) < ($1.number) }
        self.expenses = expenses
    }
}

/// The Earnings tab: driver pay per trip, and totals per week and month.
public struct EarningsState: Sendable, Hashable {
    public struct Period: Sendable, Hashable, Identifiable {
        public let title: String
        public let start: LocalDate
        public let payCents: Int
        public let trips: Int
        public var id: LocalDate { start }
    }

    public struct TripPay: Sendable, Hashable, Identifiable {
        public let trip: Trip
        public let expensesCents: Int
        public var id: ID<Trip> { trip.id }
        public var payCents: Int { trip.driverPayCents }
        /// When the trip was completed (its last change: a completed trip no longer changes).
        public var completedAt: Date { trip.updatedAt }
    }

    /// Completed trips, newest first.
    public let completed: [TripPay]
    /// Pay for trips not finished yet.
    public let upcomingPayCents: Int
    public let weeks: [Period]
    public let months: [Period]
    public var totalCents: Int { completed.reduce(0) { $0 + $1.payCents } }

    public init(trips: [Trip], expenses: [Expense], calendar: Calendar) {
        let byTrip = Dictionary(grouping: expenses, by: \.tripID)
        // A trip is paid for the week it was completed, not the week it was planned to end.
        let done = trips.filter { $0.status == .completed }
        completed = done.sorted { ($0.updatedAt, $0.number) > ($1.updatedAt, $1.number) }
            .map { TripPay(trip: $0, expensesCents: byTrip[$0.id]?.reduce(0) { $0 + $1.amountCents } ?? 0) }
        upcomingPayCents = trips.filter(\.status.isOpen).reduce(0) { $0 + $1.driverPayCents }
        let labels = TimeLabels(calendar: calendar)
        func periods(_ component: Calendar.Component, title: (Date) -> String) -> [Period] {
            var totals: [Date: (Int, Int)] = [:]
            for trip in done {
                guard let start = calendar.dateInterval(of: component, for: trip.updatedAt)?.start else { continue }
                let current = totals[start] ?? (0, 0)
                totals[start] = (current.0 + trip.driverPayCents, current.1 + 1)
            }
            return totals.keys.sorted(by: >).map { start in
                Period(title: title(start), start: LocalDate(start), payCents: totals[start]!.0, trips: totals[start]!.1)
            }
        }
        weeks = periods(.weekOfYear) { "Week of " + labels.day($0, now: $0) }
        months = periods(.month) { start in
            let parts = calendar.dateComponents([.year, .month], from: start)
            return "\(TimeLabels.months[(parts.month ?? 1) - 1]) \(parts.year ?? 0)"
        }
    }
}

/// The Profile tab, including what signing out would lose.
public struct ProfileState: Sendable, Hashable {
    public let driver: Driver?
    public let email: String?
    public let unsyncedCount: Int
    /// What those changes are, in words ("the delivery of O-5004 and its video").
    public let atStake: String

    public init(driver: Driver?, email: String?, unsyncedCount: Int, atStake: String = "") {
        self.driver = driver
        self.email = email
        self.unsyncedCount = unsyncedCount
        self.atStake = atStake
    }

    public var payTerms: String? {
        guard let driver else { return nil }
        switch driver.payType {
        case .percentage: return String(format: "%.1f%% of trip revenue", Double(driver.payRate) / 100)
        case .perMile: return MoneyFormat.dollars(driver.payRate) + " per mile"
        case .perTrip: return MoneyFormat.dollars(driver.payRate) + " per trip"
        case .perVehicle: return MoneyFormat.dollars(driver.payRate) + " per vehicle"
        }
    }

    /// Shown before signing out while changes have not reached dispatch.
    public var signOutWarning: String? {
        unsyncedCount == 0 ? nil : AuthError.unsyncedChanges(count: unsyncedCount, atStake: atStake).description
    }
}

/// Banners across the app (seed 000).
public struct BannerState: Sendable, Hashable {
    public let offline: String?
    /// What went wrong, with Retry and Dismiss beside it.
    public let error: String?
    public let isLoading: Bool
    /// What the loading banner says, while the first download runs.
    public var loading: String? { isLoading ? "Loading your trips…" : nil }
    public static let retryTitle = "Retry"
    public static let dismissTitle = "Dismiss"

    public init(status: SyncStatusSnapshot) {
        offline = status.isOnline ? nil : "You're offline — showing cached data"
        // Being offline is shown by its own banner, not as an error.
        error = status.isOnline ? status.lastError.map { "Couldn't sync: \($0)" } : nil
        isLoading = status.isSyncing && status.lastSyncedAt == nil
    }
}

/// The parts of `SyncStatus` banners depend on, as a value.
public struct SyncStatusSnapshot: Sendable, Hashable {
    public var isOnline: Bool
    public var isSyncing: Bool
    public var lastError: String?
    public var lastSyncedAt: Date?

    public init(isOnline: Bool, isSyncing: Bool, lastError: String?, lastSyncedAt: Date?) {
        self.isOnline = isOnline
        self.isSyncing = isSyncing
        self.lastError = lastError
        self.lastSyncedAt = lastSyncedAt
    }
}

/// The settlements on the Earnings tab: this week so far and the weeks
/// dispatch settled, each with its lines, as words and amounts to show.
public struct SettlementsState: Sendable, Hashable {
    public struct Line: Sendable, Hashable, Identifiable {
        public let id: Int
        public let what: String
        public let description: String
        public let amount: String
        public let takesOff: Bool
    }

    public struct Week: Sendable, Hashable, Identifiable {
        public let id: LocalDate
        /// "Nov 23 – 29, 2026".
        public let title: String
        /// "Paid Nov 30, 2026 · CHK 3051", "Approved", "So far (open)".
        public let status: String
        public let net: String
        public let negative: Bool
        public let lines: [Line]
        /// Set once dispatch approved it: its statement can be opened.
        public let settlementID: ID<Settlement>?
        public let statementName: String
    }

    public let current: Week?
    /// Newest first.
    public let past: [Week]
    /// When the server sent these figures; nil when never fetched.
    public let asOf: Date?

    public init(_ record: EarningsRecord?, calendar: Calendar) {
        asOf = record?.fetchedAt
        current = record.map { Self.week($0.earnings.current) }
        past = record?.earnings.settlements.map(Self.week) ?? []
    }

    static func week(_ settlement: Settlement) -> Week {
        let status = switch settlement.status {
        case .open: "So far (open)"
        case .approved: "Approved, to be paid"
        case .paid: "Paid \(settlement.paidOn.map(DayFormat.day) ?? "")" + (settlement.paidReference.isEmpty ? "" : " · \(settlement.paidReference)")
        }
        return Week(id: settlement.periodStart, title: DayFormat.span(settlement.periodStart, settlement.periodEnd) ?? "", status: status,
                    net: MoneyFormat.dollars(settlement.netCents), negative: settlement.netCents < 0,
                    lines: settlement.lines.enumerated().map { index, line in
                        Line(id: index, what: line.kind.label, description: line.description, amount: MoneyFormat.dollars(line.amountCents),
                             takesOff: line.amountCents < 0)
                    },
                    settlementID: settlement.id, statementName: "settlement-\(settlement.periodStart).pdf")
    }
}
