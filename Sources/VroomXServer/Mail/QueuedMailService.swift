import Foundation
import Logging
import ServiceLifecycle
import VroomXModels

/// Sends the emails of one queue (`QueuedMailRepository`): each claimed
/// before sending, so any number of instances send it at most once; a send
/// that was never taken is retried with backoff, an interrupted one is left
/// for a dispatcher to send again (it may have arrived).
final class QueuedMailService: Service, Sendable {
    let store: Store
    let queue: QueuedMailRepository
    /// What the queue sends ("invoice"), for the log and the notes.
    let what: String
    /// Where a dispatcher sends it again ("the invoice's page").
    let sendAgainFrom: String
    let mailer: any Mailer
    let logger: Logger
    let checkInterval: Duration
    /// The email of an entry; an `AppError` 404 when its document is gone.
    let message: @Sendable (QueuedMailRepository.Entry) async throws -> MailMessage

    init(store: Store, queue: QueuedMailRepository, what: String, sendAgainFrom: String, mailer: any Mailer, checkInterval: Duration = .seconds(2),
         logger: Logger, message: @escaping @Sendable (QueuedMailRepository.Entry) async throws -> MailMessage) {
        (self.store, self.queue, self.what, self.sendAgainFrom, self.mailer) = (store, queue, what, sendAgainFrom, mailer)
        (self.checkInterval, self.logger, self.message) = (checkInterval, logger, message)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.sendDue()
                try? await Task.sleep(for: self.checkInterval)
            }
        }
    }

    func sendDue() async {
        do {
            guard try await store.read({ try await self.queue.anyWaiting($0) }) else { return }
            let cutoff = store.now.addingTimeInterval(-DocumentMailService.sendingLease)
            try await store.writeRows { try await self.queue.abandon(sendingBefore: cutoff, sendAgainFrom: self.sendAgainFrom, $0) }
            while let entry = try await store.writeRows({ try await self.queue.claimDue(now: self.store.now, $0) }) {
                await send(entry)
            }
        } catch {
            logger.warning("\(what) mail: \(error)")
        }
    }

    private func send(_ entry: QueuedMailRepository.Entry) async {
        var settled: (QueuedMailRepository.State, String, Date?, Date?)
        do {
            try await mailer.send(try await message(entry))
            settled = (.sent, "", store.now, nil)
            logger.info("\(what) mailed", metadata: [what: "\(entry.subject)"])
        } catch let error as AppError where error.status == 404 {
            settled = (.failed, "The \(what) is gone.", nil, nil)
        } catch {
            let failure = DocumentMailService.failure(error, attempts: entry.attempts, now: store.now, sendAgainFrom: sendAgainFrom)
            settled = (failure.next == nil ? .failed : .queued, failure.note, nil, failure.next)
            logger.warning("\(what) mail not sent", metadata: [what: "\(entry.subject)", "error": "\(error)"])
        }
        let (state, note, sentAt, next) = settled
        _ = try? await store.writeRows { db in
            try await self.queue.settle(entry.id, state: state, note: note, sentAt: sentAt, nextAttempt: next, db)
        }
    }
}
