import Foundation
import Testing
import VroomXModels
import VroomXSecurity
@testable import VroomXServer
import VroomXTestSupport

/// The console's live-update stream (server-sent events) against a live server.
@Suite("Console live updates")
struct ConsoleLiveTests {
    /// A live server and a signed-in dispatcher's page holding `/live` open, past its first event.
    static func openStream(_ configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in })
        async throws -> (LiveServer, RawSocket) {
        let server = try await TestServer.make(.sqlite, configure: configure)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let live = try await LiveServer(server)
        let token = SecureToken.random()
        let user = try #require(try await server.store.people.accounts(email: carrier.dispatcher.user.email).first?.user)
        _ = try await server.store.createConsoleSession(user: user, tokenHash: SecureToken.sha256Hex(token),
                                                        csrfToken: SecureToken.random(), lifetime: 3600)
        let socket = try await RawSocket.connect(port: live.port)
        try await socket.send("GET /live HTTP/1.1\r\nHost: localhost\r\nCookie: \(ConsoleController.sessionCookie)=\(token)\r\n\r\n")
        var received = ""
        while !received.contains("retry: 3000") {
            let bytes = try await socket.receive(timeout: .seconds(10))
            guard !bytes.isEmpty else { throw TestSetupError("the stream closed before its first event: \(received)") }
            received += String(decoding: bytes, as: UTF8.self)
        }
        return (live, socket)
    }

    @Test("a page that closes lets go of its stream at once, not at the next heartbeat 20 s later")
    func closedPageLetsGo() async throws {
        let (live, socket) = try await Self.openStream()
        let services = try #require(live.services)
        let streams = services.realtimeCapacity
        #expect(streams.openStreams == 1)
        socket.close()
        let deadline = ContinuousClock.now + .seconds(5)
        while streams.openStreams > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(streams.openStreams == 0)
        #expect(services.hub.subscriberCount == 0)
        await live.stop()
    }

    @Test("HEAD of the stream says what it would send and holds no place in the hub or under the limit")
    func headHoldsNothing() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let live = try await LiveServer(server)
        let services = try #require(live.services)
        let token = SecureToken.random()
        let user = try #require(try await server.store.people.accounts(email: carrier.dispatcher.user.email).first?.user)
        _ = try await server.store.createConsoleSession(user: user, tokenHash: SecureToken.sha256Hex(token),
                                                        csrfToken: SecureToken.random(), lifetime: 3600)
        for _ in 0..<20 {
            let socket = try await RawSocket.connect(port: live.port)
            try await socket.send("HEAD /live HTTP/1.1\r\nHost: localhost\r\nCookie: \(ConsoleController.sessionCookie)=\(token)\r\n\r\n")
            let head = String(decoding: try await socket.receive(timeout: .seconds(10)), as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200") && head.lowercased().contains("content-type: text/event-stream"), "\(head)")
            socket.close()
        }
        #expect(services.realtimeCapacity.openStreams == 0)
        #expect(services.hub.subscriberCount == 0)
        await live.stop()
    }

    @Test("a server stopping tells an open page to refresh everything and closes its stream promptly")
    func shutdownEndsStream() async throws {
        // A grace period far longer than the bound below: a stream that held the
        // shutdown up would stay open for all of it (the bound leaves room for a
        // machine busy with the other suites).
        let grace = Duration.seconds(120)
        let (live, socket) = try await Self.openStream { $0.connectionLimits.shutdownGrace = grace }
        let started = ContinuousClock.now
        let stopping = Task { await live.stop() }
        var received = ""
        while true {
            let bytes = try await socket.receive(timeout: grace)
            if bytes.isEmpty { break }
            received += String(decoding: bytes, as: UTF8.self)
        }
        let streamEnded = ContinuousClock.now - started
        await stopping.value
        #expect(received.contains("event: change\ndata: {\"entities\":[\"all\"]}"))
        #expect(streamEnded < .seconds(30), "the stream held the shutdown up")
        socket.close()
    }
}
