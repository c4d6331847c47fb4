import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Sign-in abuse that per-code and per-request limits alone did not stop:
/// forged proxy headers, guessing from many addresses, forged identities,
/// stolen device tokens.
@Suite("Sign-in abuse")
struct SignInAbuseTests {
    @Test("behind a trusted proxy, limits count the address the proxy added, not what the client wrote in front of it")
    func forwardedForIsReadFromTheRight() async throws {
        let server = try await TestServer.make(.sqlite) { configuration in
            configuration.trustedProxyHops = 1
            configuration.auth.codeSendsPerAddress = 3
        }
        try await server.run { api in
            // The attacker forges a new left-hand address each time; the proxy appends the real one.
            for index in 0..<3 {
                let sent = try await api.call(.sendCode, json: SendCodeRequest(email: "person\(index)@example.com"),
                                              headers: ["X-Forwarded-For": "10.0.0.\(index), 198.51.100.7"])
                #expect(sent.status == 202)
            }
            let limited = try await api.call(.sendCode, json: SendCodeRequest(email: "person9@example.com"),
                                             headers: ["X-Forwarded-For": "10.9.9.9, 198.51.100.7"])
            #expect(limited.status == 429 && limited.errorCode == "rate_limited")
            #expect(limited.error?.field == nil, "no code went to this email: the client waits, not the email")
            // Another real client behind the same proxy is not affected.
            #expect(try await api.call(.sendCode, json: SendCodeRequest(email: "other@example.com"),
                                       headers: ["X-Forwarded-For": "198.51.100.8"]).status == 202)
        }
        #expect(ClientAddress.limitKey("2001:db8:1:2::1") == ClientAddress.limitKey("2001:db8:1:2:ffff:1:2:3"))
        #expect(ClientAddress.limitKey("2001:db8:1:2::1") != ClientAddress.limitKey("2001:db8:1:3::1"))
        #expect(ClientAddress.limitKey("::ffff:192.0.2.1") == "192.0.2.1")
        #expect(ClientAddress.limitKey("192.0.2.1") == "192.0.2.1")
    }

    @Test("clients of one IPv6 /64 share one allowance")
    func ipv6PerPrefix() async throws {
        let server = try await TestServer.make(.sqlite) { configuration in
            configuration.trustedProxyHops = 1
            configuration.auth.codeSendsPerAddress = 3
        }
        try await server.run { api in
            for index in 1...3 {
                #expect(try await api.call(.sendCode, json: SendCodeRequest(email: "p\(index)@example.com"),
                                           headers: ["X-Forwarded-For": "2001:db8:aa:bb::\(index)"]).status == 202)
            }
            let limited = try await api.call(.sendCode, json: SendCodeRequest(email: "p9@example.com"),
                                             headers: ["X-Forwarded-For": "2001:db8:aa:bb:1234:5678:9abc:def0"])
            #expect(limited.status == 429)
        }
    }

    @Test("an email sees at most 20 wrong codes a day, from any number of addresses; then no code is checked or sent until tomorrow",
          arguments: TestBackend.available)
    func dailyFailureCap(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend) { $0.trustedProxyHops = 1 }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let email = carrier.driver.user.email
        let cap = server.services.configuration.auth.codeFailuresPerEmail
        try await server.run { api in
            var failures = 0
            var address = 0
            func from() -> [String: String] {
                address += 1
                return ["X-Forwarded-For": "203.0.\(address / 250).\(address % 250)"]
            }
            while failures < cap {
                #expect(try await api.call(.sendCode, json: SendCodeRequest(email: email), headers: from()).status == 202)
                let code = try await server.code(for: email)
                let wrong = code == "000000" ? "000001" : "000000"
                for _ in 0..<4 where failures < cap {
                    let guess = try await api.call(.verifyCode, json: VerifyCodeRequest(email: email, code: wrong), headers: from())
                    failures += 1
                    #expect(guess.status == (failures < cap ? 401 : 429), "guess \(failures): \(guess.text)")
                }
                server.clock.advance(by: 61)
            }
            // The right code no longer works today, and no new one is sent.
            let blocked = try await api.call(.sendCode, json: SendCodeRequest(email: email), headers: from())
            #expect(blocked.status == 429 && blocked.errorCode == "rate_limited" && (blocked.error?.retryAfter ?? 0) > 0)
            server.clock.advance(by: 86_400)
            let session = try await api.signIn(email, server: server)
            #expect(session.user.email == email)
        }
    }

    @Test("a driver's token without a driver id is refused, never given the carrier's scope")
    func driverTokenWithoutDriver() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let driverUser = try await server.store.people.user(carrier.driver.user.id, tenant: carrier.tenant.id)
        let session = try await server.store.createSession(user: driverUser, refreshTokenHash: "x", lifetime: 3600)
        // Signed with the server's own key, but without the driver id.
        let forged = try await server.services.tokens.issue(user: driverUser, driver: nil, session: session).token
        try await server.run { api in
            for endpoint in [Endpoint.sync, .me, .trips] {
                let answer = try await api.call(endpoint, query: endpoint == .sync ? "since=0" : nil, token: forged)
                #expect(answer.status == 401 && answer.errorCode == "invalid_token", "\(endpoint): \(answer.text)")
            }
        }
    }

    @Test("a device token moves to another account only from the same app installation; a session's tokens go with it",
          arguments: TestBackend.available)
    func deviceTokenOwnership(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 0)
        let b = try await CarrierFixture.make(server, name: "Bravo", drivers: 1, tripsPerDriver: 0)
        let token = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2"
        let installation = "installation-secret-of-the-phone-0001"
        try await server.run { api in
            let owner = try await api.signIn(a.drivers[0].user.email, server: server)
            let registered = try await api.call(.registerDeviceToken, json: RegisterDeviceTokenRequest(
                token: token, platform: .ios, installationID: installation), token: owner.accessToken)
            #expect(registered.status == 201)
            // Another carrier's user who learned the token cannot take it, with or without a made-up installation.
            for claim in [nil, "a-guess-at-the-installation-id"] {
                let taken = try await api.call(.registerDeviceToken, json: RegisterDeviceTokenRequest(
                    token: token, platform: .ios, installationID: claim), token: b.driver.accessToken)
                #expect(taken.status == 409 && taken.errorCode == "conflict", "\(taken.text)")
            }
            #expect(try await server.store.people.deviceTokens(user: owner.user.id, tenant: a.tenant.id).map(\.token) == [token])
            // Another driver signing in on the same phone (same installation) takes it over.
            let colleague = try await api.signIn(a.drivers[1].user.email, server: server)
            #expect(try await api.call(.registerDeviceToken, json: RegisterDeviceTokenRequest(
                token: token, platform: .ios, installationID: installation), token: colleague.accessToken).status == 201)
            #expect(try await server.store.people.deviceTokens(user: owner.user.id, tenant: a.tenant.id).isEmpty)
            #expect(try await api.call(.removeDeviceToken, token, token: owner.accessToken).status == 404)
            // Signing out removes the session's tokens.
            #expect(try await api.call(.logout, json: LogoutRequest(refreshToken: colleague.refreshToken)).status == 204)
            #expect(try await server.store.people.deviceTokens(user: colleague.user.id, tenant: a.tenant.id).isEmpty)
        }
    }
}
