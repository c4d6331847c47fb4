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
            try await claimAndRun(transaction, user: user, key: key, requestHash: requestHash, run)
        }
    }

    /// The same, as one step of a larger transaction (a batch of offline
    /// mutations): a failing mutation undoes its own writes and claim only,
    /// and the transaction goes on with the next one.
    func idempotent(in transaction: TenantTransaction, user: ID<User>, key: String, requestHash: String,
                    _ run: @Sendable () async throws -> StoredReply) async throws -> (reply: StoredReply, replayed: Bool) {
        try await transaction.step {
            try await claimAndRun(transaction, user: user, key: key, requestHash: requestHash, run)
        }
    }

    private func claimAndRun(_ transaction: TenantTransaction, user: ID<User>, key: String, requestHash: String,
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
            return (StoredReply(status: try stored.int("status"), body: try stored.string("body")), true)
        }
        let reply = try await TenantTransaction.$ambient.withValue(transaction) { try await run() }
        try await db.execute("""
            UPDATE idempotency_keys SET status = \(reply.status), body = \(reply.body)
            WHERE tenant_id = \(tenant) AND user_id = \(user) AND key = \(key)
            """)
        return (reply, false)
    }

    /// Forgets keys older than `age` (kept at least 7 days).
    public func pruneIdempotencyKeys(olderThan age: TimeInterval) async throws {
        let cutoff = now.addingTimeInterval(-age)
        try await database.write { db in try await db.execute("DELETE FROM idempotency_keys WHERE created_at < \(cutoff)") }
    }
}
