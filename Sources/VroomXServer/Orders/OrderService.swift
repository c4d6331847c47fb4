import Foundation
import VroomXModels

/// Orders: one vehicle to pick up and deliver. The policy — what a new or
/// edited order must be, which trip and driver it goes with, what the driver
/// is told, what a change resets — and the transactions; the SQL is
/// `OrderRepository`'s.
public struct OrderService: Sendable {
    let store: Store

    public func list(_ scope: Scope, trip: ID<Trip>? = nil, status: OrderStatus? = nil) async throws -> [Order] {
        try await store.read { try await OrderRepository.all(scope, trip: trip, status: status, $0) }
    }

    /// The vehicles still to move on the carrier's trips under way (waiting
    /// or on the truck): what the map shows, without reading every order.
    func ahead(tenant: ID<Tenant>) async throws -> [OrderAhead] {
        try await store.read { try await OrderRepository.ahead(tenant: tenant, $0) }
    }

    /// A customer's orders, open ones (soonest pickup first) or past ones (latest first).
    func ofCustomer(_ customer: ID<Customer>, open: Bool, limit: Int?, tenant: ID<Tenant>) async throws -> [Order] {
        try await store.read { try await OrderRepository.ofCustomer(customer, open: open, limit: limit, tenant: tenant, $0) }
    }

    public func documents(_ scope: Scope, trip: ID<Trip>? = nil, status: OrderStatus? = nil, customer: ID<Customer>? = nil,
                          page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { try await OrderRepository.documents(scope, trip: trip, status: status, customer: customer, page, $0) }
    }

    public func order(_ id: ID<Order>, _ scope: Scope) async throws -> Order {
        guard let order = try await store.read({ try await OrderRepository.find(id, scope, $0) }) else { throw AppError.notFound("Order") }
        return order
    }

    public func document(_ id: ID<Order>, _ scope: Scope) async throws -> String {
        guard let doc = try await store.read({ try await OrderRepository.document(id, scope, $0) }) else { throw AppError.notFound("Order") }
        return doc
    }

    /// Orders of a trip the caller may see: a driver sees their own trip,
    /// and of its orders only those still theirs (a delivered order of a
    /// trip reassigned since stays with the driver who carried it).
    public func tripDocuments(_ trip: ID<Trip>, _ scope: Scope, page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { db in
            guard try await TripRepository.find(trip, scope, db) != nil else { throw AppError.notFound("Trip") }
            return try await OrderRepository.documents(scope, trip: trip, status: nil, customer: nil, page, db)
        }
    }

    public func create(_ request: CreateOrderRequest, tenant: ID<Tenant>) async throws -> Order {
        let valid = try ValidOrder(request, now: store.now)
        return try await store.write(tenant: tenant) { tx in try await insertOrder(valid, tenant: tenant, tx) }
    }

    /// Many orders in one transaction: all of them, or (the first refusal
    /// thrown, with the index of its order) none. A file of thousands takes
    /// longer than a request's database deadline on PostgreSQL (a few
    /// milliseconds an order), so it has `importDeadline`.
    func createMany(_ requests: [ValidOrder], tenant: ID<Tenant>, newCustomers: NewCustomers = .init()) async throws -> Int {
        try await DatabaseDeadline.allowing(Self.importDeadline) {
            try await store.write(tenant: tenant) { tx in
                var orders = requests
                // Customers a file names that the carrier does not have yet are made with the orders, or not at all.
                for (key, fields) in newCustomers.fields.sorted(by: { $0.key < $1.key }) {
                    let customer = try await store.customers.insert(fields, tx)
                    for index in newCustomers.orders[key] ?? [] { orders[index].customerID = customer.id }
                }
                return try await insertOrders(orders, tenant: tenant, tx)
            }
        }
    }

    /// The customers an import creates (by the key of their name), and the
    /// orders (by index) that are theirs.
    struct NewCustomers: Sendable {
        var fields: [String: CustomerService.CustomerFields] = [:]
        var orders: [String: [Int]] = [:]
    }

    static let importDeadline: Duration = .seconds(120)

    /// Many orders in one transaction, each checked as `create` checks
    /// one (for tools and benchmarks; the console's import names every bad line).
    public func createMany(_ requests: [CreateOrderRequest], tenant: ID<Tenant>) async throws -> Int {
        let now = store.now
        return try await createMany(try requests.map { try ValidOrder($0, now: now) }, tenant: tenant)
    }

    private func insertOrders(_ requests: [ValidOrder], tenant: ID<Tenant>, _ tx: TenantTransaction) async throws -> Int {
        // Rows are locked in the order one order's write takes them, but for the whole file at once: the number
        // claim, every trip named (by id), then their drivers. Taken as each line came, a later line's trip would be
        // locked after an earlier line's driver, while an edit of that trip holds it and waits for the driver.
        try await store.takeClaimTurn(for: .order, tx)
        let tripIDs = Set(requests.compactMap(\.tripID)).sorted()
        var drivers: Set<ID<Driver>> = []
        for tripID in tripIDs {
            if let driver = try await TripRepository.lock(tripID, .dispatch(tenant: tenant), tx.db)?.driverID { drivers.insert(driver) }
        }
        for driver in drivers.sorted() { _ = try await DriverRepository.lock(driver, tenant: tenant, tx.db) }
        for (index, order) in requests.enumerated() {
            do {
                _ = try await insertOrder(order, tenant: tenant, tx)
            } catch let error as AppError {
                throw BatchRefusal(index: index, error: error)
            }
        }
        return requests.count
    }

    /// What the database would refuse of a batch of new orders, every one
    /// of them (a number the carrier already has, ignoring case; a trip that
    /// is gone, closed, or whose driver is deactivated), by index. Read
    /// before writing, so an import names all its bad lines at once; the
    /// write checks again, for what changes meanwhile.
    func refusals(ofNew requests: [ValidOrder], tenant: ID<Tenant>) async throws -> [BatchRefusal] {
        try await store.read { db in
            let taken = try await OrderRepository.taken(requests.enumerated().map { ($0.offset, $0.element.number) }, tenant: tenant, db)
            var refusals = taken.map { BatchRefusal(index: $0.position, error: NumberedWork.order.taken($0.wanted, heldAs: $0.held)) }
            var tripRefusals: [ID<Trip>: AppError] = [:]
            for tripID in Set(requests.compactMap(\.tripID)) {
                guard let trip = try await TripRepository.find(tripID, .dispatch(tenant: tenant), db) else {
                    tripRefusals[tripID] = AppError(422, .validationFailed, "No such trip in this carrier.", field: "trip_id")
                    continue
                }
                do {
                    try Self.checkTakesOrders(trip)
                } catch let error as AppError {
                    tripRefusals[tripID] = error
                    continue
                }
                if let driverID = trip.driverID, let driver = try await DriverRepository.find(driverID, tenant: tenant, db), driver.deactivatedAt != nil {
                    tripRefusals[tripID] = AppError(422, .validationFailed, "Trip \(trip.number) is \(driver.name)'s, who is deactivated; reactivate them first.",
                                                    field: "trip_id")
                }
            }
            for (index, request) in requests.enumerated() {
                if let tripID = request.tripID, let error = tripRefusals[tripID] { refusals.append(BatchRefusal(index: index, error: error)) }
            }
            return refusals.sorted { $0.index < $1.index }
        }
    }

    private func insertOrder(_ valid: ValidOrder, tenant: ID<Tenant>, _ tx: TenantTransaction) async throws -> Order {
        let (number, vehicles, pickup, delivery, revenue, terms) = (valid.number, valid.vehicles, valid.pickup, valid.delivery, valid.revenue,
                                                                    valid.terms)
        // Claimed before any row is locked (see `claim`); an import's later orders hold the claim already.
        try await store.claim(number, for: .order, tx)
        var trip: Trip?
        if let tripID = valid.tripID {
            guard let found = try await TripRepository.lock(tripID, .dispatch(tenant: tenant), tx.db) else {
                throw AppError(422, .validationFailed, "No such trip in this carrier.", field: "trip_id")
            }
            try Self.checkTakesOrders(found)
            // The order goes to the trip's driver: held too, so they cannot be deactivated meanwhile.
            if let driver = found.driverID { _ = try await store.people.assignableDriver(driver, tenant: tenant, tx.db) }
            trip = found
        }
        let driver = trip?.driverID
        // The customer's terms stand when the order gives none.
        var customer: Customer?
        if let id = valid.customerID { customer = try await Self.customer(id, tenant: tenant, tx) }
        let order = Order(id: ID(), number: number, tripID: trip?.id, driverID: driver, vehicle: vehicles[0], pickup: pickup,
                          delivery: delivery, status: driver == nil ? .new : .assigned, actualPickupDate: nil,
                          actualDeliveryDate: nil, pickupETA: nil, deliveryETA: nil, revenueCents: revenue,
                          paymentTerms: terms.isEmpty ? customer?.paymentTerms ?? "" : terms, version: 1, createdAt: tx.now,
                          updatedAt: tx.now, customerID: customer?.id, externalLoadID: valid.externalLoadID, vehicles: vehicles)
        do {
            try await OrderRepository.insert(order, tx)
        } catch DatabaseConstraintError.unique {
            throw AppError(409, .alreadyExists, "An order numbered \(number) already exists.", field: "number")
        }
        try await OrderRepository.insertStatusEvent(order, occurredAt: tx.now, tx)
        if let trip { try await store.trips.followOrders([trip.id: TripService.OrderShare(order)], tx) }
        if let driver, let trip {
            try await store.notifications.notify(driver, .orderAssigned(order, trip: trip), tx)
        }
        return order
    }

    /// Dispatch edits: any fields, and a status change through the state
    /// machine. With `base_version` (the version an edit form was filled
    /// from), details someone else changed since are a `conflict` rather than
    /// silently overwritten; a driver's status or ETA changes meanwhile are not.
    public func update(_ id: ID<Order>, _ request: UpdateOrderRequest, tenant: ID<Tenant>) async throws -> Order {
        let scope = Scope.dispatch(tenant: tenant)
        return try await store.write(tenant: tenant) { tx in
            // Locked as every status change locks (the trip, then the order): a pickup set here and the trip's
            // cancellation happen one after the other.
            guard case let (locked, trip)? = try await lockWithTrip(id, scope, tx) else { throw AppError.notFound("Order") }
            var order = locked
            if let base = request.baseVersion { try Validate.baseVersion(base, current: order.version) }
            if let base = request.baseVersion, base < order.version, try await OrderRepository.fieldVersions(id, tx).details > base {
                throw AppError(409, .conflict, "Someone else changed order \(order.number) since version \(base); it is now version \(order.version).",
                               field: "base_version")
            }
            if case let customer?? = request.customerID { _ = try await Self.customer(customer, tenant: tenant, tx) }
            if let customer = request.customerID, customer != order.customerID,
               let invoice = try await InvoiceRepository.invoices(ofOrders: [order.id], tenant: tenant, tx.db)[order.id] {
                let number = try await InvoiceRepository.find(invoice, tenant: tenant, tx.db)?.number
                throw AppError(409, .invalidTransition, "Order \(order.number) is billed on \(number.map { "invoice \($0)" } ?? "a draft invoice"): void that invoice to bill another customer.",
                               field: "customer_id")
            }
            let inspections = request.vehicles == nil ? [] : try await InspectionRepository.of(order.id, tx)
            let onTruck = Self.onTruck(order, inspections: inspections)
            let edited = try Problems.first { Self.edited(order, by: request, onTruck: onTruck, now: tx.now, &$0) }
            if edited != order {
                let before = order
                order = try await save(edited, from: order, tx)
                // A vehicle taken off a load on the truck may leave its stop done: the stop then finishes as the last inspection would.
                if before.vehicles.count != order.vehicles.count, order.status == .pickedUp {
                    try await store.inspections.mailWhenDone(order, .pickup, inspections: inspections, tx)
                    if let status = InspectionRules.move(order, completing: .delivery, inspections: inspections),
                       inspections.contains(where: { $0.kind == .delivery && $0.completedAt != nil }) {
                        order = try await changeStatus(order, to: status, occurredAt: nil, by: .dispatcher, tx)
                        try await store.inspections.mailWhenDone(order, .delivery, inspections: inspections, tx)
                    }
                }
                let changes = DriverChangeNote.changes(from: before, to: order)
                if let driver = order.driverID, !changes.isEmpty, order.status != .delivered, order.status != .cancelled {
                    try await store.notifications.notify(driver, .orderChanged(order, changes), tx)
                }
            }
            if let status = request.status {
                if order.status != status { try Self.checkTripCarries(trip, to: status) }
                order = try await changeStatus(order, to: status, occurredAt: nil, by: .dispatcher, tx)
            }
            return order
        }
    }

    /// The order with a dispatcher's edits of its details applied, each
    /// refusal kept in `problems` (the console shows them all at once).
    static func edited(_ order: Order, by request: UpdateOrderRequest, onTruck: Set<ID<Vehicle>>? = nil, now: Date,
                       _ problems: inout Problems) -> Order {
        var edited = order
        edited.vehicles = ValidVehicles.edited(order, by: request, onTruck: onTruck, now: now, &problems)
        edited.revenueCents = edited.vehicles.reduce(0) { $0 + ($1.priceCents ?? 0) }
        if let pickup = request.pickup { edited.pickup = Validate.stop(pickup, field: "pickup", &problems) }
        if let delivery = request.delivery { edited.delivery = Validate.stop(delivery, field: "delivery", &problems) }
        // Checked when a stop changes: an edit of anything else never fails on older stops.
        if edited.pickup != order.pickup || edited.delivery != order.delivery {
            problems.check(()) { try Validate.stops(pickup: edited.pickup, delivery: edited.delivery) }
        }
        if let eta = request.pickupETA { problems.check(()) { try checkETA(eta, field: "pickup_eta", now: now) }; edited.pickupETA = eta }
        if let eta = request.deliveryETA { problems.check(()) { try checkETA(eta, field: "delivery_eta", now: now) }; edited.deliveryETA = eta }
        if let terms = request.paymentTerms {
            edited.paymentTerms = problems.check(terms) { try Validate.text(terms, FieldLimits.paymentTerms) }
        }
        if let customer = request.customerID { edited.customerID = customer }
        if let reference = request.externalLoadID {
            edited.externalLoadID = problems.check(order.externalLoadID) { try Validate.externalLoadID(reference) }
        }
        return edited
    }

    /// The vehicles of an order on the truck: those whose pickup inspection is completed, or every one of a
    /// load picked up or delivered without inspections (dispatch marked it); none before pickup.
    static func onTruck(_ order: Order, inspections: [Inspection]) -> Set<ID<Vehicle>> {
        guard order.status == .pickedUp || order.status == .delivered else { return [] }
        let inspected = Set(inspections.filter { $0.kind == .pickup && $0.completedAt != nil }
            .compactMap { InspectionRules.vehicle(of: order, $0.vehicleID)?.id })
        return inspected.isEmpty ? Set(order.vehicles.compactMap(\.id)) : inspected
    }

    /// The carrier's customer an order names (another carrier's is no such customer).
    static func customer(_ id: ID<Customer>, tenant: ID<Tenant>, _ tx: TenantTransaction) async throws -> Customer {
        guard let customer = try await CustomerRepository.find(id, tenant: tenant, tx.db) else {
            throw AppError(422, .validationFailed, "No such customer in this carrier.", field: "customer_id")
        }
        return customer
    }

    /// Writes an order's new state with the next version, if nobody
    /// changed the row since it was read, and what follows from the change:
    /// an arrival or ETA of another driver or another place starts over, the
    /// status and ETA histories get their line, inspections follow the order
    /// to its new driver.
    func save(_ order: Order, from original: Order, _ tx: TenantTransaction) async throws -> Order {
        precondition(order.id == original.id && order.version == original.version)
        var saved = order
        // An arrival belongs to the driver who made it at the place the stop was: a new driver or a moved stop starts over.
        // So does an ETA: it told when that driver's truck would be there (the ETA history keeps it).
        // A departure goes with its arrival; problems the last driver reported stay (dispatch still needs them).
        if saved.driverID != original.driverID {
            (saved.arrivedAtPickup, saved.arrivedAtDelivery) = (nil, nil)
            (saved.pickupETA, saved.deliveryETA) = (nil, nil)
        }
        if saved.pickup.location != original.pickup.location || saved.pickup.geofenceRadiusMeters != original.pickup.geofenceRadiusMeters {
            saved.arrivedAtPickup = nil
        }
        if saved.delivery.location != original.delivery.location
            || saved.delivery.geofenceRadiusMeters != original.delivery.geofenceRadiusMeters {
            saved.arrivedAtDelivery = nil
        }
        if saved.arrivedAtPickup == nil { saved.departedPickupAt = nil }
        if saved.arrivedAtDelivery == nil { saved.departedDeliveryAt = nil }
        saved.version = order.version + 1
        saved.updatedAt = tx.now
        try await OrderRepository.update(saved, from: original, tx)
        // Dispatch moved a window: a new trouble is told again. Then the order's own facts are judged.
        if saved.pickup.windowStart != original.pickup.windowStart || saved.pickup.windowEnd != original.pickup.windowEnd
            || saved.delivery.windowStart != original.delivery.windowStart || saved.delivery.windowEnd != original.delivery.windowEnd {
            try await OrderRepository.clearAlert(saved.id, tx)
        }
        try await OrderAlertService.alertIfDue(saved, tx)
        if saved.status != original.status {
            let occurredAt = switch saved.status {
            case .pickedUp: saved.actualPickupDate
            case .delivered: saved.actualDeliveryDate
            default: nil as Date?
            }
            try await OrderRepository.insertStatusEvent(saved, occurredAt: occurredAt ?? tx.now, tx)
            // A delivery prepares the customer's invoice, for dispatch to check and send; so does cancelling after a dry run (its fee).
            if saved.isBillable { try await store.invoices.prepare(for: saved, tx) }
        } else if saved.status == .delivered,
                  saved.vehicles != original.vehicles || saved.number != original.number || saved.externalLoadID != original.externalLoadID {
            try await store.invoices.follow(saved, tx)
        }
        if saved.driverID != original.driverID {
            try await store.inspections.handOver(of: saved, from: original.driverID, tx)
        }
        try await store.trips.followOrders(of: saved, from: original, tx)
        try await store.trips.startOnPickup(of: saved, from: original, tx)
        if saved.pickupETA != original.pickupETA || saved.deliveryETA != original.deliveryETA {
            // Cleared by a reassignment: the line keeps the previous driver's last ETAs.
            let cleared = saved.driverID != original.driverID && saved.pickupETA == nil && saved.deliveryETA == nil
            let line = cleared ? original : saved
            try await OrderRepository.insertETAEvent(saved.id, driver: line.driverID, pickup: line.pickupETA, delivery: line.deliveryETA,
                                                     cleared: cleared, tx)
        }
        return saved
    }
}

extension Store {
    /// Orders: listing, creating (one or a file of them), editing, status, ETAs and assignment.
    public var orders: OrderService { OrderService(store: self) }
}
