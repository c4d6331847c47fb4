import Foundation

/// Who a carrier moves vehicles for: the party that books a load and pays for it.
public enum CustomerKind: String, Codable, Sendable, CaseIterable {
    case shipper
    case broker
    case dealer
    case auction

    public var label: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
}

/// A shipper, broker, dealer or auction the carrier works for: who is
/// billed, and how to reach them. Orders name their customer; the people at
/// each stop stay on the order's stops.
public struct Customer: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Customer>
    /// Unique within the carrier, ignoring letter case.
    public var name: String
    public var kind: CustomerKind
    /// The person who handles the carrier's invoices.
    public var billingContact: String
    public var email: String
    public var phone: String
    public var address: String
    public var paymentTerms: String
    public var notes: String
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: ID<Customer>, name: String, kind: CustomerKind, billingContact: String = "", email: String = "",
                phone: String = "", address: String = "", paymentTerms: String = "", notes: String = "", version: Int = 1,
                createdAt: Date, updatedAt: Date) {
        self.id = id
        self.name = name
        self.kind = kind
        self.billingContact = billingContact
        self.email = email
        self.phone = phone
        self.address = address
        self.paymentTerms = paymentTerms
        self.notes = notes
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, kind, email, phone, address, notes, version
        case billingContact = "billing_contact"
        case paymentTerms = "payment_terms"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// A new customer: a name, and whatever else the dispatcher knows.
public struct CreateCustomerRequest: Codable, Sendable, Hashable {
    public var name: String
    /// Broker when not said: most loads a small carrier hauls come through one.
    public var kind: CustomerKind?
    public var billingContact: String?
    public var email: String?
    public var phone: String?
    public var address: String?
    public var paymentTerms: String?
    public var notes: String?

    public init(name: String, kind: CustomerKind? = nil, billingContact: String? = nil, email: String? = nil, phone: String? = nil,
                address: String? = nil, paymentTerms: String? = nil, notes: String? = nil) {
        self.name = name
        self.kind = kind
        self.billingContact = billingContact
        self.email = email
        self.phone = phone
        self.address = address
        self.paymentTerms = paymentTerms
        self.notes = notes
    }

    enum CodingKeys: String, CodingKey {
        case name, kind, email, phone, address, notes
        case billingContact = "billing_contact"
        case paymentTerms = "payment_terms"
    }
}

/// A dispatcher's edit of a customer: the fields present change.
public struct UpdateCustomerRequest: Codable, Sendable, Hashable {
    public var name: String?
    public var kind: CustomerKind?
    public var billingContact: String?
    public var email: String?
    public var phone: String?
    public var address: String?
    public var paymentTerms: String?
    public var notes: String?
    /// The version the edit was based on: a customer changed by someone
    /// else since then is a `conflict` instead of being overwritten.
    public var baseVersion: Int?

    public init(name: String? = nil, kind: CustomerKind? = nil, billingContact: String? = nil, email: String? = nil,
                phone: String? = nil, address: String? = nil, paymentTerms: String? = nil, notes: String? = nil,
                baseVersion: Int? = nil) {
        self.name = name
        self.kind = kind
        self.billingContact = billingContact
        self.email = email
        self.phone = phone
        self.address = address
        self.paymentTerms = paymentTerms
        self.notes = notes
        self.baseVersion = baseVersion
    }

    enum CodingKeys: String, CodingKey {
        case name, kind, email, phone, address, notes
        case billingContact = "billing_contact"
        case paymentTerms = "payment_terms"
        case baseVersion = "base_version"
    }
}
