import Foundation
import VroomXModels

/// A driver's notifications and dispatch's messages: listing, reading,
/// sending, and the notices the server writes when dispatch changes a
/// driver's work (their words: `DriverNotice`). The SQL is
/// `NotificationRepository`'s.
public struct NotificationService: Sendable {
    let store: Store

    public func list(_ scope: Scope, unreadOnly: Bool = false, limit: Int = 100) async throws -> [DriverNotification] {
        try await store.read { try await NotificationRepository.recent(scope, unreadOnly: unreadOnly, limit: limit, $0) }
    }

    public func documents(_ scope: Scope, unreadOnly: Bool = false, page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { try await NotificationRepository.documents(scope, unreadOnly: unreadOnly, page, $0) }
    }

    public func unreadCount(driver: ID<Driver>, tenant: ID<Tenant>) async throws -> Int {
        try await store.read { try await NotificationRepository.unread(driver: driver, tenant: tenant, $0) }
    }

    /// Marks a notification read, at `readAt` when the phone says when (an
    /// offline read arrives late): never before the message was sent nor
    /// after now. When the receipt arrived is kept beside it. Reading it
    /// again keeps the first time.
    public func markRead(_ id: ID<DriverNotification>, readAt reported: Date? = nil, _ scope: Scope) async throws -> DriverNotification {
        try await store.write(tenant: scope.tenant) { tx in
            guard var notification = try await NotificationRepository.find(id, scope, tx.db) else { throw AppError.notFound("Notification") }
            if notification.readAt != nil { return notification }
            notification.readAt = WireTime.date(milliseconds: WireTime.milliseconds(min(max(reported ?? tx.now, notification.createdAt), tx.now)))
            notification.readReceivedAt = tx.now
            try await NotificationRepository.markRead(notification, tx)
            return notification
        }
    }

    /// A message from dispatch to a driver.
    public func send(_ request: SendMessageRequest, tenant: ID<Tenant>) async throws -> DriverNotification {
        try await send([request], tenant: tenant)[0]
    }

    /// A message's type and texts, checked: each refusal kept in `problems`.
    static func validMessage(type: NotificationType, title: String, body: String, _ problems: inout Problems) -> (title: String, body: String) {
        problems.check(()) {
            guard type == .dispatchMessage || type == .urgent else {
                throw AppError.validation("type", "A message is dispatch_message or urgent.")
            }
        }
        return (title: problems.check(title) { try Validate.text(title, FieldLimits.messageTitle) },
                body: problems.check(body) { try Validate.text(body, FieldLimits.messageBody) })
    }

    /// Unread messages and notifications a driver may have before dispatch
    /// can send more: the phone's list, the push queue and the feed stay bounded.
    static let maxUnreadMessages = 500

    /// Messages from dispatch (to several drivers at once): all are sent, or none.
    @discardableResult
    public func send(_ requests: [SendMessageRequest], tenant: ID<Tenant>) async throws -> [DriverNotification] {
        let texts = try requests.map { request in try Problems.first { Self.validMessage(type: request.type, title: request.title, body: request.body, &$0) } }
        let scope = Scope.dispatch(tenant: tenant)
        return try await store.write(tenant: tenant) { tx in
            var sent: [DriverNotification] = []
            for (request, text) in zip(requests, texts) {
                let driver = try await store.people.assignableDriver(request.driverID, tenant: tenant, tx.db)
                let unread = try await NotificationRepository.unread(driver: driver.id, tenant: tenant, atMost: Self.maxUnreadMessages, tx.db)
                guard unread < Self.maxUnreadMessages else {
                    throw AppError(422, .validationFailed,
                                   "\(driver.name) has \(NumberText.grouped(unread)) unread messages and notifications; send more once they have read some.",
                                   field: "driver_id")
                }
                if let trip = request.tripID, try await TripRepository.find(trip, scope, tx.db) == nil {
                    throw AppError(422, .validationFailed, "No such trip in this carrier.", field: "trip_id")
                }
                if let order = request.orderID, try await OrderRepository.find(order, scope, tx.db) == nil {
                    throw AppError(422, .validationFailed, "No such order in this carrier.", field: "order_id")
                }
                sent.append(try await insert(driver: request.driverID, type: request.type, title: text.title, body: text.body,
                                             data: NotificationData(tripID: request.tripID, orderID: request.orderID), written: false, tx))
            }
            return sent
        }
    }

    /// A notice the server writes for a driver.
    @discardableResult
    func notify(_ driver: ID<Driver>, _ notice: DriverNotice, _ tx: TenantTransaction) async throws -> DriverNotification {
        try await insert(driver: driver, type: notice.type, title: notice.title, body: notice.body, data: notice.data, tx)
    }

    /// A notification for the driver, pushed to their devices. Those the
    /// server writes (`written`) lose the direction controls typed into
    /// their values; a dispatcher's own message is kept as typed.
    @discardableResult
    func insert(driver: ID<Driver>, type: NotificationType, title: String, body: String,
                data: NotificationData, written: Bool = true, _ tx: TenantTransaction) async throws -> DriverNotification {
        let (title, body) = written ? (DriverChangeNote.withoutDirectionControls(title), DriverChangeNote.withoutDirectionControls(body))
                                    : (title, body)
        let notification = DriverNotification(id: ID(), driverID: driver, type: type, title: String(title.prefix(200)),
                                              body: String(body.prefix(4000)), data: data, readAt: nil, createdAt: tx.now)
        try await NotificationRepository.insert(notification, tx)
        if store.pushEnabled { try await store.enqueuePushes(for: notification, tx) }
        return notification
    }
}

extension Store {
    /// Drivers' notifications: listing, reading, dispatch's messages, the server's notices.
    public var notifications: NotificationService { NotificationService(store: self) }
}
