import Foundation
import GRDB
import VroomXModels

/// The signed-in account as the device remembers it (no secrets here: those
/// are in the secure store).
public struct Account: Sendable, Hashable {
    public var userID: ID<User>
    public var tenantID: ID<Tenant>
    public var email: String
    public var driver: Driver?
    public var pinSet: Bool
    /// The PIN was set while offline and still has to reach the server.
    public var serverPINPending: Bool
    /// The push token the server knows for this account (nil: none yet).
    public var registeredPushToken: String?
}

/// What the device knows about itself, for routing before anything loads.
public struct DeviceState: Sendable, Hashable {
    public var onboarded: Bool
    public var usedBefore: Bool
    public var lastEmail: String?
    /// This device's APNs token, as hex (it belongs to the app install, not to a driver).
    public var pushToken: String?
    /// The first-run screen the driver reached (resumed at the next launch).
    public var onboardingStep: OnboardingStep? = nil
    /// A sign-in code asked for and not used yet.
    public var pendingCode: PendingCode? = nil
    /// Whether the driver answered the Face ID offer after setting a PIN.
    public var biometricsOffered: Bool = false

    public struct PendingCode: Sendable, Hashable {
        public let email: String
        public let sentAt: Date
    }
}

extension AppDatabase {
    public func account() throws -> Account? { try reader.read(Self.account) }

    /// The signed-in driver's id, without decoding the whole record.
    static func driverID(_ db: Database) throws -> ID<Driver>? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT driver_id FROM account")).flatMap(ID.init)
    }

    static func account(_ db: Database) throws -> Account? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM account")) else { return nil }
        return Account(userID: ID(row["user_id"] as String)!, tenantID: ID(row["tenant_id"] as String)!, email: row["email"],
                       driver: try (row["driver_doc"] as String?).map { try CacheJSON.decode(Driver.self, $0) },
                       pinSet: row["pin_set"], serverPINPending: row["server_pin_pending"], registeredPushToken: row["registered_push_token"])
    }

    public func deviceState() throws -> DeviceState { try reader.read(Self.deviceState) }

    /// The server clock's offset as last learnt (see `ServerClock`).
    public func savedClockSkew() throws -> ServerClock.Saved? {
        try reader.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT clock_skew, clock_boot FROM device"),
                  let skew: Double = row["clock_skew"], let boot: Double = row["clock_boot"] else { return nil }
            return ServerClock.Saved(skew: skew, boot: boot)
        }
    }

    public func saveClockSkew(_ saved: ServerClock.Saved) throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE device SET clock_skew = ?, clock_boot = ?", arguments: [saved.skew, saved.boot])
        }
    }

    static func deviceState(_ db: Database) throws -> DeviceState {
        let row = try Row.fetchOne(db, sql: "SELECT * FROM device")!
        let pendingEmail: String? = row["pending_code_email"]
        let pendingAt: Double? = row["pending_code_at"]
        return DeviceState(onboarded: row["onboarded"], usedBefore: row["used_before"], lastEmail: row["last_email"],
                           pushToken: row["push_token"], onboardingStep: (row["onboarding_step"] as String?).flatMap(OnboardingStep.init),
                           pendingCode: pendingEmail.flatMap { email in pendingAt.map { .init(email: email, sentAt: Date(timeIntervalSince1970: $0)) } },
                           biometricsOffered: row["biometrics_offered"])
    }

    func setOnboardingStep(_ step: OnboardingStep) throws {
        try writer.write { db in try db.execute(sql: "UPDATE device SET onboarding_step = ?", arguments: [step.rawValue]) }
    }

    /// Remembers a code was asked for (nil: used or given up).
    func setPendingCode(_ email: String?, at date: Date) throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE device SET pending_code_email = ?, pending_code_at = ?",
                           arguments: [email, email == nil ? nil : date.timeIntervalSince1970])
        }
    }

    func markBiometricsOffered() throws {
        try writer.write { db in try db.execute(sql: "UPDATE device SET biometrics_offered = 1") }
    }

    /// Remembers who signed in. A different driver than the cache belongs
    /// to starts from an empty cache; the previous driver's unsynced work
    /// stays on the device, set aside for them.
    public func saveSignIn(user: User, driver: Driver?, now: Date) throws {
        try writer.write { db in
            let previous = try Self.account(db)
            let cacheOwner = try String.fetchOne(db, sql: "SELECT cache_owner FROM device")
            if cacheOwner != user.id.rawValue {
                try Self.clearRows(db)
                try db.execute(sql: "UPDATE sync_state SET cursor = 0, snapshot_after = NULL, last_synced_at = NULL")
                try db.execute(sql: "UPDATE device SET cache_owner = ?", arguments: [user.id.rawValue])
            }
            try db.execute(sql: "INSERT OR REPLACE INTO owners (user_id, email) VALUES (?, ?)", arguments: [user.id.rawValue, user.email])
            try db.execute(sql: "DELETE FROM account")
            try db.execute(sql: """
                INSERT INTO account (id, user_id, driver_id, tenant_id, email, driver_doc, pin_set, server_pin_pending, registered_push_token,
                                     signed_in_at)
                VALUES (1, ?, ?, ?, ?, ?, ?, 0, ?, ?)
                """, arguments: [user.id.rawValue, driver?.id.rawValue, user.tenantID.rawValue, user.email, try driver.map { try CacheJSON.encode($0) },
                                 previous?.userID == user.id ? previous?.pinSet ?? false : false,
                                 previous?.userID == user.id ? previous?.registeredPushToken : nil, now.timeIntervalSince1970])
            try db.execute(sql: "UPDATE device SET used_before = 1, onboarded = 1, last_email = ?", arguments: [user.email])
        }
    }

    public func setPINState(set: Bool, serverPending: Bool) throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE account SET pin_set = ?, server_pin_pending = ?", arguments: [set, serverPending])
        }
    }

    /// Remembers the APNs token the system gave this device.
    public func setPushToken(_ token: String?) throws {
        try writer.write { db in try db.execute(sql: "UPDATE device SET push_token = ?", arguments: [token]) }
    }

    /// The device's push token when the server does not know it for this
    /// account yet, with the one it knows (to replace).
    func pushTokenToRegister() throws -> (token: String, replacing: String?)? {
        try reader.read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT d.push_token, a.registered_push_token FROM device d, account a
                WHERE d.push_token IS NOT NULL AND a.registered_push_token IS NOT d.push_token
                """) else { return nil }
            return (row[0], row[1])
        }
    }

    func setRegisteredPushToken(_ token: String?) throws {
        try writer.write { db in try db.execute(sql: "UPDATE account SET registered_push_token = ?", arguments: [token]) }
    }

    public func markOnboarded() throws {
        try writer.write { db in try db.execute(sql: "UPDATE device SET onboarded = 1") }
    }

    /// Whether positions are shared while a trip is under way (on unless the driver paused it).
    public func locationSharing() throws -> Bool { try reader.read(Self.locationSharing) }

    static func locationSharing(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT location_sharing FROM device") ?? true
    }

    public func setLocationSharing(_ on: Bool) throws {
        try writer.write { db in try db.execute(sql: "UPDATE device SET location_sharing = ?", arguments: [on]) }
    }

    /// Logout: forget the account and everything cached for it. The
    /// driver's outbox and queued files go too — callers check nothing is
    /// unsynced (or the driver chose to lose it). Other drivers' set-aside
    /// work stays.
    public func clearForLogout() throws {
        try writer.write { db in
            guard let owner = try String.fetchOne(db, sql: "SELECT user_id FROM account") else { return }
            for path in try String.fetchAll(db, sql: "SELECT path FROM upload_queue WHERE owner = ?", arguments: [owner]) {
                try? FileManager.default.removeItem(atPath: path)
            }
            try db.execute(sql: "DELETE FROM upload_queue WHERE owner = ?", arguments: [owner])
            try db.execute(sql: "DELETE FROM outbox WHERE owner = ?", arguments: [owner])
            try db.execute(sql: "DELETE FROM account")
            try db.execute(sql: "UPDATE device SET cache_owner = NULL")
            try Self.clearRows(db)
            try db.execute(sql: "UPDATE sync_state SET cursor = 0, snapshot_after = NULL, last_synced_at = NULL")
        }
    }

    /// Whose queued work is sent and counted: the signed-in driver's, or
    /// while nobody is signed in (the session ended), the driver whose cache
    /// this is — their work stays theirs until someone else signs in.
    static func ownerID(_ db: Database) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT COALESCE((SELECT user_id FROM account), (SELECT cache_owner FROM device))"))
    }

    /// Unsynced work of other drivers kept on this device, by their email.
    public func setAsideWork() throws -> [(owner: String, email: String, changes: Int, files: Int)] {
        try reader.read { db in
            let owner = try Self.ownerID(db)
            return try Row.fetchAll(db, sql: """
                SELECT o.user_id, o.email,
                       (SELECT COUNT(*) FROM outbox x WHERE x.owner = o.user_id AND (x.status = 'pending' OR x.failure = 'transient')) AS changes,
                       (SELECT COUNT(*) FROM upload_queue u WHERE u.owner = o.user_id AND u.status IN ('pending', 'uploading')
                            AND (u.inspection_id IS NULL OR u.inspection_id NOT IN (SELECT inspection_id FROM evidence))) AS files
                FROM owners o WHERE o.user_id IS NOT ? ORDER BY o.email
                """, arguments: [owner]).compactMap { row in
                let (changes, files): (Int, Int) = (row["changes"], row["files"])
                return changes + files > 0 ? (owner: row["user_id"], email: row["email"], changes: changes, files: files) : nil
            }
        }
    }

    /// Sign-in ended without logout (the server rejected the session, or too
    /// many wrong PINs): the account goes, but cached rows and unsynced work
    /// stay for when the same driver signs in again.
    public func endSession() throws {
        try writer.write { db in try db.execute(sql: "DELETE FROM account") }
    }
}
