#if canImport(SwiftUI) && canImport(UIKit)
import DriverKit
import DriverUI
import SwiftUI
import UIKit
import UserNotifications
import VroomXModels

/// The iOS app: DriverKit with Apple's Keychain, Face ID, notifications,
/// network path and location, under DriverUI's screens. The first screen is
/// decided before the first frame (`AppRouter.determineInitialRoute`).
@main
struct VroomXDriverApp: App {
    @UIApplicationDelegateAdaptor(AppDelegate.self) private var delegate
    @Environment(\.scenePhase) private var scenePhase

    var body: some Scene {
        WindowGroup {
            DriverRootView(app: delegate.app)
        }
        .onChange(of: scenePhase) { _, phase in
            switch phase {
            case .background: delegate.app.auth.movedToBackground()
            case .active:
                delegate.app.auth.cameToForeground()  // locked if it was away past the grace period
                delegate.app.launch()  // the first time too: launching syncs and checks the session
            default: break
            }
        }
    }
}

/// Builds the app core once, and forwards APNs and notification taps to it.
@MainActor
final class AppDelegate: NSObject, UIApplicationDelegate, UNUserNotificationCenterDelegate {
    let app: DriverApp
    /// Photos and videos go on uploading with the app closed; made at launch so a relaunch finds its session.
    let backgroundUploads: BackgroundUploadSending

    override init() {
        let server = Bundle.main.object(forInfoDictionaryKey: "VroomXServerURL") as? String ?? "http://127.0.0.1:8080"
        let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
            .appendingPathComponent("VroomX", isDirectory: true)
        var configuration = DriverApp.Configuration(serverURL: server, stateDirectory: support)
        configuration.secureStore = KeychainSecureStore()
        configuration.biometrics = LocalAuthenticationBiometrics()
        configuration.pushNotifications = UserNotificationCenterService()
        // A photo taken before the trip is under way still says where it was taken.
        configuration.positionFinder = CoreLocationProvider()
        let backgroundUploads = BackgroundUploadSending()
        configuration.uploadSending = backgroundUploads
        // The server may refuse versions older than it accepts: the app then shows "Update the app".
        configuration.appVersion = (Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String).flatMap(AppVersion.init)
        let transport = configuration.transport
        configuration.network = PathNetworkMonitor { await APIClient.probe(baseURL: server, transport: transport) }
        self.backgroundUploads = backgroundUploads
        do {
            app = try DriverApp(configuration)
        } catch {
            // The database could not open (no space left, a damaged file): nothing can run without it.
            fatalError("VroomX Driver cannot open its storage: \(error)")
        }
        super.init()
    }

    func application(_ application: UIApplication, didFinishLaunchingWithOptions options: [UIApplication.LaunchOptionsKey: Any]? = nil) -> Bool {
        UNUserNotificationCenter.current().delegate = self
        // GPS runs only while a trip is under way and sharing is on (LocationRecorder.follow decides):
        // the permission prompt comes at the first trip, and it keeps running in the background.
        Task { @MainActor in await app.location.follow(CoreLocationProvider()) }
        return true
    }

    /// The system relaunched the app to say how background uploads went.
    func application(_ application: UIApplication, handleEventsForBackgroundURLSession identifier: String,
                     completionHandler: @escaping () -> Void) {
        backgroundUploads.deliverEvents(then: completionHandler)
        app.launch()  // the queue hears each answer and marks finished files done
    }

    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        app.push.didRegister(deviceToken: deviceToken)
    }

    nonisolated func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification)
        async -> UNNotificationPresentationOptions {
        // Decoded here: only the Sendable payload crosses to the main actor.
        guard let payload = PushPayload(userInfo: notification.request.content.userInfo) else { return [.banner, .sound] }
        let presentation = await MainActor.run { app.push.willPresent(payload) }
        return presentation == .soundOnly ? [.sound] : [.banner, .sound, .badge]
    }

    nonisolated func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {
        guard let payload = PushPayload(userInfo: response.notification.request.content.userInfo) else { return }
        await MainActor.run { app.push.didOpen(payload) }
    }
}
#endif
