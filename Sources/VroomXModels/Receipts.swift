import Foundation

/// A photo of paper that backs money: a fuel or toll receipt on an expense,
/// the check or cash receipt a driver collected on delivery. Uploaded like
/// inspection photos (one request, or resumable with tus); its bytes are at
/// `GET /v1/expenses/{expense}/receipts/{id}` or
/// `GET /v1/invoices/{invoice}/payments/{payment}/photos/{id}`.
public struct ReceiptPhoto: Codable, Sendable, Hashable, Identifiable {
    /// An expense or a payment keeps at most this many photos (a long
    /// receipt in parts, front and back of a check).
    public static let maxPerItem = 10

    public var id: ID<ReceiptPhoto>
    public var contentType: String
    public var sizeBytes: Int64
    public var sha256: String
    public var uploadedAt: Date

    public init(id: ID<ReceiptPhoto>, contentType: String, sizeBytes: Int64, sha256: String, uploadedAt: Date) {
        self.id = id
        self.contentType = contentType
        self.sizeBytes = sizeBytes
        self.sha256 = sha256
        self.uploadedAt = uploadedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, sha256
        case contentType = "content_type"
        case sizeBytes = "size_bytes"
        case uploadedAt = "uploaded_at"
    }
}

/// Money a driver collected for an order (COD on delivery, COP at
/// pickup): recorded on the order's invoice as paid on collection, pending
/// deposit. Sent through the outbox like other driver work; the client's
/// `id` makes it one payment however often it is sent. The photo of the
/// check or cash receipt follows through the upload queue.
public struct CollectPaymentRequest: Codable, Sendable, Hashable {
    public var id: ID<InvoicePayment>
    public var orderID: ID<Order>
    public var amountCents: Int
    /// Check, cash (or card, other): what the driver was handed.
    public var method: PaymentMethod
    /// The check or money order number.
    public var reference: String?
    /// The day it was collected (the phone's day; today when not said).
    public var collectedOn: LocalDate?

    public init(id: ID<InvoicePayment> = ID(), orderID: ID<Order>, amountCents: Int, method: PaymentMethod, reference: String? = nil,
                collectedOn: LocalDate? = nil) {
        self.id = id
        self.orderID = orderID
        self.amountCents = amountCents
        self.method = method
        self.reference = reference
        self.collectedOn = collectedOn
    }

    enum CodingKeys: String, CodingKey {
        case id, method, reference
        case orderID = "order_id"
        case amountCents = "amount_cents"
        case collectedOn = "collected_on"
    }
}

/// Dispatch took money a driver collected to the bank.
public struct DepositPaymentRequest: Codable, Sendable, Hashable {
    /// Today when not said.
    public var depositedOn: LocalDate?

    public init(depositedOn: LocalDate? = nil) {
        self.depositedOn = depositedOn
    }

    enum CodingKeys: String, CodingKey {
        case depositedOn = "deposited_on"
    }
}
