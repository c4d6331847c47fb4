import Foundation

/// An offline change a client queued, replayed exactly once by the server.
/// Its `id` is the idempotency key: sending it again returns the first
/// result without applying it twice.
public struct Mutation: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Mutation>
    public var payload: MutationPayload
    /// The row version the change was made against. With it, a field another
    /// writer changed since then is a `conflict` instead of being overwritten.
    public var baseVersion: Int?
    /// Earlier mutations of the same batch this one needs; if one of them is
    /// rejected, this one is rejected with `dependency_failed`, unapplied.
    public var dependsOn: [ID<Mutation>]

    public init(id: ID<Mutation> = ID(), _ payload: MutationPayload, baseVersion: Int? = nil, dependsOn: [ID<Mutation>] = []) {
        self.id = id
        self.payload = payload
        self.baseVersion = baseVersion
        self.dependsOn = dependsOn
    }

    public var kind: MutationKind { payload.kind }

    enum CodingKeys: String, CodingKey {
        case id, kind, payload
        case baseVersion = "base_version"
        case dependsOn = "depends_on"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(ID.self, forKey: .id)
        baseVersion = try container.decodeIfPresent(Int.self, forKey: .baseVersion)
        dependsOn = try container.decodeIfPresent([ID].self, forKey: .dependsOn) ?? []
        switch try container.decode(MutationKind.self, forKey: .kind) {
        case .updateOrderStatus: payload = .updateOrderStatus(try container.decode(OrderStatusChange.self, forKey: .payload))
        case .updateOrderETA: payload = .updateOrderETA(try container.decode(OrderETAChange.self, forKey: .payload))
        case .createExpense: payload = .createExpense(try container.decode(CreateExpenseRequest.self, forKey: .payload))
        case .deleteExpense: payload = .deleteExpense(try container.decode(ExpenseReference.self, forKey: .payload))
        case .markNotificationRead:
            payload = .markNotificationRead(try container.decode(NotificationReference.self, forKey: .payload))
        case .saveInspection: payload = .saveInspection(try container.decode(InspectionSave.self, forKey: .payload))
        case .completeInspection: payload = .completeInspection(try container.decode(InspectionReference.self, forKey: .payload))
        case .recordOdometer: payload = .recordOdometer(try container.decode(RecordOdometerRequest.self, forKey: .payload))
        case .recordLocations: payload = .recordLocations(try container.decode(RecordLocationsRequest.self, forKey: .payload))
        case .collectPayment: payload = .collectPayment(try container.decode(CollectPaymentRequest.self, forKey: .payload))
        case .startTrip: payload = .startTrip(try container.decode(TripReference.self, forKey: .payload))
        case .sendMessage: payload = .sendMessage(try container.decode(SendDriverMessageRequest.self, forKey: .payload))
        case .reportStopProblem: payload = .reportStopProblem(try container.decode(ReportStopProblemRequest.self, forKey: .payload))
        case .acknowledgeNotification:
            payload = .acknowledgeNotification(try container.decode(NotificationReference.self, forKey: .payload))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encodeIfPresent(baseVersion, forKey: .baseVersion)
        if !dependsOn.isEmpty { try container.encode(dependsOn, forKey: .dependsOn) }
        switch payload {
        case .updateOrderStatus(let value): try container.encode(value, forKey: .payload)
        case .updateOrderETA(let value): try container.encode(value, forKey: .payload)
        case .createExpense(let value): try container.encode(value, forKey: .payload)
        case .deleteExpense(let value): try container.encode(value, forKey: .payload)
        case .markNotificationRead(let value): try container.encode(value, forKey: .payload)
        case .saveInspection(let value): try container.encode(value, forKey: .payload)
        case .completeInspection(let value): try container.encode(value, forKey: .payload)
        case .recordOdometer(let value): try container.encode(value, forKey: .payload)
        case .recordLocations(let value): try container.encode(value, forKey: .payload)
        case .collectPayment(let value): try container.encode(value, forKey: .payload)
        case .startTrip(let value): try container.encode(value, forKey: .payload)
        case .sendMessage(let value): try container.encode(value, forKey: .payload)
        case .reportStopProblem(let value): try container.encode(value, forKey: .payload)
        case .acknowledgeNotification(let value): try container.encode(value, forKey: .payload)
        }
    }
}

public enum MutationKind: String, Codable, Sendable, CaseIterable {
    case updateOrderStatus = "update_order_status"
    case updateOrderETA = "update_order_eta"
    case createExpense = "create_expense"
    case deleteExpense = "delete_expense"
    case markNotificationRead = "mark_notification_read"
    case saveInspection = "save_inspection"
    case completeInspection = "complete_inspection"
    case recordOdometer = "record_odometer"
    case recordLocations = "record_locations"
    case collectPayment = "collect_payment"
    case startTrip = "start_trip"
    case sendMessage = "send_message"
    case acknowledgeNotification = "acknowledge_notification"
    case reportStopProblem = "report_stop_problem"
}

public enum MutationPayload: Sendable, Hashable {
    case updateOrderStatus(OrderStatusChange)
    case updateOrderETA(OrderETAChange)
    case createExpense(CreateExpenseRequest)
    case deleteExpense(ExpenseReference)
    case markNotificationRead(NotificationReference)
    case saveInspection(InspectionSave)
    case completeInspection(InspectionReference)
    case recordOdometer(RecordOdometerRequest)
    case recordLocations(RecordLocationsRequest)
    case collectPayment(CollectPaymentRequest)
    case startTrip(TripReference)
    case sendMessage(SendDriverMessageRequest)
    /// "Got it" on an urgent message (`read_at` is when; it also marks it read).
    case acknowledgeNotification(NotificationReference)
    case reportStopProblem(ReportStopProblemRequest)

    public var kind: MutationKind {
        switch self {
        case .updateOrderStatus: return .updateOrderStatus
        case .updateOrderETA: return .updateOrderETA
        case .createExpense: return .createExpense
        case .deleteExpense: return .deleteExpense
        case .markNotificationRead: return .markNotificationRead
        case .saveInspection: return .saveInspection
        case .completeInspection: return .completeInspection
        case .recordOdometer: return .recordOdometer
        case .recordLocations: return .recordLocations
        case .collectPayment: return .collectPayment
        case .startTrip: return .startTrip
        case .sendMessage: return .sendMessage
        case .acknowledgeNotification: return .acknowledgeNotification
        case .reportStopProblem: return .reportStopProblem
        }
    }
}

public struct OrderStatusChange: Codable, Sendable, Hashable {
    public var orderID: ID<Order>
    public var status: OrderStatus
    public var occurredAt: Date?

    public init(orderID: ID<Order>, status: OrderStatus, occurredAt: Date? = nil) {
        self.orderID = orderID
        self.status = status
        self.occurredAt = occurredAt
    }

    enum CodingKeys: String, CodingKey {
        case status
        case orderID = "order_id"
        case occurredAt = "occurred_at"
    }
}

public struct OrderETAChange: Codable, Sendable, Hashable {
    public var orderID: ID<Order>
    public var pickupETA: Date?
    public var deliveryETA: Date?
    /// What the driver saw before editing: the edit applies only where the
    /// server still has it (see `ETAExpectation`).
    public var expected: ETAExpectation?

    public init(orderID: ID<Order>, pickupETA: Date? = nil, deliveryETA: Date? = nil, expected: ETAExpectation? = nil) {
        self.orderID = orderID
        self.pickupETA = pickupETA
        self.deliveryETA = deliveryETA
        self.expected = expected
    }

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case pickupETA = "pickup_eta"
        case deliveryETA = "delivery_eta"
        case expected
    }
}

/// The ETAs a driver saw when editing them, field by field: an edit applies
/// only if the server still has what the driver saw, otherwise it is a
/// `conflict` (someone else changed it meanwhile). Comparing values rather
/// than row versions lets a driver's own edits follow each other while
/// still queued: the second expects what the first set. A field left out
/// has no expectation; `null` expects no ETA.
public struct ETAExpectation: Codable, Sendable, Hashable {
    public var pickupETA: Date??
    public var deliveryETA: Date??

    public init(pickupETA: Date?? = nil, deliveryETA: Date?? = nil) {
        self.pickupETA = pickupETA
        self.deliveryETA = deliveryETA
    }

    enum CodingKeys: String, CodingKey {
        case pickupETA = "pickup_eta"
        case deliveryETA = "delivery_eta"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func field(_ key: CodingKeys) throws -> Date?? {
            guard container.contains(key) else { return nil }
            return .some(try container.decodeNil(forKey: key) ? nil : try container.decode(Date.self, forKey: key))
        }
        pickupETA = try field(.pickupETA)
        deliveryETA = try field(.deliveryETA)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        func field(_ value: Date??, _ key: CodingKeys) throws {
            guard let value else { return }
            if let date = value { try container.encode(date, forKey: key) } else { try container.encodeNil(forKey: key) }
        }
        try field(pickupETA, .pickupETA)
        try field(deliveryETA, .deliveryETA)
    }
}

public struct ExpenseReference: Codable, Sendable, Hashable {
    public var expenseID: ID<Expense>
    public init(expenseID: ID<Expense>) { self.expenseID = expenseID }
    enum CodingKeys: String, CodingKey { case expenseID = "expense_id" }
}

public struct NotificationReference: Codable, Sendable, Hashable {
    public var notificationID: ID<DriverNotification>
    /// When the driver read it, by the device's clock corrected to the
    /// server's (a receipt sent after a dead zone says when the message was
    /// read, not when the receipt arrived). Older apps leave it out.
    public var readAt: Date?
    public init(notificationID: ID<DriverNotification>, readAt: Date? = nil) {
        self.notificationID = notificationID
        self.readAt = readAt
    }
    enum CodingKeys: String, CodingKey { case notificationID = "notification_id", readAt = "read_at" }
}

/// The driver starts a trip (`POST /v1/trips/{id}/start` as a mutation).
public struct TripReference: Codable, Sendable, Hashable {
    public var tripID: ID<Trip>
    public init(tripID: ID<Trip>) { self.tripID = tripID }
    enum CodingKeys: String, CodingKey { case tripID = "trip_id" }
}

/// Starts or updates an inspection (`PUT /v1/inspections/{id}` as a mutation).
public struct InspectionSave: Codable, Sendable, Hashable {
    public var inspectionID: ID<Inspection>
    public var inspection: SaveInspectionRequest
    public init(inspectionID: ID<Inspection>, inspection: SaveInspectionRequest) {
        self.inspectionID = inspectionID
        self.inspection = inspection
    }
    enum CodingKeys: String, CodingKey {
        case inspection
        case inspectionID = "inspection_id"
    }
}

/// Completes an inspection (`POST /v1/inspections/{id}/complete` as a mutation).
public struct InspectionReference: Codable, Sendable, Hashable {
    public var inspectionID: ID<Inspection>
    /// When the driver completed it; it is also the pickup or delivery time.
    public var occurredAt: Date?
    public init(inspectionID: ID<Inspection>, occurredAt: Date? = nil) {
        self.inspectionID = inspectionID
        self.occurredAt = occurredAt
    }
    enum CodingKeys: String, CodingKey {
        case inspectionID = "inspection_id"
        case occurredAt = "occurred_at"
    }
}

public struct MutationBatch: Codable, Sendable, Hashable {
    public var mutations: [Mutation]
    public init(_ mutations: [Mutation]) { self.mutations = mutations }
}

public enum MutationOutcome: String, Codable, Sendable, CaseIterable {
    case applied
    case rejected
}

/// What happened to one mutation of a batch.
public struct MutationResult: Codable, Sendable, Hashable {
    public var id: ID<Mutation>
    public var outcome: MutationOutcome
    /// The mutation had already been applied; this is its original result.
    public var replayed: Bool
    /// Why it was rejected: `invalid_transition`, `conflict`, `not_found`,
    /// `validation_failed`, `dependency_failed`, `idempotency_key_reused`, …
    public var code: ErrorCode?
    public var message: String?
    /// The row as the server now has it, so a client can show the truth
    /// after a rejection and the confirmed state after success.
    public var row: ChangeRow?
    /// For a change to an inspection: its order as the server now has it
    /// (completing an inspection picks the vehicle up or delivers it).
    public var order: Order?
    /// For a batch of positions: what became of its fixes (how many reached
    /// dispatch, how many were left out and why), so the device can say.
    public var positions: RecordLocationsResult?

    public init(id: ID<Mutation>, outcome: MutationOutcome, replayed: Bool = false, code: ErrorCode? = nil,
                message: String? = nil, row: ChangeRow? = nil, order: Order? = nil, positions: RecordLocationsResult? = nil) {
        self.id = id
        self.outcome = outcome
        self.replayed = replayed
        self.code = code
        self.message = message
        self.row = row
        self.order = order
        self.positions = positions
    }

    enum CodingKeys: String, CodingKey { case id, outcome, replayed, code, message, entity, row, order, positions }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(ID<Mutation>.self, forKey: .id)
        outcome = try container.decode(MutationOutcome.self, forKey: .outcome)
        replayed = try container.decodeIfPresent(Bool.self, forKey: .replayed) ?? false
        code = try container.decodeIfPresent(ErrorCode.self, forKey: .code)
        message = try container.decodeIfPresent(String.self, forKey: .message)
        if let entity = try container.decodeIfPresent(ChangeEntity.self, forKey: .entity), container.contains(.row),
           try !container.decodeNil(forKey: .row) {
            row = try ChangeRow.decode(entity, from: container, forKey: .row)
        } else {
            row = nil
        }
        order = try container.decodeIfPresent(Order.self, forKey: .order)
        positions = try container.decodeIfPresent(RecordLocationsResult.self, forKey: .positions)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(replayed, forKey: .replayed)
        try container.encodeIfPresent(code, forKey: .code)
        try container.encodeIfPresent(message, forKey: .message)
        if let row {
            try container.encode(row.entity, forKey: .entity)
            try row.encode(to: &container, forKey: .row)
        }
        try container.encodeIfPresent(order, forKey: .order)
        try container.encodeIfPresent(positions, forKey: .positions)
    }
}

public struct MutationBatchResult: Codable, Sendable, Hashable {
    public var results: [MutationResult]
    public init(_ results: [MutationResult]) { self.results = results }
}

extension ChangeRow {
    public var id: String {
        switch self {
        case .driver(let value): value.id.rawValue
        case .trip(let value): value.id.rawValue
        case .order(let value): value.id.rawValue
        case .expense(let value): value.id.rawValue
        case .notification(let value): value.id.rawValue
        case .inspection(let value): value.id.rawValue
        case .equipment(let value): value.id.rawValue
        case .customer(let value): value.id.rawValue
        case .message(let value): value.id.rawValue
        }
    }

    /// The server's count of changes to the row, for the kinds that change
    /// after they are made (expenses never do; a notification only becomes read).
    public var version: Int? {
        switch self {
        case .driver(let value): value.version
        case .trip(let value): value.version
        case .order(let value): value.version
        case .inspection(let value): value.version
        case .equipment(let value): value.version
        case .customer(let value): value.version
        case .expense, .notification, .message: nil
        }
    }

    public var entity: ChangeEntity {
        switch self {
        case .driver: return .driver
        case .trip: return .trip
        case .order: return .order
        case .expense: return .expense
        case .notification: return .notification
        case .inspection: return .inspection
        case .equipment: return .equipment
        case .customer: return .customer
        case .message: return .message
        }
    }
}

extension ErrorCode {
    public static let dependencyFailed = ErrorCode("dependency_failed")
}
