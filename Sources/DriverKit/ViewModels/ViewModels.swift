import Foundation
import GRDB
import Observation
import VroomXModels

/// A database query whose result views observe. The first value is read
/// synchronously (screens render from the cache at once); later values
/// arrive whenever the rows it reads change.
@MainActor @Observable
public final class LiveQuery<Value: Sendable> {
    public private(set) var value: Value
    /// Stops observing when the query goes (an `isolated deinit` would need iOS 18.4).
    @ObservationIgnored private var observing: CancelledOnRelease?

    init(_ database: AppDatabase, placeholder: Value, _ fetch: @escaping @Sendable (Database) throws -> Value) {
        value = (try? database.reader.read(fetch)) ?? placeholder
        let values = ValueObservation.tracking(fetch).values(in: database.reader)
        observing = CancelledOnRelease(Task { [weak self] in
            do {
                for try await value in values { self?.value = value }
            } catch {}
        })
    }
}

/// Cancels a task when its last owner lets go of it.
final class CancelledOnRelease: Sendable {
    private let task: Task<Void, Never>
    init(_ task: Task<Void, Never>) { self.task = task }
    deinit { task.cancel() }
}

/// Home: the current trip and the next stop.
@MainActor @Observable
public final class HomeViewModel {
    let trips: LiveQuery<[Trip]>
    let orders: LiveQuery<[Order]>
    let account: LiveQuery<Account?>
    let clock: @Sendable () -> Date

    public init(app: DriverApp) {
        trips = LiveQuery(app.database, placeholder: [], AppDatabase.trips)
        orders = LiveQuery(app.database, placeholder: [], AppDatabase.orders)
        account = LiveQuery(app.database, placeholder: nil, AppDatabase.account)
        // "Today" and "10 minutes ago" by the server-corrected clock: the phone's own may be wrong.
        let serverClock = app.serverClock
        clock = { serverClock.now }
    }

    public var state: HomeState {
        HomeState(driver: account.value?.driver, trips: trips.value, orders: orders.value, today: LocalDate(clock()))
    }
}

/// Trips: the list, newest first.
@MainActor @Observable
public final class TripsViewModel {
    let trips: LiveQuery<[Trip]>

    public init(app: DriverApp) {
        trips = LiveQuery(app.database, placeholder: [], AppDatabase.trips)
    }

    public var list: [Trip] { trips.value }
}

/// One trip with its orders and expenses, and the actions on them.
@MainActor @Observable
public final class TripDetailViewModel {
    let app: DriverApp
    let tripID: ID<Trip>
    let detail: LiveQuery<TripDetailState?>
    public private(set) var lastError: String?

    public init(app: DriverApp, trip: ID<Trip>) {
        self.app = app
        tripID = trip
        detail = LiveQuery(app.database, placeholder: nil) { db in
            guard let found = try AppDatabase.trip(trip, db) else { return nil }
            return TripDetailState(trip: found, orders: try AppDatabase.orders(trip: trip, db),
                                   expenses: try AppDatabase.expenses(trip: trip, db))
        }
    }

    public var state: TripDetailState? { detail.value }

    public func updateStatus(_ order: ID<Order>, to status: OrderStatus) { attempt { try app.updateOrderStatus(order, to: status) } }
    /// "Start trip": offered while it is planned (`TripDetailState.canStart`).
    public func startTrip() { attempt { try app.startTrip(tripID) } }
    public func addExpense(_ category: ExpenseCategory, amountCents: Int, notes: String?) {
        attempt { try app.createExpense(trip: tripID, category: category, amountCents: amountCents, notes: notes) }
    }
    public func deleteExpense(_ id: ID<Expense>) { attempt { try app.deleteExpense(id) } }

    /// Queues a photo of an expense's receipt (it goes once the expense has reached the server).
    public func addReceipt(_ file: URL, to expense: ID<Expense>) async {
        do {
            try await app.addReceipt(file, to: expense)
            lastError = nil
        } catch {
            lastError = (error as? LocalRejection)?.message ?? "\(error)"
        }
    }

    /// "1 receipt", "2 receipts", or "no receipt", with those still waiting on the phone counted.
    public func receiptsLabel(_ expense: Expense) -> String {
        let count = (try? app.receiptCount(expense)) ?? expense.receipts.count
        return count == 0 ? "no receipt" : NumberText.count(count, "receipt")
    }

    private func attempt(_ action: () throws -> Void) {
        do {
            try action()
            lastError = nil
        } catch {
            lastError = (error as? LocalRejection)?.message ?? "\(error)"
        }
    }
}

/// Earnings: pay per completed trip, per week and per month, and the
/// weekly settlements dispatch approves and pays (as the server last sent
/// them, kept for reading with no signal).
@MainActor @Observable
public final class EarningsViewModel {
    let app: DriverApp
    let trips: LiveQuery<[Trip]>
    let expenses: LiveQuery<[Expense]>
    let calendar: Calendar
    /// The settlements as last fetched; nil until they ever were.
    public private(set) var settled: EarningsRecord?
    /// Why the settlements could not be fetched (the kept copy still shows).
    public private(set) var settlementsProblem: String?

    public init(app: DriverApp, calendar: Calendar = .current) {
        self.app = app
        trips = LiveQuery(app.database, placeholder: [], AppDatabase.trips)
        expenses = LiveQuery(app.database, placeholder: [], AppDatabase.allExpenses)
        self.calendar = calendar
        settled = try? app.database.savedEarnings()
    }

    public var state: EarningsState { EarningsState(trips: trips.value, expenses: expenses.value, calendar: calendar) }

    public var settlements: SettlementsState { SettlementsState(settled, calendar: calendar) }

    /// Asks the server for the settlements (pull to refresh, opening the tab).
    public func refreshSettlements() async {
        do {
            let record = try await app.refreshEarnings()
            settled = record
            settlementsProblem = record.isKeptCopy ? "Dispatch could not be reached: these are the figures as last received." : nil
        } catch {
            settlementsProblem = "Settlements show once the app reaches dispatch."
        }
    }

    /// A settled week's statement, saved as a PDF file to share or open.
    public func statementFile(_ week: SettlementsState.Week) async throws -> URL {
        guard let id = week.settlementID else {
            throw LocalRejection(code: .validationFailed, message: "This week is not settled yet: dispatch approves it first.")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(week.statementName)
        try await app.statement(id).write(to: file, options: .atomic)
        return file
    }
}

/// Messages: sections, filters, the unread badge, and opening a message.
@MainActor @Observable
public final class MessagesViewModel {
    public var filter: MessagesState.Filter = .all
    let app: DriverApp
    let notifications: LiveQuery<[DriverNotification]>
    let lines: LiveQuery<[ConversationLine]>
    let calendar: Calendar
    /// Why the last message or "Got it" was not taken (empty, too long), for the compose field.
    public private(set) var lastError: String?

    public init(app: DriverApp, calendar: Calendar = .current) {
        self.app = app
        notifications = LiveQuery(app.database, placeholder: [], AppDatabase.notifications)
        lines = LiveQuery(app.database, placeholder: [], AppDatabase.conversation)
        self.calendar = calendar
    }

    /// The conversation with dispatch, oldest first: what dispatch wrote and what the driver did.
    public var conversation: [ConversationLine] { lines.value }

    /// Writes to dispatch; false (with `lastError`) when the text cannot go.
    @discardableResult
    public func send(_ text: String, trip: ID<Trip>? = nil, order: ID<Order>? = nil) -> Bool {
        do {
            try app.sendMessage(text, trip: trip, order: order)
            lastError = nil
            return true
        } catch {
            lastError = (error as? LocalRejection)?.message ?? "\(error)"
            return false
        }
    }

    /// Writes to dispatch with photos (each goes once the message has); false (with `lastError`) when it cannot go.
    @discardableResult
    public func send(_ text: String, trip: ID<Trip>? = nil, order: ID<Order>? = nil, photos: [URL]) async -> Bool {
        guard !photos.isEmpty else { return send(text, trip: trip, order: order) }
        do {
            try await app.sendMessage(text, trip: trip, order: order, photos: photos)
            lastError = nil
            return true
        } catch {
            lastError = (error as? LocalRejection)?.message ?? "\(error)"
            return false
        }
    }

    /// "Got it" is offered on an urgent message not yet answered.
    public func canAcknowledge(_ notification: DriverNotification) -> Bool {
        notification.type == .urgent && notification.acknowledgedAt == nil
    }

    public func acknowledge(_ id: ID<DriverNotification>) {
        do {
            try app.acknowledge(id)
            lastError = nil
        } catch {
            lastError = (error as? LocalRejection)?.message ?? "\(error)"
        }
    }

    public var state: MessagesState {
        MessagesState(notifications.value, filter: filter, now: app.serverClock.now, calendar: calendar)
    }

    /// The tab badge.
    public var unreadCount: Int { notifications.value.filter(\.isUnread).count }

    /// Pull to refresh: asks the server for what is new (messages and the
    /// rest), then the list follows the cache.
    public func refresh() async { await app.syncNow() }

    /// Tapping a message marks it read and says what to open.
    public func open(_ id: ID<DriverNotification>) -> MessageDestination? {
        guard let notification = notifications.value.first(where: { $0.id == id }) else { return nil }
        if notification.isUnread { try? app.markNotificationRead(id) }
        return notification.destination
    }
}

/// Profile: who is signed in, and signing out without losing work.
@MainActor @Observable
public final class ProfileViewModel {
    let app: DriverApp
    let account: LiveQuery<Account?>

    public init(app: DriverApp) {
        self.app = app
        account = LiveQuery(app.database, placeholder: nil, AppDatabase.account)
    }

    public var state: ProfileState {
        // The database, not the status observer: a one-shot reader (the terminal) sees it at once.
        // Refusals not dropped and kept evidence are not waiting to go, but signing out would delete them: they count here.
        let unsynced = (try? app.database.atStakeCount()) ?? app.status.unsyncedCount
        return ProfileState(driver: account.value?.driver, email: account.value?.email, unsyncedCount: unsynced,
                            atStake: unsynced == 0 ? "" : (try? app.database.atStake()) ?? "")
    }

    /// Refuses (with the count) while changes have not reached dispatch,
    /// unless `force`.
    public func signOut(force: Bool = false) async throws {
        try await app.router.logOut(force: force)
    }

    /// Whether dispatch sees the driver's position while a trip is under way.
    public var locationSharing: Bool {
        get { access(keyPath: \.locationSharing); return app.locationSharing }
        set {
            withMutation(keyPath: \.locationSharing) { try? app.setLocationSharing(newValue) }
        }
    }
    public static let locationSharingNote = "Shared only with your dispatcher: while a trip is under way, and where you take each inspection photo."

    /// The Face ID switch onboarding promised, on a phone that has it.
    public var offersBiometrics: Bool { app.auth.biometricsAvailable }
    public var biometricsEnabled: Bool { app.auth.biometricsEnabled }
    public private(set) var biometricsMessage: String?

    /// Turning it on asks Face ID first (it must know the driver's face);
    /// turning it off leaves the PIN.
    public func setBiometrics(_ on: Bool) async {
        biometricsMessage = await app.auth.setBiometrics(enabled: on) ? nil : "Face ID didn't confirm it's you, so it stays off."
    }

    /// "Not sent yet": how many things have not reached dispatch, and
    /// whether one of them failed (the row turns red).
    public var notSent: (count: Int, failed: Bool) {
        let rows = NotSentViewModel.rows(of: app)
        return (rows.count, rows.contains(where: \.failed))
    }
}

/// The banners shown over every tab: offline, loading, and an error the
/// driver can retry or dismiss (seed 000).
@MainActor @Observable
public final class BannersViewModel {
    let app: DriverApp
    var status: SyncStatus { app.status }

    public init(app: DriverApp) { self.app = app }

    public var state: BannerState {
        BannerState(status: SyncStatusSnapshot(isOnline: status.isOnline, isSyncing: status.isSyncing,
                                               lastError: status.lastError, lastSyncedAt: status.lastSyncedAt))
    }

    /// Syncs again now; the banner goes if it works and comes back with the new reason if not.
    public func retry() async {
        status.dismissError()
        await app.syncNow()
    }

    public func dismissError() { status.dismissError() }
}

/// One order (seed 002): the vehicle, both stops with their windows and
/// contacts, the driver's ETAs, and the inspection that moves it next.
@MainActor @Observable
public final class OrderDetailViewModel {
    public private(set) var lastError: String?
    let app: DriverApp
    let orderID: ID<Order>
    let live: LiveQuery<Order?>

    public init(app: DriverApp, order: ID<Order>) {
        self.app = app
        orderID = order
        live = LiveQuery(app.database, placeholder: nil) { db in try AppDatabase.order(order, db) }
    }

    public var order: Order? { live.value }

    /// The inspection that moves the order on: pickup while assigned,
    /// delivery once picked up; none otherwise.
    public var nextInspection: Inspection.Kind? {
        // A load is picked up with its first vehicle: its others are still inspected at the pickup.
        if let order, order.status == .pickedUp, let inspections = try? app.database.inspections(order: order.id),
           inspections.contains(where: { $0.kind == .pickup && $0.completedAt != nil }),
           !InspectionRules.remaining(order, .pickup, completed: inspections).isEmpty {
            return .pickup
        }
        switch order?.status {
        case .assigned?: return .pickup
        case .pickedUp?: return .delivery
        default: return nil
        }
    }

    public var nextInspectionTitle: String? {
        guard let kind = nextInspection, let order else { return nil }
        let title = kind == .pickup ? "Start pickup inspection" : "Start delivery inspection"
        guard order.vehicles.count > 1, let next = nextVehicle(kind), let position = order.vehicles.firstIndex(of: next) else { return title }
        return "\(title): vehicle \(position + 1) of \(order.vehicles.count)"
    }

    /// The first vehicle whose inspection at this stop is not completed yet.
    func nextVehicle(_ kind: Inspection.Kind) -> Vehicle? {
        guard let order, let inspections = try? app.database.inspections(order: order.id) else { return nil }
        return InspectionRules.remaining(order, kind, completed: inspections).first
    }

    /// Whether money can be collected for the order now: at pickup (COP) or delivery (COD).
    public var canCollect: Bool { order?.status == .pickedUp || order?.status == .delivered }

    /// The methods a driver is handed money by.
    public static let collectionMethods: [PaymentMethod] = [.check, .cash, .card, .other]

    /// Records money collected for the order, with photos of the check or
    /// receipt; queued like any change. Returns whether it was recorded.
    @discardableResult
    public func collect(amount: String, method: PaymentMethod, reference: String, photos: [URL]) async -> Bool {
        guard let cents = DriverInput.cents(amount) else {
            lastError = "An amount looks like 1800.00."
            return false
        }
        do {
            try await app.collectPayment(order: orderID, amountCents: cents, method: method, reference: reference, photos: photos)
            lastError = nil
            return true
        } catch {
            lastError = (error as? LocalRejection)?.message ?? "\(error)"
            return false
        }
    }

    /// Whether the ETA for a stop can still change (not once it is done).
    public func canSetETA(_ kind: HomeState.NextStop.Kind) -> Bool {
        guard let status = order?.status else { return false }
        return kind == .pickup ? status == .assigned : status == .assigned || status == .pickedUp
    }

    public func setETA(_ kind: HomeState.NextStop.Kind, _ date: Date) {
        do {
            if kind == .pickup { try app.submitETA(orderID, pickup: date) } else { try app.submitETA(orderID, delivery: date) }
            lastError = nil
        } catch {
            lastError = (error as? LocalRejection)?.message ?? "\(error)"
        }
    }

    /// The stop a problem is reported at now: the pickup until the vehicle
    /// is on the truck, the delivery after; none once done or cancelled.
    public var problemStop: StopKind? {
        switch order?.status {
        case .new?, .assigned?: return .pickup
        case .pickedUp?: return .delivery
        default: return nil
        }
    }

    /// The problems a driver picks from at that stop (a dry run and damage
    /// before loading are pickup problems).
    public var problemChoices: [StopProblemKind] {
        guard let stop = problemStop else { return [] }
        return StopProblemKind.allCases.filter { $0.stops.contains(stop) }
    }

    /// The truck's time at a stop, as the fence saw it: "2 h 38 min on site",
    /// "On site 45 min so far"; nil before arriving.
    public func timeOnSite(_ kind: StopKind) -> String? {
        guard let visit = order?.visit(kind), let arrived = visit.arrivedAt else { return nil }
        if let onSite = visit.onSite { return "\(StopTimes.duration(onSite)) on site" }
        return "On site \(StopTimes.duration(app.serverClock.now.timeIntervalSince(arrived))) so far"
    }

    /// Each problem reported on the order, in the driver's words, oldest first.
    public var reportedProblems: [String] {
        let labels = TimeLabels(calendar: .current), now = app.serverClock.now
        return (order?.problems ?? []).map { "\($0.summary) · \(labels.relative($0.reportedAt, now: now))" }
    }

    /// Reports a problem at the current stop, with photos (each goes once
    /// the report has); queued like any change. Returns whether it was recorded.
    @discardableResult
    public func reportProblem(_ kind: StopProblemKind, note: String = "", photos: [URL] = []) async -> Bool {
        guard let stop = problemStop else {
            lastError = "This order has no stop left to report a problem at."
            return false
        }
        do {
            try await app.reportProblem(kind, at: stop, of: orderID, note: note, photos: photos)
            lastError = nil
            return true
        } catch {
            lastError = (error as? LocalRejection)?.message ?? "\(error)"
            return false
        }
    }

    /// The inspection screen for the next step (opens or resumes it).
    public func inspection() throws -> InspectionViewModel? {
        guard let kind = nextInspection else { return nil }
        return try InspectionViewModel(app: app, order: orderID, vehicle: nextVehicle(kind)?.id, kind: kind)
    }
}
