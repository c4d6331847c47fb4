#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
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
        let socket = try Self.connect(port: live.port)
        // Let the server accept it before it is asked to stop.
        try await Task.sleep(for: .milliseconds(200))

        let stopping = Task { await live.stop() }
        let closedByServer = await Task.detached { Self.waitForClose(socket, seconds: 10) }.value
        close(socket)  // without the guard, this is what would finally let the server stop
        await stopping.value
        #expect(closedByServer, "the server closed the silent connection as it shut down")
    }

    /// A plain TCP connection to the loopback port, sending nothing.
    static func connect(port: Int) throws -> Int32 {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, result == 0 else { throw POSIXError(.ECONNREFUSED) }
        return fd
    }

    /// Whether the peer closed the connection (read returns end of file)
    /// within the given time.
    static func waitForClose(_ fd: Int32, seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
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
