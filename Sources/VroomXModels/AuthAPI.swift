import Foundation

public struct SendCodeRequest: Codable, Sendable, Hashable {
    public var email: String
    public init(email: String) { self.email = email }
}

/// The answer to a code request is the same whether or not the email is
/// known, so the endpoint cannot be used to discover accounts.
public struct SendCodeResponse: Codable, Sendable, Hashable {
    public var message: String
    /// Seconds before another code may be requested for this email.
    public var resendAfter: Int
    public init(message: String, resendAfter: Int) {
        self.message = message
        self.resendAfter = resendAfter
    }

    enum CodingKeys: String, CodingKey {
        case message
        case resendAfter = "resend_after"
    }
}

public struct VerifyCodeRequest: Codable, Sendable, Hashable {
    public var email: String
    public var code: String
    /// The carrier to sign in to, when the email has accounts at several
    /// (the answer `carrier_required` lists them; the code stays good).
    public var carrierID: ID<Tenant>?
    public init(email: String, code: String, carrierID: ID<Tenant>? = nil) {
        self.email = email
        self.code = code
        self.carrierID = carrierID
    }

    enum CodingKeys: String, CodingKey {
        case email, code
        case carrierID = "carrier_id"
    }
}

/// One of the carriers an email has an account at: a person who drives for
/// two carriers (or dispatches for one and drives for another) has an
/// account at each, and chooses at sign-in. Listed only to whoever gave the
/// email's current code.
public struct CarrierChoice: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Tenant>
    public var name: String
    public var role: UserRole
    public init(id: ID<Tenant>, name: String, role: UserRole) {
        self.id = id
        self.name = name
        self.role = role
    }
}

/// A signed-in session: a short-lived access token and a rotating refresh
/// token, with who the user is.
public struct AuthSession: Codable, Sendable, Hashable {
    public var accessToken: String
    public var tokenType: String
    public var expiresAt: Date
    public var refreshToken: String
    public var user: User
    /// The driver record linked to the user, for drivers.
    public var driver: Driver?

    public init(accessToken: String, expiresAt: Date, refreshToken: String, user: User, driver: Driver?) {
        self.accessToken = accessToken
        self.tokenType = "Bearer"
        self.expiresAt = expiresAt
        self.refreshToken = refreshToken
        self.user = user
        self.driver = driver
    }

    enum CodingKeys: String, CodingKey {
        case user, driver
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresAt = "expires_at"
        case refreshToken = "refresh_token"
    }
}

public struct RefreshRequest: Codable, Sendable, Hashable {
    public var refreshToken: String
    public init(refreshToken: String) { self.refreshToken = refreshToken }
    enum CodingKeys: String, CodingKey { case refreshToken = "refresh_token" }
}

public typealias LogoutRequest = RefreshRequest

public struct MeResponse: Codable, Sendable, Hashable {
    public var user: User
    public var tenant: Tenant
    public var driver: Driver?
    public init(user: User, tenant: Tenant, driver: Driver?) {
        self.user = user
        self.tenant = tenant
        self.driver = driver
    }
}

public struct PINRequest: Codable, Sendable, Hashable {
    /// The PIN itself (to verify it, or to set it from a device that is online).
    public var pin: String
    /// Setting a PIN: its scrypt hash as the app made it, instead of the
    /// PIN. A PIN set offline waits for the server only as this hash, never
    /// in plain text on the device.
    public var pinHash: String?

    public init(pin: String) {
        self.pin = pin
        pinHash = nil
    }

    public init(pinHash: String) {
        pin = ""
        self.pinHash = pinHash
    }

    enum CodingKeys: String, CodingKey {
        case pin
        case pinHash = "pin_hash"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        pinHash = try container.decodeIfPresent(String.self, forKey: .pinHash)
        pin = try pinHash == nil ? container.decode(String.self, forKey: .pin) : container.decodeIfPresent(String.self, forKey: .pin) ?? ""
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let pinHash { try container.encode(pinHash, forKey: .pinHash) } else { try container.encode(pin, forKey: .pin) }
    }

    /// Exactly four ASCII digits.
    public static func isValid(_ pin: String) -> Bool {
        pin.utf8.count == 4 && pin.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }
}

public struct PINVerifyResponse: Codable, Sendable, Hashable {
    public var ok: Bool
    public var attemptsLeft: Int
    public init(ok: Bool, attemptsLeft: Int) {
        self.ok = ok
        self.attemptsLeft = attemptsLeft
    }
    enum CodingKeys: String, CodingKey {
        case ok
        case attemptsLeft = "attempts_left"
    }
}

public struct RegisterDeviceTokenRequest: Codable, Sendable, Hashable {
    public var token: String
    public var platform: DevicePlatform
    /// A secret the app made once for this installation and keeps to
    /// itself. A device token already registered to another account moves
    /// only when the same installation registers it (someone else signing
    /// in on that phone), never on the word of another device.
    public var installationID: String?

    public init(token: String, platform: DevicePlatform, installationID: String? = nil) {
        self.token = token
        self.platform = platform
        self.installationID = installationID
    }

    enum CodingKeys: String, CodingKey {
        case token, platform
        case installationID = "installation_id"
    }
}
