import Foundation
import VroomXModels

/// A driver's notifications and dispatch's messages: listing, reading,
/// sending, and the notices the server writes when dispatch changes a
/// driver's work (their words: `DriverNotice`).
extension Store {
    func notificationsFilter(_ scope: Scope, unreadOnly: Bool) -> SQL {
        scope.filter() + (unreadOnly ? " AND read_at IS NULL" : "")
    }

    public func notifications(_ scope: Scope, unreadOnly: Bool = false, limit: Int = 100) async throws -> [DriverNotification] {
        try await read { db in
            try await db.query("""
                SELECT \(DriverNotification.columns) FROM driver_notifications WHERE \(notificationsFilter(scope, unreadOnly: unreadOnly))
                ORDER BY \(DriverNotification.order.sql) LIMIT \(limit)
                """).map(DriverNotification.init(row:))
        }
    }

    public func notificationDocuments(_ scope: Scope, unreadOnly: Bool = false, page: PageRequest = .init()) async throws -> DocumentPage {
        try await read { db in
            try await documentPage(from: "driver_notifications", where: notificationsFilter(scope, unreadOnly: unreadOnly),
                                   order: DriverNotification.order, page, db)
        }
    }

    public func unreadCount(driver: ID<Driver>, tenant: ID<Tenant>) async throws -> Int {
        try await read { db in
            try await db.first("""
                SELECT COUNT(*) AS unread FROM driver_notifications
                WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND read_at IS NULL
                """)?.int("unread") ?? 0
        }
    }

    /// Marks a notification read, at `readAt` when the phone says when (an
    /// offline read arrives late): never before the message was sent nor
    /// after now. When the receipt arrived is kept beside it. Reading it
    /// again keeps the first time.
    public func markNotificationRead(_ id: ID<DriverNotification>, readAt reported: Date? = nil, _ scope: Scope) async throws -> DriverNotification {
        try await write(tenant: scope.tenant) { tx in
            guard var notification = try await tx.first("""
                SELECT \(DriverNotification.columns) FROM driver_notifications WHERE \(scope.filter()) AND id = \(id)
                """).map(DriverNotification.init(row:)) else { throw AppError.notFound("Notification") }
            if notification.readAt != nil { return notification }
            let readAt = WireTime.date(milliseconds: WireTime.milliseconds(min(max(reported ?? tx.now, notification.createdAt), tx.now)))
            notification.readAt = readAt
            notification.readReceivedAt = tx.now
            let doc = try WireDocument.encode(notification)
            guard try await tx.first("""
                UPDATE driver_notifications SET read_at = \(readAt), read_received_at = \(tx.now), doc = \(doc)
                WHERE tenant_id = \(scope.tenant) AND id = \(id) AND read_at IS NULL RETURNING id
                """) != nil else { throw WriteConflict() }
            tx.recordUpsert(.notification, id: id.rawValue, document: doc, visibleTo: notification.driverID)
            return notification
        }
    }

    /// A message from dispatch to a driver.
    public func sendMessage(_ request: SendMessageRequest, tenant: ID<Tenant>) async throws -> DriverNotification {
        try await sendMessages([request], tenant: tenant)[0]
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
    public func sendMessages(_ requests: [SendMessageRequest], tenant: ID<Tenant>) async throws -> [DriverNotification] {
        let texts = try requests.map { request in try Problems.first { Self.validMessage(type: request.type, title: request.title, body: request.body, &$0) } }
        let scope = Scope.dispatch(tenant: tenant)
        return try await write(tenant: tenant) { tx in
            var sent: [DriverNotification] = []
            for (request, text) in zip(requests, texts) {
                let driver = try await assignableDriver(request.driverID, tenant: tenant, tx.db)
                let unread = try await tx.first("""
                    SELECT COUNT(*) AS n FROM (SELECT id FROM driver_notifications
                        WHERE tenant_id = \(tenant) AND driver_id = \(driver.id) AND read_at IS NULL LIMIT \(Self.maxUnreadMessages)) AS waiting
                    """)?.int("n") ?? 0
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
                sent.append(try await insertNotification(driver: request.driverID, type: request.type, title: text.title, body: text.body,
                                                         data: NotificationData(tripID: request.tripID, orderID: request.orderID),
                                                         written: false, tx))
            }
            return sent
        }
    }

    /// A notice the server writes for a driver.
    @discardableResult
    func insertNotification(_ notice: DriverNotice, to driver: ID<Driver>, _ tx: TenantTransaction) async throws -> DriverNotification {
        try await insertNotification(driver: driver, type: notice.type, title: notice.title, body: notice.body, data: notice.data, tx)
    }

    /// A notification for the driver. Those the server writes (`written`)
    /// lose the direction controls typed into their values; a dispatcher's
    /// own message is kept as typed.
    @discardableResult
    func insertNotification(driver: ID<Driver>, type: NotificationType, title: String, body: String,
                            data: NotificationData, written: Bool = true, _ tx: TenantTransaction) async throws -> DriverNotification {
        let (title, body) = written ? (DriverChangeNote.withoutDirectionControls(title), DriverChangeNote.withoutDirectionControls(body))
                                    : (title, body)
        let notification = DriverNotification(id: ID(), driverID: driver, type: type, title: String(title.prefix(200)),
                                              body: String(body.prefix(4000)), data: data, readAt: nil, createdAt: tx.now)
        let doc = try WireDocument.encode(notification)
        try await tx.execute("""
            INSERT INTO driver_notifications (id, tenant_id, driver_id, type, title, body, trip_id, order_id, created_at, doc)
            VALUES (\(notification.id), \(tx.tenant), \(driver), \(type), \(notification.title), \(notification.body),
                    \(data.tripID), \(data.orderID), \(tx.now), \(doc))
            """)
        tx.recordUpsert(.notification, id: notification.id.rawValue, document: doc, visibleTo: driver)
        if pushEnabled { try await enqueuePushes(for: notification, tx) }
        return notification
    }
}
