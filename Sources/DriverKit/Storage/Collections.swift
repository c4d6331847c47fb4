import Foundation
import GRDB
import VroomXModels

/// Money the driver collected for an order, as the phone knows it: what
/// reached dispatch (kept once the server applied it), what still waits in
/// the outbox, and what the server refused (with why).
public struct CollectionRecord: Sendable, Hashable, Identifiable {
    public enum State: Sendable, Hashable {
        /// Dispatch has it: the invoice counts it paid, pending deposit.
        case recorded
        /// On the phone, to go when there is signal.
        case waiting
        /// The server refused it; the reason is the driver's to read.
        case refused(String)
    }

    public let id: ID<InvoicePayment>
    public let orderID: ID<Order>
    public let amountCents: Int
    public let method: PaymentMethod
    public let reference: String
    public let collectedOn: LocalDate?
    public let state: State

    /// "$950.00 cash R-881": the amount, how, and the check or receipt number.
    public var summary: String {
        [MoneyFormat.dollars(amountCents), method.label.lowercased(), reference].filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// Counts toward what was collected for the order (a refusal does not).
    var counts: Bool {
        if case .refused = state { return false }
        return true
    }
}

extension AppDatabase {
    /// What the signed-in driver collected for an order, oldest first.
    public func collections(order: ID<Order>) throws -> [CollectionRecord] {
        try reader.read { db in try Self.collections(order: order, db) }
    }

    static func collections(order: ID<Order>, _ db: Database) throws -> [CollectionRecord] {
        try collections(db).filter { $0.orderID == order }
    }

    /// One collection the signed-in driver made, wherever it stands.
    static func collection(_ id: ID<InvoicePayment>, _ db: Database) throws -> CollectionRecord? {
        try collections(db).first { $0.id == id }
    }

    /// Every collection of the signed-in driver's: those that reached dispatch, then those in the outbox.
    private static func collections(_ db: Database) throws -> [CollectionRecord] {
        let owner = try ownerID(db)
        let recorded = try Row.fetchAll(db, sql: "SELECT * FROM collections WHERE owner IS ? ORDER BY recorded_at, id", arguments: [owner])
            .compactMap { row -> CollectionRecord? in
                guard let id = VroomXModels.ID<InvoicePayment>(row["id"] as String), let order = VroomXModels.ID<Order>(row["order_id"] as String),
                      let method = PaymentMethod(rawValue: row["method"]) else { return nil }
                return CollectionRecord(id: id, orderID: order, amountCents: row["amount_cents"], method: method, reference: row["reference"],
                                        collectedOn: (row["collected_on"] as String?).flatMap(LocalDate.init), state: .recorded)
            }
        let queued = try Row.decodeAll(db, sql: "SELECT * FROM outbox WHERE kind = ? AND owner IS ? ORDER BY seq",
                                       arguments: [MutationKind.collectPayment.rawValue, owner], OutboxEntry.init(row:))
            .compactMap { entry -> CollectionRecord? in
                guard case .collectPayment(let request) = entry.mutation.payload else { return nil }
                let state: CollectionRecord.State = entry.failure == .rejected ? .refused(entry.errorMessage ?? "The server refused it.") : .waiting
                return CollectionRecord(id: request.id, orderID: request.orderID, amountCents: request.amountCents, method: request.method,
                                        reference: request.reference ?? "", collectedOn: request.collectedOn, state: state)
            }
        let known = Set(recorded.map(\.id))
        return recorded + queued.filter { !known.contains($0.id) }
    }

    /// Keeps a collection the server applied, for the order's screen.
    static func storeCollection(_ request: CollectPaymentRequest, now: Date, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO collections (id, order_id, amount_cents, method, reference, collected_on, recorded_at, owner)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING
            """, arguments: [request.id.rawValue, request.orderID.rawValue, request.amountCents, request.method.rawValue, request.reference ?? "",
                             request.collectedOn?.description, now.timeIntervalSince1970, try ownerID(db)])
    }
}
