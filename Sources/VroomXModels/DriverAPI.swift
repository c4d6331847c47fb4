import Foundation

/// A list answer. Wrapping the array leaves room for paging fields later
/// without breaking clients.
public struct Items<Element: Codable & Sendable>: Codable, Sendable {
    public var items: [Element]
    public init(_ items: [Element]) { self.items = items }
}

extension Items: Equatable where Element: Equatable {}
extension Items: Hashable where Element: Hashable {}

public struct UpdateOrderStatusRequest: Codable, Sendable, Hashable {
    public var status: OrderStatus
    /// When it happened on the road. A change queued offline carries the
    /// moment of the tap, not of the sync; defaults to the server's now.
    public var occurredAt: Date?

    public init(status: OrderStatus, occurredAt: Date? = nil) {
        self.status = status
        self.occurredAt = occurredAt
    }

    enum CodingKeys: String, CodingKey {
        case status
        case occurredAt = "occurred_at"
    }
}

public struct UpdateETARequest: Codable, Sendable, Hashable {
    public var pickupETA: Date?
    public var deliveryETA: Date?

    public init(pickupETA: Date? = nil, deliveryETA: Date? = nil) {
        self.pickupETA = pickupETA
        self.deliveryETA = deliveryETA
    }

    enum CodingKeys: String, CodingKey {
        case pickupETA = "pickup_eta"
        case deliveryETA = "delivery_eta"
    }
}

public struct CreateExpenseRequest: Codable, Sendable, Hashable {
    /// Client-chosen id, so an expense recorded offline keeps its identity.
    public var id: ID<Expense>?
    public var tripID: ID<Trip>
    public var category: ExpenseCategory
    public var amountCents: Int
    public var date: LocalDate
    public var notes: String?
    /// For a fuel expense: the truck, how much fuel and the odometer.
    public var fuel: FuelPurchase?

    public init(id: ID<Expense>? = nil, tripID: ID<Trip>, category: ExpenseCategory, amountCents: Int,
                date: LocalDate, notes: String? = nil, fuel: FuelPurchase? = nil) {
        self.fuel = fuel
        self.id = id
        self.tripID = tripID
        self.category = category
        self.amountCents = amountCents
        self.date = date
        self.notes = notes
    }

    enum CodingKeys: String, CodingKey {
        case id, category, date, notes, fuel
        case tripID = "trip_id"
        case amountCents = "amount_cents"
    }
}
