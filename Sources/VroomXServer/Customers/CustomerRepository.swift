import Foundation
import VroomXModels

/// Customers in the database: the SQL and the row mapping, nothing else.
/// Policy lives in `CustomerService`.
enum CustomerRepository {
    /// The key a name is unique by: letter case and runs of spaces do not make another customer.
    static func key(_ name: String) -> String {
        name.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// The carrier's customers whose name, billing contact, email or phone
    /// contain `search` (ignoring case), as stored documents.
    static func documents(tenant: ID<Tenant>, search: String?, _ page: PageRequest, _ db: any SQLExecutor) async throws -> DocumentPage {
        try await DocumentPages.read(from: "customers", where: filter(tenant: tenant, search: search), order: Customer.order, page, db)
    }

    /// A customer's phone with the punctuation people write numbers with taken out.
    private static let phoneDigits = ["-", " ", "(", ")", ".", "+"].reduce("phone") { "replace(\($0), '\($1)', '')" }

    static func filter(tenant: ID<Tenant>, search: String?) -> SQL {
        var filter: SQL = "tenant_id = \(tenant)"
        if let search, !search.isEmpty {
            let pattern = "%" + search.lowercased().replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
                .replacingOccurrences(of: "_", with: "\\_") + "%"
            var phone: SQL = "phone LIKE \(pattern) ESCAPE '\\'"
            // A number typed any way ("(312) 555-0100", "3125550100") finds it written any other way.
            let digits = search.filter(\.isASCII).filter(\.isNumber)
            if digits.count >= 3, search.allSatisfy({ $0.isNumber || " +-().".contains($0) }) {
                phone = phone + " OR " + SQL(unsafeRaw: phoneDigits) + " LIKE \("%" + digits + "%")"
            }
            filter = filter + " AND (name_key LIKE \(pattern) ESCAPE '\\' OR lower(billing_contact) LIKE \(pattern) ESCAPE '\\'"
                + " OR email LIKE \(pattern) ESCAPE '\\' OR " + phone + ")"
        }
        return filter
    }

    /// The customers matching `search`, by name, from `offset` on.
    static func matching(tenant: ID<Tenant>, search: String?, offset: Int = 0, limit: Int, _ db: any SQLExecutor) async throws -> [Customer] {
        try await db.query("""
            SELECT \(Customer.columns) FROM customers WHERE \(filter(tenant: tenant, search: search))
            ORDER BY \(Customer.order.sql) LIMIT \(limit) OFFSET \(offset)
            """).map(Customer.init(row:))
    }

    /// How many customers match `search`, and how many the carrier has.
    static func count(tenant: ID<Tenant>, search: String?, _ db: any SQLExecutor) async throws -> (matching: Int, all: Int) {
        let row = try await db.first("""
            SELECT (SELECT COUNT(*) FROM customers WHERE \(filter(tenant: tenant, search: search))) AS matching,
                   (SELECT COUNT(*) FROM customers WHERE tenant_id = \(tenant)) AS everyone
            """)
        return (try row?.int("matching") ?? 0, try row?.int("everyone") ?? 0)
    }

    static func document(_ id: ID<Customer>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> String? {
        try await db.first("SELECT doc FROM customers WHERE tenant_id = \(tenant) AND id = \(id)")?.string("doc")
    }

    /// A customer of the carrier; on PostgreSQL its row stays locked until
    /// the transaction ends when `locking`.
    static func find(_ id: ID<Customer>, tenant: ID<Tenant>, locking: Bool = false, _ db: any SQLExecutor) async throws -> Customer? {
        let lock: SQL = locking ? Store.lockingRows(db) : ""
        return try await db.first("SELECT \(Customer.columns) FROM customers WHERE tenant_id = \(tenant) AND id = \(id)\(lock)")
            .map(Customer.init(row:))
    }

    /// The customer the carrier calls so (ignoring case and spacing).
    static func named(_ name: String, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Customer? {
        try await db.first("SELECT \(Customer.columns) FROM customers WHERE tenant_id = \(tenant) AND name_key = \(key(name))")
            .map(Customer.init(row:))
    }

    /// The customers of these ids (those that are the carrier's).
    static func some(_ ids: [ID<Customer>], tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [Customer] {
        var found: [Customer] = []
        for chunk in ids.chunks(of: 400) {
            found += try await db.query("SELECT \(Customer.columns) FROM customers WHERE tenant_id = \(tenant) AND id IN (\(SQL.list(chunk)))")
                .map(Customer.init(row:))
        }
        return found
    }

    /// Writes a new customer (a name the carrier has is `DatabaseConstraintError.unique`) and records the change.
    static func insert(_ customer: Customer, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(customer)
        try await tx.execute("""
            INSERT INTO customers (id, tenant_id, name, name_key, kind, billing_contact, email, phone, address, payment_terms, notes,
                                   version, created_at, updated_at, doc)
            VALUES (\(customer.id), \(tx.tenant), \(customer.name), \(key(customer.name)), \(customer.kind), \(customer.billingContact),
                    \(customer.email), \(customer.phone), \(customer.address), \(customer.paymentTerms), \(customer.notes),
                    \(customer.version), \(customer.createdAt), \(customer.updatedAt), \(doc))
            """)
        tx.recordUpsert(.customer, id: customer.id.rawValue, document: doc, visibleTo: nil)
    }

    /// Writes a customer's new state (already at its next version) if nobody changed it since `previous`.
    static func update(_ customer: Customer, from previous: Customer, _ tx: TenantTransaction) async throws {
        let doc = try WireDocument.encode(customer)
        guard try await tx.first("""
            UPDATE customers SET name = \(customer.name), name_key = \(key(customer.name)), kind = \(customer.kind),
                billing_contact = \(customer.billingContact), email = \(customer.email), phone = \(customer.phone),
                address = \(customer.address), payment_terms = \(customer.paymentTerms), notes = \(customer.notes),
                version = \(customer.version), updated_at = \(customer.updatedAt), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(previous.id) AND version = \(previous.version)
            RETURNING id
            """) != nil else { throw WriteConflict() }
        tx.recordUpsert(.customer, id: customer.id.rawValue, document: doc, visibleTo: nil)
    }

    /// What the carrier's orders for each customer come to, by where they stand.
    static func standings(of ids: [ID<Customer>], tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [ID<Customer>: CustomerStanding] {
        guard !ids.isEmpty else { return [:] }
        var standings: [ID<Customer>: CustomerStanding] = [:]
        for row in try await db.query("""
            SELECT customer_id, status, COUNT(*) AS orders, COALESCE(SUM(revenue_cents), 0) AS revenue, MAX(created_at) AS latest
            FROM orders WHERE tenant_id = \(tenant) AND customer_id IN (\(SQL.list(ids))) GROUP BY customer_id, status
            """) {
            let id: ID<Customer> = try row.id("customer_id")
            var standing = standings[id] ?? CustomerStanding()
            let status: OrderStatus = try row.enumeration("status")
            let (orders, revenue) = (try row.int("orders"), try row.int("revenue"))
            switch status {
            case .delivered: (standing.deliveredOrders, standing.deliveredRevenueCents) = (orders, revenue)
            case .cancelled: standing.cancelledOrders = orders
            case .new, .assigned, .pickedUp:
                standing.openOrders += orders
                standing.openRevenueCents += revenue
            }
            if let latest = try row.optionalDate("latest"), standing.lastOrderAt.map({ latest > $0 }) ?? true { standing.lastOrderAt = latest }
            standings[id] = standing
        }
        return standings
    }
}

/// What a carrier has done with a customer: orders open and done, and what they earn.
struct CustomerStanding: Sendable, Hashable {
    /// New, assigned or picked up.
    var openOrders = 0
    var deliveredOrders = 0
    var cancelledOrders = 0
    /// Revenue of the delivered orders, in cents.
    var deliveredRevenueCents = 0
    /// Revenue of the open orders, in cents: still to earn.
    var openRevenueCents = 0
    var lastOrderAt: Date?
}
