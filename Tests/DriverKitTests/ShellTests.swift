import DriverKit
import Foundation
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// What the app's frame needs from DriverKit: the tab bar and its badge,
/// where a tapped message or push leads, banners the driver can act on,
/// and pulling Messages to refresh.
@Suite("DriverKit app shell")
@MainActor
struct ShellTests {
    @Test("five tabs in order; the Messages badge is the unread count; a push or a message opens its trip or order in Trips")
    func tabs() async throws {
        let scene = try await DriverScene.make()
        let app = scene.app
        let shell = TabShellViewModel(app: app)
        #expect(MainTab.allCases.map(\.title) == ["Home", "Trips", "Earnings", "Messages", "Profile"])
        #expect(MainTab.allCases.map(\.symbol) == ["house.fill", "shippingbox.fill", "wallet.pass.fill", "message.fill", "person.fill"])
        #expect(shell.selected == .home)
        let unread = try app.database.unreadCount()
        #expect(unread > 0 && shell.messagesBadge == unread && shell.badge(.home) == 0)
        #expect(shell.accessibilityLabel(.messages) == "Messages, \(unread) unread")
        #expect(shell.accessibilityLabel(.trips) == "Trips")

        // Tapping the trip assignment in Messages: read, and Trips shows the trip.
        let messages = MessagesViewModel(app: app)
        let assignment = try #require(try app.database.notifications().first { $0.type == .tripAssignment && $0.isUnread })
        let tripID = try #require(assignment.data.tripID)
        shell.open(try #require(messages.open(assignment.id)))
        #expect(shell.selected == .trips && shell.opened == .trip(tripID))
        try await eventually("the badge follows the read mark") { shell.messagesBadge == unread - 1 }

        // An urgent message raises its alert; a dispatch message opens nothing.
        shell.open(MessageDestination.alert(title: "Storm", body: "Park at the next exit"))
        #expect(shell.alert == UrgentAlert(title: "Storm", body: "Park at the next exit"))
        shell.dismissAlert()
        #expect(shell.alert == nil)
        shell.selected = .profile
        shell.open(MessageDestination.inline)
        #expect(shell.selected == .profile)

        // A tapped status-change push: Trips, over the order.
        let order = scene.carrier.orders[scene.carrier.trips[0][0].id]![0]
        shell.open(NotificationDestination.order(order.id))
        #expect(shell.selected == .trips && shell.opened == .order(order.id))
        await scene.live.stop()
    }

    @Test("Messages pulls to refresh: a message dispatch just sent appears")
    func refreshMessages() async throws {
        let scene = try await DriverScene.make()
        let messages = MessagesViewModel(app: scene.app)
        let before = messages.state.sections.flatMap(\.rows).count
        scene.server.clock.advance(by: 60)
        _ = try await scene.server.store.notifications.send(.init(driverID: scene.carrier.driverID(0), type: .dispatchMessage,
                                                           title: "Gate code", body: "4471"), tenant: scene.carrier.tenant.id)
        await messages.refresh()
        try await eventually("the new message") { messages.state.sections.flatMap(\.rows).count == before + 1 }
        #expect(messages.state.sections.first?.rows.first?.notification.title == "Gate code")
        await scene.live.stop()
    }

    @Test("the error banner says why sync failed; Dismiss hides it until the next failure; Retry syncs again")
    func errorBanner() async throws {
        let transport = FlakyTransport()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, transport: transport) }
        let banners = BannersViewModel(app: scene.app)
        #expect(banners.state.error == nil)
        transport.only = Endpoint.sync.path()
        transport.mode = .serverFailing
        await scene.app.syncNow()
        let error = try #require(banners.state.error)
        #expect(error.hasPrefix("Couldn't sync: "), "\(error)")
        banners.dismissError()
        #expect(banners.state.error == nil)
        await scene.app.syncNow()
        #expect(banners.state.error != nil)                           // failing again: shown again
        transport.mode = .normal
        await banners.retry()
        #expect(banners.state.error == nil)
        await scene.live.stop()
    }
}
