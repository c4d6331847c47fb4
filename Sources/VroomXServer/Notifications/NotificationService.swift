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

    /// "Got it" on an urgent message, at `acknowledgedAt` when the phone says
    /// when (an offline tap arrives late): it marks the message read too.
    /// Answering again keeps the first time; only urgent messages take it.
    public func acknowledge(_ id: ID<DriverNotification>, at reported: Date? = nil, _ scope: Scope) async throws -> DriverNotification {
        try await store.write(tenant: scope.tenant) { tx in
            guard var notification = try await NotificationRepository.find(id, scope, tx.db) else { throw AppError.notFound("Notification") }
            guard notification.type == .urgent else {
                throw AppError(409, .invalidTransition, "Only an urgent message is answered “Got it”.", field: "notification_id")
            }
            if notification.acknowledgedAt != nil { return notification }
            let at = WireTime.date(milliseconds: WireTime.milliseconds(min(max(reported ?? tx.now, notification.createdAt), tx.now)))
            notification.acknowledgedAt = at
            if notification.readAt == nil { (notification.readAt, notification.readReceivedAt) = (at, tx.now) }
            try await NotificationRepository.acknowledge(notification, tx)
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
                // About the driver's own work: a message never hands a driver another's trip or order.
                if let trip = request.tripID {
                    guard let found = try await TripRepository.find(trip, scope, tx.db) else {
                        throw AppError(422, .validationFailed, "No such trip in this carrier.", field: "trip_id")
                    }
                    guard found.driverID == driver.id else {
                        throw AppError(422, .validationFailed, "Trip \(found.number) is not \(driver.name)'s.", field: "trip_id")
                    }
                }
                if let order = request.orderID {
                    guard let found = try await OrderRepository.find(order, scope, tx.db) else {
                        throw AppError(422, .validationFailed, "No such order in this carrier.", field: "order_id")
                    }
                    guard found.driverID == driver.id else {
                        throw AppError(422, .validationFailed, "Order \(found.number) is not \(driver.name)'s.", field: "order_id")
                    }
                }
                sent.append(try await insert(driver: request.driverID, type: request.type, title: text.title, body: text.body,
                                             data: NotificationData(tripID: request.tripID, orderID: request.orderID), written: false, tx))
            }
            return sent
        }
    }

    /// How long a notice about a trip gathers what follows it: dispatch
    /// building a trip (its orders one after another) or editing it within
    /// a minute is one notification for the driver, listing each change.
    static let coalescingWindow: TimeInterval = 60
    /// However busy dispatch stays, a notice stops gathering this long after
    /// it was first written: the driver hears of what comes next.
    static let longestCoalescing: TimeInterval = 10 * 60

    /// A notice the server writes for a driver: folded into their unread
    /// notice about the same trip from the last minute when it coalesces,
    /// else a notification of its own.
    @discardableResult
    func notify(_ driver: ID<Driver>, _ notice: DriverNotice, _ tx: TenantTransaction) async throws -> DriverNotification {
        if notice.standsAlone, let trip = notice.data.tripID {
            // What was gathered about the trip is over: its late alert must not replace this one on the phone,
            // and what comes next is told on its own.
            try await NotificationRepository.endGathering(driver: driver, trip: trip, tx)
        }
        guard notice.coalesces, let trip = notice.data.tripID else {
            return try await insert(driver: driver, type: notice.type, title: notice.title, body: notice.body, data: notice.data,
                                    urgentDelivery: notice.standsAlone, tx)
        }
        if let gathering = try await NotificationRepository.gathering(driver: driver, trip: trip, tenant: tx.tenant, now: tx.now,
                                                                      since: tx.now.addingTimeInterval(-Self.longestCoalescing), tx.db) {
            var folded = gathering
            folded.body = gathering.body + "\n• " + DriverChangeNote.withoutDirectionControls(notice.line)
            // An assignment among the changes makes it one (it goes at once, at high priority).
            if notice.type == .tripAssignment { folded.type = .tripAssignment }
            if gathering.data.orderID != notice.data.orderID { folded.data.orderID = nil }  // about several orders: it opens the trip
            let until = min(tx.now.addingTimeInterval(Self.coalescingWindow), gathering.createdAt.addingTimeInterval(Self.longestCoalescing))
            // Counted in code points, as the database counts it.
            if folded.body.unicodeScalars.count <= DriverNotification.longestBody,
               try await NotificationRepository.fold(folded, coalesceUntil: until, tx) {
                // The devices hear of it once more when the gathering ends, the alert replacing the first one's.
                if store.pushEnabled { try await store.enqueuePushes(for: folded, notBefore: until, replacingQueued: true, tx) }
                return folded
            }
        }
        return try await insert(driver: driver, type: notice.type, title: notice.title, body: notice.body, data: notice.data,
                                coalesceUntil: tx.now.addingTimeInterval(Self.coalescingWindow), tx)
    }

    /// A notification for the driver, pushed to their devices. Those the
    /// server writes (`written`) lose the direction controls typed into
    /// their values; a dispatcher's own message is kept as typed.
    @discardableResult
    /// `urgentDelivery`: its push goes at high priority whatever its type (work taken away).
    func insert(driver: ID<Driver>, type: NotificationType, title: String, body: String,
                data: NotificationData, written: Bool = true, coalesceUntil: Date? = nil, urgentDelivery: Bool = false,
                _ tx: TenantTransaction) async throws -> DriverNotification {
        let (title, body) = written ? (DriverChangeNote.withoutDirectionControls(title), DriverChangeNote.withoutDirectionControls(body))
                                    : (title, body)
        let notification = DriverNotification(id: ID(), driverID: driver, type: type, title: Self.clipped(title, to: 200),
                                              body: Self.clipped(body, to: DriverNotification.longestBody), data: data, readAt: nil,
                                              createdAt: tx.now)
        try await NotificationRepository.insert(notification, coalesceUntil: coalesceUntil, tx)
        if store.pushEnabled { try await store.enqueuePushes(for: notification, highPriority: urgentDelivery, tx) }
        return notification
    }
}

extension NotificationService {
    /// The text cut to at most `limit` code points (as the database's
    /// `length()` counts; a letter with combining marks is several), at a
    /// whole character.
    static func clipped(_ text: String, to limit: Int) -> String {
        guard text.unicodeScalars.count > limit else { return text }
        var kept = "", count = 0
        for character in text {
            let scalars = character.unicodeScalars.count
            guard count + scalars <= limit else { break }
            kept.append(character)
            count += scalars
        }
        return kept
    }
}

extension Store {
    /// Drivers' notifications: listing, reading, dispatch's messages, the server's notices.
    public var notifications: NotificationService { NotificationService(store: self) }
}
