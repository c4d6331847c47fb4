import Foundation
import VroomXModels
import VroomXSecurity

/// Carriers, users and the driver records linked to them.
extension Store {
    /// Creates a carrier and its first dispatcher.
    public func createTenant(name: String, dispatcherEmail: String) async throws -> (Tenant, User) {
        // One line of visible text: it heads the invitations mailed to the carrier's drivers.
        let name = try Validate.name(name, FieldLimits.personName)
        let email = try Validate.email(dispatcherEmail)
        let tenant = Tenant(id: ID(), name: name, createdAt: now)
        let user = User(id: ID(), tenantID: tenant.id, email: email, role: .dispatcher, hasPIN: false, createdAt: now)
        try await writeRows { db in
            try await db.execute("INSERT INTO tenants (id, name, created_at) VALUES (\(tenant.id), \(tenant.name), \(tenant.createdAt))")
            try await insertUser(user, db)
        }
        return (tenant, user)
    }

    func insertUser(_ user: User, _ db: any SQLExecutor) async throws {
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

    /// Creates a driver: a user who signs in with their email, and the driver
    /// record linked to it.
    /// A new driver's details, checked: each refusal kept in `problems`.
    static func validDriver(_ request: CreateDriverRequest, _ problems: inout Problems) -> (email: String, name: String, phone: String) {
        let email = problems.check(request.email) { try Validate.email(request.email) }
        let (name, phone) = validDetails(name: request.name, phone: request.phone ?? "", payType: request.payType,
                                         payRate: request.payRate, &problems)
        return (email, name, phone)
    }

    /// A driver's name, phone and pay terms, checked: each refusal kept in `problems`.
    static func validDetails(name: String, phone: String, payType: PayType, payRate: Int,
                             _ problems: inout Problems) -> (name: String, phone: String) {
        // One line of visible text each: a name goes into the invitation mailed to the driver.
        let name = problems.check(name) { try Validate.name(name, FieldLimits.personName) }
        let phone = problems.check(phone) {
            try phone.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? "" : Validate.name(phone, FieldLimits.phone)
        }
        problems.check(()) { try Validate.payRate(payRate, type: payType) }
        return (name, phone)
    }

    /// `driver` with a dispatcher's edit applied, each refusal kept in `problems`.
    static func edited(_ driver: Driver, by request: UpdateDriverRequest, _ problems: inout Problems) -> Driver {
        var edited = driver
        edited.payType = request.payType ?? driver.payType
        edited.payRate = request.payRate ?? driver.payRate
        (edited.name, edited.phone) = validDetails(name: request.name ?? driver.name, phone: request.phone ?? driver.phone,
                                                   payType: edited.payType, payRate: edited.payRate, &problems)
        return edited
    }

    /// Changes a driver's name, phone or pay terms. Trips already assigned
    /// keep their pay; the driver's app learns the new details from the feed.
    public func updateDriver(_ id: ID<Driver>, _ request: UpdateDriverRequest, tenant: ID<Tenant>) async throws -> Driver {
        try await write(tenant: tenant) { tx in
            guard let driver = try await lockDriver(id, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            if let base = request.baseVersion {
                guard (1...driver.version).contains(base) else {
                    throw AppError.validation("base_version", "base_version is the version the edit started from: 1 to \(driver.version).")
                }
                guard base == driver.version else {
                    throw AppError(409, .conflict, "Someone else changed \(driver.name) since version \(base); it is now version \(driver.version).",
                                   field: "base_version")
                }
            }
            let edited = try Problems.first { Self.edited(driver, by: request, &$0) }
            guard edited != driver else { return driver }
            return try await saveDriver(edited, tx)
        }
    }

    public func createDriver(tenant: ID<Tenant>, _ request: CreateDriverRequest) async throws -> Driver {
        let (email, name, phone) = try Problems.first { Self.validDriver(request, &$0) }
        let now = self.now
        let user = User(id: ID(), tenantID: tenant, email: email, role: .driver, hasPIN: false, createdAt: now)
        let driver = Driver(id: ID(), userID: user.id, name: name, phone: phone, email: email, payType: request.payType,
                            payRate: request.payRate, version: 1, createdAt: now, updatedAt: now)
        let doc = try WireDocument.encode(driver)
        try await write(tenant: tenant) { tx in
            try await insertUser(user, tx.db)
            try await tx.execute("""
                INSERT INTO drivers (id, tenant_id, user_id, name, phone, pay_type, pay_rate, version, created_at, updated_at, doc)
                VALUES (\(driver.id), \(tenant), \(user.id), \(driver.name), \(driver.phone), \(driver.payType),
                        \(driver.payRate), 1, \(now), \(now), \(doc))
                """)
            tx.recordUpsert(.driver, id: driver.id.rawValue, document: doc, visibleTo: driver.id)
        }
        return driver
    }

    public func tenant(_ id: ID<Tenant>) async throws -> Tenant {
        guard let row = try await read({ try await $0.first("SELECT \(Tenant.columns) FROM tenants WHERE id = \(id)") }) else {
            throw AppError.notFound("Carrier")
        }
        return try Tenant(row: row)
    }

    /// The accounts an email signs in to, one per carrier it was added at,
    /// by carrier name (as a person choosing among them reads them).
    public func accounts(email: String) async throws -> [Account] {
        try await read { db in
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
    }

    public func user(_ id: ID<User>, tenant: ID<Tenant>) async throws -> User {
        guard let user = try await read({ db in
            try await db.first("SELECT \(User.columns) FROM users WHERE tenant_id = \(tenant) AND id = \(id)").map(User.init(row:))
        }) else { throw AppError.notFound("User") }
        return user
    }

    /// The driver record of a signed-in user, looked up by auth user id.
    public func driver(userID: ID<User>, tenant: ID<Tenant>) async throws -> Driver? {
        try await read { db in
            try await db.first("""
                SELECT \(Driver.columns) FROM \(Driver.from) WHERE d.tenant_id = \(tenant) AND d.user_id = \(userID)
                """).map(Driver.init(row:))
        }
    }

    public func driver(_ id: ID<Driver>, tenant: ID<Tenant>) async throws -> Driver? {
        try await read { db in try await fetchDriver(id, tenant: tenant, db) }
    }

    func fetchDriver(_ id: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Driver? {
        try await db.first("SELECT \(Driver.columns) FROM \(Driver.from) WHERE d.tenant_id = \(tenant) AND d.id = \(id)")
            .map(Driver.init(row:))
    }

    /// Reads a driver and, on PostgreSQL, holds their row until the
    /// transaction ends, so deactivating them and giving them work (or
    /// signing them in) happen one after the other, never both on the same
    /// stale read. (SQLite runs one writer at a time already.)
    func lockDriver(_ id: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Driver? {
        try await db.first("""
            SELECT \(Driver.columns) FROM \(Driver.from) WHERE d.tenant_id = \(tenant) AND d.id = \(id)\(Self.lockingRows(db, of: "d"))
            """).map(Driver.init(row:))
    }

    public func driverDocuments(tenant: ID<Tenant>, page: PageRequest = .init()) async throws -> DocumentPage {
        try await read { db in
            try await documentPage(from: "drivers d", where: "d.tenant_id = \(tenant)", order: Driver.order, page, document: "d.doc", db)
        }
    }

    public func drivers(tenant: ID<Tenant>) async throws -> [Driver] {
        try await read { db in
            try await db.query("SELECT \(Driver.columns) FROM \(Driver.from) WHERE d.tenant_id = \(tenant) ORDER BY \(Driver.order.sql)")
                .map(Driver.init(row:))
        }
    }

    public func tenants() async throws -> [Tenant] {
        try await read { db in try await db.query("SELECT \(Tenant.columns) FROM tenants ORDER BY created_at").map(Tenant.init(row:)) }
    }
}

/// Drivers who leave the carrier, and when each was last seen.
extension Store {
    /// Deactivates a driver who left: every session ends (the app signs out
    /// at its next request), push tokens go, and sign-in is refused; their
    /// trips, orders, inspections and pay stay on record. Open work must be
    /// handed to someone else first, so no vehicle is left with nobody.
    public func deactivateDriver(_ id: ID<Driver>, tenant: ID<Tenant>) async throws -> Driver {
        try await write(tenant: tenant) { tx in
            guard let driver = try await lockDriver(id, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            // Deactivating again ends any session that slipped in anyway.
            let open = try await tx.first("""
                SELECT (SELECT COUNT(*) FROM trips WHERE tenant_id = \(tenant) AND driver_id = \(id)
                            AND status IN ('planned', 'in_progress')) AS trips,
                       (SELECT COUNT(*) FROM orders WHERE tenant_id = \(tenant) AND driver_id = \(id)
                            AND status IN ('assigned', 'picked_up')) AS orders
                """)
            let (trips, orders) = (try open?.int("trips") ?? 0, try open?.int("orders") ?? 0)
            guard trips == 0, orders == 0 else {
                throw AppError.conflict("\(driver.name) still has open work (trips planned or under way: \(trips); orders not delivered: \(orders)). Give it to another driver first.")
            }
            let ended: [ID<Session>] = try await tx.query("""
                UPDATE sessions SET revoked_at = \(tx.now), revoked_reason = 'driver_deactivated'
                WHERE tenant_id = \(tenant) AND user_id = \(driver.userID) AND revoked_at IS NULL
                RETURNING id
                """).map { try $0.id("id") }
            try await announceEnded(ended, tx.db)
            tx.endedSessions += ended
            try await tx.execute("""
                DELETE FROM push_queue WHERE tenant_id = \(tenant)
                    AND device_token IN (SELECT token FROM device_tokens WHERE tenant_id = \(tenant) AND user_id = \(driver.userID))
                """)
            try await tx.execute("DELETE FROM device_tokens WHERE tenant_id = \(tenant) AND user_id = \(driver.userID)")
            guard driver.deactivatedAt == nil else { return driver }
            // Their truck and trailer go back to the yard.
            for row in try await tx.query("SELECT id FROM equipment WHERE tenant_id = \(tenant) AND driver_id = \(id) ORDER BY id") {
                if let unit = try await EquipmentRepository.find(try row.id("id"), .dispatch(tenant: tenant), locking: true, tx.db) {
                    var released = unit
                    released.driverID = nil
                    try await fleet.save(released, from: unit, detailsChanged: false, statusChanged: false, tx)
                }
            }
            var changed = driver
            changed.deactivatedAt = tx.now
            return try await saveDriver(changed, tx)
        }
    }

    /// Lets a deactivated driver sign in and take work again.
    public func reactivateDriver(_ id: ID<Driver>, tenant: ID<Tenant>) async throws -> Driver {
        try await write(tenant: tenant) { tx in
            guard let driver = try await lockDriver(id, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            guard driver.deactivatedAt != nil else { return driver }
            var changed = driver
            changed.deactivatedAt = nil
            return try await saveDriver(changed, tx)
        }
    }

    private func saveDriver(_ driver: Driver, _ tx: TenantTransaction) async throws -> Driver {
        var saved = driver
        saved.version += 1
        saved.updatedAt = tx.now
        let doc = try WireDocument.encode(saved)
        guard try await tx.first("""
            UPDATE drivers SET name = \(saved.name), phone = \(saved.phone), pay_type = \(saved.payType), pay_rate = \(saved.payRate),
                deactivated_at = \(saved.deactivatedAt), version = \(saved.version), updated_at = \(saved.updatedAt), doc = \(doc)
            WHERE tenant_id = \(tx.tenant) AND id = \(driver.id) AND version = \(driver.version)
            RETURNING id
            """) != nil else { throw WriteConflict() }
        tx.recordUpsert(.driver, id: saved.id.rawValue, document: doc, visibleTo: saved.id)
        return saved
    }

    /// A driver that work or messages can be given to: in this carrier and
    /// not deactivated. Their row stays locked until the transaction ends.
    func assignableDriver(_ id: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Driver {
        guard let driver = try await lockDriver(id, tenant: tenant, db) else {
            throw AppError(422, .validationFailed, "No such driver in this carrier.", field: "driver_id")
        }
        guard driver.deactivatedAt == nil else {
            throw AppError(422, .validationFailed, "\(driver.name) is deactivated; reactivate them first.", field: "driver_id")
        }
        return driver
    }

    /// Notes that a driver used the API now. Written at most once a minute
    /// per driver, so a busy phone does not add a write to every request.
    func noteDriverSeen(_ driver: ID<Driver>, tenant: ID<Tenant>, at now: Date) async throws {
        try await writeRows { db in
            try await db.execute("""
                UPDATE drivers SET last_seen_at = \(now)
                WHERE tenant_id = \(tenant) AND id = \(driver) AND (last_seen_at IS NULL OR last_seen_at < \(now.addingTimeInterval(-60)))
                """)
        }
    }
}

/// Device tokens for push notifications.
extension Store {
    /// Registers a device token for the signed-in session. It lives as long
    /// as that session: signing out (or the session ending) removes it. A
    /// token another account holds moves here only when the same app
    /// installation registers it (another driver signed in on that phone);
    /// otherwise it is refused and stays with its holder.
    public func registerDeviceToken(_ request: RegisterDeviceTokenRequest, user: ID<User>, tenant: ID<Tenant>,
                                    session: ID<Session>? = nil) async throws -> DeviceToken {
        let token = try Validate.deviceToken(request.token)
        let installation = try request.installationID.map { SecureToken.sha256Hex(try Validate.installationID($0)) }
        let now = self.now
        try await writeRows { db in
            // The session is held while the token is stored, so a deactivation
            // (which revokes sessions, then deletes tokens) cannot miss it.
            if let session {
                let row = try await db.first("""
                    SELECT revoked_at, expires_at FROM sessions WHERE id = \(session)\(Self.lockingRows(db))
                    """)
                guard let row, try row.optionalDate("revoked_at") == nil, try row.date("expires_at") > now else { throw AppError.sessionEnded }
            }
            if let holder = try await db.first("SELECT tenant_id, user_id, installation_hash FROM device_tokens WHERE token = \(token)") {
                let sameHolder = try holder.string("tenant_id") == tenant.rawValue && holder.string("user_id") == user.rawValue
                let sameInstallation = try installation != nil && holder.optionalString("installation_hash") == installation
                guard sameHolder || sameInstallation else {
                    throw AppError(409, .conflict,
                                   "This device token is registered to another account; it is released when that account signs out on the device.",
                                   field: "token")
                }
                try await db.execute("""
                    UPDATE device_tokens SET tenant_id = \(tenant), user_id = \(user), session_id = \(session), platform = \(request.platform),
                        last_active_at = \(now), installation_hash = COALESCE(\(installation), installation_hash)
                    WHERE token = \(token)
                    """)
            } else {
                try await db.execute("""
                    INSERT INTO device_tokens (token, tenant_id, user_id, session_id, installation_hash, platform, created_at, last_active_at)
                    VALUES (\(token), \(tenant), \(user), \(session), \(installation), \(request.platform), \(now), \(now))
                    """)
            }
        }
        return DeviceToken(token: token, platform: request.platform, lastActiveAt: now)
    }

    /// Removes a token of this user. Returns false if they had no such token.
    public func removeDeviceToken(_ token: String, user: ID<User>, tenant: ID<Tenant>) async throws -> Bool {
        try await writeRows { db in
            !(try await db.query("""
                DELETE FROM device_tokens WHERE token = \(token) AND tenant_id = \(tenant) AND user_id = \(user) RETURNING token
                """).isEmpty)
        }
    }

    public func deviceTokens(user: ID<User>, tenant: ID<Tenant>) async throws -> [DeviceToken] {
        try await read { db in
            try await db.query("""
                SELECT token, platform, last_active_at FROM device_tokens
                WHERE tenant_id = \(tenant) AND user_id = \(user) ORDER BY created_at
                """).map {
                DeviceToken(token: try $0.string("token"), platform: try $0.enumeration("platform"),
                            lastActiveAt: try $0.date("last_active_at"))
            }
        }
    }
}

/// One carrier's account of an email: a person who works for two carriers
/// has two, chosen at sign-in.
public struct Account: Sendable, Hashable {
    public var user: User
    public var carrierName: String
    /// A driver account the carrier deactivated.
    public var deactivated: Bool

    public var choice: CarrierChoice { CarrierChoice(id: user.tenantID, name: carrierName, role: user.role) }
}
