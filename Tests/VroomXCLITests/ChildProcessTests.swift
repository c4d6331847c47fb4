import Foundation
import Testing
import VroomXTestSupport

/// The harness that starts servers for the tests: a child must hold nothing
/// of the test process's (a port probe's socket inherited once kept a port
/// bound, and the server chosen for it could not start).
@Suite("Child processes")
struct ChildProcessTests {
    @Test("a child inherits only its standard input, output and error, even a socket opened without close-on-exec")
    func inheritsOnlyStandardDescriptors() async throws {
        let leaked = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(leaked > 2)
        defer { close(leaked) }
        // The shell lists its own descriptors: 0, 1, 2 and the one `ls` reads the listing with.
        let child = try ChildProcess("/bin/sh", ["-c", "ls /proc/$$/fd"])
        #expect(await child.waitForExit(timeout: .seconds(10)))
        let descriptors = child.text.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        #expect(descriptors.contains(2) && !descriptors.contains(leaked), "\(descriptors)")
        #expect(descriptors.allSatisfy { $0 <= 3 }, "\(descriptors)")
    }
}
