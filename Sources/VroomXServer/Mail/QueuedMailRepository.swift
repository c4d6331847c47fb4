import Foundation
import VroomXModels

/// Documents dispatch asks to email (an invoice to its customer, a
/// settlement statement to its driver), in the database: one row per send
/// asked for, claimed before the mail goes out (so any number of instances
/// send it at most once) and settled after. One table per kind of
/// document, each with the same columns and its subject's id column.
struct QueuedMailRepository: Sendable {
    /// The table, and the column naming the document it sends.
    let table: SQL
    let subjectColumn: SQL

    static let invoices = QueuedMailRepository(table: SQL(unsafeRaw: "invoice_mail"), subjectColumn: SQL(unsafeRaw: "invoice_id"))
    static let statements = QueuedMailRepository(table: SQL(unsafeRaw: "settlement_mail"), subjectColumn: SQL(unsafeRaw: "settlement_id"))
    static let orderAlerts = QueuedMailRepository(table: SQL(unsafeRaw: "order_alert_mail"), subjectColumn: SQL(unsafeRaw: "order_id"))

    enum State: String, Sendable {
        case queued, sending, sent, failed
    }

    struct Entry: Sendable {
        let id: String
        let tenant: ID<Tenant>
        /// The id of the document it sends.
        let subject: String
        let recipient: String
        let state: State
        let attempts: Int
        let sentAt: Date?
        let note: String
        let createdAt: Date

        var isWaiting: Bool { state == .queued || state == .sending }
    }

    func enqueue(_ subject: String, recipient: String, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO \(table) (id, tenant_id, \(subjectColumn), recipient, state, next_attempt_at, created_at)
            VALUES (\(UUID().uuidString.lowercased()), \(tx.tenant), \(subject), \(recipient), 'queued', \(tx.now), \(tx.now))
            """)
    }

    func anyWaiting(_ db: any SQLExecutor) async throws -> Bool {
        try await db.first("SELECT id FROM \(table) WHERE state IN ('queued', 'sending') LIMIT 1") != nil
    }

    /// Takes the next due entry, marked `sending` (its attempt counted) before any mail goes out.
    func claimDue(now: Date, _ db: any SQLExecutor) async throws -> Entry? {
        try await db.first("""
            UPDATE \(table) SET state = 'sending', attempts = attempts + 1, next_attempt_at = \(now)
            WHERE id IN (SELECT id FROM \(table) WHERE state = 'queued' AND next_attempt_at <= \(now) ORDER BY next_attempt_at LIMIT 1)
              AND state = 'queued'
            RETURNING \(columns)
            """).map(entry)
    }

    func settle(_ id: String, state: State, note: String, sentAt: Date?, nextAttempt: Date?, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE \(table) SET state = \(state.rawValue), note = \(note), sent_at = \(sentAt),
                next_attempt_at = COALESCE(\(nextAttempt), next_attempt_at)
            WHERE id = \(id) AND state = 'sending'
            """)
    }

    /// Sends an instance left mid-way: whether the mail went is unknown, so it is not sent again by itself.
    func abandon(sendingBefore cutoff: Date, sendAgainFrom page: String, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE \(table) SET state = 'failed',
                note = \("Sending was interrupted: it may or may not have arrived. Email it again from \(page).")
            WHERE state = 'sending' AND next_attempt_at < \(cutoff)
            """)
    }

    /// A document's emails, oldest first.
    func of(_ subject: String, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Entry] {
        try await db.query("""
            SELECT \(columns) FROM \(table) WHERE tenant_id = \(tenant) AND \(subjectColumn) = \(subject) ORDER BY created_at, id
            """).map(entry)
    }

    private var columns: SQL { "id, tenant_id, \(subjectColumn) AS subject, recipient, state, attempts, sent_at, note, created_at" }

    private func entry(_ row: SQLRow) throws -> Entry {
        Entry(id: try row.string("id"), tenant: try row.id("tenant_id"), subject: try row.string("subject"), recipient: try row.string("recipient"),
              state: State(rawValue: try row.string("state")) ?? .failed, attempts: try row.int("attempts"),
              sentAt: try row.optionalDate("sent_at"), note: try row.string("note"), createdAt: try row.date("created_at"))
    }
}
