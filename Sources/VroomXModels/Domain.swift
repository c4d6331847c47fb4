import Foundation

// The rows a client stores. Money is integer minor units (cents); instants
// are `Date` (UTC ISO-8601 on the wire); calendar dates are `LocalDate`.
// Every mutable row carries a `version` that increases on each change.

public struct Tenant: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Tenant>
    public var name: String
    public var createdAt: Date

    public init(id: ID<Tenant>, name: String, createdAt: Date) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name
        case createdAt = "created_at"
    }
}

public struct User: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<User>
    public var tenantID: ID<Tenant>
    public var email: String
    public var role: UserRole
    public var hasPIN: Bool
    public var createdAt: Date

    public init(id: ID<User>, tenantID: ID<Tenant>, email: String, role: UserRole, hasPIN: Bool, createdAt: Date) {
        self.id = id
        self.tenantID = tenantID
        self.email = email
        self.role = role
        self.hasPIN = hasPIN
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, email, role
        case tenantID = "tenant_id"
        case hasPIN = "has_pin"
        case createdAt = "created_at"
    }
}

public struct Driver: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Driver>
    /// The auth user this driver record belongs to.
    public var userID: ID<User>
    public var name: String
    public var phone: String
    public var email: String
    public var payType: PayType
    /// Basis points for `percentage`, cents for `per_mile` and `per_trip`.
    public var payRate: Int
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date
    /// Set when the driver left the carrier: they cannot sign in or take
    /// work; their trips, orders and pay stay on record.
    public var deactivatedAt: Date?

    public init(id: ID<Driver>, userID: ID<User>, name: String, phone: String, email: String, payType: PayType,
                payRate: Int, version: Int, createdAt: Date, updatedAt: Date, deactivatedAt: Date? = nil) {
        self.deactivatedAt = deactivatedAt
        self.id = id
        self.userID = userID
        self.name = name
        self.phone = phone
        self.email = email
        self.payType = payType
        self.payRate = payRate
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, phone, email, version
        case userID = "user_id"
        case payType = "pay_type"
        case payRate = "pay_rate"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case deactivatedAt = "deactivated_at"
    }
}

public struct Trip: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Trip>
    public var number: String
    public var driverID: VroomXModels.ID<Driver>?
    public var status: TripStatus
    public var startDate: LocalDate?
    public var endDate: LocalDate?
    public var origin: String
    public var destination: String
    /// What the trip earns, in cents: the sum of its orders' prices (cancelled
    /// ones left out) unless dispatch set it by hand (`revenueSetByHand`).
    public var revenueCents: Int
    /// Dispatch typed the revenue: it no longer follows the orders.
    public var revenueSetByHand: Bool
    public var driverPayCents: Int
    public var miles: Int
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    /// The day (UTC) a completed trip was completed: its last change, as a
    /// completed trip no longer changes. A driver's pay for it counts then.
    public var completedOn: LocalDate? { status == .completed ? LocalDate(updatedAt) : nil }

    public init(id: VroomXModels.ID<Trip>, number: String, driverID: VroomXModels.ID<Driver>?, status: TripStatus, startDate: LocalDate?,
                endDate: LocalDate?, origin: String, destination: String, revenueCents: Int, driverPayCents: Int,
                miles: Int, version: Int, createdAt: Date, updatedAt: Date, revenueSetByHand: Bool = true) {
        self.id = id
        self.number = number
        self.driverID = driverID
        self.status = status
        self.revenueSetByHand = revenueSetByHand
        self.startDate = startDate
        self.endDate = endDate
        self.origin = origin
        self.destination = destination
        self.revenueCents = revenueCents
        self.driverPayCents = driverPayCents
        self.miles = miles
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, number, status, origin, destination, miles, version
        case driverID = "driver_id"
        case startDate = "start_date"
        case endDate = "end_date"
        case revenueCents = "revenue_cents"
        case revenueSetByHand = "revenue_set_by_hand"
        case driverPayCents = "driver_pay_cents"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try container.decode(VroomXModels.ID<Trip>.self, forKey: .id), number: try container.decode(String.self, forKey: .number),
                  driverID: try container.decodeIfPresent(VroomXModels.ID<Driver>.self, forKey: .driverID),
                  status: try container.decode(TripStatus.self, forKey: .status),
                  startDate: try container.decodeIfPresent(LocalDate.self, forKey: .startDate),
                  endDate: try container.decodeIfPresent(LocalDate.self, forKey: .endDate),
                  origin: try container.decode(String.self, forKey: .origin), destination: try container.decode(String.self, forKey: .destination),
                  revenueCents: try container.decode(Int.self, forKey: .revenueCents),
                  driverPayCents: try container.decode(Int.self, forKey: .driverPayCents), miles: try container.decode(Int.self, forKey: .miles),
                  version: try container.decode(Int.self, forKey: .version), createdAt: try container.decode(Date.self, forKey: .createdAt),
                  updatedAt: try container.decode(Date.self, forKey: .updatedAt),
                  // Trips written before revenue followed orders had it typed by hand.
                  revenueSetByHand: try container.decodeIfPresent(Bool.self, forKey: .revenueSetByHand) ?? true)
    }
}

/// What kind of vehicle it is: what it takes on the trailer and how it loads.
public enum VehicleType: String, Codable, Sendable, CaseIterable {
    case sedan, suv, pickup, van, motorcycle, heavy

    public var label: String {
        switch self {
        case .sedan: "Sedan"
        case .suv: "SUV"
        case .pickup: "Pickup"
        case .van: "Van"
        case .motorcycle: "Motorcycle"
        case .heavy: "Heavy"
        }
    }
}

/// One vehicle an order moves (an order moves 1 to
/// `FieldLimits.vehiclesPerOrder`).
public struct Vehicle: Codable, Sendable, Hashable {
    /// Given by the server; it stays with the vehicle through edits.
    public var id: ID<Vehicle>?
    public var year: Int?
    public var make: String
    public var model: String
    public var vin: String
    public var color: String
    public var type: VehicleType?
    /// Whether it runs and drives; an inoperable vehicle is winched on.
    public var operable: Bool
    /// The auction's lot number or the dealer's buyer number.
    public var lotNumber: String?
    /// What moving it earns; nil in a request that gives only the order's revenue.
    public var priceCents: Int?

    public init(id: ID<Vehicle>? = nil, year: Int? = nil, make: String = "", model: String = "", vin: String = "",
                color: String = "", type: VehicleType? = nil, operable: Bool = true, lotNumber: String? = nil,
                priceCents: Int? = nil) {
        self.id = id
        self.year = year
        self.make = make
        self.model = model
        self.vin = vin
        self.color = color
        self.type = type
        self.operable = operable
        self.lotNumber = lotNumber
        self.priceCents = priceCents
    }

    enum CodingKeys: String, CodingKey {
        case id, year, make, model, vin, color, type, operable
        case lotNumber = "lot_number"
        case priceCents = "price_cents"
    }

    /// Yesterday's vehicle (year, make, model, VIN, color) reads as an operable one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(ID<Vehicle>.self, forKey: .id)
        year = try container.decodeIfPresent(Int.self, forKey: .year)
        make = try container.decodeIfPresent(String.self, forKey: .make) ?? ""
        model = try container.decodeIfPresent(String.self, forKey: .model) ?? ""
        vin = try container.decodeIfPresent(String.self, forKey: .vin) ?? ""
        color = try container.decodeIfPresent(String.self, forKey: .color) ?? ""
        type = try container.decodeIfPresent(VehicleType.self, forKey: .type)
        operable = try container.decodeIfPresent(Bool.self, forKey: .operable) ?? true
        lotNumber = try container.decodeIfPresent(String.self, forKey: .lotNumber)
        priceCents = try container.decodeIfPresent(Int.self, forKey: .priceCents)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encodeIfPresent(year, forKey: .year)
        try container.encode(make, forKey: .make)
        try container.encode(model, forKey: .model)
        try container.encode(vin, forKey: .vin)
        try container.encode(color, forKey: .color)
        try container.encodeIfPresent(type, forKey: .type)
        try container.encode(operable, forKey: .operable)
        try container.encodeIfPresent(lotNumber, forKey: .lotNumber)
        try container.encodeIfPresent(priceCents, forKey: .priceCents)
    }

    /// "2021 Toyota Camry", skipping what is unknown.
    public var summary: String {
        [year.map(String.init), make, model].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}

/// Where a vehicle is picked up or delivered, who to call and when.
public struct Stop: Codable, Sendable, Hashable {
    public var name: String
    public var address: String
    public var contactName: String
    public var contactPhone: String
    public var windowStart: LocalDate?
    public var windowEnd: LocalDate?
    /// Where the stop is, when dispatch set it (or an address lookup found it).
    public var location: GeoPoint?
    /// The arrival fence around `location`; nil is `LocationRules.defaultRadiusMeters`.
    public var geofenceRadiusMeters: Int?

    public init(name: String = "", address: String, contactName: String = "", contactPhone: String = "",
                windowStart: LocalDate? = nil, windowEnd: LocalDate? = nil, location: GeoPoint? = nil, geofenceRadiusMeters: Int? = nil) {
        self.location = location
        self.geofenceRadiusMeters = geofenceRadiusMeters
        self.name = name
        self.address = address
        self.contactName = contactName
        self.contactPhone = contactPhone
        self.windowStart = windowStart
        self.windowEnd = windowEnd
    }

    enum CodingKeys: String, CodingKey {
        case name, address
        case contactName = "contact_name"
        case contactPhone = "contact_phone"
        case windowStart = "window_start"
        case windowEnd = "window_end"
        case location
        case geofenceRadiusMeters = "geofence_radius_meters"
    }
}

public struct Order: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Order>
    public var number: String
    public var tripID: VroomXModels.ID<Trip>?
    public var driverID: VroomXModels.ID<Driver>?
    /// The vehicles it moves, in the order dispatch listed them: never
    /// empty, each with its id and price (`revenueCents` is their sum).
    public var vehicles: [Vehicle]
    public var pickup: Stop
    public var delivery: Stop
    public var status: OrderStatus
    public var actualPickupDate: Date?
    public var actualDeliveryDate: Date?
    public var pickupETA: Date?
    public var deliveryETA: Date?
    public var revenueCents: Int
    public var paymentTerms: String
    /// When the truck's positions first stayed inside the stop's fence
    /// (see `Geofence.arrival`).
    public var arrivedAtPickup: Date?
    public var arrivedAtDelivery: Date?
    /// When the truck's fixes left the stop's fence after arriving and stayed
    /// out (see `Geofence.departure`).
    public var departedPickupAt: Date?
    public var departedDeliveryAt: Date?
    /// What the driver reported going wrong at its stops, oldest first.
    public var problems: [StopProblem]
    /// Who the load is for (and who is billed), when dispatch said.
    public var customerID: VroomXModels.ID<Customer>?
    /// The load board's or broker's reference for the load, as they write it.
    public var externalLoadID: String?
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: ID<Order>, number: String, tripID: ID<Trip>?, driverID: ID<Driver>?, vehicle: Vehicle,
                pickup: Stop, delivery: Stop, status: OrderStatus, actualPickupDate: Date?, actualDeliveryDate: Date?,
                pickupETA: Date?, deliveryETA: Date?, revenueCents: Int, paymentTerms: String, version: Int,
                createdAt: Date, updatedAt: Date, arrivedAtPickup: Date? = nil, arrivedAtDelivery: Date? = nil,
                customerID: ID<Customer>? = nil, externalLoadID: String? = nil, vehicles: [Vehicle]? = nil,
                departedPickupAt: Date? = nil, departedDeliveryAt: Date? = nil, problems: [StopProblem] = []) {
        self.departedPickupAt = departedPickupAt
        self.departedDeliveryAt = departedDeliveryAt
        self.problems = problems
        self.customerID = customerID
        self.externalLoadID = externalLoadID
        self.arrivedAtPickup = arrivedAtPickup
        self.arrivedAtDelivery = arrivedAtDelivery
        self.id = id
        self.number = number
        self.tripID = tripID
        self.driverID = driverID
        self.vehicles = vehicles.flatMap { $0.isEmpty ? nil : $0 } ?? [Self.onlyVehicle(vehicle, of: id, revenueCents: revenueCents)]
        self.pickup = pickup
        self.delivery = delivery
        self.status = status
        self.actualPickupDate = actualPickupDate
        self.actualDeliveryDate = actualDeliveryDate
        self.pickupETA = pickupETA
        self.deliveryETA = deliveryETA
        self.revenueCents = revenueCents
        self.paymentTerms = paymentTerms
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The first vehicle: all of a one-vehicle order, and what clients
    /// of the API before several vehicles per order read as `vehicle`.
    public var vehicle: Vehicle {
        get { vehicles.first ?? Vehicle() }
        set { if vehicles.isEmpty { vehicles = [newValue] } else { vehicles[0] = newValue } }
    }

    /// An order stored before several vehicles per order: its one vehicle
    /// takes the order's id and earns the order's revenue.
    public static func onlyVehicle(_ vehicle: Vehicle, of order: ID<Order>, revenueCents: Int) -> Vehicle {
        var only = vehicle
        if only.id == nil { only.id = VroomXModels.ID<Vehicle>(order.uuid) }
        if only.priceCents == nil { only.priceCents = revenueCents }
        return only
    }

    enum CodingKeys: String, CodingKey {
        case id, number, vehicle, vehicles, pickup, delivery, status, version
        case tripID = "trip_id"
        case driverID = "driver_id"
        case actualPickupDate = "actual_pickup_date"
        case actualDeliveryDate = "actual_delivery_date"
        case pickupETA = "pickup_eta"
        case deliveryETA = "delivery_eta"
        case revenueCents = "revenue_cents"
        case paymentTerms = "payment_terms"
        case arrivedAtPickup = "arrived_at_pickup"
        case arrivedAtDelivery = "arrived_at_delivery"
        case departedPickupAt = "departed_pickup_at"
        case departedDeliveryAt = "departed_delivery_at"
        case problems
        case customerID = "customer_id"
        case externalLoadID = "external_load_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// "2021 Toyota Camry", or "3 vehicles: 2021 Toyota Camry, …" for a load of several.
    public var vehiclesSummary: String {
        guard vehicles.count > 1 else { return vehicle.summary }
        let named = vehicles.map(\.summary).filter { !$0.isEmpty }
        return "\(vehicles.count) vehicles" + (named.isEmpty ? "" : ": " + named.joined(separator: ", "))
    }
}

/// An order's two stops and where the truck stands with them: what the rule
/// for the next stop reads, and all the dispatch map draws of an order. An
/// `Order` is one; the map reads a slimmer one (no vehicles, no money).
public protocol OrderStops {
    var id: ID<Order> { get }
    var number: String { get }
    var status: OrderStatus { get }
    var pickup: Stop { get }
    var delivery: Stop { get }
    var pickupETA: Date? { get }
    var deliveryETA: Date? { get }
    var arrivedAtPickup: Date? { get }
    var arrivedAtDelivery: Date? { get }
}

extension OrderStops {
    public func stop(_ kind: StopKind) -> Stop { kind == .pickup ? pickup : delivery }
    public func arrived(at kind: StopKind) -> Date? { kind == .pickup ? arrivedAtPickup : arrivedAtDelivery }
}

extension Order: OrderStops {}

extension Order {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let id = try container.decode(VroomXModels.ID<Order>.self, forKey: .id)
        let revenue = try container.decode(Int.self, forKey: .revenueCents)
        // An order written before several vehicles per order has only `vehicle`.
        let listed = try container.decodeIfPresent([Vehicle].self, forKey: .vehicles) ?? []
        let vehicles = listed.isEmpty ? [Self.onlyVehicle(try container.decode(Vehicle.self, forKey: .vehicle), of: id, revenueCents: revenue)]
                                      : listed
        self.init(id: id, number: try container.decode(String.self, forKey: .number),
                  tripID: try container.decodeIfPresent(VroomXModels.ID<Trip>.self, forKey: .tripID),
                  driverID: try container.decodeIfPresent(VroomXModels.ID<Driver>.self, forKey: .driverID), vehicle: vehicles[0],
                  pickup: try container.decode(Stop.self, forKey: .pickup), delivery: try container.decode(Stop.self, forKey: .delivery),
                  status: try container.decode(OrderStatus.self, forKey: .status),
                  actualPickupDate: try container.decodeIfPresent(Date.self, forKey: .actualPickupDate),
                  actualDeliveryDate: try container.decodeIfPresent(Date.self, forKey: .actualDeliveryDate),
                  pickupETA: try container.decodeIfPresent(Date.self, forKey: .pickupETA),
                  deliveryETA: try container.decodeIfPresent(Date.self, forKey: .deliveryETA), revenueCents: revenue,
                  paymentTerms: try container.decode(String.self, forKey: .paymentTerms),
                  version: try container.decode(Int.self, forKey: .version),
                  createdAt: try container.decode(Date.self, forKey: .createdAt),
                  updatedAt: try container.decode(Date.self, forKey: .updatedAt),
                  arrivedAtPickup: try container.decodeIfPresent(Date.self, forKey: .arrivedAtPickup),
                  arrivedAtDelivery: try container.decodeIfPresent(Date.self, forKey: .arrivedAtDelivery),
                  customerID: try container.decodeIfPresent(VroomXModels.ID<Customer>.self, forKey: .customerID),
                  externalLoadID: try container.decodeIfPresent(String.self, forKey: .externalLoadID), vehicles: vehicles,
                  departedPickupAt: try container.decodeIfPresent(Date.self, forKey: .departedPickupAt),
                  departedDeliveryAt: try container.decodeIfPresent(Date.self, forKey: .departedDeliveryAt),
                  problems: try container.decodeIfPresent([StopProblem].self, forKey: .problems) ?? [])
    }

    /// Both `vehicles` and, for clients from before, `vehicle` (the first).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(number, forKey: .number)
        try container.encodeIfPresent(tripID, forKey: .tripID)
        try container.encodeIfPresent(driverID, forKey: .driverID)
        try container.encode(vehicle, forKey: .vehicle)
        try container.encode(vehicles, forKey: .vehicles)
        try container.encode(pickup, forKey: .pickup)
        try container.encode(delivery, forKey: .delivery)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(actualPickupDate, forKey: .actualPickupDate)
        try container.encodeIfPresent(actualDeliveryDate, forKey: .actualDeliveryDate)
        try container.encodeIfPresent(pickupETA, forKey: .pickupETA)
        try container.encodeIfPresent(deliveryETA, forKey: .deliveryETA)
        try container.encode(revenueCents, forKey: .revenueCents)
        try container.encode(paymentTerms, forKey: .paymentTerms)
        try container.encodeIfPresent(arrivedAtPickup, forKey: .arrivedAtPickup)
        try container.encodeIfPresent(arrivedAtDelivery, forKey: .arrivedAtDelivery)
        try container.encodeIfPresent(departedPickupAt, forKey: .departedPickupAt)
        try container.encodeIfPresent(departedDeliveryAt, forKey: .departedDeliveryAt)
        try container.encode(problems, forKey: .problems)
        try container.encodeIfPresent(customerID, forKey: .customerID)
        try container.encodeIfPresent(externalLoadID, forKey: .externalLoadID)
        try container.encode(version, forKey: .version)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}

public struct Expense: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Expense>
    public var tripID: VroomXModels.ID<Trip>
    /// The driver who recorded it; nil when dispatch did.
    public var driverID: VroomXModels.ID<Driver>?
    public var category: ExpenseCategory
    public var amountCents: Int
    public var date: LocalDate
    public var notes: String
    /// What a fuel expense bought, when the driver said (fuel log).
    public var fuel: FuelPurchase?
    /// Recorded by a driver the trip no longer belonged to when it reached
    /// the server (spent offline, then dispatch gave the trip to someone
    /// else): kept on the trip, in that driver's name, and shown as such.
    public var afterReassignment: Bool
    /// Photos of the receipt, oldest first.
    public var receipts: [ReceiptPhoto]
    public var createdAt: Date

    public init(id: ID<Expense>, tripID: VroomXModels.ID<Trip>, driverID: VroomXModels.ID<Driver>?, category: ExpenseCategory,
                amountCents: Int, date: LocalDate, notes: String, fuel: FuelPurchase? = nil, afterReassignment: Bool = false,
                receipts: [ReceiptPhoto] = [], createdAt: Date) {
        self.fuel = fuel
        self.receipts = receipts
        self.id = id
        self.tripID = tripID
        self.driverID = driverID
        self.category = category
        self.amountCents = amountCents
        self.date = date
        self.notes = notes
        self.afterReassignment = afterReassignment
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, category, date, notes, fuel, receipts
        case tripID = "trip_id"
        case driverID = "driver_id"
        case amountCents = "amount_cents"
        case afterReassignment = "after_reassignment"
        case createdAt = "created_at"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(VroomXModels.ID<Expense>.self, forKey: .id)
        tripID = try container.decode(VroomXModels.ID<Trip>.self, forKey: .tripID)
        driverID = try container.decodeIfPresent(VroomXModels.ID<Driver>.self, forKey: .driverID)
        category = try container.decode(ExpenseCategory.self, forKey: .category)
        amountCents = try container.decode(Int.self, forKey: .amountCents)
        date = try container.decode(LocalDate.self, forKey: .date)
        notes = try container.decode(String.self, forKey: .notes)
        fuel = try container.decodeIfPresent(FuelPurchase.self, forKey: .fuel)
        // Expenses stored before the flag existed were all recorded on the driver's own trip.
        afterReassignment = try container.decodeIfPresent(Bool.self, forKey: .afterReassignment) ?? false
        receipts = try container.decodeIfPresent([ReceiptPhoto].self, forKey: .receipts) ?? []
        createdAt = try container.decode(Date.self, forKey: .createdAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(tripID, forKey: .tripID)
        try container.encodeIfPresent(driverID, forKey: .driverID)
        try container.encode(category, forKey: .category)
        try container.encode(amountCents, forKey: .amountCents)
        try container.encode(date, forKey: .date)
        try container.encode(notes, forKey: .notes)
        try container.encodeIfPresent(fuel, forKey: .fuel)
        // Said only when it is so: most expenses are recorded on the driver's own trip.
        if afterReassignment { try container.encode(true, forKey: .afterReassignment) }
        try container.encode(receipts, forKey: .receipts)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// What a notification points at, so a tap can open the right screen.
public struct NotificationData: Codable, Sendable, Hashable {
    public var tripID: ID<Trip>?
    public var orderID: ID<Order>?

    public init(tripID: ID<Trip>? = nil, orderID: ID<Order>? = nil) {
        self.tripID = tripID
        self.orderID = orderID
    }

    enum CodingKeys: String, CodingKey {
        case tripID = "trip_id"
        case orderID = "order_id"
    }
}

public struct DriverNotification: Codable, Sendable, Hashable, Identifiable {
    public var id: VroomXModels.ID<DriverNotification>
    public var driverID: VroomXModels.ID<Driver>
    public var type: NotificationType
    public var title: String
    public var body: String
    public var data: NotificationData
    /// When the driver read it (their phone's time, corrected to the server's).
    public var readAt: Date?
    /// When the server learnt it was read: later than `readAt` when the
    /// phone was offline. Nil for receipts stored before it was kept.
    public var readReceivedAt: Date?
    public var createdAt: Date
    /// An urgent message the driver answered "Got it" (by the phone's corrected clock).
    public var acknowledgedAt: Date?

    public init(id: VroomXModels.ID<DriverNotification>, driverID: VroomXModels.ID<Driver>, type: NotificationType, title: String, body: String,
                data: NotificationData, readAt: Date?, readReceivedAt: Date? = nil, createdAt: Date, acknowledgedAt: Date? = nil) {
        self.acknowledgedAt = acknowledgedAt
        self.id = id
        self.driverID = driverID
        self.type = type
        self.title = title
        self.body = body
        self.data = data
        self.readAt = readAt
        self.readReceivedAt = readReceivedAt
        self.createdAt = createdAt
    }

    public var isUnread: Bool { readAt == nil }

    /// The most a notification's body holds (a push carries less: `PushPayload.encodedFitting`).
    public static let longestBody = 4000

    enum CodingKeys: String, CodingKey {
        case id, type, title, body, data
        case driverID = "driver_id"
        case readAt = "read_at"
        case readReceivedAt = "read_received_at"
        case createdAt = "created_at"
        case acknowledgedAt = "acknowledged_at"
    }
}

public struct DeviceToken: Codable, Sendable, Hashable {
    public var token: String
    public var platform: DevicePlatform
    public var lastActiveAt: Date

    public init(token: String, platform: DevicePlatform, lastActiveAt: Date) {
        self.token = token
        self.platform = platform
        self.lastActiveAt = lastActiveAt
    }

    enum CodingKeys: String, CodingKey {
        case token, platform
        case lastActiveAt = "last_active_at"
    }
}
