import Foundation
import VroomXModels

/// Carriers, users, their sessions' ends and device tokens in the database:
/// the SQL and the row mapping, nothing else.
enum AccountRepository {
    static func insertTenant(_ tenant: Tenant, _ db: any SQLExecutor) async throws {
        try await db.execute("INSERT INTO tenants (id, name, created_at) VALUES (\(tenant.id), \(tenant.name), \(tenant.createdAt))")
    }

    static func tenant(_ id: ID<Tenant>, _ db: any SQLExecutor) async throws -> Tenant? {
        try await db.first("SELECT \(Tenant.columns) FROM tenants WHERE id = \(id)").map(Tenant.init(row:))
    }

    static func tenants(_ db: any SQLExecutor) async throws -> [Tenant] {
        try await db.query("SELECT \(Tenant.columns) FROM tenants ORDER BY created_at").map(Tenant.init(row:))
    }

    /// Writes a user; an email the carrier already has is `already_exists`.
    static func insertUser(_ user: User, _ db: any SQLExecutor) async throws {
        do {
            try await db.execute("""
                INSERT INTO users (id, tenant_id, email, role, created_at)
                VALUES (\(user.id), \(user.tenantID), \(user.email), \(user.role), \(user.createdAt))
                """)
        } catch DatabaseConstraintError.unique {
            // Unique within the carrier only: another carrier's accounts are never looked at.
            throw AppError(409, .alreadyExists, "Someone at this carrier already signs in with this email.", field: "email")
        }
    }

    static func user(_ id: ID<User>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> User? {
        try await db.first("SELECT \(User.columns) FROM users WHERE tenant_id = \(tenant) AND id = \(id)").map(User.init(row:))
    }

    /// The accounts of an email, one per carrier, by carrier name.
    static func accounts(email: String, _ db: any SQLExecutor) async throws -> [Account] {
        try await db.query("""
            SELECT u.id, u.tenant_id, u.email, u.role, u.pin_hash, u.created_at, t.name AS carrier_name,
                   d.deactivated_at IS NOT NULL AS deactivated
            FROM users u JOIN tenants t ON t.id = u.tenant_id
            LEFT JOIN drivers d ON d.tenant_id = u.tenant_id AND d.user_id = u.id
            WHERE u.email = \(email)
            ORDER BY t.name, u.tenant_id
            """).map { row in
            Account(user: try User(row: row), carrierName: try row.string("carrier_name"), deactivated: try row.bool("deactivated"))
        }
    }

    /// Ends every open session of a user; the ids of those ended.
    static func revokeSessions(of user: ID<User>, tenant: ID<Tenant>, reason: String, now: Date,
                               _ db: any SQLExecutor) async throws -> [ID<Session>] {
        try await db.query("""
            UPDATE sessions SET revoked_at = \(now), revoked_reason = \(reason)
            WHERE tenant_id = \(tenant) AND user_id = \(user) AND revoked_at IS NULL
            RETURNING id
            """).map { try $0.id("id") }
    }

    /// Whether a session is still open at `now`; on PostgreSQL its row stays locked until the transaction ends.
    static func sessionIsOpen(_ session: ID<Session>, now: Date, _ db: any SQLExecutor) async throws -> Bool {
        guard let row = try await db.first("SELECT revoked_at, expires_at FROM sessions WHERE id = \(session)\(Store.lockingRows(db))") else {
            return false
        }
        return try row.optionalDate("revoked_at") == nil && row.date("expires_at") > now
    }

    // MARK: Device tokens

    /// Who holds a device token: their carrier, user and app installation.
    static func tokenHolder(_ token: String, _ db: any SQLExecutor) async throws -> (tenant: String, user: String, installation: String?)? {
        guard let row = try await db.first("SELECT tenant_id, user_id, installation_hash FROM device_tokens WHERE token = \(token)") else {
            return nil
        }
        return (try row.string("tenant_id"), try row.string("user_id"), try row.optionalString("installation_hash"))
    }

    static func moveToken(_ token: String, to user: ID<User>, tenant: ID<Tenant>, session: ID<Session>?, installation: String?,
                          platform: DevicePlatform, now: Date, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            UPDATE device_tokens SET tenant_id = \(tenant), user_id = \(user), session_id = \(session), platform = \(platform),
                last_active_at = \(now), installation_hash = COALESCE(\(installation), installation_hash)
            WHERE token = \(token)
            """)
    }

    static func insertToken(_ token: String, user: ID<User>, tenant: ID<Tenant>, session: ID<Session>?, installation: String?,
                            platform: DevicePlatform, now: Date, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            INSERT INTO device_tokens (token, tenant_id, user_id, session_id, installation_hash, platform, created_at, last_active_at)
            VALUES (\(token), \(tenant), \(user), \(session), \(installation), \(platform), \(now), \(now))
            """)
    }

    /// Removes one token of a user; false when they had no such token.
    static func deleteToken(_ token: String, user: ID<User>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Bool {
        !(try await db.query("""
            DELETE FROM device_tokens WHERE token = \(token) AND tenant_id = \(tenant) AND user_id = \(user) RETURNING token
            """).isEmpty)
    }

    /// Removes every token of a user, and the pushes queued for them.
    static func deleteTokens(of user: ID<User>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws {
        try await db.execute("""
            DELETE FROM push_queue WHERE tenant_id = \(tenant)
                AND device_token IN (SELECT token FROM device_tokens WHERE tenant_id = \(tenant) AND user_id = \(user))
            """)
        try await db.execute("DELETE FROM device_tokens WHERE tenant_id = \(tenant) AND user_id = \(user)")
    }

    static func tokens(of user: ID<User>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> [DeviceToken] {
        try await db.query("""
            SELECT token, platform, last_active_at FROM device_tokens
            WHERE tenant_id = \(tenant) AND user_id = \(user) ORDER BY created_at
            """).map {
            DeviceToken(token: try $0.string("token"), platform: try $0.enumeration("platform"), lastActiveAt: try $0.date("last_active_at"))
        }
    }
}
