import Foundation

/// A customer's link to follow one order: the page at `path` (under the
/// server's public address) shows the order's progress and nothing else.
public struct TrackingLink: Codable, Sendable, Hashable {
    public var orderID: ID<Order>
    /// Unguessable; the link is `/track/{token}`.
    public var token: String
    public var url: String
    public var createdAt: Date
    /// When the link stops working: some days after delivery (nil while the order is under way).
    public var expiresAt: Date?

    public init(orderID: ID<Order>, token: String, url: String, createdAt: Date, expiresAt: Date?) {
        self.orderID = orderID
        self.token = token
        self.url = url
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case token, url
        case orderID = "order_id"
        case createdAt = "created_at"
        case expiresAt = "expires_at"
    }
}

/// What a tracking link shows the customer: where the vehicle's order
/// stands and when it should arrive. No address, no driver, no position.
public struct TrackingStatus: Codable, Sendable, Hashable {
    public var carrier: String
    /// Where the customer calls with a question (the carrier's profile); empty when not set.
    public var carrierPhone: String
    public var orderNumber: String
    public var vehicle: String
    public var status: OrderStatus
    /// From and to, as cities.
    public var pickupCity: String
    public var deliveryCity: String
    public var pickupWindow: String?
    public var deliveryWindow: String?
    public var pickedUpAt: Date?
    public var deliveredAt: Date?
    /// The stop the vehicle is headed for, while it is on its way.
    public var nextStop: StopKind?
    /// When the driver said they would be at the next stop.
    public var driverETA: Date?
    /// When the truck's recent positions and speed put it there; absent
    /// while the driver is not sharing their location.
    public var computedETA: Date?
    /// Miles left to the next stop, rounded; absent like `computed_eta`.
    public var milesToGo: Int?
    /// When any of this last changed.
    public var updatedAt: Date

    public init(carrier: String, carrierPhone: String = "", orderNumber: String, vehicle: String, status: OrderStatus, pickupCity: String, deliveryCity: String,
                pickupWindow: String?, deliveryWindow: String?, pickedUpAt: Date?, deliveredAt: Date?, nextStop: StopKind?,
                driverETA: Date?, computedETA: Date?, milesToGo: Int?, updatedAt: Date) {
        self.carrier = carrier
        self.carrierPhone = carrierPhone
        self.orderNumber = orderNumber
        self.vehicle = vehicle
        self.status = status
        self.pickupCity = pickupCity
        self.deliveryCity = deliveryCity
        self.pickupWindow = pickupWindow
        self.deliveryWindow = deliveryWindow
        self.pickedUpAt = pickedUpAt
        self.deliveredAt = deliveredAt
        self.nextStop = nextStop
        self.driverETA = driverETA
        self.computedETA = computedETA
        self.milesToGo = milesToGo
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case carrier, vehicle, status
        case carrierPhone = "carrier_phone"
        case orderNumber = "order_number"
        case pickupCity = "pickup_city"
        case deliveryCity = "delivery_city"
        case pickupWindow = "pickup_window"
        case deliveryWindow = "delivery_window"
        case pickedUpAt = "picked_up_at"
        case deliveredAt = "delivered_at"
        case nextStop = "next_stop"
        case driverETA = "driver_eta"
        case computedETA = "computed_eta"
        case milesToGo = "miles_to_go"
        case updatedAt = "updated_at"
    }
}

/// How long a tracking link lives, and what counts as the truck being followed now.
public enum TrackingRules {
    /// A link keeps working this long after the order is delivered or cancelled.
    public static let keptAfterDone: TimeInterval = 7 * 86_400
    /// Positions older than this are not shown: the driver paused sharing, or is out of signal.
    public static let livePositionAge: TimeInterval = 15 * 60

    /// Miles to go as the customer sees them: to the nearest 10 (at least
    /// 10), so that links to several orders on one truck cannot be used to
    /// place it.
    public static func roughMiles(_ meters: Double) -> Int {
        guard meters.isFinite, meters > 0 else { return 10 }
        return max(10, Int((meters / 1609.344 / 10).rounded()) * 10)
    }

    /// An estimated arrival as the customer sees it: the next quarter hour.
    public static func roughTime(_ date: Date) -> Date {
        let quarter = 15.0 * 60
        return Date(timeIntervalSince1970: (date.timeIntervalSince1970 / quarter).rounded(.up) * quarter)
    }

    /// The city and state of an address written "street, city, ST 12345" or
    /// "city, ST": the last two parts, when the last is a state (two capital
    /// letters, with or without a ZIP code, which may also follow as a part
    /// of its own) and the city holds no digits.
    /// Anything else shows no place at all rather than a street or a phone number.
    public static func city(of address: String) -> String {
        // Trimmed in place: Foundation's trimming cost 30,000 instructions an address, and a board page shows 100.
        var parts = address.split(whereSeparator: { $0 == "," || $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
            .map(trimmed).filter { !$0.isEmpty }
        if let last = parts.last, isZIP(last) { parts.removeLast() }
        guard parts.count >= 2 else { return "" }
        let (city, state) = (parts[parts.count - 2], parts[parts.count - 1])
        let words = state.split(separator: " ")
        guard let code = words.first, code.count == 2, code.allSatisfy({ $0.isASCII && $0.isUppercase }),
              words.count == 1 || (words.count == 2 && isZIP(words[1])),
              (1...40).contains(city.count), !city.contains(where: { $0.isNumber }) else { return "" }
        return "\(city), \(code)"
    }

    private static func trimmed(_ part: Substring) -> Substring {
        var part = part
        while part.first?.isWhitespace == true { part.removeFirst() }
        while part.last?.isWhitespace == true { part.removeLast() }
        return part
    }

    /// A US ZIP code, of five digits or ZIP+4.
    private static func isZIP(_ text: some StringProtocol) -> Bool {
        (text.count == 5 || text.count == 10) && text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "-") }
    }
}
