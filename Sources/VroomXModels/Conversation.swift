import Foundation

/// A message a driver writes to dispatch: in general, or about one of their
/// trips or orders. Written on the phone (offline too) with an id of its
/// own, so it reaches dispatch exactly once.
public struct DriverMessage: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<DriverMessage>
    public var driverID: ID<Driver>
    public var tripID: ID<Trip>?
    public var orderID: ID<Order>?
    public var body: String
    /// When the driver sent it (the phone's clock corrected to the server's;
    /// later than `createdAt` never, earlier when it waited for a signal).
    public var sentAt: Date
    /// When it reached the server.
    public var createdAt: Date
    /// When dispatch first opened the conversation after it arrived.
    public var readByDispatchAt: Date?
    /// Photos sent with it (uploaded after it, with the upload metadata `message_id`), oldest first.
    public var photos: [ReceiptPhoto]

    /// Photos one message carries at most.
    public static let maxPhotos = 4

    public init(id: ID<DriverMessage>, driverID: ID<Driver>, tripID: ID<Trip>? = nil, orderID: ID<Order>? = nil, body: String,
                sentAt: Date, createdAt: Date, readByDispatchAt: Date? = nil, photos: [ReceiptPhoto] = []) {
        self.photos = photos
        self.id = id
        self.driverID = driverID
        self.tripID = tripID
        self.orderID = orderID
        self.body = body
        self.sentAt = sentAt
        self.createdAt = createdAt
        self.readByDispatchAt = readByDispatchAt
    }

    enum CodingKeys: String, CodingKey {
        case id, body
        case driverID = "driver_id"
        case tripID = "trip_id"
        case orderID = "order_id"
        case sentAt = "sent_at"
        case createdAt = "created_at"
        case readByDispatchAt = "read_by_dispatch_at"
        case photos
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try container.decode(VroomXModels.ID<DriverMessage>.self, forKey: .id), driverID: try container.decode(VroomXModels.ID<Driver>.self, forKey: .driverID),
                  tripID: try container.decodeIfPresent(VroomXModels.ID<Trip>.self, forKey: .tripID),
                  orderID: try container.decodeIfPresent(VroomXModels.ID<Order>.self, forKey: .orderID), body: try container.decode(String.self, forKey: .body),
                  sentAt: try container.decode(Date.self, forKey: .sentAt), createdAt: try container.decode(Date.self, forKey: .createdAt),
                  readByDispatchAt: try container.decodeIfPresent(Date.self, forKey: .readByDispatchAt),
                  photos: try container.decodeIfPresent([ReceiptPhoto].self, forKey: .photos) ?? [])
    }
}

/// `POST /v1/messages` (and the mutation `send_message`): the driver writes to dispatch.
public struct SendDriverMessageRequest: Codable, Sendable, Hashable {
    /// Chosen by the phone: sending it again records it once.
    public var id: ID<DriverMessage>
    public var body: String
    public var tripID: ID<Trip>?
    public var orderID: ID<Order>?
    /// When the driver sent it, by the phone's corrected clock (now when left out).
    public var sentAt: Date?

    public init(id: ID<DriverMessage> = ID(), body: String, tripID: ID<Trip>? = nil, orderID: ID<Order>? = nil, sentAt: Date? = nil) {
        self.id = id
        self.body = body
        self.tripID = tripID
        self.orderID = orderID
        self.sentAt = sentAt
    }

    enum CodingKeys: String, CodingKey {
        case id, body
        case tripID = "trip_id"
        case orderID = "order_id"
        case sentAt = "sent_at"
    }
}

/// One line of a driver's conversation with dispatch, whichever way it went.
public struct ConversationLine: Codable, Sendable, Hashable, Identifiable {
    public enum Author: String, Codable, Sendable, CaseIterable {
        case dispatch, driver
    }

    /// The notification's id (from dispatch) or the message's (from the driver).
    public var id: String
    public var from: Author
    /// Dispatch's subject line; empty for the driver's.
    public var title: String
    public var body: String
    public var urgent: Bool
    public var tripID: ID<Trip>?
    public var orderID: ID<Order>?
    public var at: Date
    /// Dispatch's line: when the driver read it. The driver's: when dispatch did.
    public var readAt: Date?
    /// An urgent line the driver answered "Got it".
    public var acknowledgedAt: Date?
    /// The driver's photos with it.
    public var photos: [ReceiptPhoto]

    public init(id: String, from: Author, title: String, body: String, urgent: Bool, tripID: ID<Trip>?, orderID: ID<Order>?, at: Date,
                readAt: Date?, acknowledgedAt: Date?, photos: [ReceiptPhoto] = []) {
        self.photos = photos
        (self.id, self.from, self.title, self.body, self.urgent) = (id, from, title, body, urgent)
        (self.tripID, self.orderID, self.at, self.readAt, self.acknowledgedAt) = (tripID, orderID, at, readAt, acknowledgedAt)
    }

    public init(_ message: DriverMessage) {
        self.init(id: message.id.rawValue, from: .driver, title: "", body: message.body, urgent: false, tripID: message.tripID,
                  orderID: message.orderID, at: message.sentAt, readAt: message.readByDispatchAt, acknowledgedAt: nil, photos: message.photos)
    }

    /// Dispatch's messages (not the server's notices about work) are lines of the conversation.
    public init?(_ notification: DriverNotification) {
        guard notification.type.isFromDispatch else { return nil }
        self.init(id: notification.id.rawValue, from: .dispatch, title: notification.title, body: notification.body,
                  urgent: notification.type == .urgent, tripID: notification.data.tripID, orderID: notification.data.orderID,
                  at: notification.createdAt, readAt: notification.readAt, acknowledgedAt: notification.acknowledgedAt)
    }

    /// Oldest first, as a conversation reads.
    public static func merged(_ notifications: [DriverNotification], _ messages: [DriverMessage]) -> [ConversationLine] {
        (notifications.compactMap(ConversationLine.init) + messages.map(ConversationLine.init))
            .sorted { ($0.at, $0.id) < ($1.at, $1.id) }
    }

    enum CodingKeys: String, CodingKey {
        case id, from, title, body, urgent, at, photos
        case tripID = "trip_id"
        case orderID = "order_id"
        case readAt = "read_at"
        case acknowledgedAt = "acknowledged_at"
    }
}

/// Dispatch's inbox: one row per driver who has a conversation, newest first.
public struct ConversationSummary: Codable, Sendable, Hashable {
    public var driverID: ID<Driver>
    public var driverName: String
    /// The newest line's words and time, whoever wrote it.
    public var lastBody: String
    public var lastFrom: ConversationLine.Author
    public var lastAt: Date
    /// The driver's messages dispatch has not opened yet.
    public var unread: Int

    public init(driverID: ID<Driver>, driverName: String, lastBody: String, lastFrom: ConversationLine.Author, lastAt: Date, unread: Int) {
        (self.driverID, self.driverName, self.lastBody, self.lastFrom, self.lastAt, self.unread) = (driverID, driverName, lastBody, lastFrom, lastAt, unread)
    }

    enum CodingKeys: String, CodingKey {
        case unread
        case driverID = "driver_id"
        case driverName = "driver_name"
        case lastBody = "last_body"
        case lastFrom = "last_from"
        case lastAt = "last_at"
    }
}

extension NotificationType {
    /// Written by a dispatcher (a message), not by the server about work.
    public var isFromDispatch: Bool { self == .dispatchMessage || self == .urgent }
}
