import Foundation
import VroomXModels

/// Each email of an invoice, in the database: one row per send a
/// dispatcher asked for, claimed before the mail goes out (so any number of
/// instances send it at most once) and settled after.
enum InvoiceMailRepository {
    enum State: String, Sendable {
        case queued, sending, sent, failed
    }

    struct Entry: Sendable {
        let id: String
        let tenant: ID<Tenant>
        let invoice: ID<Invoice>
        let recipient: String
        let state: State
        let attempts: Int
        let sentAt: Date?
        let note: String
        let createdAt: Date
    }

    static func enqueue(_ invoice: ID<Invoice>, recipient: String, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO invoice_mail (id, tenant_id, invoice_id, recipient, state, next_attempt_at, created_at)
            VALUES (\(UUID().uuidString.lowercased()), \(tx.tenant), \(invoice), \(recipient), 'queued', \(tx.now), \(tx.now))
            """)
    }

    static func anyWaiting(_ db: any SQLExecutor) async throws -> Bool {
        try await db.first("SELECT id FROM invoice_mail WHERE state IN ('queued', 'sending') LIMIT 1") != nil
    }

    /// Takes the next due entry, marked `sending` (its attempt counted) before any mail goes out.
    static func claimDue(now: Date, _ db: any SQLExecutor) async throws -> Entry? {
        try await db.first("""
            UPDATE invoice_mail SET state = 'sending', attempts = attempts + 1, next_attempt_at = \(now)
            WHERE id IN (SELECT id FROM invoice_mail WHERE state = 'queued' AND next_attempt_at <= \(now) ORDER BY next_attempt_at LIMIT 1)
              AND state = 'queued'
            RETURNING \(columns)
            """).map(entry)
    }

    static func settle(_ id: String, state: State, note: String, sentAt: Date?, nextAttempt: Date?, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE invoice_mail SET state = \(state.rawValue), note = \(note), sent_at = \(sentAt),
                next_attempt_at = COALESCE(\(nextAttempt), next_attempt_at)
            WHERE id = \(id) AND state = 'sending'
            """)
    }

    /// Sends an instance left mid-way: whether the mail went is unknown, so it is not sent again by itself.
    static func abandon(sendingBefore cutoff: Date, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE invoice_mail SET state = 'failed',
                note = 'Sending was interrupted: it may or may not have arrived. Email the invoice again from its page.'
            WHERE state = 'sending' AND next_attempt_at < \(cutoff)
            """)
    }

    /// An invoice's emails, oldest first.
    static func of(_ invoice: ID<Invoice>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Entry] {
        try await db.query("""
            SELECT \(columns) FROM invoice_mail WHERE tenant_id = \(tenant) AND invoice_id = \(invoice) ORDER BY created_at, id
            """).map(entry)
    }

    private static let columns: SQL = "id, tenant_id, invoice_id, recipient, state, attempts, sent_at, note, created_at"

    private static func entry(_ row: SQLRow) throws -> Entry {
        Entry(id: try row.string("id"), tenant: try row.id("tenant_id"), invoice: try row.id("invoice_id"), recipient: try row.string("recipient"),
              state: State(rawValue: try row.string("state")) ?? .failed, attempts: try row.int("attempts"),
              sentAt: try row.optionalDate("sent_at"), note: try row.string("note"), createdAt: try row.date("created_at"))
    }
}
