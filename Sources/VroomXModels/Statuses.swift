/// Who a user is within a carrier.
public enum UserRole: String, Codable, Sendable, CaseIterable {
    case dispatcher
    case driver
}

/// Who is asking for a status change. Drivers may only move an order along
/// the road (pick up, deliver); dispatch may also assign, unassign and cancel.
public enum Actor: String, Sendable {
    case driver
    case dispatcher
}

/// The life of an order (one vehicle to move).
///
///     new ──▶ assigned ──▶ picked_up ──▶ delivered
///      │  ◀──   │
///      ▼        ▼
///   cancelled ◀─┘
///
/// Cancelling is possible while the vehicle has not been loaded; once picked
/// up it must be delivered. Moving to the current status is not a transition
/// and is answered as a no-op, so a driver's replayed tap never fails.
public enum OrderStatus: String, Codable, Sendable, CaseIterable {
    case new
    case assigned
    case pickedUp = "picked_up"
    case delivered
    case cancelled

    public var isOpen: Bool { self == .new || self == .assigned || self == .pickedUp }

    /// Not yet on the truck: the order can still move to another trip or back to the board.
    public var isWaiting: Bool { self == .new || self == .assigned }

    /// Statuses an order that is assigned to a driver may hold.
    public var requiresDriver: Bool { self == .assigned || self == .pickedUp || self == .delivered }

    public func allowedTransitions(by actor: Actor) -> Set<OrderStatus> {
        switch (self, actor) {
        case (.assigned, .driver): return [.pickedUp]
        case (.pickedUp, .driver): return [.delivered]
        case (_, .driver): return []
        case (.new, .dispatcher): return [.assigned, .cancelled]
        case (.assigned, .dispatcher): return [.new, .pickedUp, .cancelled]
        case (.pickedUp, .dispatcher): return [.delivered]
        case (.delivered, .dispatcher), (.cancelled, .dispatcher): return []
        }
    }

    public func canTransition(to next: OrderStatus, by actor: Actor) -> Bool {
        allowedTransitions(by: actor).contains(next)
    }
}

/// The life of a trip (one truck run carrying several orders), set by dispatch.
public enum TripStatus: String, Codable, Sendable, CaseIterable {
    case planned
    case inProgress = "in_progress"
    case completed
    case cancelled

    /// Planned or under way: the trip still takes orders, a driver and edits.
    /// A completed or cancelled one is settled.
    public var isOpen: Bool { self == .planned || self == .inProgress }

    public func canTransition(to next: TripStatus) -> Bool {
        switch (self, next) {
        case (.planned, .inProgress), (.planned, .cancelled),
             (.inProgress, .completed), (.inProgress, .cancelled), (.inProgress, .planned):
            return true
        default:
            return false
        }
    }
}

public enum ExpenseCategory: String, Codable, Sendable, CaseIterable {
    case fuel
    case tolls
    case repairs
    case lodging
    case other

    public var label: String { rawValue.capitalized }
}

public enum NotificationType: String, Codable, Sendable, CaseIterable {
    /// A trip or order given to the driver.
    case tripAssignment = "trip_assignment"
    /// Dispatch changed a trip or order the driver has: its status or its details.
    case statusChange = "status_change"
    case dispatchMessage = "dispatch_message"
    case urgent
}

/// How a driver is paid: a share of trip revenue (rate in basis points,
/// 2500 = 25 %), an amount per loaded mile, per trip, or per vehicle the
/// trip carries (each in cents).
public enum PayType: String, Codable, Sendable, CaseIterable {
    case percentage
    case perMile = "per_mile"
    case perTrip = "per_trip"
    case perVehicle = "per_vehicle"

    /// Default driver pay for a trip, in cents; never past the largest
    /// amount a money field holds (per-mile pay over absurd miles could be).
    /// `vehicles`: those the trip carries, cancelled orders' left out.
    public func driverPay(rate: Int, revenueCents: Int, miles: Int, vehicles: Int) -> Int {
        switch self {
        case .percentage: return MoneyRules.share(of: revenueCents, basisPoints: rate)
        case .perMile: return Self.capped(miles, rate)
        case .perTrip: return rate
        case .perVehicle: return Self.capped(vehicles, rate)
        }
    }

    private static func capped(_ count: Int, _ rate: Int) -> Int {
        let (product, overflow) = count.multipliedReportingOverflow(by: rate)
        return overflow ? MoneyFormat.largestCents : min(product, MoneyFormat.largestCents)
    }
}

public enum DevicePlatform: String, Codable, Sendable, CaseIterable {
    case ios
    case android
}

extension TripStatus {
    /// At the start of a line or on a badge: "In progress".
    public var title: String {
        switch self {
        case .planned: return "Planned"
        case .inProgress: return "In progress"
        case .completed: return "Completed"
        case .cancelled: return "Cancelled"
        }
    }

    /// How people say it ("picked up", "in progress").
    public var label: String {
        switch self {
        case .planned: return "planned"
        case .inProgress: return "in progress"
        case .completed: return "completed"
        case .cancelled: return "cancelled"
        }
    }
}

extension OrderStatus {
    /// At the start of a line or on a badge: "Picked up".
    public var title: String {
        switch self {
        case .new: return "New"
        case .assigned: return "Assigned"
        case .pickedUp: return "Picked up"
        case .delivered: return "Delivered"
        case .cancelled: return "Cancelled"
        }
    }

    /// How people say it ("picked up", "in progress").
    public var label: String {
        switch self {
        case .new: return "new"
        case .assigned: return "assigned"
        case .pickedUp: return "picked up"
        case .delivered: return "delivered"
        case .cancelled: return "cancelled"
        }
    }
}
