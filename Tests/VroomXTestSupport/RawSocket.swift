#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A plain TCP connection to a loopback port, for what HTTP clients will
/// not do on purpose: stay silent, or drop a request halfway through.
public final class RawSocket: @unchecked Sendable {
    public let fd: Int32

    public init(port: Int) throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, result == 0 else {
            if fd >= 0 { _ = Glibc.close(fd) }
            throw POSIXError(.ECONNREFUSED)
        }
    }

    /// Sends everything, on a thread of its own (the server under test may
    /// share this process's task threads).
    public func send(_ bytes: [UInt8]) async throws {
        try await offCooperativePool { try self.sendBlocking(bytes) }
    }

    func sendBlocking(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw POSIXError(.EPIPE) }
            sent += n
        }
    }

    /// Whether the peer closed the connection (end of file) within the time.
    public func waitForClose(seconds: Int) async -> Bool {
        (try? await offCooperativePool { self.waitForCloseBlocking(seconds: seconds) }) ?? false
    }

    func waitForCloseBlocking(seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0 { return false }
        }
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
    }

    public static func request(port: Int, _ method: String, _ path: String, headers: [String: String] = [:],
                               body: [UInt8] = []) async throws -> Answer {
        try await offCooperativePool { try requestBlocking(port: port, method, path, headers: headers, body: body) }
    }

    static func requestBlocking(port: Int, _ method: String, _ path: String, headers: [String: String], body: [UInt8]) throws -> Answer {
        let socket = try RawSocket(port: port)
        defer { socket.close() }
        try socket.sendBlocking(head(method, path, headers: headers, contentLength: body.count) + body)
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
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
    public static func head(_ method: String, _ path: String, headers: [String: String], contentLength: Int) -> [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if method != "GET" && method != "HEAD" || contentLength > 0 { text += "Content-Length: \(contentLength)\r\n" }
        return Array((text + "\r\n").utf8)
    }
}

/// Runs blocking socket calls on a dispatch thread, never on the
/// cooperative pool the server in the same process needs.
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
