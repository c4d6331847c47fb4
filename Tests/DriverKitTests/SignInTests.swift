import DriverKit
import Foundation
import NIOConcurrencyHelpers
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

@Suite("DriverKit sign-in and session")
@MainActor
struct SignInTests {
    @Test("code sign-in, PIN setup, lock and unlock offline, biometrics, lockout after five wrong PINs")
    func signInAndPIN() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live, biometrics: ScriptedBiometrics(answer: true))
        let auth = device.app.auth
        #expect(auth.state == .signedOut)
        #expect(device.app.router.route == .onboarding(.welcome))

        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox, pin: nil)
        #expect(auth.state == .needsPINSetup)
        let account = try #require(try device.app.database.account())
        #expect(account.driver?.id == carrier.driverID(0))
        #expect(device.app.router.route == .onboarding(.pin))
        try await auth.setUpPIN("1379")
        #expect(auth.state == .unlocked)
        #expect(device.app.router.route == .onboarding(.biometrics))  // this device has Face ID: offered once
        #expect(await device.app.router.answerBiometricsOffer(enable: false) == false)
        try await eventually("the app") { device.app.router.route == .main }
        // The PIN reached the server too (and is a slow hash there).
        let stored = try await serverPINHash(server, user: carrier.driver.user.id)
        #expect(stored?.hasPrefix("scrypt$") == true)
        // Never the PIN in clear on the device.
        let secrets = try String(contentsOf: device.stateDirectory.appendingPathComponent("secrets.json"), encoding: .utf8)
        #expect(!secrets.contains("1379"))

        // Lock; unlock with the PIN while the server is down.
        auth.lock()
        #expect(auth.state == .locked)
        #expect(device.app.router.route == .locked)
        await live.stop()
        try await auth.unlock(pin: "1379")
        #expect(auth.state == .unlocked)

        // Biometrics, once turned on.
        #expect(await auth.setBiometrics(enabled: true))
        auth.lock()
        #expect(await auth.unlockWithBiometrics())
        #expect(auth.state == .unlocked)

        // Five wrong PINs send the driver back to email sign-in; work on the device is kept.
        try device.app.submitETA(carrier.orders[carrier.trips[0][0].id]![0].id, pickup: Date().addingTimeInterval(3600))
        auth.lock()
        for attempt in 1...5 {
            do {
                try await auth.unlock(pin: "0000")
                Issue.record("a wrong PIN unlocked")
            } catch AuthError.invalidPIN(let left) {
                #expect(left == 5 - attempt)
            } catch AuthError.pinLockedOut {
                #expect(attempt == 5)
            }
        }
        #expect(auth.state == .signedOut)
        #expect(device.app.router.route == .login)
        #expect(try device.app.database.unsyncedCount() == 1)
        await device.app.shutdown()
    }

    @Test("first run: welcome, email, code, PIN and the Face ID offer, each resumed after the app closes; loading only while nothing is cached")
    func firstRun() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("driverkit-\(UUID().uuidString.prefix(8))")
        let transport = FlakyTransport()
        func launch() throws -> DriverDevice {
            try DriverDevice.make(server: live, stateDirectory: directory, transport: transport, biometrics: ScriptedBiometrics(answer: true))
        }
        func firstScreen(at now: Date = Date()) throws -> AppRoute { AppRouter.determineInitialRoute(try AppDatabase.open(directory: directory), now: now) }
        let email = carrier.driver.user.email

        var device = try launch()
        #expect(device.app.router.route == .onboarding(.welcome))
        device.app.router.continueFromWelcome()
        #expect(device.app.router.route == .onboarding(.email))
        await device.app.shutdown()
        #expect(try firstScreen() == .onboarding(.email))           // closed and opened again: still at the email
        device = try launch()
        #expect(device.app.router.route == .onboarding(.email))

        try await device.app.router.requestCode(for: "driver0@alpha.exmaple")  // a typo in the address
        #expect(device.app.router.route == .onboarding(.code))
        device.app.router.backToEmail()
        #expect(device.app.router.route == .onboarding(.email))
        try await device.app.router.requestCode(for: email)
        #expect(device.app.router.route == .onboarding(.code))
        await device.app.shutdown()
        #expect(try firstScreen() == .onboarding(.code))            // the code is still good: back at the code
        #expect(try firstScreen(at: Date().addingTimeInterval(11 * 60)) == .onboarding(.email))  // it ran out
        device = try launch()
        #expect(device.app.router.route == .onboarding(.code))
        #expect(device.app.auth.state == .codeSent(email: email))

        transport.hold(Endpoint.sync.path())                         // the first download takes its time
        try await device.app.router.signIn(code: try await DriverDevice.code(for: email, mailbox: server.mailbox))
        #expect(device.app.router.route == .onboarding(.pin))
        try await device.app.router.setUpPIN("4826")
        #expect(device.app.router.route == .onboarding(.biometrics))
        #expect(await device.app.router.answerBiometricsOffer(enable: true))
        #expect(device.app.auth.biometricsEnabled)
        #expect(device.app.router.route == .loading)                 // nothing on the device yet
        #expect(device.app.router.loadingMessage == "Loading your trips…")
        try await eventually("the first download asked for") { transport.heldCount > 0 }
        transport.release()
        try await eventually("the app, once the trips are in") { device.app.router.route == .main }
        #expect(try device.app.database.trips().count == 1)

        // Relaunched: locked, Face ID not offered again; signed out: the login screen, no introduction.
        await device.app.shutdown()
        #expect(try firstScreen() == .locked)
        device = try launch()
        #expect(await device.app.auth.unlockWithBiometrics())
        #expect(device.app.router.route == .main)
        try await device.app.router.logOut(force: true)
        #expect(device.app.router.route == .login)
        #expect(try firstScreen() == .login)
        await device.app.shutdown()
        await live.stop()
    }

    @Test("the lock screen greets the driver by name, counts wrong PINs, unlocks, and offers email sign-in")
    func lockScreen() async throws {
        let scene = try await DriverScene.make()
        let app = scene.device.app
        app.auth.lock()
        let lock = LockScreenViewModel(app: app)
        let first = (scene.carrier.drivers[0].driver?.name ?? "").split(separator: " ").first.map(String.init) ?? ""
        #expect(lock.greeting == "Welcome back, \(first)")
        #expect(!lock.canUseBiometrics)
        for digit in [1, 1, 1] { await lock.type(digit) }
        #expect(lock.progressLabel == "3 of 4 digits entered")
        lock.deleteDigit()
        await lock.type(1)
        await lock.type(1)                                           // 1111: wrong
        #expect(lock.message == "Wrong PIN. 4 attempts left.")
        #expect(lock.progressLabel == "0 of 4 digits entered")
        for digit in [2, 5, 8, 0] { await lock.type(digit) }         // the PIN the scene set
        #expect(app.auth.state == .unlocked && lock.message == nil)
        app.auth.lock()
        scene.server.clock.advance(by: 61)                           // past the pause between codes
        await lock.forgotPIN()
        #expect(app.auth.state == .codeSent(email: scene.carrier.driver.user.email))
        app.auth.cancelCode()
        #expect(app.auth.state == .locked)
        await scene.live.stop()
    }

    /// Face ID as the driver answers it: counts its prompts.
    final class AnsweringBiometrics: Biometrics, Sendable {
        private let state = NIOLockedValueBox((answer: true, prompts: 0))
        var isAvailable: Bool { true }
        var prompts: Int { state.withLockedValue { $0.prompts } }
        func answer(_ answer: Bool) { state.withLockedValue { $0.answer = answer } }
        func authenticate(reason: String) async -> Bool {
            state.withLockedValue { $0.prompts += 1; return $0.answer }
        }
    }

    @Test("a call or a look at Maps within two minutes needs no PIN; longer away, or with the clock turned back, it does")
    func lockGracePeriod() async throws {
        // The device's clock (the driver can set it) and the seconds since boot (nobody can).
        let clock = TestClock()
        let boot = NIOLockedValueBox<TimeInterval>(1000)
        func pass(_ seconds: TimeInterval) {
            clock.advance(by: seconds)
            boot.withLockedValue { $0 += seconds }
        }
        let scene = try await DriverScene.make {
            try DriverDevice.make(server: $0, clock: clock.read, uptime: { boot.withLockedValue { $0 } })
        }
        let auth = scene.app.auth
        #expect(auth.state == .unlocked && auth.lockGracePeriod == 120)
        auth.movedToBackground()
        pass(119)
        auth.cameToForeground()
        #expect(auth.state == .unlocked, "back within the grace period")
        auth.movedToBackground()
        pass(120)
        auth.cameToForeground()
        #expect(auth.state == .locked, "away for the grace period")
        let lock = LockScreenViewModel(app: scene.app)
        for digit in [2, 5, 8, 0] { await lock.type(digit) }
        #expect(auth.state == .unlocked)
        // Away 200 s with the clock set back 150 s meanwhile: the device's clock says 50 s, the phone's uptime 200.
        auth.movedToBackground()
        pass(200)
        clock.advance(by: -150)
        auth.cameToForeground()
        #expect(auth.state == .locked, "turning the clock back does not skip the PIN")
        for digit in [2, 5, 8, 0] { await lock.type(digit) }
        // Asleep for an hour: seconds since boot stand still on a sleeping phone, the device's clock does not.
        auth.movedToBackground()
        clock.advance(by: 3600)
        auth.cameToForeground()
        #expect(auth.state == .locked, "a sleeping phone still locks")
        for digit in [2, 5, 8, 0] { await lock.type(digit) }
        auth.movedToBackground()
        clock.advance(by: -3600)
        auth.cameToForeground()
        #expect(auth.state == .locked, "a clock that went back locks at once")
        // Coming to the front twice after one background (Face ID's own prompt does that) checks once.
        auth.cameToForeground()
        #expect(auth.state == .locked)
        await scene.app.shutdown()
        await scene.live.stop()
    }

    @Test("the lock screen offers Face ID by itself once: cancelled, it waits for the button, and asks again after the app was away")
    func faceIDOfferedOnce() async throws {
        let biometrics = AnsweringBiometrics()
        let scene = try await DriverScene.make { try DriverDevice.make(server: $0, biometrics: biometrics) }
        let app = scene.app
        // Profile's switch: on only once Face ID knows the driver.
        let profile = ProfileViewModel(app: app)
        #expect(profile.offersBiometrics && !profile.biometricsEnabled)
        biometrics.answer(false)
        await profile.setBiometrics(true)
        #expect(!profile.biometricsEnabled && profile.biometricsMessage == "Face ID didn't confirm it's you, so it stays off.")
        biometrics.answer(true)
        await profile.setBiometrics(true)
        #expect(profile.biometricsEnabled && profile.biometricsMessage == nil)
        app.auth.lock()
        let lock = LockScreenViewModel(app: app)
        biometrics.answer(false)                                      // the driver cancels
        let before = biometrics.prompts
        await lock.inFront()
        #expect(biometrics.prompts == before + 1 && app.auth.state == .locked)
        #expect(lock.message == "Face ID didn't work. Enter your PIN.")
        // The prompt's dismissal brings the app to the front again: no second prompt.
        await lock.inFront()
        await lock.inFront()
        #expect(biometrics.prompts == before + 1)
        await lock.unlockWithBiometrics()                             // the button still asks
        #expect(biometrics.prompts == before + 2)
        lock.wentToBackground()
        biometrics.answer(true)
        await lock.inFront()
        #expect(biometrics.prompts == before + 3 && app.auth.state == .unlocked)
        await profile.setBiometrics(false)
        #expect(!profile.biometricsEnabled && !LockScreenViewModel(app: app).canUseBiometrics)
        await app.shutdown()
        await scene.live.stop()
    }

    @Test("a dispatcher's email or a driver without a record gets driver_not_found")
    func driverNotFound() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live)
        await #expect(throws: AuthError.driverNotFound) {
            try await device.signIn(carrier.dispatcher.user.email, mailbox: server.mailbox)
        }
        #expect(device.app.auth.message == "Driver account not found. Contact your dispatcher.")
        #expect(try device.app.database.account() == nil)
        await live.stop()
    }

    @Test("a driver of two carriers chooses one on the code screen, with the code already given; one who dispatches for the other goes straight in")
    func twoCarriers() async throws {
        let server = try await TestServer.make(.sqlite)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 0, tripsPerDriver: 0)
        let email = alpha.driver.user.email
        let atBeta = try await server.store.people.createDriver(tenant: beta.tenant.id, .init(email: email, name: "Sam at Beta", payType: .percentage,
                                                                                       payRate: 2000))
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live)
        await #expect(throws: AuthError.carrierRequired) {
            try await device.signIn(email, mailbox: server.mailbox, pin: nil)
        }
        #expect(device.app.auth.carrierChoices.map(\.name) == ["Alpha", "Beta"])
        #expect(device.app.auth.message == "You drive for more than one carrier. Choose the one you are working for now.")
        #expect(try device.app.database.account() == nil)
        try await device.app.router.chooseCarrier(beta.tenant.id)
        #expect(device.app.auth.state == .needsPINSetup)
        #expect(try device.app.database.account()?.driver?.id == atBeta.id)
        #expect(device.app.auth.carrierChoices.isEmpty)

        // Beta's dispatcher also drives for Alpha: the app signs them in as Alpha's driver, no question asked.
        let dispatcher = beta.dispatcher.user.email
        let driving = try await server.store.people.createDriver(tenant: alpha.tenant.id, .init(email: dispatcher, name: "Kim Driving",
                                                                                         payType: .percentage, payRate: 2000))
        let other = try DriverDevice.make(server: live)
        try await other.signIn(dispatcher, mailbox: server.mailbox, pin: nil)
        #expect(try other.app.database.account()?.driver?.id == driving.id)
        await live.stop()
    }

    @Test("the router's cases are decided synchronously from the device alone")
    func routerCases() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("driverkit-\(UUID().uuidString.prefix(8))")
        func route() throws -> AppRoute { AppRouter.determineInitialRoute(try AppDatabase.open(directory: directory)) }

        #expect(try route() == .onboarding(.welcome))             // fresh install
        var device = try DriverDevice.make(server: live, stateDirectory: directory)
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox, pin: nil)
        #expect(try route() == .onboarding(.pin))                 // signed in, no PIN yet
        try await device.app.auth.setUpPIN("2468")
        await device.app.shutdown()
        await live.stop()
        #expect(try route() == .locked)                           // signed in with a PIN (no network needed)

        // Relaunch offline: the first screen is decided without the server; verification waits.
        device = try DriverDevice.make(server: live, stateDirectory: directory)
        #expect(device.app.router.route == .locked)
        device.app.launch()
        try await Task.sleep(for: .milliseconds(300))
        #expect(device.app.auth.state == .locked)                 // a network error never signs out
        try await live.start()
        try await device.app.auth.unlock(pin: "2468")
        try await device.app.auth.logout(force: true)
        #expect(try route() == .login)                            // signed out on a device used before
        await device.app.shutdown()
        await live.stop()
    }

    @Test("a session the server revoked sends the driver to login; unsynced work stays")
    func revokedSession() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let device = try DriverDevice.make(server: live)
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        // The device has its work before the session ends (the first sync runs in the background).
        await device.app.syncNow()
        // Sign-in on the server side is revoked (e.g. a stolen refresh token was replayed).
        try await revokeSessions(server, user: carrier.driver.user.id)
        server.clock.advance(by: 11) // past the server's session cache
        // Work done meanwhile is not lost when the session ends.
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        await live.stop()
        try await device.app.inspectAndComplete(order.id, .pickup)
        try await live.start()
        await device.app.syncNow()
        try await eventually("signed out") { device.app.auth.state == .signedOut }
        #expect(device.app.auth.message?.contains("session has ended") == true)
        #expect(try device.app.database.unsyncedCount() == 3 + MediaSlot.requiredPhotos.count)
        #expect(try device.app.database.order(order.id)?.status == .pickedUp)
        // The same driver signs in again (after the one-minute resend limit): the pickup and its photos go through.
        server.clock.advance(by: 61)
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox, pin: nil)
        await device.app.syncNow()
        try await eventually("synced", timeout: .seconds(60)) { try device.app.database.unsyncedCount() == 0 }
        #expect(try await server.store.orders.order(order.id, carrier.scope).status == .pickedUp)
        await device.app.shutdown()
        await live.stop()
    }
}

nonisolated func serverPINHash(_ server: TestServer, user: ID<User>) async throws -> String? {
    try await server.store.database.read { db in
        try await db.first("SELECT pin_hash FROM users WHERE id = \(user)")?.optionalString("pin_hash")
    }
}

nonisolated func revokeSessions(_ server: TestServer, user: ID<User>) async throws {
    try await server.store.database.write { db in
        try await db.execute("UPDATE sessions SET revoked_at = 1 WHERE user_id = \(user)")
    }
}

