import Foundation
import Observation
import VroomXModels

/// The five tabs of the app (seed 004), in order.
public enum MainTab: String, Sendable, Hashable, CaseIterable, Identifiable {
    case home, trips, earnings, messages, profile

    public var id: String { rawValue }
    public var title: String { rawValue.capitalized }
    /// SF Symbol (seed 004).
    public var symbol: String {
        switch self {
        case .home: return "house.fill"
        case .trips: return "shippingbox.fill"
        case .earnings: return "wallet.pass.fill"
        case .messages: return "message.fill"
        case .profile: return "person.fill"
        }
    }
}

/// An urgent message shown over everything until dismissed.
public struct UrgentAlert: Sendable, Hashable {
    public let title: String
    public let body: String
    public init(title: String, body: String) {
        self.title = title
        self.body = body
    }
}

/// Something a tab should open on top of its list.
public enum ShellDestination: Sendable, Hashable {
    case trip(ID<Trip>)
    case order(ID<Order>)
}

/// The tab bar: which tab shows, the Messages badge, and where a tapped
/// push or message leads (the tab to switch to and what to open in it).
@MainActor @Observable
public final class TabShellViewModel {
    public var selected: MainTab = .home
    /// What the selected tab opens on top of its list (the view clears it once shown).
    public var opened: ShellDestination?
    /// An urgent message to show over everything until dismissed.
    public private(set) var alert: UrgentAlert?
    let app: DriverApp
    let notifications: LiveQuery<[DriverNotification]>

    public init(app: DriverApp) {
        self.app = app
        notifications = LiveQuery(app.database, placeholder: [], AppDatabase.notifications)
    }

    /// Unread messages: the Messages tab's badge (none at zero).
    public var messagesBadge: Int { notifications.value.filter(\.isUnread).count }

    /// The badge a tab shows, for VoiceOver as well ("3 unread").
    public func badge(_ tab: MainTab) -> Int { tab == .messages ? messagesBadge : 0 }
    public func accessibilityLabel(_ tab: MainTab) -> String {
        let count = badge(tab)
        return count == 0 ? tab.title : "\(tab.title), \(count) unread"
    }

    /// Goes where a tapped push leads, then forgets it.
    public func openPushDestination() {
        guard let destination = app.push.destination else { return }
        open(destination)
        app.push.consumeDestination()
    }

    /// A trip opens in Trips, an order in Trips over its trip, a dispatch
    /// message in Messages (an urgent push's alert is the push controller's).
    public func open(_ destination: NotificationDestination) {
        switch destination {
        case .trip(let trip):
            selected = .trips
            opened = .trip(trip)
        case .order(let order):
            selected = .trips
            opened = .order(order)
        case .messages:
            selected = .messages
            opened = nil
        case .urgent:
            break
        }
    }

    /// What tapping a row in Messages does: the same places as its push.
    public func open(_ destination: MessageDestination) {
        switch destination {
        case .trip(let trip): open(NotificationDestination.trip(trip))
        case .order(let order, _): open(NotificationDestination.order(order))
        case .alert(let title, let body): alert = UrgentAlert(title: title, body: body)
        case .inline: break
        }
    }

    public func dismissAlert() { alert = nil }
}

/// The lock screen (seed 004 path B/C): "Welcome back, Alex", the PIN pad,
/// Face ID when turned on, and email sign-in after five wrong PINs or on
/// "Forgot PIN?".
@MainActor @Observable
public final class LockScreenViewModel {
    /// Digits typed so far (shown as dots).
    public private(set) var entered = ""
    public private(set) var message: String?
    public private(set) var isChecking = false
    let app: DriverApp

    public static let pinLength = 4

    public init(app: DriverApp) { self.app = app }

    public var greeting: String {
        let name = (try? app.database.account())?.driver?.name.split(separator: " ").first.map(String.init)
        return name.map { "Welcome back, \($0)" } ?? "Welcome back"
    }

    public var canUseBiometrics: Bool { app.auth.canUseBiometrics }
    public var biometricsTitle: String { "Unlock with Face ID" }
    /// "●●○○" for VoiceOver: how many digits are in.
    public var progressLabel: String { "\(entered.count) of \(Self.pinLength) digits entered" }

    /// A digit from the pad; the fourth checks the PIN.
    public func type(_ digit: Int) async {
        guard (0...9).contains(digit), entered.count < Self.pinLength, !isChecking else { return }
        entered += String(digit)
        if entered.count == Self.pinLength { await submit() }
    }

    public func deleteDigit() {
        guard !entered.isEmpty, !isChecking else { return }
        entered.removeLast()
    }

    private func submit() async {
        isChecking = true
        defer { isChecking = false; entered = "" }
        do {
            try await app.auth.unlock(pin: entered)
            message = nil
        } catch let error as AuthError {
            message = error.description
        } catch {
            message = "\(error)"
        }
    }

    public func unlockWithBiometrics() async {
        if await !app.auth.unlockWithBiometrics() { message = "Face ID didn't work. Enter your PIN." }
    }

    /// Whether Face ID was offered by itself since the app came to the front.
    private var offeredBiometrics = false

    /// The lock screen is in front: Face ID is offered by itself once. Its
    /// own prompt takes the app out of the front and back, so offering it at
    /// every return would ask again each time the driver cancels it; after
    /// that, the button asks.
    public func inFront() async {
        guard !offeredBiometrics, canUseBiometrics else { return }
        offeredBiometrics = true
        await unlockWithBiometrics()
    }

    /// The app went to the background: coming back offers Face ID again.
    public func wentToBackground() { offeredBiometrics = false }

    /// "Forgot PIN? Sign in with email": a code to the account's email.
    public func forgotPIN() async {
        guard let email = (try? app.database.account())?.email else { return }
        do {
            try await app.auth.sendCode(to: email)
        } catch {
            message = (error as? AuthError)?.description ?? "Couldn't send a code: \(error)"
        }
    }
}
