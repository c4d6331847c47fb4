import Foundation
import VroomXModels

/// The carrier's customers: shippers, brokers, dealers and auctions, each
/// named once (ignoring case). Dispatch's alone; a driver sees none. The
/// policy and the transactions; the SQL is `CustomerRepository`'s.
public struct CustomerService: Sendable {
    let store: Store

    // MARK: Reads

    public func documents(tenant: ID<Tenant>, search: String? = nil, page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { try await CustomerRepository.documents(tenant: tenant, search: search, page, $0) }
    }

    public func document(_ id: ID<Customer>, tenant: ID<Tenant>) async throws -> String {
        guard let doc = try await store.read({ try await CustomerRepository.document(id, tenant: tenant, $0) }) else {
            throw AppError.notFound("Customer")
        }
        return doc
    }

    public func customer(_ id: ID<Customer>, tenant: ID<Tenant>) async throws -> Customer {
        guard let customer = try await store.read({ try await CustomerRepository.find(id, tenant: tenant, $0) }) else {
            throw AppError.notFound("Customer")
        }
        return customer
    }

    /// One page of the customers whose name, contact, email or phone contain `search`, by name.
    func page(_ search: String?, offset: Int, limit: Int, tenant: ID<Tenant>) async throws -> [Customer] {
        try await store.read { try await CustomerRepository.matching(tenant: tenant, search: search, offset: offset, limit: limit, $0) }
    }

    /// How many customers match `search`, and how many the carrier has.
    func count(_ search: String?, tenant: ID<Tenant>) async throws -> (matching: Int, all: Int) {
        try await store.read { try await CustomerRepository.count(tenant: tenant, search: search, $0) }
    }

    func named(_ name: String, tenant: ID<Tenant>) async throws -> Customer? {
        try await store.read { try await CustomerRepository.named(name, tenant: tenant, $0) }
    }

    func some(_ ids: [ID<Customer>], tenant: ID<Tenant>) async throws -> [Customer] {
        try await store.read { try await CustomerRepository.some(ids, tenant: tenant, $0) }
    }

    func standing(of id: ID<Customer>, tenant: ID<Tenant>) async throws -> CustomerStanding {
        try await standings(of: [id], tenant: tenant)[id] ?? CustomerStanding()
    }

    func standings(of ids: [ID<Customer>], tenant: ID<Tenant>) async throws -> [ID<Customer>: CustomerStanding] {
        try await store.read { try await CustomerRepository.standings(of: ids, tenant: tenant, $0) }
    }

    // MARK: Dispatch edits

    public func create(_ request: CreateCustomerRequest, tenant: ID<Tenant>) async throws -> Customer {
        let fields = try Problems.first { Self.checked(request, &$0) }
        return try await store.write(tenant: tenant) { tx in try await insert(fields, tx) }
    }

    /// A new customer inside a caller's transaction (an order form or file
    /// naming one the carrier does not have yet).
    func insert(_ fields: CustomerFields, _ tx: TenantTransaction) async throws -> Customer {
        let customer = Customer(id: ID(), name: fields.name, kind: fields.kind, billingContact: fields.billingContact, email: fields.email,
                                phone: fields.phone, address: fields.address, paymentTerms: fields.paymentTerms, notes: fields.notes,
                                createdAt: tx.now, updatedAt: tx.now)
        do {
            try await CustomerRepository.insert(customer, tx)
        } catch DatabaseConstraintError.unique {
            throw Self.nameTaken(customer.name)
        }
        return customer
    }

    /// Changes the fields given; with `base_version`, a customer someone
    /// else changed since is a `conflict`.
    public func update(_ id: ID<Customer>, _ request: UpdateCustomerRequest, tenant: ID<Tenant>) async throws -> Customer {
        try await store.write(tenant: tenant) { tx in
            guard let current = try await CustomerRepository.find(id, tenant: tenant, locking: true, tx.db) else {
                throw AppError.notFound("Customer")
            }
            if let base = request.baseVersion {
                try Validate.baseVersion(base, current: current.version)
                if base < current.version {
                    throw AppError(409, .conflict, "Someone else changed \(current.name) since version \(base); it is now version \(current.version).",
                                   field: "base_version")
                }
            }
            let edited = try Problems.first { Self.edited(current, by: request, &$0) }
            return try await save(edited, from: current, tx)
        }
    }

    /// Writes an edited customer at its next version (nothing when nothing changed).
    func save(_ edited: Customer, from current: Customer, _ tx: TenantTransaction) async throws -> Customer {
        guard edited != current else { return current }
        var saved = edited
        saved.version = current.version + 1
        saved.updatedAt = tx.now
        do {
            try await CustomerRepository.update(saved, from: current, tx)
        } catch DatabaseConstraintError.unique {
            throw Self.nameTaken(saved.name)
        }
        return saved
    }

    static func nameTaken(_ name: String) -> AppError {
        AppError(409, .alreadyExists, "A customer named \(name) already exists.", field: "name")
    }

    // MARK: Rules

    /// A customer's fields as stored.
    struct CustomerFields: Sendable, Hashable {
        var name: String
        var kind: CustomerKind
        var billingContact = ""
        var email = ""
        var phone = ""
        var address = ""
        var paymentTerms = ""
        var notes = ""
    }

    /// Every rule for a new customer, each refusal kept in `problems`.
    static func checked(_ request: CreateCustomerRequest, _ problems: inout Problems) -> CustomerFields {
        let blank = Customer(id: ID(), name: "", kind: request.kind ?? .broker, createdAt: Date(), updatedAt: Date())
        let update = UpdateCustomerRequest(name: request.name, kind: request.kind, billingContact: request.billingContact, email: request.email,
                                           phone: request.phone, address: request.address, paymentTerms: request.paymentTerms,
                                           notes: request.notes)
        let customer = edited(blank, by: update, &problems)
        return CustomerFields(name: customer.name, kind: customer.kind, billingContact: customer.billingContact, email: customer.email,
                              phone: customer.phone, address: customer.address, paymentTerms: customer.paymentTerms, notes: customer.notes)
    }

    /// The customer with a dispatcher's edits applied, each refusal kept in `problems`.
    static func edited(_ customer: Customer, by request: UpdateCustomerRequest, _ problems: inout Problems) -> Customer {
        var edited = customer
        if let name = request.name { edited.name = problems.check(name) { try Validate.name(name, FieldLimits.customerName) } }
        if let kind = request.kind { edited.kind = kind }
        if let contact = request.billingContact {
            edited.billingContact = problems.check(contact) { try Validate.line(contact, FieldLimits.billingContact) }
        }
        if let email = request.email {
            edited.email = problems.check(email) {
                let trimmed = email.trimmingCharacters(in: .whitespacesAndNewlines)
                return trimmed.isEmpty ? "" : try Validate.email(trimmed)
            }
        }
        if let phone = request.phone { edited.phone = problems.check(phone) { try Validate.line(phone, FieldLimits.phone) } }
        if let address = request.address {
            edited.address = problems.check(address) { try Validate.text(address, FieldLimits.customerAddress) }
        }
        if let terms = request.paymentTerms {
            edited.paymentTerms = problems.check(terms) { try Validate.line(terms, FieldLimits.paymentTerms) }
        }
        if let notes = request.notes { edited.notes = problems.check(notes) { try Validate.text(notes, FieldLimits.customerNotes) } }
        return edited
    }
}

extension Store {
    /// Customers: the shippers, brokers, dealers and auctions orders are for.
    public var customers: CustomerService { CustomerService(store: self) }
}
