import Foundation
import Logging
import NIOConcurrencyHelpers

public struct MailMessage: Sendable, Hashable {
    public var to: String
    public var subject: String
    public var body: String
}

/// Sends email. Implementations: `SMTPMailer` (a real SMTP server, when
/// `VROOMX_SMTP_URL` is set) and `DevelopmentMailbox` (prints to the log).
public protocol Mailer: Sendable {
    func send(_ message: MailMessage) async throws
}

/// Without SMTP configured, messages are written to the server log (and
/// kept in memory for tests) so that sign-in works on a laptop.
public final class DevelopmentMailbox: Mailer {
    private let logger: Logger
    private let messages = NIOLockedValueBox<[MailMessage]>([])

    public init(logger: Logger) { self.logger = logger }

    public func send(_ message: MailMessage) async throws {
        messages.withLockedValue { $0.append(message) }
        // One line per message: the subject carries what a developer needs (the code).
        logger.notice("development mailbox: \(message.subject)", metadata: ["to": "\(message.to)"])
    }

    public var sent: [MailMessage] { messages.withLockedValue { $0 } }

    /// The newest message to an address.
    public func latest(to address: String) -> MailMessage? {
        messages.withLockedValue { $0.last { $0.to == address } }
    }
}

/// Codes are sent off the request path: the answer to "send me a code" must
/// not take longer for known emails than unknown ones, and a slow mail
/// server must not hold the request.
struct CodeMailer: Sendable {
    let mailer: any Mailer
    let logger: Logger

    func sendCode(_ code: String, to email: String, validMinutes: Int) {
        let message = MailMessage(
            to: email,
            subject: "Your VroomX sign-in code: \(code)",
            body: """
                Your VroomX sign-in code is \(code).

                It is valid for \(validMinutes) minutes. If you did not ask for it, ignore this email.
                """)
        Task { [mailer, logger] in
            do {
                try await mailer.send(message)
            } catch {
                logger.error("sending sign-in code failed", metadata: ["to": "\(email)", "error": "\(error)"])
            }
        }
    }
}
