import Foundation
import NIOWebSocket
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

    @Test("an upgrade request with a body is closed, not left open holding a realtime place")
    func upgradeWithBody() async throws {
        let server = try await TestServer.make(.sqlite)
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run(.live) { api in
            let port = try #require(api.port)
            var head = RawHTTP.upgradeHead("/v1/realtime?since=0", headers: Self.bearer(a.driver.accessToken).merging(["Content-Length": "1"]) { $1 })
            head += Array("x".utf8)
            let socket = try await RawSocket.connect(port: port)
            try await socket.send(head)
            #expect(await socket.closed(within: .seconds(5)), "the connection stayed open")
            socket.close()
            let capacity = server.services.realtimeCapacity
            let deadline = ContinuousClock.now + .seconds(5)
            while capacity.openSockets > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(capacity.openSockets == 0)
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

    @Test("the server answers a client's ping and close, pings its sockets and closes one that stopped answering")
    func controlFrames() async throws {
        // Long enough for a library client on a machine busy with other tests to answer in time.
        let server = try await TestServer.make(.sqlite) { $0.connectionLimits.webSocketPingInterval = .seconds(2) }
        let a = try await CarrierFixture.make(server, name: "Alpha", drivers: 3, tripsPerDriver: 1)
        try await server.run(.live) { api in
            let port = try #require(api.port)
            // A client whose WebSocket library answers pings stays connected throughout.
            let answering = RealtimeTestClient(port: port, token: a.drivers[2].accessToken, since: 0)
            try await answering.waitForReady()

            var polite = try await RawWebSocket.open(port: port, token: a.drivers[0].accessToken)
            try await polite.send(opcode: .ping, Array("are you there".utf8))
            let pong = try await polite.next { $0.opcode == .pong }
            #expect(pong.payload == Array("are you there".utf8))
            try await polite.send(opcode: .connectionClose, [0x03, 0xE8])  // 1000
            let answer = try await polite.next { $0.opcode == .connectionClose }
            #expect(answer.payload.prefix(2) == [0x03, 0xE8])
            #expect(await polite.socket.closed(within: .seconds(10)), "the server keeps a socket whose closing handshake is done")

            var silent = try await RawWebSocket.open(port: port, token: a.drivers[1].accessToken)
            let opened = ContinuousClock.now
            _ = try await silent.next { $0.opcode == .ping }
            // A pong that does not answer the server's ping (an empty one, unasked) keeps nobody alive.
            try await silent.send(opcode: .pong, [])
            let goodbye = try await silent.next { $0.opcode == .connectionClose }
            #expect(goodbye.payload.prefix(2) == [0x03, 0xE9], "closed with 1001 (going away)")  // 1001
            #expect(await silent.socket.closed(within: .seconds(10)))
            #expect(ContinuousClock.now - opened < .seconds(10), "a silent socket lingers")

            #expect(!answering.isFinished, "a socket that answers pings was closed: \(String(describing: answering.closeCode))")
            let hub = server.services.hub
            let deadline = ContinuousClock.now + .seconds(10)
            while hub.subscriberCount > 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(hub.subscriberCount == 1, "the hub still holds the closed sockets")
        }
    }
}

/// A WebSocket over a raw TCP socket, frame by frame, for what a WebSocket
/// library does on its own (pings, pongs, closing handshakes).
struct RawWebSocket {
    struct Frame {
        let opcode: WebSocketOpcode
        let payload: [UInt8]
    }

    let socket: RawSocket
    private var received: [UInt8]

    static func open(port: Int, token: String) async throws -> RawWebSocket {
        let socket = try await RawSocket.connect(port: port)
        try await socket.send(RawHTTP.upgradeHead(Endpoint.realtime.path() + "?since=0", headers: ["Authorization": "Bearer \(token)"]))
        // The head of the 101 only: the socket stays open after it.
        var received: [UInt8] = []
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let end = received.indices.first(where: { received[$0...].starts(with: separator) }) {
                let head = String(decoding: received[..<end], as: UTF8.self)
                guard head.hasPrefix("HTTP/1.1 101") else { throw TestSetupError("the upgrade was answered \(head)") }
                return RawWebSocket(socket: socket, received: Array(received[(end + 4)...]))
            }
            let bytes = try await socket.receive(timeout: .seconds(10))
            guard !bytes.isEmpty else { throw TestSetupError("the server closed the socket during the upgrade") }
            received += bytes
        }
    }

    /// Sends one masked frame, as a client must.
    func send(opcode: WebSocketOpcode, _ payload: [UInt8]) async throws {
        precondition(payload.count < 126)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        let opcodeBits = UInt8(webSocketOpcode: opcode)
        let bytes = [0x80 | opcodeBits, 0x80 | UInt8(payload.count)] + mask
            + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try await socket.send(bytes)
    }

    /// Reads frames until one matches; throws if the connection ends first.
    mutating func next(where matches: (Frame) -> Bool) async throws -> Frame {
        while true {
            while let frame = takeFrame() {
                if matches(frame) { return frame }
            }
            let bytes = try await socket.receive(timeout: .seconds(10))
            guard !bytes.isEmpty else { throw TestSetupError("the server closed the socket first") }
            received += bytes
        }
    }

    /// The next whole frame received (servers send them unmasked).
    private mutating func takeFrame() -> Frame? {
        guard received.count >= 2 else { return nil }
        var length = Int(received[1] & 0x7F)
        var start = 2
        if length == 126 {
            guard received.count >= 4 else { return nil }
            length = Int(received[2]) << 8 | Int(received[3])
            start = 4
        } else if length == 127 {
            guard received.count >= 10 else { return nil }
            length = received[2..<10].reduce(0) { $0 << 8 | Int($1) }
            start = 10
        }
        guard received.count >= start + length, let opcode = WebSocketOpcode(encodedWebSocketOpcode: received[0] & 0x0F) else { return nil }
        defer { received.removeFirst(start + length) }
        return Frame(opcode: opcode, payload: Array(received[start..<start + length]))
    }
}
