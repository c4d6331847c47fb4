import Foundation
import NIOConcurrencyHelpers
import VroomXModels

/// The database gateway the services share: transactions (`write`, which
/// appends a carrier's change log and signals the commit; `read`,
/// `writeRows`), and the stores that are not one aggregate's (the feed,
/// idempotency keys, number claims, sign-in credentials, the push queue,
/// the console's own reads). Each aggregate's SQL is its repository's, its
/// policy its service's, reached as `store.trips`, `store.orders`, ….
/// Every query on carrier data is scoped by carrier id.
public struct Store: Sendable {
    public let database: any SQLDatabase
    public let clock: Clock
    /// Told the tenant and last sequence number after each commit that
    /// appended changes, so realtime subscribers can be woken.
    let onCommit: @Sendable (ID<Tenant>, Int64) -> Void
    /// Queue a push for each new driver notification (APNs is configured).
    let pushEnabled: Bool
    /// How long breadcrumbs are kept: older fixes are not taken in.
    let locationRetention: TimeInterval
    /// Sessions ended on this instance or announced by another.
    let endedSessions = EndedSessions()

    public init(database: any SQLDatabase, clock: Clock, pushEnabled: Bool = false,
                locationRetention: TimeInterval = TimeInterval(LocationRules.defaultRetentionDays) * 86_400,
                onCommit: @escaping @Sendable (ID<Tenant>, Int64) -> Void = { _, _ in }) {
        self.locationRetention = locationRetention
        self.database = database
        self.clock = clock
        self.pushEnabled = pushEnabled
        self.onCommit = onCommit
    }

    /// The current time at the precision stored (milliseconds), so a model
    /// returned from a write equals the same row read back.
    var now: Date { WireTime.date(milliseconds: WireTime.milliseconds(clock.now)) }

    /// A write to one tenant's data. Rows the body records as changed are
    /// appended to the tenant's change log in the same transaction, just
    /// before it commits. When an optimistic update finds that another
    /// transaction changed the row first, the whole body runs again on the
    /// fresh data (at most three times).
    func write<T: Sendable>(tenant: ID<Tenant>, _ body: (TenantTransaction) async throws -> T) async throws -> T {
        // Inside an idempotent request, join its transaction.
        if let ambient = TenantTransaction.ambient {
            guard ambient.tenant == tenant else { throw AppError(500, .internalError, "A request wrote to two carriers.") }
            return try await body(ambient)
        }
        return try await committing(tenant: tenant, body)
    }

    /// The one commit path: runs `body` in a transaction, appends the
    /// changes it recorded to the carrier's log, commits, then signals the
    /// new log position. A write conflict runs the body again (three tries).
    func committing<T: Sendable>(tenant: ID<Tenant>, _ body: (TenantTransaction) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                let now = self.now
                let (value, lastSequence, ended) = try await database.write { db in
                    let transaction = TenantTransaction(db: db, tenant: tenant, now: now)
                    let value = try await body(transaction)
                    return (value, try await transaction.appendChanges(), transaction.endedSessions)
                }
                endedSessions.insert(ended)
                if let lastSequence {
                    onCommit(tenant, lastSequence)
                    CommitWitness.current?.saw(lastSequence)
                }
                return value
            } catch is WriteConflict where attempt < 3 {
                attempt += 1
            }
        }
    }

    /// A read of one tenant's data. Inside a write (an idempotent request,
    /// a batch of mutations) it reads in that transaction: what the write
    /// already did counts, and no second connection is taken.
    func read<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        if let ambient = TenantTransaction.ambient { return try await body(ambient.db) }
        return try await database.read(body)
    }

    /// `read`, all of it from one snapshot on PostgreSQL too (a read there
    /// is otherwise a statement's snapshot each): for reads that put kept
    /// counts and the rows they count together (`DayCounts`).
    func readSnapshot<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        if let ambient = TenantTransaction.ambient { return try await body(ambient.db) }
        return try await database.snapshot(body)
    }

    /// A write of rows the change log does not carry (sessions, device
    /// tokens, counters). Inside an idempotent request it joins the
    /// request's transaction, so the key and the write commit or fail
    /// together (a transaction of its own would wait forever for SQLite's
    /// one writer, which the request holds).
    func writeRows<T: Sendable>(_ body: (any SQLExecutor) async throws -> T) async throws -> T {
        if let ambient = TenantTransaction.ambient { return try await body(ambient.db) }
        return try await database.write(body)
    }

    /// `writeRows` for a write that ends sessions (`body` returns them with
    /// its value): once it commits they are refused on every instance.
    func writeEndingSessions<T: Sendable>(_ body: (any SQLExecutor) async throws -> (T, [ID<Session>])) async throws -> T {
        if let ambient = TenantTransaction.ambient {
            let (value, ended) = try await body(ambient.db)
            try await announceEnded(ended, ambient.db)
            ambient.endedSessions += ended
            return value
        }
        let (value, ended) = try await database.write { db in
            let result = try await body(db)
            try await announceEnded(result.1, db)
            return result
        }
        endedSessions.insert(ended)
        return value
    }

    /// Notes sessions the transaction of `db` ends: on PostgreSQL every
    /// instance is told when it commits. The caller adds them to
    /// `endedSessions` once committed (`TenantTransaction.endedSessions` in a
    /// carrier's transaction, which the commit path adds).
    func announceEnded(_ sessions: [ID<Session>], _ db: any SQLExecutor) async throws {
        guard db.dialect == .postgres, !sessions.isEmpty else { return }
        let payloads = sessions.map { EndedSessions.notificationPrefix + $0.rawValue }
        for payload in payloads {
            try await db.execute("SELECT pg_notify(\(PostgresChangeListener.channel), \(payload))")
        }
    }

    /// ` FOR UPDATE [OF table]` on PostgreSQL: the rows read stay locked
    /// until commit. Nothing on SQLite, whose writers never overlap.
    static func lockingRows(_ db: any SQLExecutor, of table: String? = nil) -> SQL {
        guard db.dialect == .postgres else { return "" }
        return SQL(unsafeRaw: " FOR UPDATE" + (table.map { " OF \($0)" } ?? ""))
    }
}

/// One change to record in the feed: which row, and who may see it.
struct RecordedChange: Sendable {
    let entity: ChangeEntity
    let entityID: String
    let operation: ChangeOperation
    /// The driver who sees this change; nil when no driver does.
    let driverID: ID<Driver>?
    /// Whether the carrier's dispatchers see it.
    let dispatchVisible: Bool
    /// The row as a client should store it (JSON); nil for deletes.
    let payload: String?
    /// The driver's offline change (`POST /v1/mutations`) that made it, if one did.
    let mutationID: String?
}

/// The executor of a tenant write, plus the changes it made.
final class TenantTransaction: @unchecked Sendable {
    /// The transaction of the idempotent request being served, if any.
    @TaskLocal static var ambient: TenantTransaction?
    /// The driver's offline change being applied, if any: the changes it
    /// records name it, so the driver's device learns from the feed that it
    /// was applied (see `Change.mutation`).
    @TaskLocal static var mutation: ID<Mutation>?

    let db: any SQLExecutor
    let tenant: ID<Tenant>
    let now: Date
    /// Who the writes are made for, when a signed-in user is acting.
    let actingUser: ID<User>? = ActingUser.current
    private var changes: [RecordedChange] = []
    /// The number claims this transaction holds (`Store.claim`), so a batch takes each once.
    var numberClaims: Set<NumberedWork> = []
    /// Sessions this transaction ended (`Store.ended`): refused at once when it commits.
    var endedSessions: [ID<Session>] = []

    init(db: any SQLExecutor, tenant: ID<Tenant>, now: Date) {
        self.db = db
        self.tenant = tenant
        self.now = now
    }

    var dialect: SQLDialect { db.dialect }

    func query(_ sql: SQL) async throws -> [SQLRow] { try await db.query(sql) }
    func execute(_ sql: SQL) async throws { try await db.execute(sql) }
    func first(_ sql: SQL) async throws -> SQLRow? { try await db.first(sql) }

    /// A write that answers `error` when it would break a unique constraint.
    func execute(_ sql: SQL, unique error: AppError) async throws {
        _ = try await first(sql, unique: error)
    }

    func first(_ sql: SQL, unique error: AppError) async throws -> SQLRow? {
        do {
            return try await db.first(sql)
        } catch DatabaseConstraintError.unique {
            throw error
        }
    }

    /// Records that a row now has this content (its stored document),
    /// visible to `driver` (its owner, if any) and to dispatch.
    func recordUpsert(_ entity: ChangeEntity, id: String, document: String, visibleTo driver: ID<Driver>?) {
        record(entity, id, .upsert, driver: driver, dispatchVisible: true, payload: document)
    }

    /// Records that a row is gone for everyone who could see it.
    func recordDelete(_ entity: ChangeEntity, id: String, visibleTo driver: ID<Driver>?) {
        record(entity, id, .delete, driver: driver, dispatchVisible: true, payload: nil)
    }

    /// Records that a driver may no longer see a row (it was reassigned):
    /// their device drops it; dispatch still has it.
    func recordRevoke(_ entity: ChangeEntity, id: String, from driver: ID<Driver>) {
        record(entity, id, .delete, driver: driver, dispatchVisible: false, payload: nil)
    }

    /// Records a row as it stands for its driver alone: what an applied
    /// mutation that changed nothing leaves in the feed, so the driver's
    /// device learns it was applied (`Change.mutation`) like any other.
    func recordUnchanged(_ row: ChangeRow, for driver: ID<Driver>) throws {
        record(row.entity, row.id, .upsert, driver: driver, dispatchVisible: false, payload: try row.storedDocument())
    }

    /// Every change names the mutation being applied, if one is.
    private func record(_ entity: ChangeEntity, _ id: String, _ operation: ChangeOperation, driver: ID<Driver>?,
                        dispatchVisible: Bool, payload: String?) {
        changes.append(RecordedChange(entity: entity, entityID: id, operation: operation, driverID: driver,
                                      dispatchVisible: dispatchVisible, payload: payload, mutationID: Self.mutation?.rawValue))
    }

    /// How many changes this transaction has recorded so far.
    var recordedCount: Int { changes.count }

    /// Runs `body` as one step of the transaction (a savepoint): when it
    /// throws, what it wrote and the changes it recorded are undone and the
    /// transaction can go on. When the undo fails, the transaction is lost
    /// as a whole and `DatabaseUnavailable` says so.
    func step<T>(_ body: () async throws -> T) async throws -> T {
        let recorded = changes.count
        try await db.execute("SAVEPOINT step")
        do {
            let value = try await body()
            try await db.execute("RELEASE SAVEPOINT step")
            return value
        } catch {
            do {
                try await db.execute("ROLLBACK TO SAVEPOINT step")
                try await db.execute("RELEASE SAVEPOINT step")
            } catch let undo {
                // The database ended the whole transaction itself (SQLite does on an interrupt at the
                // deadline or a full disk): nothing of it may go on, whatever the step's own error was.
                throw error is DatabaseUnavailable ? error : DatabaseUnavailable(.connectionLost, "transaction lost: \(undo)")
            }
            changes.removeSubrange(recorded...)
            throw error
        }
    }

    /// Appends the recorded changes to the change log and returns the last
    /// sequence number, or nil when nothing changed.
    ///
    /// The sequence comes from the tenant row, incremented here at the end
    /// of the transaction. That UPDATE holds the tenant row's lock until
    /// commit, so a concurrent writer of the same tenant takes its numbers
    /// only after this transaction has committed (or rolled back, returning
    /// the numbers). Numbers are therefore handed out in commit order with
    /// no gaps, and a reader can never see N+1 before N. Writers of
    /// different tenants do not wait for each other.
    ///
    /// On PostgreSQL one statement takes the numbers, logs the changes and
    /// queues the notification, so the lock every writer of the carrier
    /// waits for is held for one round trip and the commit.
    func appendChanges() async throws -> Int64? {
        guard !changes.isEmpty else { return nil }
        let count = Int64(changes.count)
        let first = changes.prefix(Self.changesPerStatement)
        let last: Int64
        if db.dialect == .postgres {
            guard let row = try await db.first("""
                WITH counter AS (
                    UPDATE tenants SET change_seq = change_seq + \(count) WHERE id = \(tenant) RETURNING change_seq
                ), logged AS (
                    INSERT INTO change_log (tenant_id, seq, entity, entity_id, op, driver_id, dispatch_visible, payload,
                                            mutation_id, committed_at)
                    SELECT \(tenant), counter.change_seq - \(count) + v.ord, v.entity, v.entity_id, v.op, v.driver_id,
                           v.dispatch_visible, v.payload, v.mutation_id, \(now)
                    FROM counter, (VALUES \(values(first, firstOrdinal: 1, withCarrierAndTime: false)))
                        AS v (ord, entity, entity_id, op, driver_id, dispatch_visible, payload, mutation_id)
                )
                SELECT change_seq, pg_notify('vroomx_changes', \(tenant.rawValue) || ':' || change_seq) FROM counter
                """) else { throw AppError.notFound("Carrier") }
            // Delivered to every listening server instance when (and only if) this transaction commits.
            last = try row.int64("change_seq")
        } else {
            guard let row = try await db.first("""
                UPDATE tenants SET change_seq = change_seq + \(count) WHERE id = \(tenant) RETURNING change_seq
                """) else { throw AppError.notFound("Carrier") }
            last = try row.int64("change_seq")
            try await insertChanges(first, firstSequence: last - count + 1)
        }
        var next = first.endIndex
        while next < changes.endIndex {
            let rows = changes[next..<min(next + Self.changesPerStatement, changes.endIndex)]
            try await insertChanges(rows, firstSequence: last - count + 1 + Int64(next))
            next = rows.endIndex
        }
        changes.removeAll()
        return last
    }

    /// Rows per INSERT: well under both databases' limits on parameters.
    static let changesPerStatement = 500

    private func insertChanges(_ rows: ArraySlice<RecordedChange>, firstSequence: Int64) async throws {
        try await db.execute("""
            INSERT INTO change_log (seq, entity, entity_id, op, driver_id, dispatch_visible, payload, mutation_id, tenant_id, committed_at)
            VALUES \(values(rows, firstOrdinal: firstSequence, withCarrierAndTime: true))
            """)
    }

    /// `(n, entity, entity_id, op, driver_id, dispatch_visible, payload, mutation_id[, tenant_id, committed_at])`
    /// for each change, n counting up from `firstOrdinal`.
    private func values(_ slice: ArraySlice<RecordedChange>, firstOrdinal: Int64, withCarrierAndTime: Bool) -> SQL {
        let tail: SQL = withCarrierAndTime ? ", \(tenant), \(now)" : ""
        return SQL.joined(slice.enumerated().map { offset, change in
            """
            (\(firstOrdinal + Int64(offset)), \(change.entity.rawValue), \(change.entityID),
             \(change.operation.rawValue), \(change.driverID), \(change.dispatchVisible), \(change.payload), \(change.mutationID)\(tail))
            """
        }, separator: ", ")
    }
}

/// The JSON a client stores for a row: what the API answers, what the
/// change feed carries, and what the row's `doc` column keeps.
enum WireDocument {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        try WireJSON.string(value)
    }

    /// A stored document, read as the wire decoder reads it (`StoredJSON`).
    static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        try StoredJSON.decode(type, from: text)
    }

    /// A list stored as a JSON array. Most of some are empty (an order's problems, an expense's receipts), and
    /// even the quick reader builds a tape to read `[]`: a board page reads one for each of its 50 orders.
    static func list<T: Decodable>(of type: T.Type, from text: String) throws -> [T] {
        text == "[]" ? [] : try StoredJSON.decode([T].self, from: text)
    }
}

extension ChangeRow {
    /// The row's document as stored and carried by the feed.
    func storedDocument() throws -> String {
        switch self {
        case .driver(let value): try WireDocument.encode(value)
        case .trip(let value): try WireDocument.encode(value)
        case .order(let value): try WireDocument.encode(value)
        case .expense(let value): try WireDocument.encode(value)
        case .notification(let value): try WireDocument.encode(value)
        case .inspection(let value): try WireDocument.encode(value)
        case .equipment(let value): try WireDocument.encode(value)
        case .customer(let value): try WireDocument.encode(value)
        case .message(let value): try WireDocument.encode(value)
        }
    }
}

/// An optimistic update found the row changed by another transaction.
struct WriteConflict: Error {}

/// Carries "this carrier's log reached N" from the store, which is built
/// first, to those who need the store (the realtime hub, the push worker).
final class CommitSignal: Sendable {
    private let handlers = NIOLockedValueBox<[@Sendable (ID<Tenant>, Int64) -> Void]>([])

    func connect(_ handler: @escaping @Sendable (ID<Tenant>, Int64) -> Void) {
        handlers.withLockedValue { $0.append(handler) }
    }

    func fire(_ tenant: ID<Tenant>, _ sequence: Int64) {
        for handler in handlers.withLockedValue({ $0 }) { handler(tenant, sequence) }
    }
}
