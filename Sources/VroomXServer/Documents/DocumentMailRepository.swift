import Foundation
import VroomXModels

/// The bills of lading mailed to customers, in the database.
enum DocumentMailRepository {
    enum State: String, Sendable {
        case queued, sending, sent, failed, skipped
    }

    struct Entry: Sendable {
        let id: String
        let tenant: ID<Tenant>
        let order: ID<Order>
        let inspection: ID<Inspection>
        let kind: Inspection.Kind
        let recipient: String
        let state: State
        let attempts: Int
        let sentAt: Date?
        let note: String
        let createdAt: Date
    }

    /// One entry per inspection: a second completion of it adds nothing.
    static func enqueue(order: ID<Order>, inspection: ID<Inspection>, kind: Inspection.Kind, recipient: String?, _ tx: TenantTransaction) async throws {
        let state: State = recipient == nil ? .skipped : .queued
        let note = recipient == nil ? "The customer has no email address (or the order names no customer)." : ""
        try await tx.execute("""
            INSERT INTO document_mail (id, tenant_id, order_id, inspection_id, kind, recipient, state, next_attempt_at, note, created_at)
            VALUES (\(UUID().uuidString.lowercased()), \(tx.tenant), \(order), \(inspection), \(kind.rawValue), \(recipient ?? ""),
                    \(state.rawValue), \(tx.now), \(note), \(tx.now))
            ON CONFLICT (tenant_id, inspection_id) DO NOTHING
            """)
    }

    /// Whether the order's bill of lading for a stop was queued (or sent) already.
    static func exists(order: ID<Order>, kind: Inspection.Kind, _ tx: TenantTransaction) async throws -> Bool {
        try await tx.first("SELECT id FROM document_mail WHERE tenant_id = \(tx.tenant) AND order_id = \(order) AND kind = \(kind.rawValue)") != nil
    }

    /// Whether any entry waits (a read, so that an idle server's check writes nothing).
    static func anyWaiting(_ db: any SQLExecutor) async throws -> Bool {
        try await db.first("SELECT id FROM document_mail WHERE state IN ('queued', 'sending') LIMIT 1") != nil
    }

    /// Takes the next due entries for sending: each is marked `sending`
    /// (and its attempt counted) before any mail goes out, so no other
    /// instance takes it, and one interrupted mid-send is never sent twice.
    static func claimDue(limit: Int, now: Date, _ db: any SQLExecutor) async throws -> [Entry] {
        try await db.query("""
            UPDATE document_mail SET state = 'sending', attempts = attempts + 1, next_attempt_at = \(now)
            WHERE id IN (SELECT id FROM document_mail WHERE state = 'queued' AND next_attempt_at <= \(now)
                         ORDER BY next_attempt_at LIMIT \(limit))
              AND state = 'queued'
            RETURNING \(columns)
            """).map(entry)
    }

    static func settle(_ id: String, state: State, note: String, sentAt: Date?, nextAttempt: Date?, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE document_mail SET state = \(state.rawValue), note = \(note), sent_at = \(sentAt),
                next_attempt_at = COALESCE(\(nextAttempt), next_attempt_at)
            WHERE id = \(id) AND state = 'sending'
            """)
    }

    /// Sends left `sending` longer than `olderThan` ago by an instance that
    /// stopped: whether the mail went is unknown, so it is not sent again by itself.
    static func abandon(sendingBefore cutoff: Date, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE document_mail SET state = 'failed',
                note = 'Sending was interrupted: it may or may not have arrived. Email the bill of lading again from the order page.'
            WHERE state = 'sending' AND next_attempt_at < \(cutoff)
            """)
    }

    /// An order's mail, oldest first.
    static func of(_ order: ID<Order>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Entry] {
        try await db.query("""
            SELECT \(columns) FROM document_mail WHERE tenant_id = \(tenant) AND order_id = \(order) ORDER BY created_at, id
            """).map(entry)
    }

    /// Sends an entry again (a dispatcher asked to): queued now, to the customer's current address.
    static func requeue(_ inspection: ID<Inspection>, recipient: String, _ tx: TenantTransaction) async throws -> Bool {
        try await tx.first("""
            UPDATE document_mail SET state = 'queued', recipient = \(recipient), attempts = 0, next_attempt_at = \(tx.now), note = ''
            WHERE tenant_id = \(tx.tenant) AND inspection_id = \(inspection) AND state IN ('sent', 'failed', 'skipped')
            RETURNING id
            """) != nil
    }

    private static let columns: SQL = "id, tenant_id, order_id, inspection_id, kind, recipient, state, attempts, sent_at, note, created_at"

    private static func entry(_ row: SQLRow) throws -> Entry {
        Entry(id: try row.string("id"), tenant: try row.id("tenant_id"), order: try row.id("order_id"), inspection: try row.id("inspection_id"),
              kind: try row.enumeration("kind"), recipient: try row.string("recipient"),
              state: State(rawValue: try row.string("state")) ?? .failed, attempts: try row.int("attempts"), sentAt: try row.optionalDate("sent_at"),
              note: try row.string("note"), createdAt: try row.date("created_at"))
    }
}

extension Store {
    /// Sends an order's pickup or delivery bill of lading to its customer
    /// again, at a dispatcher's request (the address may have changed, or
    /// the first send was interrupted). Nil when it was queued; otherwise why not.
    func emailBillOfLadingAgain(_ order: ID<Order>, kind: Inspection.Kind, tenant: ID<Tenant>) async throws -> BillOfLadingResend.Refusal? {
        try await write(tenant: tenant) { tx in
            guard let found = try await OrderRepository.find(order, .dispatch(tenant: tenant), tx.db) else { throw AppError.notFound("Order") }
            // The stop is done once every vehicle's inspection is; its mail is the last one's (the one that moved the order).
            let inspections = try await InspectionRepository.of(order, tx)
            guard InspectionRules.remaining(found, kind, completed: inspections).isEmpty,
                  let inspection = inspections.filter({ $0.kind == kind && $0.completedAt != nil })
                    .max(by: { ($0.completedAt ?? .distantPast, $0.updatedAt) < ($1.completedAt ?? .distantPast, $1.updatedAt) }) else {
                return .notCompleted
            }
            guard let customer = found.customerID, let email = try await CustomerRepository.find(customer, tenant: tenant, tx.db)?.email,
                  !email.isEmpty else {
                return .noEmail
            }
            if try await DocumentMailRepository.requeue(inspection.id, recipient: email, tx) { return nil }
            try await DocumentMailRepository.enqueue(order: order, inspection: inspection.id, kind: kind, recipient: email, tx)
            return nil
        }
    }
}

/// Why a bill of lading was not sent again.
enum BillOfLadingResend {
    enum Refusal: String, Sendable {
        case notCompleted = "not_completed"
        case noEmail = "no_email"
    }
}
