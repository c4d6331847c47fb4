import Foundation
import GRDB
import Observation
import VroomXModels
import VroomXSecurity

/// Where opening a notification takes the driver.
public enum NotificationDestination: Sendable, Hashable {
    case trip(ID<Trip>)
    case order(ID<Order>)
    case messages
    /// An alert over whatever is on screen, with the message's text.
    case urgent(title: String, body: String)

    /// trip_assignment opens the trip, status_change the order, a dispatch
    /// message the inbox; urgent raises an alert. Unknown types open Messages.
    public init(type: NotificationType?, tripID: ID<Trip>?, orderID: ID<Order>?, title: String, body: String) {
        switch type {
        case .tripAssignment:
            self = tripID.map(Self.trip) ?? orderID.map(Self.order) ?? .messages
        case .statusChange:
            self = orderID.map(Self.order) ?? tripID.map(Self.trip) ?? .messages
        case .urgent:
            self = .urgent(title: title, body: body)
        case .dispatchMessage, nil:
            self = .messages
        }
    }

    public init(_ payload: PushPayload) {
        self.init(type: payload.notificationType, tripID: payload.tripID, orderID: payload.orderID,
                  title: payload.aps.alert.title, body: payload.aps.alert.body)
    }

    public init(_ notification: DriverNotification) {
        self.init(type: notification.type, tripID: notification.data.tripID, orderID: notification.data.orderID,
                  title: notification.title, body: notification.body)
    }
}

/// How a notification arriving while the app is open is shown.
public enum ForegroundPresentation: Sendable, Hashable {
    /// The system banner with sound (the app refreshes behind it).
    case banner
    /// Sound only: the app raises its own alert (urgent messages).
    case soundOnly
}

/// Push notifications in the app (seed 003): asks permission after sign-in,
/// registers the device token with the server (and the outbox-style sync
/// retries it offline), handles notifications that arrive in the foreground
/// or are tapped, marks them read when opened, and keeps the badge equal to
/// the unread count.
///
/// The iOS app delegate forwards to it: the device token from
/// `didRegisterForRemoteNotificationsWithDeviceToken`, `willPresent` and
/// `didReceive` from the notification center delegate (`PushPayload(userInfo:)`
/// reads the payload).
@MainActor @Observable
public final class PushController {
    /// Where to navigate after a tap; the UI goes there and calls `consumeDestination()`.
    public private(set) var destination: NotificationDestination?
    /// An urgent message to show over everything until dismissed.
    public private(set) var urgentAlert: PushPayload.Alert?
    /// Whether the driver allowed notifications (nil until asked).
    public private(set) var isAuthorized: Bool?
    /// The app icon's badge: unread messages.
    public private(set) var badgeCount = 0

    let database: AppDatabase
    let sync: SyncEngine
    let service: any PushNotificationService
    let clock: @Sendable () -> Date
    /// Opened before their row reached the device; marked read once it does.
    private var readWhenSynced: Set<ID<DriverNotification>> = []
    @ObservationIgnored private var observation: Task<Void, Never>?

    init(database: AppDatabase, sync: SyncEngine, service: any PushNotificationService, clock: @escaping @Sendable () -> Date) {
        self.database = database
        self.sync = sync
        self.service = service
        self.clock = clock
    }

    /// After sign-in and at each launch while signed in: ask permission
    /// (the system asks once) and, if allowed, fetch the device token (it
    /// can change between launches).
    public func activate() async {
        let allowed = await service.requestAuthorization()
        isAuthorized = allowed
        if allowed { await service.registerForRemoteNotifications() }
    }

    /// The system's device token for this install: kept on the device and
    /// registered with the server for the signed-in driver.
    public func didRegister(deviceToken: Data) {
        try? database.setPushToken(Self.hex(deviceToken))
        let sync = self.sync
        Task { await sync.requestSync() }
    }

    /// APNs tokens travel as lowercase hex.
    public nonisolated static func hex(_ token: Data) -> String {
        token.hexString
    }

    /// A notification while the app is open: refresh, raise urgent ones.
    @discardableResult
    public func willPresent(_ payload: PushPayload) -> ForegroundPresentation {
        refresh()
        if payload.notificationType == .urgent {
            urgentAlert = payload.aps.alert
            return .soundOnly
        }
        return .banner
    }

    /// The driver tapped a notification: refresh, mark it read, and name
    /// where to go.
    public func didOpen(_ payload: PushPayload) {
        let destination = NotificationDestination(payload)
        if case .urgent(let title, let body) = destination {
            urgentAlert = .init(title: title, body: body)
        }
        self.destination = destination
        if let id = payload.notificationID { markRead(id) }
        refresh()
    }

    public func consumeDestination() { destination = nil }
    public func dismissUrgentAlert() { urgentAlert = nil }

    /// Pulls the change feed now (a push means dispatch changed something).
    func refresh() {
        let sync = self.sync
        Task { await sync.requestSync() }
    }

    /// Marks read through the outbox (works offline); a notification not
    /// synced yet is marked when it arrives.
    func markRead(_ id: ID<DriverNotification>) {
        do {
            if try database.enqueue(Mutation(.markNotificationRead(.init(notificationID: id, readAt: clock()))), now: clock()) { refresh() }
        } catch let rejection as LocalRejection where rejection.code == .notFound {
            readWhenSynced.insert(id)
        } catch {}
    }

    /// Keeps `badgeCount` and the app icon equal to the unread count, and
    /// marks read what was opened before it synced.
    func follow() {
        observation?.cancel()
        let values = ValueObservation.tracking { db in try AppDatabase.unreadCount(db) }.values(in: database.reader)
        observation = Task { [weak self] in
            do {
                for try await unread in values {
                    guard let self else { return }
                    // The icon first, so whoever sees `badgeCount` change sees the icon agree.
                    await self.service.setBadgeCount(unread)
                    self.badgeCount = unread
                    for id in self.readWhenSynced {
                        self.readWhenSynced.remove(id)
                        self.markRead(id)
                    }
                }
            } catch {}
        }
    }
}
