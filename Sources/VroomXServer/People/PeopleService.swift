import Foundation
import VroomXModels
import VroomXSecurity

/// Carriers, users and the driver records linked to them: who may be given
/// work, what a driver's details must be, what deactivating one ends. The
/// policy and the transactions; the SQL is `DriverRepository`'s and
/// `AccountRepository`'s.
public struct PeopleService: Sendable {
    let store: Store

    // MARK: Carriers and users

    /// Creates a carrier and its first dispatcher.
    public func createTenant(name: String, dispatcherEmail: String) async throws -> (Tenant, User) {
        // One line of visible text: it heads the invitations mailed to the carrier's drivers.
        let name = try Validate.name(name, FieldLimits.personName)
        let email = try Validate.email(dispatcherEmail)
        let now = store.now
        let tenant = Tenant(id: ID(), name: name, createdAt: now)
        let user = User(id: ID(), tenantID: tenant.id, email: email, role: .dispatcher, hasPIN: false, createdAt: now)
        try await store.writeRows { db in
            try await AccountRepository.insertTenant(tenant, db)
            try await AccountRepository.insertUser(user, db)
        }
        return (tenant, user)
    }

    public func tenant(_ id: ID<Tenant>) async throws -> Tenant {
        guard let tenant = try await store.read({ try await AccountRepository.tenant(id, $0) }) else { throw AppError.notFound("Carrier") }
        return tenant
    }

    public func tenants() async throws -> [Tenant] {
        try await store.read { try await AccountRepository.tenants($0) }
    }

    /// The accounts an email signs in to, one per carrier it was added at,
    /// by carrier name (as a person choosing among them reads them).
    public func accounts(email: String) async throws -> [Account] {
        try await store.read { try await AccountRepository.accounts(email: email, $0) }
    }

    public func user(_ id: ID<User>, tenant: ID<Tenant>) async throws -> User {
        guard let user = try await store.read({ try await AccountRepository.user(id, tenant: tenant, $0) }) else {
            throw AppError.notFound("User")
        }
        return user
    }

    // MARK: Drivers

    /// The driver record of a signed-in user, looked up by auth user id.
    public func driver(userID: ID<User>, tenant: ID<Tenant>) async throws -> Driver? {
        try await store.read { try await DriverRepository.find(userID: userID, tenant: tenant, $0) }
    }

    public func driver(_ id: ID<Driver>, tenant: ID<Tenant>) async throws -> Driver? {
        try await store.read { try await DriverRepository.find(id, tenant: tenant, $0) }
    }

    public func drivers(tenant: ID<Tenant>) async throws -> [Driver] {
        try await store.read { try await DriverRepository.all(tenant: tenant, $0) }
    }

    public func driverDocuments(tenant: ID<Tenant>, page: PageRequest = .init()) async throws -> DocumentPage {
        try await store.read { try await DriverRepository.documents(tenant: tenant, page, $0) }
    }

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

    /// Creates a driver: a user who signs in with their email, and the
    /// driver record linked to it.
    public func createDriver(tenant: ID<Tenant>, _ request: CreateDriverRequest) async throws -> Driver {
        let (email, name, phone) = try Problems.first { Self.validDriver(request, &$0) }
        let now = store.now
        let user = User(id: ID(), tenantID: tenant, email: email, role: .driver, hasPIN: false, createdAt: now)
        let driver = Driver(id: ID(), userID: user.id, name: name, phone: phone, email: email, payType: request.payType,
                            payRate: request.payRate, version: 1, createdAt: now, updatedAt: now)
        try await store.write(tenant: tenant) { tx in
            try await AccountRepository.insertUser(user, tx.db)
            try await DriverRepository.insert(driver, tx)
        }
        return driver
    }

    /// Changes a driver's name, phone or pay terms. Trips already assigned
    /// keep their pay; the driver's app learns the new details from the feed.
    public func updateDriver(_ id: ID<Driver>, _ request: UpdateDriverRequest, tenant: ID<Tenant>) async throws -> Driver {
        try await store.write(tenant: tenant) { tx in
            guard let driver = try await DriverRepository.lock(id, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            if let base = request.baseVersion {
                try Validate.baseVersion(base, current: driver.version)
                guard base == driver.version else {
                    throw AppError(409, .conflict, "Someone else changed \(driver.name) since version \(base); it is now version \(driver.version).",
                                   field: "base_version")
                }
            }
            let edited = try Problems.first { Self.edited(driver, by: request, &$0) }
            guard edited != driver else { return driver }
            return try await save(edited, from: driver, tx)
        }
    }

    /// Deactivates a driver who left: every session ends (the app signs out
    /// at its next request), push tokens go, and sign-in is refused; their
    /// trips, orders, inspections and pay stay on record. Open work must be
    /// handed to someone else first, so no vehicle is left with nobody.
    public func deactivate(_ id: ID<Driver>, tenant: ID<Tenant>) async throws -> Driver {
        try await store.write(tenant: tenant) { tx in
            guard let driver = try await DriverRepository.lock(id, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            // Deactivating again ends any session that slipped in anyway.
            let (trips, orders) = try await DriverRepository.openWork(of: id, tenant: tenant, tx.db)
            guard trips == 0, orders == 0 else {
                throw AppError.conflict("\(driver.name) still has open work (trips planned or under way: \(trips); orders not delivered: \(orders)). Give it to another driver first.")
            }
            let ended = try await AccountRepository.revokeSessions(of: driver.userID, tenant: tenant, reason: "driver_deactivated",
                                                                   now: tx.now, tx.db)
            try await store.announceEnded(ended, tx.db)
            tx.endedSessions += ended
            try await AccountRepository.deleteTokens(of: driver.userID, tenant: tenant, tx.db)
            guard driver.deactivatedAt == nil else { return driver }
            // Their truck and trailer go back to the yard.
            for unitID in try await EquipmentRepository.ids(assignedTo: id, tenant: tenant, tx.db).sorted() {
                if let unit = try await EquipmentRepository.find(unitID, .dispatch(tenant: tenant), locking: true, tx.db) {
                    var released = unit
                    released.driverID = nil
                    try await store.fleet.save(released, from: unit, detailsChanged: false, statusChanged: false, tx)
                }
            }
            var changed = driver
            changed.deactivatedAt = tx.now
            return try await save(changed, from: driver, tx)
        }
    }

    /// Lets a deactivated driver sign in and take work again.
    public func reactivate(_ id: ID<Driver>, tenant: ID<Tenant>) async throws -> Driver {
        try await store.write(tenant: tenant) { tx in
            guard let driver = try await DriverRepository.lock(id, tenant: tenant, tx.db) else { throw AppError.notFound("Driver") }
            guard driver.deactivatedAt != nil else { return driver }
            var changed = driver
            changed.deactivatedAt = nil
            return try await save(changed, from: driver, tx)
        }
    }

    private func save(_ driver: Driver, from previous: Driver, _ tx: TenantTransaction) async throws -> Driver {
        var saved = driver
        saved.version = previous.version + 1
        saved.updatedAt = tx.now
        try await DriverRepository.update(saved, from: previous, tx)
        return saved
    }

    /// A driver that work or messages can be given to: in this carrier and
    /// not deactivated. Their row stays locked until the transaction ends.
    func assignableDriver(_ id: ID<Driver>, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Driver {
        guard let driver = try await DriverRepository.lock(id, tenant: tenant, db) else {
            throw AppError(422, .validationFailed, "No such driver in this carrier.", field: "driver_id")
        }
        guard driver.deactivatedAt == nil else {
            throw AppError(422, .validationFailed, "\(driver.name) is deactivated; reactivate them first.", field: "driver_id")
        }
        return driver
    }

    /// Notes that a driver used the API now. Written at most once a minute
    /// per driver, so a busy phone does not add a write to every request.
    func noteSeen(_ driver: ID<Driver>, tenant: ID<Tenant>, at now: Date) async throws {
        try await store.writeRows { try await DriverRepository.noteSeen(driver, tenant: tenant, at: now, $0) }
    }

    // MARK: Device tokens

    /// Registers a device token for the signed-in session. It lives as long
    /// as that session: signing out (or the session ending) removes it. A
    /// token another account holds moves here only when the same app
    /// installation registers it (another driver signed in on that phone);
    /// otherwise it is refused and stays with its holder.
    public func registerDeviceToken(_ request: RegisterDeviceTokenRequest, user: ID<User>, tenant: ID<Tenant>,
                                    session: ID<Session>? = nil) async throws -> DeviceToken {
        let token = try Validate.deviceToken(request.token)
        let installation = try request.installationID.map { SecureToken.sha256Hex(try Validate.installationID($0)) }
        let now = store.now
        try await store.writeRows { db in
            // The session is held while the token is stored, so a deactivation
            // (which revokes sessions, then deletes tokens) cannot miss it.
            if let session, try await !AccountRepository.sessionIsOpen(session, now: now, db) { throw AppError.sessionEnded }
            if let holder = try await AccountRepository.tokenHolder(token, db) {
                let sameHolder = holder.tenant == tenant.rawValue && holder.user == user.rawValue
                let sameInstallation = installation != nil && holder.installation == installation
                guard sameHolder || sameInstallation else {
                    throw AppError(409, .conflict,
                                   "This device token is registered to another account; it is released when that account signs out on the device.",
                                   field: "token")
                }
                try await AccountRepository.moveToken(token, to: user, tenant: tenant, session: session, installation: installation,
                                                      platform: request.platform, now: now, db)
            } else {
                try await AccountRepository.insertToken(token, user: user, tenant: tenant, session: session, installation: installation,
                                                        platform: request.platform, now: now, db)
            }
        }
        return DeviceToken(token: token, platform: request.platform, lastActiveAt: now)
    }

    /// Removes a token of this user. Returns false if they had no such token.
    public func removeDeviceToken(_ token: String, user: ID<User>, tenant: ID<Tenant>) async throws -> Bool {
        try await store.writeRows { try await AccountRepository.deleteToken(token, user: user, tenant: tenant, $0) }
    }

    public func deviceTokens(user: ID<User>, tenant: ID<Tenant>) async throws -> [DeviceToken] {
        try await store.read { try await AccountRepository.tokens(of: user, tenant: tenant, $0) }
    }
}

extension Store {
    /// Carriers, users, drivers and their devices.
    public var people: PeopleService { PeopleService(store: self) }
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
