import Foundation

public struct CreateDriverRequest: Codable, Sendable, Hashable {
    public var email: String
    public var name: String
    public var phone: String?
    public var payType: PayType
    public var payRate: Int

    public init(email: String, name: String, phone: String? = nil, payType: PayType, payRate: Int) {
        self.email = email
        self.name = name
        self.phone = phone
        self.payType = payType
        self.payRate = payRate
    }

    enum CodingKeys: String, CodingKey {
        case email, name, phone
        case payType = "pay_type"
        case payRate = "pay_rate"
    }
}

/// A dispatcher's edit of a driver: the fields given change. The email is
/// the driver's sign-in and stays. Pay terms apply to trips assigned from
/// then on; trips already assigned keep their pay.
public struct UpdateDriverRequest: Codable, Sendable, Hashable {
    public var name: String?
    public var phone: String?
    public var payType: PayType?
    public var payRate: Int?
    /// The version the edit was based on: a driver changed by someone else
    /// since then is a `conflict` instead of being overwritten.
    public var baseVersion: Int?

    public init(name: String? = nil, phone: String? = nil, payType: PayType? = nil, payRate: Int? = nil, baseVersion: Int? = nil) {
        self.name = name
        self.phone = phone
        self.payType = payType
        self.payRate = payRate
        self.baseVersion = baseVersion
    }

    enum CodingKeys: String, CodingKey {
        case name, phone
        case payType = "pay_type"
        case payRate = "pay_rate"
        case baseVersion = "base_version"
    }
}

public struct CreateTripRequest: Codable, Sendable, Hashable {
    public var number: String
    public var driverID: ID<Driver>?
    public var startDate: LocalDate?
    public var endDate: LocalDate?
    public var origin: String
    public var destination: String
    /// Revenue set by hand; without it the trip's revenue follows its orders' prices.
    public var revenueCents: Int?
    /// Defaults to what the driver's pay terms give for this trip.
    public var driverPayCents: Int?
    public var miles: Int

    public init(number: String, driverID: ID<Driver>? = nil, startDate: LocalDate? = nil, endDate: LocalDate? = nil,
                origin: String, destination: String, revenueCents: Int? = nil, driverPayCents: Int? = nil, miles: Int) {
        self.number = number
        self.driverID = driverID
        self.startDate = startDate
        self.endDate = endDate
        self.origin = origin
        self.destination = destination
        self.revenueCents = revenueCents
        self.driverPayCents = driverPayCents
        self.miles = miles
    }

    enum CodingKeys: String, CodingKey {
        case number, origin, destination, miles
        case driverID = "driver_id"
        case startDate = "start_date"
        case endDate = "end_date"
        case revenueCents = "revenue_cents"
        case driverPayCents = "driver_pay_cents"
    }
}

/// A partial update: only the fields present change.
public struct UpdateTripRequest: Codable, Sendable, Hashable {
    public var number: String?
    public var status: TripStatus?
    public var startDate: LocalDate?
    public var endDate: LocalDate?
    public var origin: String?
    public var destination: String?
    /// Sets the revenue by hand: it stops following the orders.
    public var revenueCents: Int?
    /// `true` lets the revenue follow the orders' prices again (not with `revenue_cents`).
    public var revenueFollowsOrders: Bool?
    public var driverPayCents: Int?
    public var miles: Int?
    /// The version an edit form was filled from: if the trip changed since,
    /// the edit is refused (409 `conflict`) rather than written over it.
    public var baseVersion: Int?

    public init(number: String? = nil, status: TripStatus? = nil, startDate: LocalDate? = nil, endDate: LocalDate? = nil,
                origin: String? = nil, destination: String? = nil, revenueCents: Int? = nil, revenueFollowsOrders: Bool? = nil,
                driverPayCents: Int? = nil, miles: Int? = nil, baseVersion: Int? = nil) {
        self.revenueFollowsOrders = revenueFollowsOrders
        self.number = number
        self.status = status
        self.startDate = startDate
        self.endDate = endDate
        self.origin = origin
        self.destination = destination
        self.revenueCents = revenueCents
        self.driverPayCents = driverPayCents
        self.miles = miles
        self.baseVersion = baseVersion
    }

    enum CodingKeys: String, CodingKey {
        case number, status, origin, destination, miles
        case startDate = "start_date"
        case endDate = "end_date"
        case revenueCents = "revenue_cents"
        case revenueFollowsOrders = "revenue_follows_orders"
        case baseVersion = "base_version"
        case driverPayCents = "driver_pay_cents"
    }
}

/// Assign to a driver, or unassign with `driver_id: null`.
public struct AssignTripRequest: Codable, Sendable, Hashable {
    public var driverID: ID<Driver>?
    public init(driverID: ID<Driver>?) { self.driverID = driverID }
    enum CodingKeys: String, CodingKey { case driverID = "driver_id" }

    // `driver_id` must be sent: null takes it back, while a body without the
    // key (an empty one) is a mistake, not a request to unassign.
    public init(from decoder: any Decoder) throws {
        driverID = try decoder.container(keyedBy: CodingKeys.self).decode(ID<Driver>?.self, forKey: .driverID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(driverID, forKey: .driverID)
    }
}

public struct CreateOrderRequest: Codable, Sendable, Hashable {
    public var number: String
    /// Putting an order on a trip assigns it to the trip's driver.
    public var tripID: ID<Trip>?
    /// 1 to `FieldLimits.vehiclesPerOrder`; the server gives each its id.
    public var vehicles: [Vehicle]
    /// Whether the request named its vehicles as a list (`vehicles`) or,
    /// as clients from before several vehicles per order do, as one
    /// `vehicle`: refusals name the fields the way the request did.
    public var listsVehicles: Bool
    public var pickup: Stop
    public var delivery: Stop
    /// The sum of the vehicles' prices, or with one vehicle and no price its price.
    public var revenueCents: Int?
    public var paymentTerms: String?
    /// The VIN is right as printed although its check digit says otherwise.
    public var acceptVINWarning: Bool?
    /// Who the load is for; their payment terms apply when the order says none.
    public var customerID: ID<Customer>?
    /// The load board's or broker's reference for the load.
    public var externalLoadID: String?

    /// An order of one vehicle earning `revenueCents`.
    public init(number: String, tripID: ID<Trip>? = nil, vehicle: Vehicle, pickup: Stop, delivery: Stop,
                revenueCents: Int, paymentTerms: String? = nil, acceptVINWarning: Bool? = nil, customerID: ID<Customer>? = nil,
                externalLoadID: String? = nil) {
        self.init(number: number, tripID: tripID, vehicles: [vehicle], pickup: pickup, delivery: delivery, revenueCents: revenueCents,
                  paymentTerms: paymentTerms, acceptVINWarning: acceptVINWarning, customerID: customerID, externalLoadID: externalLoadID)
        listsVehicles = false
    }

    public init(number: String, tripID: ID<Trip>? = nil, vehicles: [Vehicle], pickup: Stop, delivery: Stop,
                revenueCents: Int? = nil, paymentTerms: String? = nil, acceptVINWarning: Bool? = nil, customerID: ID<Customer>? = nil,
                externalLoadID: String? = nil) {
        self.customerID = customerID
        self.externalLoadID = externalLoadID
        self.acceptVINWarning = acceptVINWarning
        self.number = number
        self.tripID = tripID
        self.vehicles = vehicles
        self.listsVehicles = true
        self.pickup = pickup
        self.delivery = delivery
        self.revenueCents = revenueCents
        self.paymentTerms = paymentTerms
    }

    /// The request field of a vehicle's field: `vehicles[2].vin`, or `vehicle.vin` as the request named it.
    public func field(_ name: String, ofVehicle index: Int) -> String {
        listsVehicles ? "vehicles[\(index)].\(name)" : "vehicle.\(name)"
    }

    enum CodingKeys: String, CodingKey {
        case number, vehicle, vehicles, pickup, delivery
        case tripID = "trip_id"
        case revenueCents = "revenue_cents"
        case paymentTerms = "payment_terms"
        case acceptVINWarning = "accept_vin_warning"
        case customerID = "customer_id"
        case externalLoadID = "external_load_id"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        number = try container.decode(String.self, forKey: .number)
        tripID = try container.decodeIfPresent(ID<Trip>.self, forKey: .tripID)
        // Both keys are read (the API document is written from what is read); the list wins.
        let single = try container.decodeIfPresent(Vehicle.self, forKey: .vehicle)
        if let vehicles = try container.decodeIfPresent([Vehicle].self, forKey: .vehicles) {
            (self.vehicles, listsVehicles) = (vehicles, true)
        } else if let single {
            (vehicles, listsVehicles) = ([single], false)
        } else {
            throw DecodingError.keyNotFound(CodingKeys.vehicles, .init(codingPath: container.codingPath,
                                                                         debugDescription: "An order names its vehicles (or, as before, its vehicle)."))
        }
        pickup = try container.decode(Stop.self, forKey: .pickup)
        delivery = try container.decode(Stop.self, forKey: .delivery)
        revenueCents = try container.decodeIfPresent(Int.self, forKey: .revenueCents)
        paymentTerms = try container.decodeIfPresent(String.self, forKey: .paymentTerms)
        acceptVINWarning = try container.decodeIfPresent(Bool.self, forKey: .acceptVINWarning)
        customerID = try container.decodeIfPresent(ID<Customer>.self, forKey: .customerID)
        externalLoadID = try container.decodeIfPresent(String.self, forKey: .externalLoadID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(number, forKey: .number)
        try container.encodeIfPresent(tripID, forKey: .tripID)
        if listsVehicles { try container.encode(vehicles, forKey: .vehicles) } else { try container.encode(vehicles.first, forKey: .vehicle) }
        try container.encode(pickup, forKey: .pickup)
        try container.encode(delivery, forKey: .delivery)
        try container.encodeIfPresent(revenueCents, forKey: .revenueCents)
        try container.encodeIfPresent(paymentTerms, forKey: .paymentTerms)
        try container.encodeIfPresent(acceptVINWarning, forKey: .acceptVINWarning)
        try container.encodeIfPresent(customerID, forKey: .customerID)
        try container.encodeIfPresent(externalLoadID, forKey: .externalLoadID)
    }
}

/// A partial update by dispatch: only the fields present change. A status
/// change is validated by the order state machine and notifies the driver.
public struct UpdateOrderRequest: Codable, Sendable, Hashable {
    public var status: OrderStatus?
    /// Yesterday's shape: new details for the first vehicle (its id, type and price kept unless given).
    public var vehicle: Vehicle?
    /// The whole list: a vehicle with the id of one the order has is that
    /// vehicle edited, one without an id is added, one left out is removed.
    public var vehicles: [Vehicle]?
    public var pickup: Stop?
    public var delivery: Stop?
    public var pickupETA: Date?
    public var deliveryETA: Date?
    public var revenueCents: Int?
    public var paymentTerms: String?
    /// The version the edit was based on: details changed by someone else
    /// since then are a `conflict` instead of being overwritten.
    public var baseVersion: Int?
    /// The VIN is right as printed although its check digit says otherwise.
    public var acceptVINWarning: Bool?
    /// Another customer, or with `customer_id: null` none; absent leaves it.
    public var customerID: ID<Customer>??
    /// The load board's or broker's reference; empty removes it.
    public var externalLoadID: String?

    public init(status: OrderStatus? = nil, vehicle: Vehicle? = nil, pickup: Stop? = nil, delivery: Stop? = nil,
                pickupETA: Date? = nil, deliveryETA: Date? = nil, revenueCents: Int? = nil, paymentTerms: String? = nil,
                baseVersion: Int? = nil, acceptVINWarning: Bool? = nil, customerID: ID<Customer>?? = nil, externalLoadID: String? = nil,
                vehicles: [Vehicle]? = nil) {
        self.vehicles = vehicles
        self.customerID = customerID
        self.externalLoadID = externalLoadID
        self.acceptVINWarning = acceptVINWarning
        self.baseVersion = baseVersion
        self.status = status
        self.vehicle = vehicle
        self.pickup = pickup
        self.delivery = delivery
        self.pickupETA = pickupETA
        self.deliveryETA = deliveryETA
        self.revenueCents = revenueCents
        self.paymentTerms = paymentTerms
    }

    enum CodingKeys: String, CodingKey {
        case status, vehicle, vehicles, pickup, delivery
        case pickupETA = "pickup_eta"
        case deliveryETA = "delivery_eta"
        case revenueCents = "revenue_cents"
        case paymentTerms = "payment_terms"
        case baseVersion = "base_version"
        case acceptVINWarning = "accept_vin_warning"
        case customerID = "customer_id"
        case externalLoadID = "external_load_id"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        status = try container.decodeIfPresent(OrderStatus.self, forKey: .status)
        vehicle = try container.decodeIfPresent(Vehicle.self, forKey: .vehicle)
        vehicles = try container.decodeIfPresent([Vehicle].self, forKey: .vehicles)
        pickup = try container.decodeIfPresent(Stop.self, forKey: .pickup)
        delivery = try container.decodeIfPresent(Stop.self, forKey: .delivery)
        pickupETA = try container.decodeIfPresent(Date.self, forKey: .pickupETA)
        deliveryETA = try container.decodeIfPresent(Date.self, forKey: .deliveryETA)
        revenueCents = try container.decodeIfPresent(Int.self, forKey: .revenueCents)
        paymentTerms = try container.decodeIfPresent(String.self, forKey: .paymentTerms)
        baseVersion = try container.decodeIfPresent(Int.self, forKey: .baseVersion)
        acceptVINWarning = try container.decodeIfPresent(Bool.self, forKey: .acceptVINWarning)
        // Null takes the customer off; a body without the key leaves it.
        customerID = container.contains(.customerID) ? .some(try container.decode(ID<Customer>?.self, forKey: .customerID)) : nil
        externalLoadID = try container.decodeIfPresent(String.self, forKey: .externalLoadID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(status, forKey: .status)
        try container.encodeIfPresent(vehicle, forKey: .vehicle)
        try container.encodeIfPresent(vehicles, forKey: .vehicles)
        try container.encodeIfPresent(pickup, forKey: .pickup)
        try container.encodeIfPresent(delivery, forKey: .delivery)
        try container.encodeIfPresent(pickupETA, forKey: .pickupETA)
        try container.encodeIfPresent(deliveryETA, forKey: .deliveryETA)
        try container.encodeIfPresent(revenueCents, forKey: .revenueCents)
        try container.encodeIfPresent(paymentTerms, forKey: .paymentTerms)
        try container.encodeIfPresent(baseVersion, forKey: .baseVersion)
        try container.encodeIfPresent(acceptVINWarning, forKey: .acceptVINWarning)
        if let customerID { try container.encode(customerID, forKey: .customerID) }
        try container.encodeIfPresent(externalLoadID, forKey: .externalLoadID)
    }
}

/// Put an order on a trip (it follows the trip's driver), give it to a driver
/// directly, or with both null take it back to unassigned.
public struct AssignOrderRequest: Codable, Sendable, Hashable {
    public var tripID: ID<Trip>?
    public var driverID: ID<Driver>?

    public init(tripID: ID<Trip>? = nil, driverID: ID<Driver>? = nil) {
        self.tripID = tripID
        self.driverID = driverID
    }

    enum CodingKeys: String, CodingKey {
        case tripID = "trip_id"
        case driverID = "driver_id"
    }

    // At least one key must be sent: both null takes the order back to the
    // board, while a body with neither (an empty one, a misspelt key) is a
    // mistake, not a request to unassign.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.contains(.tripID) || container.contains(.driverID) else {
            throw DecodingError.keyNotFound(EitherKey(), .init(codingPath: [], debugDescription: "Send trip_id or driver_id."))
        }
        tripID = try container.decodeIfPresent(ID<Trip>.self, forKey: .tripID)
        driverID = try container.decodeIfPresent(ID<Driver>.self, forKey: .driverID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(tripID, forKey: .tripID)
        // Back to the board is said, not left to an empty body.
        if tripID == nil || driverID != nil { try container.encode(driverID, forKey: .driverID) }
    }
}

/// The refusal's name for a request that needs one of two keys.
private struct EitherKey: CodingKey {
    var stringValue: String { "trip_id or driver_id" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

public struct SendMessageRequest: Codable, Sendable, Hashable {
    public var driverID: ID<Driver>
    /// `dispatch_message` or `urgent`.
    public var type: NotificationType
    public var title: String
    public var body: String
    public var tripID: ID<Trip>?
    public var orderID: ID<Order>?

    public init(driverID: ID<Driver>, type: NotificationType, title: String, body: String,
                tripID: ID<Trip>? = nil, orderID: ID<Order>? = nil) {
        self.driverID = driverID
        self.type = type
        self.title = title
        self.body = body
        self.tripID = tripID
        self.orderID = orderID
    }

    enum CodingKeys: String, CodingKey {
        case type, title, body
        case driverID = "driver_id"
        case tripID = "trip_id"
        case orderID = "order_id"
    }
}
