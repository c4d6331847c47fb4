import Foundation
import VroomXModels

/// Trips: a truck run carrying several orders, planned by dispatch. The
/// policy — what may change and when, the driver's pay, what the driver is
/// told — and the transactions; the SQL is `TripRepository`'s.
public struct TripService: Sendable {
    let store: Store

    public func list(_ scope: Scope, status: TripStatus? = nil) async throws -> [Trip] {
        try await store.read { try await TripRepository.all(scope, status: status, $0) }
    }

    /// These trips of the carrier (those it has; any order).
    func some(_ ids: [ID<Trip>], tenant: ID<Tenant>) async throws -> [Trip] {
        try await store.read { try await TripRepository.some(ids, tenant: tenant, $0) }
    }

    /// The carrier's trips numbered so, in any letter case.
    func numbered(_ numbers: [String], tenant: ID<Tenant>) async throws -> [Trip] {
        try await store.read { try await TripRepository.numbered(numbers, tenant: tenant, $0) }
    }

    /// The carrier's trips planned or under way.
    func open(tenant: ID<Tenant>) async throws -> [Trip] {
        try await store.read { try await TripRepository.open(tenant: tenant, $0) }
    }

    /// A driver's trips planned or under way.
    public func open(of driver: ID<Driver>, tenant: ID<Tenant>) async throws -> [Trip] {
        try await store.read { try await TripRepository.open(of: driver, tenant: tenant, $0) }
    }

    public func documents(_ scope: Scope, status: TripStatus? = nil, page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { try await TripRepository.documents(scope, status: status, page, $0) }
    }

    public func trip(_ id: ID<Trip>, _ scope: Scope) async throws -> Trip {
        guard let trip = try await store.read({ try await TripRepository.find(id, scope, $0) }) else { throw AppError.notFound("Trip") }
        return trip
    }

    public func document(_ id: ID<Trip>, _ scope: Scope) async throws -> String {
        guard let doc = try await store.read({ try await TripRepository.document(id, scope, $0) }) else { throw AppError.notFound("Trip") }
        return doc
    }

    public func create(_ request: CreateTripRequest, tenant: ID<Tenant>) async throws -> Trip {
        let number = try Validate.name(request.number, FieldLimits.tripNumber)
        try Validate.dateRange(request.startDate, request.endDate, field: "end_date")
        // Revenue typed at creation is dispatch's figure; without it the trip earns what its orders' vehicles are priced at.
        let typedRevenue = try request.revenueCents.map { try Validate.cents($0, field: "revenue_cents") }
        let revenue = typedRevenue ?? 0
        let miles = try Validate.number(request.miles, FieldLimits.tripMiles)
        let origin = try Validate.text(request.origin, FieldLimits.tripOrigin)
        let destination = try Validate.text(request.destination, FieldLimits.tripDestination)
        let setPay = try request.driverPayCents.map { try Validate.cents($0, field: "driver_pay_cents") }
        return try await store.write(tenant: tenant) { tx in
            try await store.claim(number, for: .trip, tx)
            var driver: Driver?
            if let driverID = request.driverID {
                driver = try await store.people.assignableDriver(driverID, tenant: tenant, tx.db)
            }
            // A new trip carries no vehicles yet: revenue and pay per vehicle follow its orders as they come (`followOrders`).
            let pay = setPay ?? driver.map { $0.payType.driverPay(rate: $0.payRate, revenueCents: revenue, miles: miles, vehicles: 0) } ?? 0
            let trip = Trip(id: ID(), number: number, driverID: driver?.id, status: .planned, startDate: request.startDate,
                            endDate: request.endDate, origin: origin, destination: destination, revenueCents: revenue,
                            driverPayCents: pay, miles: miles, version: 1, createdAt: tx.now, updatedAt: tx.now,
                            revenueSetByHand: typedRevenue != nil)
            do {
                try await TripRepository.insert(trip, tx)
            } catch DatabaseConstraintError.unique {
                throw AppError(409, .alreadyExists, "A trip numbered \(number) already exists.", field: "number")
            }
            try await TripRepository.rememberDriver(of: trip, tx)
            if let driver {
                try await store.notifications.notify(driver.id, .tripAssigned(trip), tx)
            }
            return trip
        }
    }

    public func update(_ id: ID<Trip>, _ request: UpdateTripRequest, tenant: ID<Tenant>) async throws -> Trip {
        let scope = Scope.dispatch(tenant: tenant)
        let number = try request.number.map { try Validate.name($0, FieldLimits.tripNumber) }
        return try await store.write(tenant: tenant) { tx in
            // A new number is claimed before any row is locked (see `claim`).
            if let number { try await store.claim(number, for: .trip, except: id.rawValue, tx) }
            guard var trip = try await TripRepository.lock(id, scope, tx.db) else { throw AppError.notFound("Trip") }
            let current = trip
            if let base = request.baseVersion {
                try Validate.baseVersion(base, current: trip.version)
                guard base == trip.version else {
                    throw AppError(409, .conflict, "Trip \(trip.number) was changed after version \(base) (it is at \(trip.version)).",
                                   field: "base_version")
                }
            }
            if let number { trip.number = number }
            if let status = request.status, status != trip.status {
                guard trip.status.canTransition(to: status) else {
                    throw AppError.invalidTransition(from: trip.status.rawValue, to: status.rawValue)
                }
                let vehicles = try await TripRepository.vehicles(of: id, tenant: tenant, tx.db)
                if let refusal = trip.statusRefusal(to: status, vehicles) {
                    throw AppError(409, .invalidTransition, refusal, field: "status")
                }
                trip.status = status
            }
            if let start = request.startDate { trip.startDate = start }
            if let end = request.endDate { trip.endDate = end }
            try Validate.dateRange(trip.startDate, trip.endDate, field: "end_date")
            if let origin = request.origin { trip.origin = try Validate.text(origin, FieldLimits.tripOrigin) }
            if let destination = request.destination { trip.destination = try Validate.text(destination, FieldLimits.tripDestination) }
            switch (request.revenueCents, request.revenueFollowsOrders) {
            case (_?, true?):
                throw AppError.validation("revenue_follows_orders", "Set revenue_cents or let the revenue follow the orders, not both.")
            case (let revenue?, _):
                (trip.revenueCents, trip.revenueSetByHand) = (try Validate.cents(revenue, field: "revenue_cents"), true)
            case (nil, true?):
                (trip.revenueCents, trip.revenueSetByHand) = (try await TripRepository.ordersRevenue(of: id, tenant: tenant, tx.db), false)
            case (nil, false?):
                trip.revenueSetByHand = true  // the figure it has, kept from now on
            case (nil, nil):
                break
            }
            if let pay = request.driverPayCents { trip.driverPayCents = try Validate.cents(pay, field: "driver_pay_cents") }
            if let miles = request.miles { trip.miles = try Validate.number(miles, FieldLimits.tripMiles) }
            // Pay that followed the driver's terms follows new revenue and miles; pay set by hand stays.
            if request.driverPayCents == nil, trip.revenueCents != current.revenueCents || trip.miles != current.miles,
               let driverID = trip.driverID, let driver = try await DriverRepository.find(driverID, tenant: tenant, tx.db) {
                let vehicles = try await Self.vehicleCount(id, tenant: tenant, tx.db)
                if current.driverPayCents == Self.termsPay(driver, current, vehicles: vehicles) {
                    trip.driverPayCents = Self.termsPay(driver, trip, vehicles: vehicles)
                }
            }
            guard trip != current else { return current }
            // A finished or cancelled trip's figures are what pay and revenue were settled with.
            var details = trip
            details.status = current.status
            if !current.status.isOpen, details != current {
                throw AppError(409, .invalidTransition, "Trip \(current.number) is \(current.status.label); its details are settled and no longer change.")
            }
            do {
                trip = try await save(trip, tx)
            } catch DatabaseConstraintError.unique {
                throw AppError(409, .alreadyExists, "A trip numbered \(trip.number) already exists.", field: "number")
            }
            if trip.status == .cancelled, current.status != .cancelled {
                // Vehicles still waiting go back to the board, off the trip and its driver's list.
                for original in try await OrderRepository.onTrip(id, statuses: [.new, .assigned], tenant: tenant, tx.db) {
                    var order = original
                    (order.tripID, order.driverID, order.status) = (nil, nil, .new)
                    _ = try await store.orders.save(order, from: original, tx)
                }
            }
            if let driver = trip.driverID {
                let changes = DriverChangeNote.changes(from: current, to: trip)
                if trip.status != current.status {
                    try await store.notifications.notify(driver, .tripStatus(trip, also: changes), tx)
                } else if !changes.isEmpty {
                    try await store.notifications.notify(driver, .tripChanged(trip, number: current.number, changes), tx)
                }
            }
            return trip
        }
    }

    /// Gives a trip to a driver (or takes it back with nil). Its orders that
    /// are not yet on a truck follow it; a trip with picked-up vehicles
    /// cannot change hands, since the vehicles are on the old driver's truck.
    public func assign(_ id: ID<Trip>, to driverID: ID<Driver>?, tenant: ID<Tenant>) async throws -> Trip {
        let scope = Scope.dispatch(tenant: tenant)
        return try await store.write(tenant: tenant) { tx in
            guard var trip = try await TripRepository.lock(id, scope, tx.db) else { throw AppError.notFound("Trip") }
            let previous = trip.driverID
            if previous == driverID { return trip }
            guard trip.status.isOpen else {
                throw AppError.conflict("A \(trip.status.label) trip cannot be reassigned.")
            }
            var newDriver: Driver?
            if let driverID {
                newDriver = try await store.people.assignableDriver(driverID, tenant: tenant, tx.db)
            }
            if driverID == nil, trip.status == .inProgress {
                throw AppError.conflict("A trip in progress must keep a driver; reassign it instead.")
            }
            let orders = try await OrderRepository.onTrip(id, tenant: tenant, tx.db)
            if orders.contains(where: { $0.status == .pickedUp }) {
                throw AppError.conflict("Trip \(trip.number) has picked-up vehicles and cannot change driver.")
            }
            // Pay that followed the previous driver's terms (or none, with no driver) follows the new
            // driver's; pay dispatch set by hand stays.
            var previousTerms: Driver?
            if let previous { previousTerms = try await DriverRepository.find(previous, tenant: tenant, tx.db) }
            let vehicles = orders.reduce(0) { $0 + Self.carried($1) }
            let defaultPay = { (driver: Driver?) in Self.termsPay(driver, trip, vehicles: vehicles) }
            if trip.driverPayCents == defaultPay(previousTerms) { trip.driverPayCents = defaultPay(newDriver) }
            trip.driverID = driverID
            trip = try await save(trip, tx)
            if let previous { tx.recordRevoke(.trip, id: trip.id.rawValue, from: previous) }

            for original in orders where original.status.isWaiting {
                var order = original
                order.driverID = driverID
                order.status = driverID == nil ? .new : .assigned
                _ = try await store.orders.save(order, from: original, tx)
            }
            // The expenses dispatch recorded on the trip now belong on the new driver's device, not the old one's;
            // those a driver recorded stay with that driver.
            for expense in try await TripRepository.dispatchExpenses(of: id, tenant: tenant, tx.db) {
                if let previous { tx.recordRevoke(.expense, id: expense.id, from: previous) }
                tx.recordUpsert(.expense, id: expense.id, document: expense.doc, visibleTo: driverID)
            }
            if let driverID { try await store.notifications.notify(driverID, .tripAssigned(trip), tx) }
            // The driver it was taken from must not drive to its pickups.
            if let previous {
                try await store.notifications.notify(previous, .tripTakenOff(trip, to: driverID), tx)
            }
            return trip
        }
    }

    /// Writes a trip as its next version, and notes who holds it: work a
    /// driver did on it while it was theirs (an expense spent offline) is
    /// theirs to record after dispatch gave the trip to someone else.
    /// What the driver's terms pay for a trip: by its revenue, its miles, or the vehicles it carries.
    static func termsPay(_ driver: Driver?, _ trip: Trip, vehicles: Int) -> Int {
        driver.map { $0.payType.driverPay(rate: $0.payRate, revenueCents: trip.revenueCents, miles: trip.miles, vehicles: vehicles) } ?? 0
    }

    /// The vehicles an order puts on its trip: none once cancelled.
    static func carried(_ order: Order) -> Int { order.status == .cancelled ? 0 : order.vehicles.count }

    /// What an order adds to its trip's revenue: its vehicles' prices, nothing once cancelled.
    static func earned(_ order: Order) -> Int { order.status == .cancelled ? 0 : order.revenueCents }

    /// A trip's revenue by its orders: the sum of what each earns, never past the largest amount a money field holds.
    static func revenue(of orders: [Order]) -> Int {
        let total = orders.reduce(0) { sum, order in
            let (added, overflow) = sum.addingReportingOverflow(earned(order))
            return overflow ? Int.max : added
        }
        return min(total, MoneyFormat.largestCents)
    }

    /// The vehicles a trip carries, its cancelled orders' left out: counted by
    /// the database, as `carried` counts an order at hand (a yard's trip may
    /// carry hundreds of orders; each write of one must not read them all).
    static func vehicleCount(_ trip: ID<Trip>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Int {
        try await TripRepository.vehiclesCarried(on: trip, tenant: tenant, db)
    }

    /// What an order's write did to the trips it left and joined: the vehicles and revenue each gained or lost.
    struct OrderShare: Equatable {
        var vehicles = 0
        var revenue = 0
        static func + (a: OrderShare, b: OrderShare) -> OrderShare { OrderShare(vehicles: a.vehicles + b.vehicles, revenue: a.revenue + b.revenue) }
        static prefix func - (a: OrderShare) -> OrderShare { OrderShare(vehicles: -a.vehicles, revenue: -a.revenue) }
        init(vehicles: Int = 0, revenue: Int = 0) { (self.vehicles, self.revenue) = (vehicles, revenue) }
        init(_ order: Order) { self.init(vehicles: TripService.carried(order), revenue: TripService.earned(order)) }
    }

    /// A trip's revenue that follows its orders follows an order coming
    /// onto it or leaving it, cancelled or repriced; pay by the driver's
    /// terms follows revenue and vehicles (pay dispatch set by hand stays).
    func followOrders(of saved: Order, from original: Order, _ tx: TenantTransaction) async throws {
        var changes: [ID<Trip>: OrderShare] = [:]
        if let trip = original.tripID { changes[trip, default: .init()] = changes[trip, default: .init()] + -OrderShare(original) }
        if let trip = saved.tripID { changes[trip, default: .init()] = changes[trip, default: .init()] + OrderShare(saved) }
        try await followOrders(changes, tx)
    }

    /// `changes`: what each trip gained (or, negative, lost) by orders already written.
    func followOrders(_ changes: [ID<Trip>: OrderShare], _ tx: TenantTransaction) async throws {
        for (id, change) in changes.sorted(by: { $0.key < $1.key }) where change != OrderShare() {
            // Read, not locked (no lock order to keep with the order rows): the save is optimistic, a trip changed meanwhile runs it again.
            guard let current = try await TripRepository.find(id, .dispatch(tenant: tx.tenant), tx.db), current.status.isOpen else { continue }
            var trip = current
            // Summed by the database: a yard's trip may carry hundreds of orders, each write of one must not read them all.
            if !trip.revenueSetByHand { trip.revenueCents = try await TripRepository.ordersRevenue(of: id, tenant: tx.tenant, tx.db) }
            if let driverID = current.driverID, let driver = try await DriverRepository.find(driverID, tenant: tx.tenant, tx.db) {
                // The order's row is written already: what the trip carried before is the count less the change.
                let vehicles = driver.payType == .perVehicle ? try await Self.vehicleCount(id, tenant: tx.tenant, tx.db) : 0
                if current.driverPayCents == Self.termsPay(driver, current, vehicles: vehicles - change.vehicles) {
                    trip.driverPayCents = Self.termsPay(driver, trip, vehicles: vehicles)
                }
            }
            if trip != current { _ = try await save(trip, tx) }
        }
    }

    /// A planned trip gets under way when its first vehicle is picked up:
    /// the driver's phone records the road from then on, and the map shows it.
    func startOnPickup(of saved: Order, from original: Order, _ tx: TenantTransaction) async throws {
        guard saved.status == .pickedUp, original.status != .pickedUp, let id = saved.tripID,
              let current = try await TripRepository.find(id, .dispatch(tenant: tx.tenant), tx.db), current.status == .planned else { return }
        var trip = current
        trip.status = .inProgress
        _ = try await save(trip, tx)
    }

    /// The driver starts a trip of theirs before the first pickup (to share
    /// the road to it). Starting one under way is a no-op, so a replayed tap
    /// succeeds; a finished or cancelled trip cannot start again.
    public func start(_ id: ID<Trip>, _ scope: Scope) async throws -> Trip {
        try await store.write(tenant: scope.tenant) { tx in
            guard let current = try await TripRepository.lock(id, scope, tx.db) else { throw AppError.notFound("Trip") }
            switch current.status {
            case .inProgress: return current
            case .completed, .cancelled:
                throw AppError(409, .invalidTransition, "Trip \(current.number) is \(current.status.label); it cannot start again.", field: "status")
            case .planned:
                // One trip under way at a time from the phone (a pickup on another still starts that one: it happened).
                if let driver = current.driverID, let running = try await TripRepository.open(of: driver, tenant: tx.tenant, tx.db)
                    .first(where: { $0.id != id && $0.status == .inProgress }) {
                    throw AppError(409, .conflict, TripRules.oneUnderWay(running: running.number, starting: current.number), field: "status")
                }
                var trip = current
                trip.status = .inProgress
                return try await save(trip, tx)
            }
        }
    }

    private func save(_ trip: Trip, _ tx: TenantTransaction) async throws -> Trip {
        var saved = trip
        saved.version = trip.version + 1
        saved.updatedAt = tx.now
        try await TripRepository.update(saved, from: trip, tx)
        try await TripRepository.rememberDriver(of: saved, tx)
        return saved
    }

    /// How long after dispatch gave a trip away its previous driver's
    /// offline expenses on it are still taken: a phone a week without signal.
    static let lateExpenseWindow: TimeInterval = 7 * 86_400

    /// Whether an expense of `day` the driver recorded on a trip they no
    /// longer hold can be theirs: they held the trip on that day (a day of
    /// slack for time zones), and let go of it within the window.
    static func heldWhenSpent(_ trip: ID<Trip>, driver: ID<Driver>, day: LocalDate, tenant: ID<Tenant>, now: Date,
                              _ db: any SQLExecutor) async throws -> Bool {
        guard let held = try await TripRepository.holding(trip, driver: driver, tenant: tenant, db) else { return false }
        return now.timeIntervalSince(held.released) <= lateExpenseWindow
            && day <= LocalDate(held.released).adding(days: 1) && day >= LocalDate(held.assigned).adding(days: -1)
    }
}

extension Store {
    /// Trips: listing, creating, editing and assigning them.
    public var trips: TripService { TripService(store: self) }
}
