#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A plain TCP connection to a loopback port, for what HTTP clients will
/// not do on purpose: stay silent, drop a request halfway through, trickle
/// bytes, or send more than a server should accept.
public final class RawSocket: @unchecked Sendable {
    public let fd: Int32

    /// - Parameters:
    ///   - localAddress: the loopback address to connect from
    ///     (`127.0.0.2`, …), so that one test can be several clients.
    ///   - receiveBuffer: the kernel's receive buffer in bytes, small for a
    ///     client whose unread bytes should soon hold the server up.
    public init(port: Int, from localAddress: String? = nil, receiveBuffer: Int? = nil) throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if let localAddress {
            var local = Self.address(localAddress, port: 0)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                _ = Glibc.close(fd)
                throw POSIXError(.EADDRNOTAVAIL)
            }
        }
        var address = Self.address("127.0.0.1", port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            _ = Glibc.close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Connects on a thread of its own: a server with a full accept queue
    /// makes `connect` wait, which must not hold a task thread.
    public static func connect(port: Int, from localAddress: String? = nil, receiveBuffer: Int? = nil) async throws -> RawSocket {
        try await offCooperativePool { try RawSocket(port: port, from: localAddress, receiveBuffer: receiveBuffer) }
    }

    static func address(_ ip: String, port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(ip)
        return address
    }

    /// Sends everything, on a thread of its own (the server under test may
    /// share this process's task threads).
    public func send(_ bytes: [UInt8]) async throws {
        try await offCooperativePool { try self.sendBlocking(bytes) }
    }

    public func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    func sendBlocking(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw POSIXError(.EPIPE) }
            sent += n
        }
    }

    /// Sends `bytes` and returns how many the connection took before the
    /// server closed it. A send that makes no progress for `stallSeconds`
    /// ends the attempt too.
    public func sendUntilClosed(_ bytes: [UInt8], stallSeconds: Int = 10) async -> Int {
        (try? await offCooperativePool { self.sendUntilClosedBlocking(total: bytes.count, stallSeconds: stallSeconds) { bytes[$0] } }) ?? 0
    }

    /// Sends `total` filler bytes, as `sendUntilClosed(_:)`.
    public func sendUntilClosed(total: Int, stallSeconds: Int = 10) async -> Int {
        let filler = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
        return (try? await offCooperativePool {
            self.sendUntilClosedBlocking(total: total, stallSeconds: stallSeconds) { filler[0..<$0.count] }
        }) ?? 0
    }

    func sendUntilClosedBlocking(total: Int, stallSeconds: Int, _ chunk: (Range<Int>) -> ArraySlice<UInt8>) -> Int {
        var timeout = timeval(tv_sec: stallSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < total {
            let bytes = chunk(sent..<min(sent + 65536, total))
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        return sent
    }

    /// Whether the peer closed the connection (end of file or reset) within the time.
    public func waitForClose(seconds: Int) async -> Bool {
        await closed(within: .seconds(seconds))
    }

    public func closed(within duration: Duration) async -> Bool {
        (try? await offCooperativePool { self.waitForCloseBlocking(duration) }) ?? false
    }

    func waitForCloseBlocking(_ duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            setReceiveTimeout(left)
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return true  // reset by the peer
            }
        }
    }

    /// Reads until the peer closes and returns how many bytes came, pausing
    /// for `pause` after every `pauseEvery` bytes (a slow reader); throws
    /// when the close has not come within `timeout`.
    public func readToClose(timeout: Duration, pauseEvery: Int = .max, pause: Duration = .zero) async throws -> Int {
        try await offCooperativePool {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let deadline = ContinuousClock.now + timeout
            var total = 0, sincePause = 0
            while true {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw POSIXError(.ETIMEDOUT) }
                self.setReceiveTimeout(left)
                let n = recv(self.fd, &buffer, buffer.count, 0)
                if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                guard n > 0 else { return total }
                total += n
                sincePause += n
                if sincePause >= pauseEvery {
                    sincePause = 0
                    Thread.sleep(forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18)
                }
            }
        }
    }

    /// Reads at about `bytesPerSecond` for `duration` (a slow phone) and
    /// returns how many bytes came and whether the peer closed meanwhile.
    public func readSteadily(bytesPerSecond: Int, for duration: Duration) async throws -> (received: Int, closed: Bool) {
        try await offCooperativePool {
            let slice = max(1, bytesPerSecond / 20)  // every 50 ms
            var buffer = [UInt8](repeating: 0, count: slice)
            let start = ContinuousClock.now
            var total = 0
            while ContinuousClock.now - start < duration {
                var got = 0
                while got < slice {
                    self.setReceiveTimeout(.seconds(10))
                    let n = recv(self.fd, &buffer, slice - got, 0)
                    if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    guard n > 0 else { return (total, true) }
                    got += n
                    total += n
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return (total, false)
        }
    }

    /// The next bytes that arrive: empty when the peer closed; throws when
    /// nothing came within the time.
    public func receive(timeout: Duration) async throws -> [UInt8] {
        try await offCooperativePool {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let deadline = ContinuousClock.now + timeout
            while true {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw POSIXError(.ETIMEDOUT) }
                self.setReceiveTimeout(left)
                let n = recv(self.fd, &buffer, buffer.count, 0)
                if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return n <= 0 ? [] : Array(buffer[0..<n])
            }
        }
    }

    /// Reads one HTTP/1.1 response: the head and a `Content-Length` body.
    public func readResponse(timeout: Duration = .seconds(30)) async throws -> RawHTTP.Answer {
        try await offCooperativePool { try self.readResponseBlocking(timeout: timeout) }
    }

    func readResponseBlocking(timeout: Duration) throws -> RawHTTP.Answer {
        let deadline = ContinuousClock.now + timeout
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let answer = try RawHTTP.parse(received, complete: false) { return answer }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw POSIXError(.ETIMEDOUT) }
            setReceiveTimeout(left)
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
            if n <= 0 {
                guard let answer = try RawHTTP.parse(received, complete: true) else { throw POSIXError(.ECONNRESET) }
                return answer
            }
            received += buffer[0..<n]
        }
    }

    private func setReceiveTimeout(_ duration: Duration) {
        let microseconds = max(1000, duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000)
        var timeout = timeval(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    public func close() { _ = Glibc.close(fd) }
}

/// One HTTP/1.1 request on its own connection (`Connection: close`),
/// answered with the status, headers (lowercased names) and body.
public struct RawHTTP {
    public struct Answer: Sendable {
        public let status: Int
        public let headers: [String: String]
        public let body: [UInt8]

        public var text: String { String(decoding: body, as: UTF8.self) }

        /// The `code` of the shared JSON error shape, if the body is one.
        public var errorCode: String? {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                  let error = object["error"] as? [String: Any] else { return nil }
            return error["code"] as? String
        }
    }

    public static func request(port: Int, _ method: String, _ path: String, headers: [String: String] = [:],
                               body: [UInt8] = []) async throws -> Answer {
        try await offCooperativePool { try requestBlocking(port: port, method, path, headers: headers, body: body) }
    }

    static func requestBlocking(port: Int, _ method: String, _ path: String, headers: [String: String], body: [UInt8]) throws -> Answer {
        let socket = try RawSocket(port: port)
        defer { socket.close() }
        try socket.sendBlocking(head(method, path, headers: headers, contentLength: body.count) + body)
        var timeout = timeval(tv_sec: Int(30 * TestWait.scale), tv_usec: 0)
        setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(socket.fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        guard let answer = try parse(received, complete: true) else { throw POSIXError(.EBADMSG) }
        return answer
    }

    /// A response from the bytes so far: nil until the head and, when it
    /// declares a length, the whole body have arrived (or the stream ended).
    static func parse(_ received: [UInt8], complete: Bool) throws -> Answer? {
        guard let end = received.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if complete { throw POSIXError(.EBADMSG) }
            return nil
        }
        let lines = String(decoding: received[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { throw POSIXError(.EBADMSG) }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(received[end.upperBound...])
        if let length = fields["content-length"].flatMap({ Int($0) }) {
            guard body.count >= length else { return complete ? Answer(status: status, headers: fields, body: body) : nil }
            body = Array(body.prefix(length))
        } else if !complete {
            return nil
        }
        return Answer(status: status, headers: fields, body: body)
    }

    /// Sends bytes exactly as given (any request line, headers, body) and
    /// reads one answer: its head and as much body as its Content-Length
    /// says, without waiting for the server to close the connection (it
    /// may still be waiting for a body the request promised).
    public static func exchange(port: Int, _ request: [UInt8], timeout seconds: Int = 15) async throws -> Answer {
        try await offCooperativePool {
            let socket = try RawSocket(port: port)
            defer { socket.close() }
            try socket.sendBlocking(request)
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                if let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                    let head = String(decoding: received[..<end.lowerBound], as: UTF8.self).lowercased()
                    let length = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if received.count - end.upperBound >= length { break }
                }
                let n = recv(socket.fd, &buffer, buffer.count, 0)
                if n <= 0 { break }
                received += buffer[0..<n]
            }
            guard let end = received.firstRange(of: Array("\r\n\r\n".utf8)) else { throw POSIXError(.EBADMSG) }
            let lines = String(decoding: received[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { throw POSIXError(.EBADMSG) }
            var fields: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return Answer(status: status, headers: fields, body: Array(received[end.upperBound...]))
        }
    }

    /// The request line and headers, for sending a body by hand.
    public static func head(_ method: String, _ path: String, headers: [String: String], contentLength: Int,
                            keepAlive: Bool = false) -> [UInt8] {
        // A Host given in `headers` (with a port, as browsers send it) replaces the default.
        let host = headers.contains { $0.key.lowercased() == "host" } ? "" : "Host: 127.0.0.1\r\n"
        var text = "\(method) \(path) HTTP/1.1\r\n\(host)" + (keepAlive ? "" : "Connection: close\r\n")
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if method != "GET" && method != "HEAD" || contentLength > 0 { text += "Content-Length: \(contentLength)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// A WebSocket upgrade request for `path` (keep-alive, as clients send it).
    public static func upgradeHead(_ path: String, headers: [String: String] = [:]) -> [UInt8] {
        var text = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8)
    }
}

/// Runs a blocking socket call on a thread of its own: never on the
/// cooperative pool the server in the same process needs, nor on the global
/// dispatch queues, which on Linux run about one blocking item per core.
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
