import Foundation
import VroomXModels

/// A driver's conversation with dispatch: the driver's messages (in
/// general, or about a trip or an order), dispatch's beside them, dispatch's
/// inbox and what it has read. Dispatch's side is sent by
/// `NotificationService.send`; the SQL is `ConversationRepository`'s.
public struct ConversationService: Sendable {
    let store: Store

    /// Messages from a driver dispatch has not opened before the driver must
    /// call instead: the inbox, the feed and the phone's list stay bounded.
    static let maxUnread = 500
    /// The lines of a conversation shown at once, newest kept.
    static let linesShown = 200
    /// How long a message may have waited on a phone with no signal.
    static let longestWait: TimeInterval = 7 * 86_400
    /// Messages a driver may send in an hour: more than anyone types, and a flood stops there.
    static let perHour = 120

    /// The driver's message, recorded once: the same id again answers the
    /// first; an id already used for other words is refused.
    public func send(_ request: SendDriverMessageRequest, _ scope: Scope) async throws -> DriverMessage {
        guard let driver = scope.driverID else { throw AppError(403, .forbidden, "Only a driver writes to dispatch here.") }
        let body = try Validate.text(request.body.trimmingCharacters(in: .whitespacesAndNewlines), FieldLimits.driverMessage)
        return try await store.write(tenant: scope.tenant) { tx in
            if let earlier = try await ConversationRepository.find(request.id, tenant: tx.tenant, tx.db) {
                guard earlier.driverID == driver, earlier.body == body, earlier.tripID == request.tripID, earlier.orderID == request.orderID else {
                    throw AppError(409, .idempotencyKeyReused, "This message id was used for another message.", field: "id")
                }
                return earlier
            }
            if let trip = request.tripID, try await TripRepository.find(trip, scope, tx.db) == nil {
                throw AppError(404, .notFound, "No such trip of yours.", field: "trip_id")
            }
            if let order = request.orderID {
                guard let found = try await OrderRepository.find(order, scope, tx.db) else {
                    throw AppError(404, .notFound, "No such order of yours.", field: "order_id")
                }
                if let trip = request.tripID, found.tripID != trip {
                    throw AppError.validation("order_id", "Order \(found.number) is not on that trip.")
                }
            }
            guard try await ConversationRepository.arrived(from: driver, tenant: tx.tenant, since: tx.now.addingTimeInterval(-3600), tx.db) < Self.perHour else {
                throw AppError(429, .rateLimited, "You sent \(Self.perHour) messages in the last hour; call dispatch.", retryAfter: 600)
            }
            guard try await ConversationRepository.unread(driver: driver, tenant: tx.tenant, atMost: Self.maxUnread, tx.db) < Self.maxUnread else {
                throw AppError(422, .validationFailed, "Dispatch has \(Self.maxUnread) of your messages still unread; call dispatch.", field: "body")
            }
            // Sent when the phone says (a message that waited for a signal), never later than now nor before a week ago.
            let sent = min(max(request.sentAt ?? tx.now, tx.now.addingTimeInterval(-Self.longestWait)), tx.now)
            let message = DriverMessage(id: request.id, driverID: driver, tripID: request.tripID, orderID: request.orderID, body: body,
                                        sentAt: WireTime.date(milliseconds: WireTime.milliseconds(sent)), createdAt: tx.now)
            do {
                try await ConversationRepository.insert(message, tx)
            } catch DatabaseConstraintError.unique {
                throw AppError(409, .idempotencyKeyReused, "This message id was used for another message.", field: "id")
            }
            return message
        }
    }

    /// Dispatch's inbox: each driver with a conversation, the newest first.
    /// Each driver's newest line either way is one step down an index
    /// (never a sort of their messages), so the inbox costs the same however much was written.
    public func inbox(tenant: ID<Tenant>) async throws -> [ConversationSummary] {
        try await store.read { db in
            let unread = try await ConversationRepository.unreadByDriver(tenant: tenant, db)
            let drivers = try await DriverRepository.all(tenant: tenant, db)
            let correspondents = try await ConversationRepository.correspondents(tenant: tenant, db)
            var inbox: [ConversationSummary] = []
            for driver in drivers where correspondents.contains(driver.id) {
                let lines = ConversationLine.merged(
                    try await ConversationRepository.dispatchMessages(to: driver.id, tenant: tenant, limit: 1, db),
                    try await ConversationRepository.latest(of: driver.id, tenant: tenant, limit: 1, db))
                guard let last = lines.last else { continue }
                inbox.append(ConversationSummary(driverID: driver.id, driverName: driver.name, lastBody: last.body.isEmpty ? last.title : last.body,
                                                 lastFrom: last.from, lastAt: last.at, unread: unread[driver.id] ?? 0))
            }
            return inbox.sorted { ($0.lastAt, $0.driverID.rawValue) > ($1.lastAt, $1.driverID.rawValue) }
        }
    }

    /// The unread driver message that arrived last, and its driver's name.
    public func newestUnread(tenant: ID<Tenant>) async throws -> (message: DriverMessage, driver: String)? {
        try await store.read { db in
            guard let message = try await ConversationRepository.newestUnread(tenant: tenant, db) else { return nil }
            return (message, try await DriverRepository.find(message.driverID, tenant: tenant, db)?.name ?? "A driver")
        }
    }

    /// A driver's conversation with dispatch, oldest first (its newest lines).
    public func conversation(with driver: ID<Driver>, tenant: ID<Tenant>) async throws -> [ConversationLine] {
        try await store.read { db in
            guard try await DriverRepository.find(driver, tenant: tenant, db) != nil else { throw AppError.notFound("Driver") }
            let lines = ConversationLine.merged(
                try await ConversationRepository.dispatchMessages(to: driver, tenant: tenant, limit: Self.linesShown, db),
                try await ConversationRepository.latest(of: driver, tenant: tenant, limit: Self.linesShown, db))
            return Array(lines.suffix(Self.linesShown))
        }
    }

    /// The messages about an order, either way, oldest first (the newest 50), with who wrote to or from whom.
    public func about(order: ID<Order>, tenant: ID<Tenant>) async throws -> [(line: ConversationLine, driver: ID<Driver>)] {
        try await store.read { try await ConversationRepository.about(order: order, tenant: tenant, limit: 50, $0) }
    }

    /// Dispatch opened the conversation: the driver's messages are read (their phone shows it).
    @discardableResult
    public func markRead(driver: ID<Driver>, tenant: ID<Tenant>) async throws -> Int {
        try await store.write(tenant: tenant) { tx in
            guard try await DriverRepository.find(driver, tenant: tenant, tx.db) != nil else { throw AppError.notFound("Driver") }
            return try await ConversationRepository.markRead(driver: driver, tx)
        }
    }
}

extension Store {
    /// Drivers' conversations with dispatch.
    public var conversations: ConversationService { ConversationService(store: self) }
}
