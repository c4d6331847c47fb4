import Foundation
import Logging
import NIOConcurrencyHelpers
import VroomXModels

public struct MailMessage: Sendable, Hashable {
    public var to: String
    public var subject: String
    public var body: String
    /// Files sent with the message (a bill of lading).
    public var attachments: [MailAttachment] = []
    /// Where replies go, when not to the sender (the carrier's own address).
    public var replyTo: String? = nil
    /// The name the message is from (the carrier's), beside the server's sending address.
    public var senderName: String? = nil

    public init(to: String, subject: String, body: String, attachments: [MailAttachment] = [], replyTo: String? = nil, senderName: String? = nil) {
        self.to = to
        self.subject = subject
        self.body = body
        self.attachments = attachments
        self.replyTo = replyTo
        self.senderName = senderName
    }
}

/// A file sent with a message.
public struct MailAttachment: Sendable, Hashable {
    public var filename: String
    public var contentType: String
    public var bytes: [UInt8]

    public init(filename: String, contentType: String, bytes: [UInt8]) {
        self.filename = filename
        self.contentType = contentType
        self.bytes = bytes
    }
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

/// The mail people get from their account: sign-in codes and invitations.
/// Both are sent off the request path: the answer to "send me a code" must
/// not take longer for known emails than unknown ones, and a slow mail
/// server must not hold a request.
struct AccountMail: Sendable {
    let mailer: any Mailer
    let logger: Logger

    func sendCode(_ code: String, to email: String, validMinutes: Int) {
        sendLater(MailMessage(
            to: email,
            subject: "Your VroomX sign-in code: \(code)",
            body: """
                Your VroomX sign-in code is \(code).

                It is valid for \(validMinutes) minutes. If you did not ask for it, ignore this email.
                """), what: "sign-in code")
    }

    /// Where a driver gets the app, and the server's address: put in
    /// invitations when the operator set them.
    var driverAppURL: String?
    var publicURL: String?

    /// Tells a driver dispatch added them: which carrier, and how to sign in.
    func sendInvitation(to driver: Driver, carrier: String) {
        let app = driverAppURL.map { "Install the VroomX Driver app on your phone (\($0))" } ?? "Install the VroomX Driver app on your phone"
        let computer = publicURL.map {
            "\n\nOn a computer, the terminal client signs in with: vroomx-driver login --server \($0) --email \(driver.email)"
        } ?? ""
        sendLater(MailMessage(
            to: driver.email,
            subject: "\(carrier) invited you to VroomX",
            body: """
                Hello \(driver.name),

                \(carrier) added you as a driver on VroomX, where you will see your trips, the vehicles to pick up \
                and deliver, and your inspections.

                \(app) and sign in with this email address: \(driver.email)
                Each time you sign in on a new phone, a 6-digit code is sent here. You then choose a PIN to unlock the app.\(computer)

                If you do not drive for \(carrier), ignore this email.
                """), what: "invitation")
    }

    private func sendLater(_ message: MailMessage, what: String) {
        Task { [mailer, logger] in
            do {
                try await mailer.send(message)
            } catch {
                logger.error("sending \(what) failed", metadata: ["to": "\(message.to)", "error": "\(error)"])
            }
        }
    }
}

extension ServerServices {
    /// The development mailbox mail goes to when no SMTP server is set (behind
    /// the mailer that counts what is sent): where a benchmark's device reads its code.
    public var developmentMailbox: DevelopmentMailbox? {
        ((mailer as? MeasuredMailer)?.mailer ?? mailer) as? DevelopmentMailbox
    }
}
