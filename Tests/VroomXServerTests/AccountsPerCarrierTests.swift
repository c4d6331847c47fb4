import Foundation
import Logging
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// A person who works for two carriers (an owner-operator who changed
/// carriers, a driver leased to two) has an account at each, chosen at
/// sign-in. Adding someone reveals nothing about other carriers.
@Suite("Accounts per carrier")
struct AccountsPerCarrierTests {
    @Test("a carrier adds a driver another carrier has without learning it; the driver chooses a carrier at sign-in with one code",
          arguments: TestBackend.available)
    func secondCarrier(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        // Alpha's driver holds no open work, so Alpha can deactivate them below.
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let shared = alpha.driver.user.email
        try await server.run { api in
            let token = beta.dispatcher.accessToken
            func invite(_ email: String, _ name: String) async throws -> APIResponse {
                try await api.call(.dispatchCreateDriver, json: CreateDriverRequest(email: email, name: name, payType: .percentage, payRate: 2500),
                                   token: token)
            }
            // Alpha's driver and an email no one uses are answered alike: Beta learns nothing about Alpha.
            let known = try await invite(shared, "Sam Shared")
            let unknown = try await invite("nobody-yet@nowhere.example", "Nobody Yet")
            #expect(known.status == 201, "\(known.text)")
            #expect(unknown.status == 201, "\(unknown.text)")
            // Within Beta the email is taken now, and Beta is told so.
            let again = try await invite(shared, "Sam Again")
            #expect(again.status == 409)
            #expect(again.errorCode == "already_exists")
            #expect(again.error?.message.contains("this carrier") == true)
            let betaDriver = try known.decode(Driver.self)

            // One code; the right code names the carriers and stays good until one is chosen.
            let earlier = server.codeCount(to: shared)
            #expect(try await api.call(.sendCode, json: SendCodeRequest(email: shared)).status == 202)
            let code = try await server.code(for: shared, after: earlier)
            let choose = try await api.call(.verifyCode, json: VerifyCodeRequest(email: shared, code: code))
            #expect(choose.status == 409)
            #expect(choose.errorCode == "carrier_required")
            #expect(choose.error?.carriers == [CarrierChoice(id: alpha.tenant.id, name: "Alpha", role: .driver),
                                               CarrierChoice(id: beta.tenant.id, name: "Beta", role: .driver)])
            // A carrier the email has no account at is not a way in: the same choice again, the code still good.
            let elsewhere = try await api.call(.verifyCode, json: VerifyCodeRequest(email: shared, code: code, carrierID: ID()))
            #expect(elsewhere.errorCode == "carrier_required")
            // Choosing is not a guess: after more choices than the code's five attempts, it still signs in.
            for _ in 0..<5 { _ = try await api.call(.verifyCode, json: VerifyCodeRequest(email: shared, code: code)) }
            let session = try await api.call(.verifyCode, json: VerifyCodeRequest(email: shared, code: code, carrierID: beta.tenant.id))
                .decode(AuthSession.self)
            #expect(session.user.tenantID == beta.tenant.id)
            #expect(session.driver?.id == betaDriver.id)
            // Used up once a session began.
            let spent = try await api.call(.verifyCode, json: VerifyCodeRequest(email: shared, code: code, carrierID: alpha.tenant.id))
            #expect(spent.status == 401)

            // Beta's session sees Beta's work only, though the email is Alpha's driver's too.
            let trips = try await api.call(.trips, token: session.accessToken).decode(Items<Trip>.self).items
            #expect(trips.isEmpty)
            let me = try await api.call(.me, token: session.accessToken).decode(MeResponse.self)
            #expect(me.tenant.id == beta.tenant.id)

            // Deactivated at Alpha, the person signs in to Beta without a choice.
            #expect(try await api.call(.dispatchDeactivateDriver, alpha.driverID(0).rawValue, token: alpha.dispatcher.accessToken).status == 200)
            server.clock.advance(by: 120)
            let next = try await api.signIn(shared, server: server)
            #expect(next.user.tenantID == beta.tenant.id)
        }
    }

    @Test("a wrong code is refused as ever, whatever the email's carriers: no list without the code", arguments: TestBackend.available)
    func noListWithoutTheCode(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 0, tripsPerDriver: 0)
        let shared = alpha.driver.user.email
        _ = try await server.store.people.createDriver(tenant: beta.tenant.id, .init(email: shared, name: "Sam", payType: .percentage, payRate: 2000))
        try await server.run { api in
            #expect(try await api.call(.sendCode, json: SendCodeRequest(email: shared)).status == 202)
            let guess = try await api.call(.verifyCode, json: VerifyCodeRequest(email: shared, code: "000000"))
            #expect(guess.status == 401)
            #expect(guess.error?.carriers == nil)
            #expect(!guess.text.contains("Beta") && !guess.text.contains("Alpha"))
        }
    }

    @Test("upgrading keeps every account and every reference to it; an email then fits two carriers, and deleting a carrier still cascades",
          arguments: TestBackend.available)
    func upgradeKeepsAccounts(_ backend: TestBackend) async throws {
        let configuration = try await backend.freshConfiguration()
        let database = try await ServerServices.openDatabase(configuration, logger: Logger(label: "test"))
        try await Migrator.migrate(database, now: Date(), upTo: 15)
        let now = Date()
        try await database.write { db in
            for tenant in ["t1", "t2"] { try await db.execute("INSERT INTO tenants (id, name, created_at) VALUES (\(tenant), \(tenant), \(now))") }
            try await db.execute("""
                INSERT INTO users (id, tenant_id, email, role, pin_hash, created_at)
                VALUES ('u1', 't1', 'sam@example.com', 'driver', 'scrypt$hash', \(now)), ('u2', 't1', 'kim@example.com', 'dispatcher', NULL, \(now))
                """)
            try await db.execute("INSERT INTO sessions (id, tenant_id, user_id, created_at, expires_at) VALUES ('s1', 't1', 'u1', \(now), \(now))")
        }
        // Before: one account per email across every carrier.
        await #expect(throws: DatabaseConstraintError.self) {
            try await database.write { try await $0.execute("INSERT INTO users (id, tenant_id, email, role, created_at) VALUES ('u3', 't2', 'sam@example.com', 'driver', \(now))") }
        }
        #expect(try await Migrator.migrate(database, now: Date()) == Array(16...Migrator.latestVersion))
        let users = try await database.read { try await $0.query("SELECT id, email, pin_hash FROM users ORDER BY id") }
        #expect(try users.map { try $0.string("id") } == ["u1", "u2"])
        #expect(try users.first?.optionalString("pin_hash") == "scrypt$hash")
        try await database.write { db in
            try await db.execute("INSERT INTO users (id, tenant_id, email, role, created_at) VALUES ('u3', 't2', 'sam@example.com', 'driver', \(now))")
            try await db.execute("INSERT INTO sessions (id, tenant_id, user_id, created_at, expires_at) VALUES ('s3', 't2', 'u3', \(now), \(now))")
        }
        // Still one account per email within a carrier, and still no session without its account.
        await #expect(throws: DatabaseConstraintError.self) {
            try await database.write { try await $0.execute("INSERT INTO users (id, tenant_id, email, role, created_at) VALUES ('u4', 't2', 'sam@example.com', 'dispatcher', \(now))") }
        }
        await #expect(throws: DatabaseConstraintError.self) {
            try await database.write { try await $0.execute("INSERT INTO sessions (id, tenant_id, user_id, created_at, expires_at) VALUES ('s4', 't2', 'nobody', \(now), \(now))") }
        }
        // Deleting a carrier takes its accounts and their sessions with it, and only those.
        try await database.write { try await $0.execute("DELETE FROM tenants WHERE id = 't2'") }
        let sessions = try await database.read { try await $0.query("SELECT id FROM sessions ORDER BY id") }
        #expect(try sessions.map { try $0.string("id") } == ["s1"])
        await database.close()
    }
}
