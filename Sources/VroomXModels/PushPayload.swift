import Foundation

/// What the server sends to APNs for a driver notification, and what the
/// app reads back when the notification arrives or is tapped.
public struct PushPayload: Codable, Sendable, Hashable {
    public struct Alert: Codable, Sendable, Hashable {
        public var title: String
        public var body: String
        public init(title: String, body: String) {
            self.title = title
            self.body = body
        }
    }

    /// Apple's part: the alert shown, the app icon's badge, the sound.
    public struct APS: Codable, Sendable, Hashable {
        public var alert: Alert
        public var badge: Int?
        public var sound: String?
        public init(alert: Alert, badge: Int?, sound: String?) {
            self.alert = alert
            self.badge = badge
            self.sound = sound
        }
    }

    public var aps: APS
    /// Nil for a type this app version does not know (it opens Messages).
    public var notificationType: NotificationType?
    public var notificationID: ID<DriverNotification>?
    public var tripID: ID<Trip>?
    public var orderID: ID<Order>?

    /// APNs refuses larger payloads.
    public static let maxBytes = 4096

    public init(aps: APS, notificationType: NotificationType?, notificationID: ID<DriverNotification>?, tripID: ID<Trip>?,
                orderID: ID<Order>?) {
        self.aps = aps
        self.notificationType = notificationType
        self.notificationID = notificationID
        self.tripID = tripID
        self.orderID = orderID
    }

    enum CodingKeys: String, CodingKey {
        case aps
        case notificationType = "notification_type"
        case notificationID = "notification_id"
        case tripID = "trip_id"
        case orderID = "order_id"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        aps = try container.decode(APS.self, forKey: .aps)
        notificationType = (try? container.decodeIfPresent(String.self, forKey: .notificationType)).flatMap(NotificationType.init)
        notificationID = try container.decodeIfPresent(ID<DriverNotification>.self, forKey: .notificationID)
        tripID = try container.decodeIfPresent(ID<Trip>.self, forKey: .tripID)
        orderID = try container.decodeIfPresent(ID<Order>.self, forKey: .orderID)
    }

    /// The payload of a notification as delivered (`userInfo` on iOS),
    /// or nil if it is not one of ours.
    public init?(userInfo: [AnyHashable: Any]) {
        let strings = Dictionary(uniqueKeysWithValues: userInfo.compactMap { key, value in (key as? String).map { ($0, value) } })
        guard JSONSerialization.isValidJSONObject(strings),
              let data = try? JSONSerialization.data(withJSONObject: strings),
              let payload = try? JSONDecoder().decode(PushPayload.self, from: data) else { return nil }
        self = payload
    }
}
