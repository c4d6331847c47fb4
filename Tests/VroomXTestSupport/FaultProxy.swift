#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NIOConcurrencyHelpers

/// A loopback HTTP/1.1 proxy in front of the server that fails the way
/// phone networks and overloaded servers do, one condition at a time:
/// refusing connections, cutting them before or after the server saw the
/// request, delaying answers, delivering a request twice, answering 503 or
/// 413 itself. Each connection is served by a thread of its own with
/// blocking sockets (simple to reason about; a test has few connections).
public final class FaultProxy: @unchecked Sendable {
    public enum Condition: String, Sendable, CaseIterable {
        /// Everything passes.
        case normal
        /// Nothing listens: connections are refused, as with no signal.
        case offline
        /// A quarter of requests are cut before they leave, a quarter after
        /// the server answered (the answer is lost).
        case lossy
        /// Answers arrive 0.05–0.8 s late.
        case slow
        /// Every change (POST, PUT, PATCH, DELETE) reaches the server twice;
        /// the client sees the second answer.
        case duplicating
        /// The proxy answers 503 with `Retry-After: 1`; nothing is forwarded.
        case failing
        /// Mutation batches over 4 KiB are answered 413.
        case tight
        /// The server applies each batch of changes (`POST /v1/mutations`)
        /// and its answer comes `lateSeconds` later: past a client's
        /// deadline, a server that is slow, not gone. Everything else passes.
        case late
    }

    /// How late answers come in the `late` condition.
    public var lateSeconds: Double = 4

    /// What the proxy did, by kind (for the report).
    public var counts: [String: Int] { state.withLockedValue { $0.counts } }
    public let port: Int
    private let upstreamPort: Int
    private struct State {
        var condition: Condition = .normal
        var random = SplitMix64(seed: 1)
        var listener: Int32 = -1
        var open: Set<Int32> = []
        var counts: [String: Int] = [:]
        var stopped = false
    }
    private let state = NIOLockedValueBox(State())

    public init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        port = try ChildProcess.freePort()
        try listen()
    }

    /// Switches the condition; requests draw their fate from `seed`.
    public func set(_ condition: Condition, seed: UInt64) throws {
        let wasOffline = state.withLockedValue { state -> Bool in
            defer { state.condition = condition; state.random = SplitMix64(seed: seed) }
            return state.condition == .offline
        }
        if condition == .offline, !wasOffline {
            closeListener()
            cutAll()
        } else if condition != .offline, wasOffline {
            try listen()
        }
    }

    public func stop() {
        state.withLockedValue { $0.stopped = true }
        closeListener()
        cutAll()
    }

    // MARK: Connections

    private func listen() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProcessError("proxy socket: \(errno)") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard bound, Glibc.listen(fd, 128) == 0 else {
            Glibc.close(fd)
            throw ProcessError("proxy cannot listen on \(port): \(errno)")
        }
        state.withLockedValue { $0.listener = fd }
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.start()
    }

    private func closeListener() {
        let fd = state.withLockedValue { state -> Int32 in
            defer { state.listener = -1 }
            return state.listener
        }
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
        }
    }

    private func cutAll() {
        for fd in state.withLockedValue({ $0.open }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop(_ listener: Int32) {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return  // closed: offline or stopped
            }
            let admitted = state.withLockedValue { state -> Bool in
                guard !state.stopped, state.listener == listener else { return false }
                state.open.insert(client)
                return true
            }
            guard admitted else { Glibc.close(client); return }
            let thread = Thread { [self] in
                serve(client)
                forget(client)
            }
            thread.start()
        }
    }

    private func forget(_ fd: Int32) {
        state.withLockedValue { _ = $0.open.remove(fd) }
        Glibc.close(fd)
    }

    private func count(_ what: String) { state.withLockedValue { $0.counts[what, default: 0] += 1 } }

    /// One client connection: request after request (keep-alive), each
    /// meeting the condition of the moment.
    private func serve(_ client: Int32) {
        let fromClient = SocketReader(client)
        var upstream: (fd: Int32, reader: SocketReader)?
        defer { if let upstream { forget(upstream.fd) } }
        while let request = try? HTTPMessage.readRequest(fromClient) {
            let (condition, draw) = state.withLockedValue { state in (state.condition, state.random.unit()) }
            switch condition {
            case .offline:
                count("cut_offline")
                return
            case .failing:
                count("answered_503")
                let body = #"{"error":{"code":"unavailable","message":"The service is briefly unavailable.","retry_after":1}}"#
                guard send(client, HTTPMessage.answer(503, body, extra: "Retry-After: 1\r\n")) else { return }
                continue
            case .tight where request.path.hasPrefix("/v1/mutations") && request.body.count > 4096:
                count("answered_413")
                let body = #"{"error":{"code":"payload_too_large","message":"The request body is larger than 4 KiB."}}"#
                guard send(client, HTTPMessage.answer(413, body, extra: "Connection: close\r\n")) else { return }
                return
            case .lossy where draw < 0.25:
                count("cut_before_server")
                return
            default:
                break
            }
            if upstream == nil {
                guard let fd = connectUpstream() else { count("server_unreachable"); return }
                state.withLockedValue { _ = $0.open.insert(fd) }
                upstream = (fd, SocketReader(fd))
            }
            guard let (server, fromServer) = upstream else { return }
            if condition == .duplicating, request.method != "GET", request.method != "HEAD" {
                count("duplicated")
                duplicate(request)
            }
            if request.isUpgrade {
                guard send(server, request.raw) else { return }
                count("upgraded")
                pipe(client, fromClient, server, fromServer)
                return
            }
            guard send(server, request.raw), let answer = try? HTTPMessage.readResponse(fromServer, to: request.method) else { return }
            if condition == .lossy, draw < 0.5 {
                count("answer_lost")
                return
            }
            if condition == .slow {
                count("delayed")
                usleep(useconds_t(50_000 + Int(draw * 750_000)))
            }
            if condition == .late, request.path.hasPrefix("/v1/mutations") {
                count("answered_late")
                usleep(useconds_t(lateSeconds * 1_000_000))
            }
            count("forwarded")
            guard send(client, answer.raw), !answer.closes else { return }
        }
    }

    /// The same request once more on a connection of its own; its answer
    /// is dropped (the client sees the answer to its own copy).
    private func duplicate(_ request: HTTPMessage) {
        guard let fd = connectUpstream() else { return }
        defer { Glibc.close(fd) }
        if send(fd, request.raw) { _ = try? HTTPMessage.readResponse(SocketReader(fd), to: request.method) }
    }

    /// Both ways, byte for byte, until either side closes (WebSockets).
    private func pipe(_ client: Int32, _ fromClient: SocketReader, _ server: Int32, _ fromServer: SocketReader) {
        let done = NIOLockedValueBox(false)
        let upward = Thread { [self] in
            if !fromClient.buffered.isEmpty { _ = send(server, fromClient.buffered) }
            while let bytes = fromClient.readSome(), send(server, bytes) {}
            shutdown(server, Int32(SHUT_RDWR))
            done.withLockedValue { $0 = true }
        }
        upward.start()
        if !fromServer.buffered.isEmpty { _ = send(client, fromServer.buffered) }
        while let bytes = fromServer.readSome(), send(client, bytes) {}
        shutdown(client, Int32(SHUT_RDWR))
        while !done.withLockedValue({ $0 }) { usleep(10_000) }
    }

    private func connectUpstream() -> Int32? {
        guard let socket = try? RawSocket(port: upstreamPort) else { return nil }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return socket.fd
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }
}

/// Buffered reads from a blocking socket.
final class SocketReader: @unchecked Sendable {  // used by one thread at a time
    let fd: Int32
    private(set) var buffered: [UInt8] = []

    init(_ fd: Int32) {
        self.fd = fd
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Whatever arrives next (after anything already buffered), nil at the end.
    func readSome() -> [UInt8]? {
        if !buffered.isEmpty { defer { buffered = [] }; return buffered }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        return n > 0 ? Array(chunk[..<n]) : nil
    }

    /// Bytes up to and including `delimiter` (nil if the peer closes first
    /// or `limit` is passed).
    func read(through delimiter: [UInt8], limit: Int) -> [UInt8]? {
        while true {
            if let range = buffered.firstRange(of: delimiter) {
                defer { buffered.removeFirst(range.upperBound) }
                return Array(buffered[..<range.upperBound])
            }
            guard buffered.count <= limit, fill() else { return nil }
        }
    }

    func read(exactly count: Int) -> [UInt8]? {
        while buffered.count < count { guard fill() else { return nil } }
        defer { buffered.removeFirst(count) }
        return Array(buffered[..<count])
    }

    func readToEnd() -> [UInt8] {
        while fill() {}
        defer { buffered = [] }
        return buffered
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        guard n > 0 else { return false }
        buffered += chunk[..<n]
        return true
    }
}

/// One HTTP/1.1 message as it came off the wire, with what a proxy needs
/// to know about it.
struct HTTPMessage {
    let raw: [UInt8]
    let method: String
    let path: String
    let status: Int
    let body: [UInt8]
    let isUpgrade: Bool
    /// The server ends the connection after this answer.
    let closes: Bool

    static func readRequest(_ reader: SocketReader) throws -> HTTPMessage {
        guard let head = reader.read(through: Array("\r\n\r\n".utf8), limit: 64 << 10) else { throw POSIXError(.ECONNRESET) }
        let fields = Fields(head)
        let requestLine = fields.firstLine.split(separator: " ")
        guard requestLine.count >= 2 else { throw POSIXError(.EBADMSG) }
        let body = try readBody(reader, fields, bodyless: false)
        return HTTPMessage(raw: head + body.raw, method: String(requestLine[0]), path: String(requestLine[1]), status: 0,
                           body: body.content, isUpgrade: fields["upgrade"] != nil, closes: fields["connection"] == "close")
    }

    static func readResponse(_ reader: SocketReader, to method: String) throws -> HTTPMessage {
        guard let head = reader.read(through: Array("\r\n\r\n".utf8), limit: 64 << 10) else { throw POSIXError(.ECONNRESET) }
        let fields = Fields(head)
        let status = fields.firstLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let bodyless = method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status)
        let body = try readBody(reader, fields, bodyless: bodyless)
        return HTTPMessage(raw: head + body.raw, method: method, path: "", status: status, body: body.content,
                           isUpgrade: status == 101, closes: fields["connection"] == "close" || body.untilClose)
    }

    /// The body as sent (raw, chunk framing included) and its content.
    private static func readBody(_ reader: SocketReader, _ fields: Fields, bodyless: Bool)
        throws -> (raw: [UInt8], content: [UInt8], untilClose: Bool) {
        if bodyless { return ([], [], false) }
        if fields["transfer-encoding"]?.contains("chunked") == true {
            var raw: [UInt8] = []
            var content: [UInt8] = []
            while true {
                guard let line = reader.read(through: Array("\r\n".utf8), limit: 1024) else { throw POSIXError(.ECONNRESET) }
                raw += line
                let sizeText = String(decoding: line, as: UTF8.self).split(separator: ";").first?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                guard let size = Int(sizeText, radix: 16), size >= 0 else { throw POSIXError(.EBADMSG) }
                if size == 0 {
                    // Trailers, then the blank line.
                    while let trailer = reader.read(through: Array("\r\n".utf8), limit: 8192) {
                        raw += trailer
                        if trailer.count == 2 { return (raw, content, false) }
                    }
                    throw POSIXError(.ECONNRESET)
                }
                guard let chunk = reader.read(exactly: size + 2) else { throw POSIXError(.ECONNRESET) }
                raw += chunk
                content += chunk.dropLast(2)
            }
        }
        if let length = fields["content-length"].flatMap({ Int($0) }) {
            guard length >= 0, let body = reader.read(exactly: length) else { throw POSIXError(.ECONNRESET) }
            return (body, body, false)
        }
        if fields.isRequest { return ([], [], false) }
        let rest = reader.readToEnd()
        return (rest, rest, true)
    }

    static func answer(_ status: Int, _ body: String, extra: String) -> [UInt8] {
        let reason = status == 503 ? "Service Unavailable" : "Content Too Large"
        return Array("HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)".utf8)
    }

    /// Header fields of a head (names lowercased).
    struct Fields {
        let firstLine: String
        private let values: [String: String]
        var isRequest: Bool { !firstLine.hasPrefix("HTTP/") }

        init(_ head: [UInt8]) {
            let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
            firstLine = lines.first ?? ""
            var values: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                values[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces).lowercased()
            }
            self.values = values
        }

        subscript(name: String) -> String? { values[name] }
    }
}

/// A small seeded generator (SplitMix64): the same seed gives the same
/// sequence on every platform, so a failing schedule can be replayed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<1.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
