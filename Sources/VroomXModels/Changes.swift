/// The kinds of rows the change feed carries.
public enum ChangeEntity: String, Codable, Sendable, CaseIterable {
    case driver
    case trip
    case order
    case expense
    case notification
    case inspection
    /// A truck or trailer: dispatch sees the fleet, a driver the units assigned to them.
    case equipment
    /// A shipper, broker, dealer or auction: dispatch only.
    case customer
    /// A message a driver wrote to dispatch: that driver and dispatch.
    case message
}

public enum ChangeOperation: String, Codable, Sendable, CaseIterable {
    /// Store this row (insert or replace).
    case upsert
    /// Remove this row: it was deleted, or the caller may no longer see it.
    case delete
}

/// A row of the feed, typed by its entity.
public enum ChangeRow: Sendable, Hashable {
    case driver(Driver)
    case trip(Trip)
    case order(Order)
    case expense(Expense)
    case notification(DriverNotification)
    case inspection(Inspection)
    case equipment(Equipment)
    case customer(Customer)
    case message(DriverMessage)
}

/// One entry of the change feed: the row as the client should store it
/// (upsert) or the id to drop (delete), with the carrier's sequence number.
public struct Change: Codable, Sendable, Hashable {
    public var seq: Int64
    public var entity: ChangeEntity
    public var id: String
    public var op: ChangeOperation
    public var row: ChangeRow?
    /// The driver's offline change that made this entry, if one did. A
    /// device seeing one of its own tells from it that the server applied
    /// the change, even when the answer to its batch was lost.
    public var mutation: ID<Mutation>?
    /// The row's JSON exactly as received (see `SyncPage.decode`), so a
    /// client can store it without encoding it again. Not part of equality.
    public var rawRow: String?

    public static func == (lhs: Change, rhs: Change) -> Bool {
        lhs.seq == rhs.seq && lhs.entity == rhs.entity && lhs.id == rhs.id && lhs.op == rhs.op && lhs.row == rhs.row
            && lhs.mutation == rhs.mutation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(seq)
        hasher.combine(id)
    }

    public init(seq: Int64, entity: ChangeEntity, id: String, op: ChangeOperation, row: ChangeRow?, mutation: ID<Mutation>? = nil) {
        self.seq = seq
        self.entity = entity
        self.id = id
        self.op = op
        self.row = row
        self.mutation = mutation
    }

    enum CodingKeys: String, CodingKey { case seq, entity, id, op, mutation, row }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        seq = try container.decode(Int64.self, forKey: .seq)
        entity = try container.decode(ChangeEntity.self, forKey: .entity)
        id = try container.decode(String.self, forKey: .id)
        op = try container.decode(ChangeOperation.self, forKey: .op)
        mutation = try container.decodeIfPresent(ID<Mutation>.self, forKey: .mutation)
        guard op == .upsert, container.contains(.row), try !container.decodeNil(forKey: .row) else {
            row = nil
            return
        }
        row = try ChangeRow.decode(entity, from: container, forKey: .row)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seq, forKey: .seq)
        try container.encode(entity, forKey: .entity)
        try container.encode(id, forKey: .id)
        try container.encode(op, forKey: .op)
        try container.encodeIfPresent(mutation, forKey: .mutation)
        try row?.encode(to: &container, forKey: .row)
    }
}

extension ChangeRow {
    /// The row stored under `key`, typed by its entity (feed entries and
    /// mutation results carry rows the same way).
    static func decode<Key: CodingKey>(_ entity: ChangeEntity, from container: KeyedDecodingContainer<Key>,
                                       forKey key: Key) throws -> ChangeRow {
        switch entity {
        case .driver: return .driver(try container.decode(Driver.self, forKey: key))
        case .trip: return .trip(try container.decode(Trip.self, forKey: key))
        case .order: return .order(try container.decode(Order.self, forKey: key))
        case .expense: return .expense(try container.decode(Expense.self, forKey: key))
        case .notification: return .notification(try container.decode(DriverNotification.self, forKey: key))
        case .inspection: return .inspection(try container.decode(Inspection.self, forKey: key))
        case .equipment: return .equipment(try container.decode(Equipment.self, forKey: key))
        case .customer: return .customer(try container.decode(Customer.self, forKey: key))
        case .message: return .message(try container.decode(DriverMessage.self, forKey: key))
        }
    }

    func encode<Key: CodingKey>(to container: inout KeyedEncodingContainer<Key>, forKey key: Key) throws {
        switch self {
        case .driver(let value): try container.encode(value, forKey: key)
        case .trip(let value): try container.encode(value, forKey: key)
        case .order(let value): try container.encode(value, forKey: key)
        case .expense(let value): try container.encode(value, forKey: key)
        case .notification(let value): try container.encode(value, forKey: key)
        case .inspection(let value): try container.encode(value, forKey: key)
        case .equipment(let value): try container.encode(value, forKey: key)
        case .customer(let value): try container.encode(value, forKey: key)
        case .message(let value): try container.encode(value, forKey: key)
        }
    }
}

/// One page of `GET /v1/sync`.
///
/// A client keeps `cursor` (and `snapshot_after` while a snapshot is in
/// progress) and asks again while `has_more` is true:
///
///     since = stored cursor (0 on first launch), after = stored snapshot_after
///     repeat { page = GET /v1/sync?since=…&snapshot_after=…
///              if page.reset { clear the cache }; apply page.changes in order
///              since = page.cursor; after = page.snapshot_after } while page.has_more
///
/// `since=0` starts a snapshot of everything the caller may see. Its pages
/// carry the cursor of the moment it began, so the changes that follow
/// cover whatever happened while it was being read.
public struct SyncPage: Codable, Sendable, Hashable {
    public var changes: [Change]
    public var cursor: Int64
    public var hasMore: Bool
    /// First page of a snapshot: drop the local cache before applying.
    public var reset: Bool
    /// More snapshot pages follow: send this back as `snapshot_after`.
    public var snapshotAfter: String?

    public init(changes: [Change], cursor: Int64, hasMore: Bool, reset: Bool, snapshotAfter: String?) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
        self.reset = reset
        self.snapshotAfter = snapshotAfter
    }

    enum CodingKeys: String, CodingKey {
        case changes, cursor, reset
        case hasMore = "has_more"
        case snapshotAfter = "snapshot_after"
    }
}
