import Foundation
import Logging
import ServiceLifecycle
import VroomXModels

/// Mails each completed pickup and delivery's bill of lading to the
/// order's customer: the PDF attached, the carrier's words, and (when the
/// carrier chooses) a link to follow the vehicle. Each inspection's mail is
/// one row claimed before sending, so any number of instances send it at
/// most once; a failed send is retried with backoff, an interrupted one is
/// left for a dispatcher to resend.
final class DocumentMailService: Service, Sendable {
    let store: Store
    let bills: BillOfLadingService
    let tracking: TrackingService
    let mailer: any Mailer
    let logger: Logger
    let checkInterval: Duration

    static let maxAttempts = 6
    /// A send not settled after this long was interrupted.
    static let sendingLease: TimeInterval = 10 * 60

    init(store: Store, bills: BillOfLadingService, tracking: TrackingService, mailer: any Mailer, checkInterval: Duration = .seconds(2),
         logger: Logger) {
        (self.store, self.bills, self.tracking, self.mailer, self.logger, self.checkInterval) = (store, bills, tracking, mailer, logger, checkInterval)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.sendDue()
                try? await Task.sleep(for: self.checkInterval)
            }
        }
    }

    /// Sends every entry due now (one at a time: a PDF with photos is large).
    func sendDue() async {
        do {
            // Most checks find nothing to send: they only read.
            guard try await store.read({ try await DocumentMailRepository.anyWaiting($0) }) else { return }
            let now = store.now
            try await store.writeRows { try await DocumentMailRepository.abandon(sendingBefore: now.addingTimeInterval(-Self.sendingLease), $0) }
            while true {
                let claimed = try await store.writeRows { try await DocumentMailRepository.claimDue(limit: 1, now: self.store.now, $0) }
                guard let entry = claimed.first else { return }
                await send(entry)
            }
        } catch {
            logger.warning("bill of lading mail: \(error)")
        }
    }

    private func send(_ entry: DocumentMailRepository.Entry) async {
        var settled: (DocumentMailRepository.State, String, Date?, Date?)
        do {
            let message = try await message(for: entry)
            try await mailer.send(message)
            settled = (.sent, "", store.now, nil)
            logger.info("bill of lading mailed", metadata: ["order": "\(entry.order)", "kind": "\(entry.kind.rawValue)"])
        } catch let error as AppError where error.status == 404 {
            settled = (.failed, "The order is gone.", nil, nil)
        } catch {
            let failure = Self.failure(error, attempts: entry.attempts, now: store.now, sendAgainFrom: "the order page")
            settled = (failure.next == nil ? .failed : .queued, failure.note, nil, failure.next)
            logger.warning("bill of lading mail not sent", metadata: ["order": "\(entry.order)", "error": "\(error)"])
        }
        let (state, note, sentAt, next) = settled
        // A queued retry goes back through `claimDue`: settle it as queued.
        _ = try? await store.writeRows { db in
            try await DocumentMailRepository.settle(entry.id, state: state, note: note, sentAt: sentAt, nextAttempt: next, db)
        }
    }

    /// How a failed send settles: tried again later (`next`) when the mail
    /// was surely not taken and tries remain; otherwise left failed, `note`
    /// saying why and where a dispatcher sends it again.
    static func failure(_ error: any Error, attempts: Int, now: Date, sendAgainFrom place: String) -> (note: String, next: Date?) {
        switch outcome(of: error) {
        case .refusedForGood:
            return ("The mail server refused it for good: \(error)", nil)
        case .unknown:
            // The server may have taken it before the answer was lost: sending again could send it twice.
            return ("Sending was interrupted (\(error)): it may or may not have arrived. Email it again from \(place).", nil)
        case .notTaken:
            guard attempts < maxAttempts else { return ("Not sent: \(error)", nil) }
            return ("Not sent: \(error)", now.addingTimeInterval(min(3600, 60 * pow(3, Double(attempts - 1)))))
        }
    }

    /// What a failed send says of the message: never taken (try again),
    /// refused for good (a 5xx answer), or unknown (a time-out or a cut
    /// after it went out: the server may have it).
    enum SendOutcome { case notTaken, refusedForGood, unknown }

    static func outcome(of error: any Error) -> SendOutcome {
        if error is CancellationError { return .unknown }
        if let smtp = error as? SMTPError {
            switch smtp {
            case .unexpectedReply(_, let got): return got.hasPrefix("5") ? .refusedForGood : .notTaken
            case .timeout, .closed: return .unknown
            case .tlsUnavailable, .authenticationNeedsTLS, .unsafeRecipient: return .refusedForGood
            }
        }
        return .notTaken  // no connection: nothing was sent
    }

    private func message(for entry: DocumentMailRepository.Entry) async throws -> MailMessage {
        let (number, pdf) = try await bills.pdf(of: entry.order, tenant: entry.tenant, picturesBudget: BillOfLadingService.emailPicturesBudget)
        let order = try await store.orders.order(entry.order, .dispatch(tenant: entry.tenant))
        let profile = try await store.carrierProfile.profile(tenant: entry.tenant)
        let carrier = profile.legalName.isEmpty ? try await store.people.tenant(entry.tenant).name : profile.legalName
        let vehicle = order.vehicles.count > 1 ? "the \(order.vehiclesSummary)"
            : [order.vehicle.summary, order.vehicle.vin.isEmpty ? "" : "VIN \(order.vehicle.vin)"].filter { !$0.isEmpty }.joined(separator: ", ")
        let done = entry.kind == .pickup ? "picked up" : "delivered"
        var lines = ["\(carrier) \(done) \(vehicle.isEmpty ? "the vehicle" : vehicle) of order \(number)"
                     + (order.externalLoadID.map { " (load \($0))" } ?? "") + ".",
                     "", "The bill of lading is attached: the condition with photos and the signature."]
        if profile.trackingLinkInEmails {
            let base = tracking.base(host: nil)
            var live = try await tracking.link(of: order.id, tenant: entry.tenant, base: base)
            // A link a dispatcher revoked stays revoked: an email makes one only for an order that never had one taken away.
            if live == nil, try await !tracking.wasRevoked(order.id, tenant: entry.tenant) {
                live = try await tracking.create(for: order.id, tenant: entry.tenant, base: base)
            }
            if let live {
                lines += ["", entry.kind == .pickup ? "Follow it to delivery, with the driver's ETA, and see its condition at pickup: \(live.url)"
                              : "See its condition at pickup and delivery, photos and signatures: \(live.url)"]
            }
        }
        if !profile.phone.isEmpty || !profile.email.isEmpty {
            lines += ["", "Questions: \([profile.phone, profile.email].filter { !$0.isEmpty }.joined(separator: " · "))"]
        }
        lines += ["", "— \(carrier)"]
        return MailMessage(to: entry.recipient, subject: "Bill of lading: order \(number) \(done)", body: lines.joined(separator: "\n"),
                           attachments: [MailAttachment(filename: "bill-of-lading-\(number)-\(entry.kind.rawValue).pdf",
                                                        contentType: "application/pdf", bytes: pdf)],
                           replyTo: profile.email.isEmpty ? nil : profile.email, senderName: carrier)
    }
}
