import Foundation
#if canImport(UserNotifications) && canImport(UIKit)
import UIKit
import UserNotifications
#endif

/// The system's notification services: permission, registration with APNs
/// (the token arrives through `PushController.didRegister(deviceToken:)`)
/// and the app icon's badge.
public protocol PushNotificationService: Sendable {
    /// Asks the driver to allow alerts, sounds and badges (the system asks
    /// once; later calls answer with the choice made).
    func requestAuthorization() async -> Bool
    /// Asks the system for this install's device token.
    func registerForRemoteNotifications() async
    func setBadgeCount(_ count: Int) async
}

/// Linux: there is no push service; the terminal client follows the
/// realtime feed instead (`vroomx-driver watch`).
public struct UnavailablePushNotifications: PushNotificationService {
    public init() {}
    public func requestAuthorization() async -> Bool { false }
    public func registerForRemoteNotifications() async {}
    public func setBadgeCount(_ count: Int) async {}
}

#if canImport(UserNotifications) && canImport(UIKit)
/// iOS: UNUserNotificationCenter and UIApplication's APNs registration. The
/// app delegate forwards `didRegisterForRemoteNotificationsWithDeviceToken`
/// and the notification center delegate's callbacks to `PushController`.
public struct UserNotificationCenterService: PushNotificationService {
    public init() {}

    public func requestAuthorization() async -> Bool {
        (try? await UNUserNotificationCenter.current().requestAuthorization(options: [.alert, .sound, .badge])) ?? false
    }

    public func registerForRemoteNotifications() async {
        await MainActor.run { UIApplication.shared.registerForRemoteNotifications() }
    }

    public func setBadgeCount(_ count: Int) async {
        try? await UNUserNotificationCenter.current().setBadgeCount(count)
    }
}
#endif
