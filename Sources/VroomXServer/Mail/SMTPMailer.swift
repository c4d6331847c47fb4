import Foundation
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL

/// Sends mail through an SMTP server (RFC 5321).
///
/// `VROOMX_SMTP_URL` forms:
/// - `smtp://user:password@host:587` — upgrades with STARTTLS when the server
///   offers it (`?starttls=required` refuses servers that do not);
/// - `smtps://user:password@host:465` — TLS from the first byte;
/// - `?tls_verify=false` accepts self-signed certificates (testing only).
/// Credentials are only sent over TLS, unless `?auth_plaintext=true`.
public struct SMTPMailer: Mailer {
    enum Security: Sendable { case plain, startTLSIfOffered, startTLSRequired, implicitTLS }

    let host: String
    let port: Int
    let security: Security
    let username: String?
    let password: String?
    let verifyCertificates: Bool
    let allowPlaintextAuth: Bool
    let from: String
    let logger: Logger
    let timeout: Duration = .seconds(60)

    public init(url: String, from: String, logger: Logger) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
              let host = components.host, !host.isEmpty else {
            throw ConfigurationError("VROOMX_SMTP_URL must look like smtp://user:password@host:587")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        switch scheme {
        case "smtp":
            security = query["starttls"] == "required" ? .startTLSRequired : (query["starttls"] == "never" ? .plain : .startTLSIfOffered)
            port = components.port ?? 587
        case "smtps":
            security = .implicitTLS
            port = components.port ?? 465
        default:
            throw ConfigurationError("VROOMX_SMTP_URL must start with smtp:// or smtps://")
        }
        self.host = host
        username = components.percentEncodedUser?.removingPercentEncoding
        password = components.percentEncodedPassword?.removingPercentEncoding
        verifyCertificates = query["tls_verify"] != "false"
        allowPlaintextAuth = query["auth_plaintext"] == "true"
        self.from = from
        self.logger = logger
    }

    /// Sends one message on a new connection; gives up after `timeout`.
    public func send(_ message: MailMessage) async throws {
        // Whatever stored it, an address that could name another recipient is never put on the wire.
        guard Self.isPlainAddress(message.to) else { throw SMTPError.unsafeRecipient }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await deliver(message) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw SMTPError.timeout
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func deliver(_ message: MailMessage) async throws {
        let tlsContext = try NIOSSLContext(configuration: {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if !verifyCertificates { configuration.certificateVerification = .none }
            return configuration
        }())
        let implicitTLS = security == .implicitTLS
        // SNI carries names only; an IP literal is sent without it.
        let serverHostname: String? = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if implicitTLS {
                        try channel.pipeline.syncOperations.addHandler(
                            try NIOSSLClientHandler(context: tlsContext, serverHostname: serverHostname))
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var session = SMTPSession(lines: inbound.makeAsyncIterator(), outbound: outbound)
            try await session.expect(220)
            var capabilities = try await session.hello()
            var secure = implicitTLS
            if security == .startTLSRequired || (security == .startTLSIfOffered && capabilities.contains("STARTTLS")) {
                guard capabilities.contains("STARTTLS") else { throw SMTPError.tlsUnavailable }
                try await session.command("STARTTLS", expect: 220)
                try await channel.channel.pipeline.addHandler(
                    try NIOSSLClientHandler(context: tlsContext, serverHostname: serverHostname), position: .first).get()
                secure = true
                capabilities = try await session.hello()
            }
            if let username, let password {
                guard secure || allowPlaintextAuth else { throw SMTPError.authenticationNeedsTLS }
                let credentials = Data("\0\(username)\0\(password)".utf8).base64EncodedString()
                try await session.command("AUTH PLAIN \(credentials)", expect: 235)
            }
            try await session.command("MAIL FROM:<\(Self.address(in: from))>", expect: 250)
            try await session.command("RCPT TO:<\(message.to)>", expect: 250, 251)
            try await session.command("DATA", expect: 354)
            try await session.send(Self.render(message, from: from))
            try await session.expect(250)
            try? await session.command("QUIT", expect: 221)
        }
        logger.info("mail sent", metadata: ["to": "\(message.to)", "via": "\(host):\(port)"])
    }

    /// The bare address of `Name <address>`.
    static func address(in mailbox: String) -> String {
        if let open = mailbox.lastIndex(of: "<"), let close = mailbox.lastIndex(of: ">"), open < close {
            return String(mailbox[mailbox.index(after: open)..<close])
        }
        return mailbox.trimmingCharacters(in: .whitespaces)
    }

    /// RFC 5322 message: headers, a base64 UTF-8 body, CRLF line ends, and
    /// the terminating `.` line. Base64 never starts a line with `.`, so no
    /// dot-stuffing is needed.
    static func render(_ message: MailMessage, from: String) -> String {
        let date: String = {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
            return formatter.string(from: Date())
        }()
        // Anything but printable ASCII is encoded: a line break in a carrier's name must not start a header.
        let subject = message.subject.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) }
            ? message.subject
            : "=?UTF-8?B?\(Data(message.subject.utf8).base64EncodedString())?="
        let lines: ([UInt8]) -> String = { Data($0).base64EncodedString(options: [.lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed]) }
        let body = lines(Array(message.body.utf8))
        // A carrier's name is the carrier's words: always encoded, so no quote or line break in it can change the header.
        let sender = message.senderName.map { "=?UTF-8?B?\(Data($0.utf8).base64EncodedString())?= <\(Self.address(in: from))>" } ?? from
        var headers = ["From: \(sender)", "To: <\(message.to)>", "Subject: \(subject)", "Date: \(date)",
                       "Message-ID: <\(UUID().uuidString.lowercased())@vroomx>", "MIME-Version: 1.0"]
        if let replyTo = message.replyTo, Self.isPlainAddress(replyTo) { headers.append("Reply-To: <\(replyTo)>") }
        guard !message.attachments.isEmpty else {
            return (headers + ["Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64", "", body, "."])
                .joined(separator: "\r\n") + "\r\n"
        }
        // Text, then each file: multipart/mixed, every part base64 (so no line of it can be a boundary or a lone dot).
        let boundary = "vroomx-" + UUID().uuidString.lowercased()
        var parts = ["--\(boundary)", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64", "", body]
        for file in message.attachments {
            let name = String(file.filename.unicodeScalars.map { $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil
                                                                                || "-_.".unicodeScalars.contains($0)) ? Character($0) : "_" })
            parts += ["--\(boundary)", "Content-Type: \(file.contentType); name=\"\(name)\"", "Content-Transfer-Encoding: base64",
                      "Content-Disposition: attachment; filename=\"\(name)\"", "", lines(file.bytes)]
        }
        parts.append("--\(boundary)--")
        return (headers + ["Content-Type: multipart/mixed; boundary=\"\(boundary)\"", ""] + parts + ["."]).joined(separator: "\r\n") + "\r\n"
    }

    /// An address safe to put in a header: no spaces, brackets or line breaks.
    static func isPlainAddress(_ address: String) -> Bool {
        (try? Validate.email(address)) == address
    }
}

enum SMTPError: Error, CustomStringConvertible {
    case unexpectedReply(expected: [Int], got: String)
    case closed
    case timeout
    case tlsUnavailable
    case authenticationNeedsTLS
    case unsafeRecipient

    var description: String {
        switch self {
        case .unexpectedReply(let expected, let got): return "SMTP server answered \"\(got)\" (expected \(expected))"
        case .closed: return "SMTP server closed the connection"
        case .timeout: return "SMTP server did not answer in time"
        case .tlsUnavailable: return "SMTP server does not offer STARTTLS"
        case .authenticationNeedsTLS: return "refusing to send SMTP credentials without TLS (add ?auth_plaintext=true to allow)"
        case .unsafeRecipient: return "the recipient is not a plain email address"
        }
    }
}

/// The command/reply exchange on one connection.
struct SMTPSession {
    var lines: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    /// Reads one (possibly multi-line) reply; returns its code and lines.
    mutating func reply() async throws -> (code: Int, lines: [String]) {
        var collected: [String] = []
        while true {
            guard let buffer = try await nextLine() else { throw SMTPError.closed }
            let line = String(buffer: buffer).trimmingCharacters(in: .init(charactersIn: "\r"))
            collected.append(line)
            guard line.count >= 3, let code = Int(line.prefix(3)) else { throw SMTPError.unexpectedReply(expected: [], got: line) }
            if line.count == 3 || line[line.index(line.startIndex, offsetBy: 3)] == " " { return (code, collected) }
        }
    }

    private mutating func nextLine() async throws -> ByteBuffer? {
        try await lines.next()
    }

    @discardableResult
    mutating func expect(_ codes: Int...) async throws -> [String] {
        let (code, lines) = try await reply()
        guard codes.contains(code) else { throw SMTPError.unexpectedReply(expected: codes, got: lines.joined(separator: " | ")) }
        return lines
    }

    mutating func command(_ text: String, expect codes: Int...) async throws {
        try await send(text + "\r\n")
        let (code, lines) = try await reply()
        guard codes.contains(code) else {
            let shown = text.hasPrefix("AUTH") ? "AUTH" : text
            throw SMTPError.unexpectedReply(expected: codes, got: "\(lines.joined(separator: " | ")) after \(shown)")
        }
    }

    func send(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    /// EHLO, returning the capability keywords the server announced.
    mutating func hello() async throws -> Set<String> {
        try await send("EHLO vroomx.local\r\n")
        let (code, lines) = try await reply()
        guard code == 250 else { throw SMTPError.unexpectedReply(expected: [250], got: lines.joined(separator: " | ")) }
        return Set(lines.dropFirst().compactMap { $0.dropFirst(4).split(separator: " ").first.map { $0.uppercased() } })
    }
}
