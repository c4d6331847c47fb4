import Foundation
import VroomXModels

/// What a photo backs: an expense, a payment a driver collected (their
/// receipts), a problem a driver reported at a stop, or a driver's message.
enum Paper: Sendable, Hashable {
    case expense(ID<Expense>)
    case payment(ID<InvoicePayment>)
    case problem(ID<StopProblem>, order: ID<Order>)
    case message(ID<DriverMessage>)

    /// The table of its photos: receipts, or what drivers attach to what they report.
    var table: SQL {
        switch self {
        case .expense, .payment: "receipt_photos"
        case .problem, .message: "attachment_photos"
        }
    }

    /// The photo rows' column naming it, and its id.
    var column: SQL {
        switch self {
        case .expense: "expense_id"
        case .payment: "payment_id"
        case .problem: "problem_id"
        case .message: "message_id"
        }
    }

    var id: String {
        switch self {
        case .expense(let id): id.rawValue
        case .payment(let id): id.rawValue
        case .problem(let id, _): id.rawValue
        case .message(let id): id.rawValue
        }
    }
}

/// Receipt photos and the files waiting to be removed, in the database:
/// the SQL and the row mapping, nothing else.
enum ReceiptRepository {
    static let columns: SQL = "id, content_type, size_bytes, sha256, uploaded_at"

    static func photo(_ row: SQLRow) throws -> ReceiptPhoto {
        ReceiptPhoto(id: try row.id("id"), contentType: try row.string("content_type"), sizeBytes: try row.int64("size_bytes"),
                     sha256: try row.string("sha256"), uploadedAt: try row.date("uploaded_at"))
    }

    /// The photos an expense's or payment's row carries (a JSON array, kept by `refresh`).
    static func photos(in row: SQLRow, column: String = "photos") throws -> [ReceiptPhoto] {
        try WireDocument.list(of: ReceiptPhoto.self, from: try row.string(column))
    }

    static func list(of paper: Paper, _ db: any SQLExecutor, tenant: ID<Tenant>) async throws -> [ReceiptPhoto] {
        try await db.query("""
            SELECT \(columns) FROM \(paper.table) WHERE tenant_id = \(tenant) AND \(paper.column) = \(paper.id) ORDER BY position, uploaded_at, id
            """).map(photo)
    }

    /// Holds the expense's or payment's row until the transaction ends (PostgreSQL).
    static func lock(_ paper: Paper, _ tx: TenantTransaction) async throws {
        let table: SQL = switch paper {
        case .expense: "trip_expenses"
        case .payment: "invoice_payments"
        case .problem: "orders"
        case .message: "driver_messages"
        }
        let id = if case .problem(_, let order) = paper { order.rawValue } else { paper.id }
        _ = try await tx.first("SELECT id FROM \(table) WHERE tenant_id = \(tx.tenant) AND id = \(id)\(Store.lockingRows(tx.db))")
    }

    static func count(of paper: Paper, _ tx: TenantTransaction) async throws -> Int {
        try await tx.first("SELECT COUNT(*) AS n FROM \(paper.table) WHERE tenant_id = \(tx.tenant) AND \(paper.column) = \(paper.id)")?
            .int("n") ?? 0
    }

    /// Adds a photo after the paper's others (`position`: in the order they were finished, whatever the clock says).
    static func insert(_ photo: ReceiptPhoto, key: String, of paper: Paper, uploadedBy: ID<User>, _ tx: TenantTransaction) async throws {
        // Both tables name their paper in two columns, one of them set.
        let (first, second): (String?, String?) = switch paper {
        case .expense(let id): (id.rawValue, nil)
        case .payment(let id): (nil, id.rawValue)
        case .problem(let id, _): (id.rawValue, nil)
        case .message(let id): (nil, id.rawValue)
        }
        let columns: SQL = switch paper {
        case .expense, .payment: "expense_id, payment_id"
        case .problem, .message: "problem_id, message_id"
        }
        try await tx.execute("""
            INSERT INTO \(paper.table) (id, tenant_id, \(columns), content_type, size_bytes, sha256, storage_key, uploaded_by, uploaded_at, position)
            VALUES (\(photo.id), \(tx.tenant), \(first), \(second), \(photo.contentType), \(photo.sizeBytes), \(photo.sha256), \(key),
                    \(uploadedBy), \(photo.uploadedAt), (SELECT COALESCE(MAX(position) + 1, 0) FROM \(paper.table)
                                                        WHERE tenant_id = \(tx.tenant) AND \(paper.column) = \(paper.id)))
            """)
    }

    /// A photo of the paper and where its bytes are.
    static func find(_ id: ID<ReceiptPhoto>, of paper: Paper, tenant: ID<Tenant>,
                     _ db: any SQLExecutor) async throws -> (photo: ReceiptPhoto, key: String)? {
        guard let row = try await db.first("""
            SELECT \(columns), storage_key FROM \(paper.table) WHERE tenant_id = \(tenant) AND id = \(id) AND \(paper.column) = \(paper.id)
            """) else { return nil }
        return (try photo(row), try row.string("storage_key"))
    }

    /// Removes a photo's row; where its bytes are, nil when there was no such photo.
    static func delete(_ id: ID<ReceiptPhoto>, of paper: Paper, _ tx: TenantTransaction) async throws -> String? {
        try await tx.first("""
            DELETE FROM \(paper.table) WHERE tenant_id = \(tx.tenant) AND id = \(id) AND \(paper.column) = \(paper.id) RETURNING storage_key
            """)?.string("storage_key")
    }

    /// The keys of a paper's photos, which go to the trash with it.
    static func keys(of paper: Paper, _ tx: TenantTransaction) async throws -> [String] {
        try await tx.query("SELECT storage_key FROM \(paper.table) WHERE tenant_id = \(tx.tenant) AND \(paper.column) = \(paper.id)")
            .map { try $0.string("storage_key") }
    }

    // MARK: The trash

    /// Files whose rows went in this transaction: the sweeper removes them once it committed.
    static func trash(_ keys: [String], _ tx: TenantTransaction) async throws {
        for key in keys {
            try await tx.execute("""
                INSERT INTO media_trash (storage_key, tenant_id, trashed_at) VALUES (\(key), \(tx.tenant), \(tx.now))
                ON CONFLICT (storage_key) DO NOTHING
                """)
        }
    }

    static func trashed(limit: Int, _ db: any SQLExecutor) async throws -> [String] {
        try await db.query("SELECT storage_key FROM media_trash ORDER BY trashed_at LIMIT \(limit)").map { try $0.string("storage_key") }
    }

    static func emptyTrash(_ keys: [String], _ db: any SQLExecutor) async throws {
        for key in keys { try await db.execute("DELETE FROM media_trash WHERE storage_key = \(key)") }
    }
}
