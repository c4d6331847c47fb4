import Foundation
import VroomXModels

/// Exactly-once execution of mutations keyed by a client-chosen id.
extension Store {
    /// An answer as stored for replay.
    public struct StoredReply: Sendable, Hashable {
        public var status: Int
        public var body: String
    }

    /// Runs `run` once per (carrier, user, key). The key is claimed, the
    /// mutation applied and its answer stored in one transaction: either all
    /// of it commits or none does, so a crash can never leave a mutation
    /// applied without its key (or the reverse). A key seen before returns
    /// the stored answer (`replayed`); the same key with a different request
    /// is `idempotency_key_reused`. Writes `run` makes through the store join
    /// this transaction.
    ///
    /// A mutation that fails applies nothing and stores nothing, so sending
    /// it again with the same key tries again.
    func idempotent(tenant: ID<Tenant>, user: ID<User>, key: String, requestHash: String,
                    _ run: @Sendable () async throws -> StoredReply) async throws -> (reply: StoredReply, replayed: Bool) {
        try await committing(tenant: tenant) { transaction in
            try await idempotent(in: transaction, user: user, key: key, requestHash: requestHash, run)
        }
    }

    /// The same inside a larger transaction (a batch of offline mutations),
    /// which commits the claim and the answer with everything else.
    func idempotent(in transaction: TenantTransaction, user: ID<User>, key: String, requestHash: String,
                    _ run: @Sendable () async throws -> StoredReply) async throws -> (reply: StoredReply, replayed: Bool) {
        let db = transaction.db
        let tenant = transaction.tenant
        let claimed = try await db.first("""
            INSERT INTO idempotency_keys (tenant_id, user_id, key, request_hash, status, body, created_at)
            VALUES (\(tenant), \(user), \(key), \(requestHash), 0, '', \(transaction.now))
            ON CONFLICT (tenant_id, user_id, key) DO NOTHING
            RETURNING key
            """) != nil
        if !claimed {
            guard let stored = try await db.first("""
                SELECT request_hash, status, body FROM idempotency_keys
                WHERE tenant_id = \(tenant) AND user_id = \(user) AND key = \(key)
                """) else { throw WriteConflict() }
            guard try stored.string("request_hash") == requestHash else {
                throw AppError(422, .idempotencyKeyReused,
                               "This Idempotency-Key was already used for a different request.", field: "Idempotency-Key")
            }
            try await witnessReplay(in: transaction)
            return (StoredReply(status: try stored.int("status"), body: try stored.string("body")), true)
        }
        let reply = try await TenantTransaction.$ambient.withValue(transaction) { try await run() }
        try await db.execute("""
            UPDATE idempotency_keys SET status = \(reply.status), body = \(reply.body)
            WHERE tenant_id = \(tenant) AND user_id = \(user) AND key = \(key)
            """)
        return (reply, false)
    }

    /// Whether a key is stored already (answered, or claimed by a request
    /// under way), read outside any transaction.
    func seenKey(tenant: ID<Tenant>, user: ID<User>, key: String) async throws -> Bool {
        try await read { db in
            try await db.first("""
                SELECT 1 AS seen FROM idempotency_keys WHERE tenant_id = \(tenant) AND user_id = \(user) AND key = \(key)
                """) != nil
        }
    }

    /// A key seen before: the request it was used for, and its answer.
    struct SeenKey: Sendable {
        let requestHash: String
        let reply: StoredReply
    }

    /// The answer to store for a key this transaction claimed.
    struct Answer: Sendable {
        let key: String
        let requestHash: String
        let reply: StoredReply
    }

    /// Claims many keys in one statement inside `transaction` (the
    /// mutations of a batch), and reads those seen before in one more. A
    /// claim holds until the transaction ends: another request with the key
    /// waits for it, then finds the answer stored by `storeAnswers`.
    func claim(_ keys: [(key: String, requestHash: String)], user: ID<User>,
               in transaction: TenantTransaction) async throws -> [String: SeenKey] {
        guard !keys.isEmpty else { return [:] }
        let (db, tenant) = (transaction.db, transaction.tenant)
        let rows = SQL.joined(keys.map { "(\(tenant), \(user), \($0.key), \($0.requestHash), 0, '', \(transaction.now))" },
                              separator: ", ")
        let claimed = Set(try await db.query("""
            INSERT INTO idempotency_keys (tenant_id, user_id, key, request_hash, status, body, created_at) VALUES \(rows)
            ON CONFLICT (tenant_id, user_id, key) DO NOTHING
            RETURNING key
            """).map { try $0.string("key") })
        let others = keys.map(\.key).filter { !claimed.contains($0) }
        guard !others.isEmpty else { return [:] }
        var seen: [String: SeenKey] = [:]
        for row in try await db.query("""
            SELECT key, request_hash, status, body FROM idempotency_keys
            WHERE tenant_id = \(tenant) AND user_id = \(user) AND key IN (\(SQL.list(others)))
            """) {
            seen[try row.string("key")] = SeenKey(requestHash: try row.string("request_hash"),
                                                 reply: StoredReply(status: try row.int("status"), body: try row.string("body")))
        }
        // Neither claimed nor found: the claim met a transaction that rolled back in between. Run it again.
        guard seen.count == others.count else { throw WriteConflict() }
        try await witnessReplay(in: transaction)
        return seen
    }

    /// A replayed answer names a change number as the first answer did: the
    /// carrier's now, at least the one its write reached (the client sending
    /// it again most likely lost the first answer, number and all).
    private func witnessReplay(in transaction: TenantTransaction) async throws {
        guard let witness = CommitWitness.current,
              let row = try await transaction.db.first("SELECT change_seq FROM tenants WHERE id = \(transaction.tenant)") else { return }
        witness.saw(try row.int64("change_seq"))
    }

    /// Stores the answers of keys `transaction` claimed, in one statement.
    func storeAnswers(_ answers: [Answer], user: ID<User>, in transaction: TenantTransaction) async throws {
        guard !answers.isEmpty else { return }
        let rows = SQL.joined(answers.map { answer in
            "(\(transaction.tenant), \(user), \(answer.key), \(answer.requestHash), \(answer.reply.status), \(answer.reply.body), \(transaction.now))"
        }, separator: ", ")
        try await transaction.db.execute("""
            INSERT INTO idempotency_keys (tenant_id, user_id, key, request_hash, status, body, created_at) VALUES \(rows)
            ON CONFLICT (tenant_id, user_id, key) DO UPDATE SET status = excluded.status, body = excluded.body
            """)
    }

    /// Forgets keys older than `age` (kept at least 7 days).
    public func pruneIdempotencyKeys(olderThan age: TimeInterval) async throws {
        let cutoff = now.addingTimeInterval(-age)
        try await database.write { db in try await db.execute("DELETE FROM idempotency_keys WHERE created_at < \(cutoff)") }
    }
}
