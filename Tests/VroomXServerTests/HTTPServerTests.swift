import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

@Suite("HTTP server")
struct HTTPServerTests {
    @Test("a connection that never sends a request is closed at shutdown instead of holding it up")
    func silentConnectionAtShutdown() async throws {
        let server = try await TestServer.make(.sqlite)
        let live = try await LiveServer(server)
        let socket = try RawSocket(port: live.port)
        // Let the server accept it before it is asked to stop.
        try await Task.sleep(for: .milliseconds(200))

        let stopping = Task { await live.stop() }
        let closedByServer = await socket.waitForClose(seconds: 10)
        socket.close()  // without the guard, this is what would finally let the server stop
        await stopping.value
        #expect(closedByServer, "the server closed the silent connection as it shut down")
    }
}

@Suite("JSON logs")
struct JSONLogTests {
    @Test("each log line is one JSON object with the level, message, label and metadata")
    func oneObjectPerLine() throws {
        let lines = NIOLockedValueBox<[String]>([])
        var logger = Logger(label: "vroomx-test") { label in
            JSONLogHandler(label: label) { line in lines.withLockedValue { $0.append(line) } }
        }
        logger[metadataKey: "instance"] = "a"
        logger.warning("push \"retry\"\nlater", metadata: ["token": "ab12"])
        logger.debug("below the level")
        let written = lines.withLockedValue { $0 }
        #expect(written.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(written[0].utf8)) as? [String: String])
        #expect(object["level"] == "warning")
        #expect(object["message"] == "push \"retry\"\nlater")
        #expect(object["label"] == "vroomx-test")
        #expect(object["instance"] == "a" && object["token"] == "ab12")
        #expect(object["time"].flatMap(WireTime.parse) != nil)
    }
}
