import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// How the realtime socket refuses, sheds and ends connections: JSON answers
/// to refused upgrades, caps per user, carrier and instance, 1013 when the
/// database fails, 1001 at shutdown. Real WebSockets on loopback.
@Suite("Realtime limits")
struct RealtimeLimitTests {
    /// Sends a WebSocket upgrade for `query` and reads the HTTP answer.
    static func upgrade(_ port: Int, _ query: String, headers: [String: String] = [:]) async throws -> RawHTTP.Answer {
        let socket = try await RawSocket.connect(port: port)
        defer { socket.close() }
        try await socket.send(RawHTTP.upgradeHead(Endpoint.realtime.path() + "?" + query, headers: headers))
        return try await socket.readResponse()
    }

    static func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    @Test("a refused upgrade is answered with the JSON error of the HTTP API, not an empty 400")
    func refusedUpgrades() async throws {
        let server = try await TestServer.make(.sqlite)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run(.live) { api in
            let port = try #require(api.port)
            let token = a.driver.accessToken
            let revoked = try await server.services.signIn(email: a.driver.user.email)
            #expect(try await api.call(.logout, json: LogoutRequest(refreshToken: revoked.refreshToken)).status == 204)

            let cases: [(String, String, [String: String], Int, String)] = [
                ("no token", "since=0", [:], 401, "missing_token"),
                ("a forged token", "since=0", Self.bearer("not.a.token"), 401, "invalid_token"),
                ("a forged query token", "since=0&access_token=not.a.token", [:], 401, "invalid_token"),
                ("a revoked session", "since=0", Self.bearer(revoked.accessToken), 401, "session_revoked"),
                ("a bad cursor", "since=x", Self.bearer(token), 400, "invalid_parameter"),
                ("a bad cursor, query token", "since=-1&access_token=\(token)", [:], 400, "invalid_parameter"),
            ]
            for (name, query, headers, status, code) in cases {
                let answer = try await Self.upgrade(port, query, headers: headers)
                #expect(answer.status == status, "\(name): \(answer.status) \(answer.text)")
                #expect(answer.errorCode == code, "\(name): \(answer.text)")
                #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true, "\(name)")
            }
            server.clock.advance(by: 3601)
            let expired = try await Self.upgrade(port, "since=0", headers: Self.bearer(token))
            #expect(expired.status == 401 && expired.errorCode == "token_expired", "\(expired.text)")
        }
    }

    @Test("a user's newest socket replaces the oldest beyond the per-user cap; the oldest closes with 4029")
    func socketsPerUser() async throws {
        let server = try await TestServer.make(.sqlite) { $0.realtimeLimits.socketsPerUser = 2 }
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run(.live) { api in
            let port = try #require(api.port)
            let token = a.driver.accessToken
            let first = RealtimeTestClient(port: port, token: token, since: 0)
            try await first.waitForReady()
            let second = RealtimeTestClient(port: port, token: token, since: 0)
            try await second.waitForReady()
            let third = RealtimeTestClient(port: port, token: token, since: 0)
            try await third.waitForReady()
            #expect(try await first.waitForClose() == RealtimeCloseCode.tooManyConnections.rawValue)
            try await Task.sleep(for: .milliseconds(300))
            #expect(!second.isFinished && !third.isFinished)
            await second.disconnect()
            await third.disconnect()
        }
    }

    @Test("beyond the per-carrier or per-instance cap an upgrade is refused with 429 too_many_connections; others still connect")
    func socketsPerCarrierAndInstance() async throws {
        let server = try await TestServer.make(.sqlite) {
            $0.realtimeLimits.socketsPerCarrier = 2
            $0.realtimeLimits.sockets = 3
        }
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let b = try await CarrierFixture.make(server, name: "Bravo", drivers: 2, tripsPerDriver: 1)
        try await server.run(.live) { api in
            let port = try #require(api.port)
            let a0 = RealtimeTestClient(port: port, token: a.drivers[0].accessToken, since: 0)
            let a1 = RealtimeTestClient(port: port, token: a.drivers[1].accessToken, since: 0)
            try await a0.waitForReady()
            try await a1.waitForReady()
            // Alpha is full; Bravo is not.
            let refused = try await Self.upgrade(port, "since=0", headers: Self.bearer(a.dispatcher.accessToken))
            #expect(refused.status == 429 && refused.errorCode == "too_many_connections", "\(refused.text)")
            #expect(refused.headers["retry-after"] != nil)
            let b0 = RealtimeTestClient(port: port, token: b.drivers[0].accessToken, since: 0)
            try await b0.waitForReady()
            // The instance is full.
            let full = try await Self.upgrade(port, "since=0", headers: Self.bearer(b.drivers[1].accessToken))
            #expect(full.status == 429 && full.errorCode == "too_many_connections", "\(full.text)")
            // A socket that leaves gives its place back.
            await a1.disconnect()
            try await Task.sleep(for: .milliseconds(300))
            let again = RealtimeTestClient(port: port, token: a.dispatcher.accessToken, since: 0)
            try await again.waitForReady()
            #expect(server.services.realtimeCapacity.openSockets == 3)
            for socket in [a0, b0, again] { await socket.disconnect() }
        }
    }

    @Test("when the database fails, a connected socket closes with 1013 and an upgrade is refused with 503 and Retry-After",
          arguments: TestBackend.postgresOnly)
    func databaseFailure(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend) { $0.realtimeHeartbeat = .milliseconds(100) }
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let services = try #require(live.services)
        let socket = RealtimeTestClient(port: live.port, token: a.driver.accessToken, since: 0)
        try await socket.waitForReady()
        // The server loses its database; past the session cache, every check needs it.
        await services.database.close()
        server.clock.advance(by: 60)
        #expect(try await socket.waitForClose() == RealtimeCloseCode.tryAgainLater.rawValue)
        let refused = try await Self.upgrade(live.port, "since=0", headers: Self.bearer(a.driver.accessToken))
        #expect(refused.status == 503 && refused.errorCode == "unavailable", "\(refused.status) \(refused.text)")
        #expect(refused.headers["retry-after"] != nil)
        #expect(await live.stop(within: .seconds(30)), "the server did not shut down after losing its database")
    }

    @Test("at shutdown, realtime sockets close with 1001 (going away)")
    func goingAwayAtShutdown() async throws {
        let server = try await TestServer.make(.sqlite)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let live = try await LiveServer(server)
        let sockets = a.drivers.map { RealtimeTestClient(port: live.port, token: $0.accessToken, since: 0) }
        for socket in sockets { try await socket.waitForReady() }
        await live.stop()
        for socket in sockets {
            #expect(try await socket.waitForClose() == RealtimeCloseCode.goingAway.rawValue)
        }
    }
}
