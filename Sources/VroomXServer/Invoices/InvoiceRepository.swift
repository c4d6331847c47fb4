import Foundation
import VroomXModels

/// Invoices, the orders they bill and the payments against them, in the
/// database: the SQL and the row mapping. Policy lives in `InvoiceService`.
enum InvoiceRepository {
    static let order = ListOrder(.descending("created_at", .integer), .ascending("id", .text))

    static func filter(tenant: ID<Tenant>, status: InvoiceStatus?, customer: ID<Customer>?) -> SQL {
        var filter: SQL = "tenant_id = \(tenant)"
        if let status { filter = filter + " AND status = \(status)" }
        if let customer { filter = filter + " AND customer_id = \(customer)" }
        return filter
    }

    static func documents(tenant: ID<Tenant>, status: InvoiceStatus?, customer: ID<Customer>?, _ page: PageRequest,
                          _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "invoices", where: filter(tenant: tenant, status: status, customer: customer), order: order, page, db)
    }

    /// One page of the carrier's invoices, newest first.
    static func page(tenant: ID<Tenant>, status: InvoiceStatus?, customer: ID<Customer>?, offset: Int, limit: Int,
                     _ db: any SQLExecutor) async throws -> [Invoice] {
        try await db.query("""
            SELECT doc FROM invoices WHERE \(filter(tenant: tenant, status: status, customer: customer))
            ORDER BY \(order.sql) LIMIT \(limit) OFFSET \(offset)
            """).map(invoice)
    }

    /// How many invoices the carrier has in each status.
    static func counts(tenant: ID<Tenant>, customer: ID<Customer>?, _ db: any SQLExecutor) async throws -> [InvoiceStatus: Int] {
        var counts: [InvoiceStatus: Int] = [:]
        for row in try await db.query("""
            SELECT status, COUNT(*) AS n FROM invoices WHERE \(filter(tenant: tenant, status: nil, customer: customer)) GROUP BY status
            """) {
            counts[try row.enumeration("status")] = try row.int("n")
        }
        return counts
    }

    static func find(_ id: ID<Invoice>, tenant: ID<Tenant>, locking: Bool = false, _ db: any SQLExecutor) async throws -> Invoice? {
        let lock: SQL = locking ? Store.lockingRows(db) : ""
        return try await db.first("SELECT doc FROM invoices WHERE tenant_id = \(tenant) AND id = \(id)\(lock)").map(invoice)
    }

    static func document(_ id: ID<Invoice>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> String? {
        try await db.first("SELECT doc FROM invoices WHERE tenant_id = \(tenant) AND id = \(id)")?.string("doc")
    }

    /// The invoice (not void) each of these orders is on.
    static func invoices(ofOrders orders: [ID<Order>], tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [ID<Order>: ID<Invoice>] {
        guard !orders.isEmpty else { return [:] }
        var found: [ID<Order>: ID<Invoice>] = [:]
        for start in stride(from: 0, to: orders.count, by: 400) {
            let chunk = Array(orders[start..<min(start + 400, orders.count)])
            for row in try await db.query("""
                SELECT order_id, invoice_id FROM invoice_orders WHERE tenant_id = \(tenant) AND order_id IN (\(SQL.list(chunk)))
                """) {
                found[try row.id("order_id")] = try row.id("invoice_id")
            }
        }
        return found
    }

    /// A customer's delivered orders (and cancelled ones after a dry run) no invoice bills yet, latest first.
    static func uninvoiced(customer: ID<Customer>?, tenant: ID<Tenant>, limit: Int, _ db: any SQLExecutor) async throws -> [ID<Order>] {
        let customerFilter: SQL = customer.map { " AND o.customer_id = \($0)" } ?? " AND o.customer_id IS NOT NULL"
        return try await db.query("""
            SELECT o.id FROM orders o
            WHERE o.tenant_id = \(tenant) AND (o.status = 'delivered' OR (o.status = 'cancelled' AND o.dry_run = 1))\(customerFilter)
              AND NOT EXISTS (SELECT 1 FROM invoice_orders i WHERE i.tenant_id = o.tenant_id AND i.order_id = o.id)
            ORDER BY o.updated_at DESC, o.id LIMIT \(limit)
            """).map { try $0.id("id") }
    }

    /// A customer's billable orders (`Order.isBillable`) on no invoice or on a draft other than `except`, latest first, each saying whether on a draft.
    static func billable(customer: ID<Customer>, except: ID<Invoice>?, tenant: ID<Tenant>, limit: Int = 200,
                         _ db: any SQLExecutor) async throws -> [(ID<Order>, Bool)] {
        let other: SQL = except.map { " AND i.id <> \($0)" } ?? ""
        return try await db.query("""
            SELECT o.id, i.id AS invoice_id FROM orders o
            LEFT JOIN invoice_orders io ON io.tenant_id = o.tenant_id AND io.order_id = o.id
            LEFT JOIN invoices i ON i.tenant_id = io.tenant_id AND i.id = io.invoice_id
            WHERE o.tenant_id = \(tenant) AND (o.status = 'delivered' OR (o.status = 'cancelled' AND o.dry_run = 1)) AND o.customer_id = \(customer)
              AND (io.order_id IS NULL OR (i.status = 'draft'\(other)))
            ORDER BY o.updated_at DESC, o.id LIMIT \(limit)
            """).map { (try $0.id("id"), try $0.optionalString("invoice_id") != nil) }
    }

    /// Removes a draft that bills nothing more (a draft has no number, so no gap is left).
    static func deleteDraft(_ id: ID<Invoice>, _ tx: TenantTransaction) async throws {
        try await tx.execute("DELETE FROM invoice_orders WHERE tenant_id = \(tx.tenant) AND invoice_id = \(id)")
        try await tx.execute("DELETE FROM invoices WHERE tenant_id = \(tx.tenant) AND id = \(id) AND status = 'draft'")
    }

    /// Writes a new invoice and claims its orders (an order another invoice
    /// bills is `DatabaseConstraintError.unique`).
    static func insert(_ invoice: Invoice, sequence: Int?, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO invoices (id, tenant_id, customer_id, sequence, status, terms, issued_on, due_on, total_cents, paid_cents, sent_at,
                                  version, created_at, updated_at, doc)
            VALUES (\(invoice.id), \(tx.tenant), \(invoice.customerID), \(sequence), \(invoice.status), \(invoice.terms),
                    \(invoice.issuedOn), \(invoice.dueOn), \(invoice.totalCents), \(invoice.paidCents), \(invoice.sentAt), \(invoice.version),
                    \(invoice.createdAt), \(invoice.updatedAt), \(try WireDocument.encode(invoice)))
            """)
        try await claim(invoice.orders.map(\.id), for: invoice.id, tx)
    }

    /// Writes an invoice's new state (already at its next version) if nobody changed it since `previous`.
    static func update(_ invoice: Invoice, from previous: Invoice, sequence: Int? = nil, _ tx: TenantTransaction) async throws {
        guard try await tx.first("""
            UPDATE invoices SET status = \(invoice.status), terms = \(invoice.terms), issued_on = \(invoice.issuedOn), due_on = \(invoice.dueOn),
                total_cents = \(invoice.totalCents), paid_cents = \(invoice.paidCents), sent_at = \(invoice.sentAt),
                sequence = COALESCE(\(sequence), sequence), version = \(invoice.version), updated_at = \(invoice.updatedAt),
                doc = \(try WireDocument.encode(invoice))
            WHERE tenant_id = \(tx.tenant) AND id = \(previous.id) AND version = \(previous.version)
            RETURNING id
            """) != nil else { throw WriteConflict() }
        if invoice.orders.map(\.id) != previous.orders.map(\.id) || invoice.status == .void {
            try await tx.execute("DELETE FROM invoice_orders WHERE tenant_id = \(tx.tenant) AND invoice_id = \(invoice.id)")
            if invoice.status != .void { try await claim(invoice.orders.map(\.id), for: invoice.id, tx) }
        }
    }

    private static func claim(_ orders: [ID<Order>], for invoice: ID<Invoice>, _ tx: TenantTransaction) async throws {
        for order in orders {
            try await tx.execute("INSERT INTO invoice_orders (tenant_id, order_id, invoice_id) VALUES (\(tx.tenant), \(order), \(invoice))")
        }
    }

    /// The carrier's next invoice number: 1001 first, then one more each time, never reused.
    static func nextSequence(_ tx: TenantTransaction) async throws -> Int {
        guard let row = try await tx.first("""
            INSERT INTO invoice_numbers (tenant_id, last) VALUES (\(tx.tenant), 1001)
            ON CONFLICT (tenant_id) DO UPDATE SET last = invoice_numbers.last + 1
            RETURNING last
            """) else { throw AppError(500, .internalError, "No invoice number was given.") }
        return try row.int("last")
    }

    /// The invoices still owed (sent or partly paid), oldest due first.
    static func open(tenant: ID<Tenant>, customer: ID<Customer>? = nil, _ db: any SQLExecutor) async throws -> [Invoice] {
        let customerFilter: SQL = customer.map { " AND customer_id = \($0)" } ?? ""
        return try await db.query("""
            SELECT doc FROM invoices WHERE tenant_id = \(tenant) AND status IN ('sent', 'partly_paid')\(customerFilter) ORDER BY due_on, id
            """).map(invoice)
    }

    /// The sent invoices with a balance on `asOf` (owed, or a credit when the customer paid more), each
    /// with that balance: dated by then, less the payments received by then. `asOf` today or later is
    /// the invoices as they stand.
    static func owed(tenant: ID<Tenant>, customer: ID<Customer>? = nil, asOf: LocalDate, today: LocalDate,
                     _ db: any SQLExecutor) async throws -> [(invoice: Invoice, balanceCents: Int)] {
        let customerFilter: SQL = customer.map { " AND i.customer_id = \($0)" } ?? ""
        if asOf >= today {
            return try await db.query("""
                SELECT i.doc FROM invoices i
                WHERE i.tenant_id = \(tenant) AND i.status IN ('sent', 'partly_paid', 'paid') AND i.total_cents <> i.paid_cents\(customerFilter)
                ORDER BY i.due_on, i.id
                """).map { row in let found = try invoice(row); return (found, found.balanceCents) }
        }
        return try await db.query("""
            SELECT i.doc, (SELECT COALESCE(SUM(p.amount_cents), 0) FROM invoice_payments p
                           WHERE p.tenant_id = i.tenant_id AND p.invoice_id = i.id AND p.removed_at IS NULL
                             AND p.received_on <= \(asOf)) AS paid_then
            FROM invoices i
            WHERE i.tenant_id = \(tenant) AND i.status IN ('sent', 'partly_paid', 'paid') AND i.issued_on <= \(asOf)\(customerFilter)
            ORDER BY i.due_on, i.id
            """).compactMap { row in
            let found = try invoice(row)
            let balance = found.totalCents - (try row.int("paid_then"))
            return balance == 0 ? nil : (found, balance)
        }
    }

    /// The invoices dated within a period (drafts have no number yet and are left out), by number.
    static func issued(tenant: ID<Tenant>, from: LocalDate, to: LocalDate, _ db: any SQLExecutor) async throws -> [Invoice] {
        try await db.query("""
            SELECT doc FROM invoices WHERE tenant_id = \(tenant) AND sequence IS NOT NULL AND issued_on BETWEEN \(from) AND \(to)
            ORDER BY sequence
            """).map(invoice)
    }

    static func invoice(_ row: SQLRow) throws -> Invoice {
        try WireDocument.decode(Invoice.self, from: try row.string("doc"))
    }

    // MARK: Payments

    static func payments(of invoice: ID<Invoice>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [InvoicePayment] {
        try await db.query("""
            SELECT \(paymentColumns) FROM invoice_payments WHERE tenant_id = \(tenant) AND invoice_id = \(invoice) AND removed_at IS NULL
            ORDER BY received_on, created_at, id
            """).map(payment)
    }

    /// A payment of the carrier's; one removed only when `includingRemoved`.
    static func payment(_ id: ID<InvoicePayment>, tenant: ID<Tenant>, includingRemoved: Bool = false, _ db: any SQLExecutor) async throws -> InvoicePayment? {
        let live: SQL = includingRemoved ? "" : " AND removed_at IS NULL"
        return try await db.first("SELECT \(paymentColumns) FROM invoice_payments WHERE tenant_id = \(tenant) AND id = \(id)\(live)").map(payment)
    }

    /// Payments received within a period, with their invoice's number and customer.
    static func received(tenant: ID<Tenant>, from: LocalDate, to: LocalDate, _ db: any SQLExecutor) async throws -> [(InvoicePayment, Invoice)] {
        try await db.query("""
            SELECT \(paymentWithInvoiceColumns) FROM invoice_payments p JOIN invoices i ON i.tenant_id = p.tenant_id AND i.id = p.invoice_id
            WHERE p.tenant_id = \(tenant) AND p.received_on BETWEEN \(from) AND \(to) AND p.removed_at IS NULL
            ORDER BY p.received_on, p.created_at, p.id
            """).map { (try payment($0), try invoice($0)) }
    }

    /// How many payments were ever recorded against an invoice (removed ones too).
    static func paymentCount(_ invoice: ID<Invoice>, _ tx: TenantTransaction) async throws -> Int {
        try await tx.first("SELECT COUNT(*) AS n FROM invoice_payments WHERE tenant_id = \(tx.tenant) AND invoice_id = \(invoice)")?.int("n") ?? 0
    }

    static func insert(_ payment: InvoicePayment, _ tx: TenantTransaction) async throws {
        try await tx.execute("""
            INSERT INTO invoice_payments (id, tenant_id, invoice_id, amount_cents, method, reference, received_on, note, recorded_by, created_at,
                                          collected_by, order_id)
            VALUES (\(payment.id), \(tx.tenant), \(payment.invoiceID), \(payment.amountCents), \(payment.method), \(payment.reference),
                    \(payment.receivedOn), \(payment.note), \(payment.recordedBy), \(payment.createdAt), \(payment.collectedBy), \(payment.orderID))
            """)
    }

    /// What drivers collected for an order so far (payments not removed), oldest first.
    static func collections(forOrder order: ID<Order>, _ tx: TenantTransaction) async throws -> [InvoicePayment] {
        try await tx.query("""
            SELECT \(paymentColumns) FROM invoice_payments
            WHERE tenant_id = \(tx.tenant) AND order_id = \(order) AND collected_by IS NOT NULL AND removed_at IS NULL
            ORDER BY created_at, id
            """).map(payment)
    }

    /// Money drivers collected that is not banked yet, oldest first, with its invoice.
    static func pendingDeposits(tenant: ID<Tenant>, limit: Int, _ db: any SQLExecutor) async throws -> [(InvoicePayment, Invoice)] {
        try await db.query("""
            SELECT \(paymentWithInvoiceColumns) FROM invoice_payments p JOIN invoices i ON i.tenant_id = p.tenant_id AND i.id = p.invoice_id
            WHERE p.tenant_id = \(tenant) AND p.collected_by IS NOT NULL AND p.deposited_on IS NULL AND p.removed_at IS NULL
            ORDER BY p.received_on, p.created_at, p.id LIMIT \(limit)
            """).map { (try payment($0), try invoice($0)) }
    }

    /// Records the day money a driver collected went to the bank.
    static func deposit(_ payment: ID<InvoicePayment>, on day: LocalDate, _ tx: TenantTransaction) async throws {
        try await tx.execute("UPDATE invoice_payments SET deposited_on = \(day) WHERE tenant_id = \(tx.tenant) AND id = \(payment)")
    }

    static func remove(_ payment: ID<InvoicePayment>, _ tx: TenantTransaction) async throws {
        try await tx.execute("UPDATE invoice_payments SET removed_at = \(tx.now) WHERE tenant_id = \(tx.tenant) AND id = \(payment)")
    }

    /// What the payments recorded against an invoice add up to, read in the writing transaction.
    static func paid(_ invoice: ID<Invoice>, _ tx: TenantTransaction) async throws -> Int {
        try await tx.first("""
            SELECT COALESCE(SUM(amount_cents), 0) AS paid FROM invoice_payments
            WHERE tenant_id = \(tx.tenant) AND invoice_id = \(invoice) AND removed_at IS NULL
            """)?.int("paid") ?? 0
    }

    private static let paymentColumns: SQL = """
        id, invoice_id, amount_cents, method, reference, received_on, note, recorded_by, created_at, collected_by, order_id, deposited_on, photos
        """
    /// The same, of payments `p` joined to their invoices `i`, with the invoice's document.
    private static let paymentWithInvoiceColumns: SQL = """
        p.id, p.invoice_id, p.amount_cents, p.method, p.reference, p.received_on, p.note, p.recorded_by, p.created_at, p.collected_by,
        p.order_id, p.deposited_on, p.photos, i.doc
        """

    private static func payment(_ row: SQLRow) throws -> InvoicePayment {
        InvoicePayment(id: try row.id("id"), invoiceID: try row.id("invoice_id"), amountCents: try row.int("amount_cents"),
                       method: try row.enumeration("method"), reference: try row.string("reference"), receivedOn: try row.localDate("received_on"),
                       note: try row.string("note"), recordedBy: try row.string("recorded_by"), collectedBy: try row.optionalID("collected_by"),
                       orderID: try row.optionalID("order_id"), depositedOn: try row.optionalString("deposited_on") == nil ? nil : try row.localDate("deposited_on"),
                       photos: try ReceiptRepository.photos(in: row), createdAt: try row.date("created_at"))
    }
}
