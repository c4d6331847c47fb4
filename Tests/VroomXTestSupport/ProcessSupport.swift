import Foundation
import NIOConcurrencyHelpers

/// A helper process a test starts (a real SMTP server, the vroomx binary, …)
/// and stops. Its output is collected for assertions and diagnostics.
///
/// The output goes to an unlinked temporary file read on demand, not to a
/// pipe with a `readabilityHandler`: closing such a pipe races the
/// cancellation of its dispatch source, and after a few thousand launches
/// (the driver fault test) libdispatch trapped on it and took the whole
/// test process down.
///
/// It is started with `posix_spawn` (see `Spawn`), not Foundation's
/// `Process`, whose `run()` on Linux now and then crashes the test process.
public final class ChildProcess: Sendable {
    private let pid: pid_t
    /// The exit status once the process has been reaped (its signal number when a signal ended it).
    private let status = NIOLockedValueBox<Int32?>(nil)
    private struct Output {
        var text = ""
        /// Where the process writes; nil once the process has ended and all it wrote was read.
        var reader: FileHandle?
    }
    private let output: NIOLockedValueBox<Output>

    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-child-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let writer = FileHandle(forWritingAtPath: path), let reader = FileHandle(forReadingAtPath: path) else {
            throw ProcessError("cannot create the output file \(path)")
        }
        unlink(path)  // the open handles keep it; nothing is left behind
        defer { try? writer.close() }  // the child has its own copy
        do {
            pid = try Spawn.start(executable, arguments, environment: env, output: writer.fileDescriptor)
        } catch {
            try? reader.close()
            throw error
        }
        output = NIOLockedValueBox(Output(reader: reader))
    }

    deinit {
        output.withLockedValue { try? $0.reader?.close() }
    }

    /// Everything the process wrote so far. Once it has ended, the last
    /// read closes the file.
    public var text: String {
        let ended = !isRunning
        return output.withLockedValue { output in
            guard let reader = output.reader else { return output.text }
            if let data = try? reader.readToEnd(), !data.isEmpty {
                output.text += String(decoding: data, as: UTF8.self)
            }
            if ended {
                try? reader.close()
                output.reader = nil
            }
            return output.text
        }
    }

    /// Runs a program to its end: its exit status and output.
    public static func run(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(120)) async throws -> (status: Int32, text: String) {
        let child = try ChildProcess(executable, arguments)
        let deadline = ContinuousClock.now + timeout
        while child.isRunning {
            guard ContinuousClock.now < deadline else {
                await child.kill9()
                throw ProcessError("\(executable) \(arguments.joined(separator: " ")) did not finish: \(child.text)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return (child.exitStatus ?? -1, child.text)
    }
    /// Whether the process still runs; the first call after it ended reaps it.
    public var isRunning: Bool {
        status.withLockedValue { status in
            guard status == nil else { return false }
            var raw: Int32 = 0
            let reaped = waitpid(pid, &raw, WNOHANG)
            if reaped == pid {
                // Exited: its code; ended by a signal: the signal's number (as Foundation reports it).
                status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
            } else if reaped == -1 && errno != EINTR {
                status = -1
            }
            return status == nil
        }
    }
    public var exitStatus: Int32? { isRunning ? nil : status.withLockedValue { $0 } }

    /// Sends a signal while the process has not been reaped (its pid cannot have been reused yet).
    private func signal(_ number: Int32) {
        status.withLockedValue { status in
            if status == nil { _ = kill(pid, number) }
        }
    }

    /// Waits until the output contains `marker`.
    public func waitFor(_ marker: String, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + TestWait.bound(timeout)
        while !text.contains(marker) {
            guard isRunning else { throw ProcessError("process exited before \"\(marker)\": \(text)") }
            guard ContinuousClock.now < deadline else { throw ProcessError("timed out waiting for \"\(marker)\": \(text)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Stops the process (SIGTERM, then SIGKILL after `grace`) and waits for it.
    public func stop(grace: Duration = .seconds(5)) async {
        guard isRunning else { return }
        signal(SIGTERM)
        let deadline = ContinuousClock.now + grace
        while isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        signal(SIGKILL)
        await exit()
    }

    /// Sends SIGTERM (a graceful shutdown) without waiting.
    public func terminate() { signal(SIGTERM) }

    /// Waits for the process to exit; false if it still runs after `timeout`.
    public func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Kills the process at once, as a crash or `kill -9` would.
    public func kill9() async {
        signal(SIGKILL)
        await exit()
    }

    /// Waits for the process to end by polling (`waitpid` without blocking):
    /// a blocking wait would hold a thread of the cooperative pool.
    private func exit() async {
        while isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// A TCP port nothing uses right now, for a server a test starts (a
    /// plain socket: no event loop to block on from a test's task).
    ///
    /// Taken below the range the kernel hands outgoing connections
    /// (32768–60999 here): a port from that range, free when checked, was
    /// once taken by one of the test process's own client connections
    /// before the server bound it ("Address already in use").
    public static func freePort() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<32_000)
            // Never the same port twice in a run: one handed out may not be bound yet.
            guard handedOut.withLockedValue({ $0.insert(port).inserted }) else { continue }
            if try bindable(port) { return port }
        }
        throw ProcessError("no free port between 20000 and 32000")
    }

    private static let handedOut = NIOLockedValueBox<Set<Int>>([])

    private static func bindable(_ port: Int) throws -> Bool {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw ProcessError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
        }
    }
}

public struct ProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A real SMTP server (aiosmtpd, `Tests/Fixtures/smtp_server.py`) storing
/// what it receives in a folder.
public struct SMTPTestServer: Sendable {
    public let port: Int
    public let maildir: URL
    let process: ChildProcess

    public static func start(tls: Bool = false, credentials: (String, String)? = nil) async throws -> SMTPTestServer {
        let port = try ChildProcess.freePort()
        let maildir = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-mail-\(UUID().uuidString.prefix(8))")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/smtp_server.py").path
        var arguments = [script, String(port), maildir.path]
        if tls { arguments.append("--tls") }
        if let (user, password) = credentials { arguments += ["--auth", "\(user):\(password)"] }
        let process = try ChildProcess("/usr/bin/env", ["python3"] + arguments)
        try await process.waitFor("ready")
        return SMTPTestServer(port: port, maildir: maildir, process: process)
    }

    /// Messages received so far (raw RFC 5322 text).
    public func messages() throws -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(at: maildir, includingPropertiesForKeys: nil)) ?? []
        return try files.filter { $0.pathExtension == "eml" }.map { try String(contentsOf: $0, encoding: .utf8) }
    }

    public func waitForMessages(_ count: Int, timeout: Duration = .seconds(10)) async throws -> [String] {
        let deadline = ContinuousClock.now + TestWait.bound(timeout)
        while true {
            let received = try messages()
            if received.count >= count { return received }
            guard ContinuousClock.now < deadline else { throw ProcessError("SMTP server received \(received.count) of \(count) messages; log: \(process.text)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    public func stop() async { await process.stop() }

    /// Whether python3 with aiosmtpd is installed (`.ci/run` installs it).
    public static var isAvailable: Bool {
        guard let check = try? ChildProcess("/usr/bin/env", ["python3", "-c", "import aiosmtpd, cryptography"]) else { return false }
        while check.isRunning { usleep(10_000) }
        return check.exitStatus == 0
    }
}

/// Splits a received message into headers and its (base64) body decoded.
public func parseMail(_ raw: String) -> (headers: [String: String], body: String) {
    let normalized = raw.replacingOccurrences(of: "\r\n", with: "\n")
    let parts = normalized.components(separatedBy: "\n\n")
    var headers: [String: String] = [:]
    for line in parts[0].split(separator: "\n") {
        if let colon = line.firstIndex(of: ":") {
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }
    let encoded = parts.dropFirst().joined(separator: "\n\n").replacingOccurrences(of: "\n", with: "")
    let body = headers["content-transfer-encoding"] == "base64"
        ? (Data(base64Encoded: encoded).map { String(decoding: $0, as: UTF8.self) } ?? "")
        : encoded
    return (headers, body)
}
