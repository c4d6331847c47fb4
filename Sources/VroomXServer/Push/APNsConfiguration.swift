import Foundation

/// How to reach Apple's push service with token authentication.
public struct APNsConfiguration: Sendable, CustomStringConvertible {
    /// The .p8 signing key downloaded from the Apple Developer account (PEM).
    public var privateKeyPEM: String
    public var keyID: String
    public var teamID: String
    /// The app's bundle id.
    public var topic: String
    /// `https://api.push.apple.com` (production) or
    /// `https://api.sandbox.push.apple.com` (development builds).
    public var baseURL: String
    /// Extra trusted root (PEM) for the TLS connection — only for testing
    /// against a local server that speaks the APNs protocol.
    public var extraRootCertificatePEM: String?
    /// How often the push queue is looked at besides each commit of this
    /// instance: for other instances' pushes and retries that came due.
    public var queueCheckInterval: Duration = .seconds(1)

    public static let production = "https://api.push.apple.com"
    public static let sandbox = "https://api.sandbox.push.apple.com"

    public init(privateKeyPEM: String, keyID: String, teamID: String, topic: String, baseURL: String = production,
                extraRootCertificatePEM: String? = nil) {
        self.privateKeyPEM = privateKeyPEM
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.baseURL = baseURL
        self.extraRootCertificatePEM = extraRootCertificatePEM
    }

    public var description: String { "APNs(topic: \(topic), key: \(keyID), team: \(teamID), \(baseURL))" }

    /// `VROOMX_APNS_KEY_FILE`, `VROOMX_APNS_KEY_ID`, `VROOMX_APNS_TEAM_ID`,
    /// `VROOMX_APNS_TOPIC`, `VROOMX_APNS_ENVIRONMENT` (production|sandbox),
    /// optionally `VROOMX_APNS_URL` and `VROOMX_APNS_CA_FILE`. Nil when no key
    /// file is given; an error when it is given without the rest.
    static func fromEnvironment(_ environment: [String: String]) throws -> APNsConfiguration? {
        guard let keyFile = environment["VROOMX_APNS_KEY_FILE"], !keyFile.isEmpty else { return nil }
        guard let key = try? String(contentsOfFile: keyFile, encoding: .utf8), key.contains("PRIVATE KEY") else {
            throw ConfigurationError("VROOMX_APNS_KEY_FILE must be the .p8 key file from Apple (PEM).")
        }
        guard let keyID = environment["VROOMX_APNS_KEY_ID"], !keyID.isEmpty,
              let teamID = environment["VROOMX_APNS_TEAM_ID"], !teamID.isEmpty,
              let topic = environment["VROOMX_APNS_TOPIC"], !topic.isEmpty else {
            throw ConfigurationError("With VROOMX_APNS_KEY_FILE, set VROOMX_APNS_KEY_ID, VROOMX_APNS_TEAM_ID and VROOMX_APNS_TOPIC.")
        }
        var baseURL: String
        switch environment["VROOMX_APNS_ENVIRONMENT"] ?? "production" {
        case "production": baseURL = production
        case "sandbox", "development": baseURL = sandbox
        default: throw ConfigurationError("VROOMX_APNS_ENVIRONMENT must be production or sandbox.")
        }
        if let url = environment["VROOMX_APNS_URL"], !url.isEmpty { baseURL = url }
        let ca = try environment["VROOMX_APNS_CA_FILE"].map { try String(contentsOfFile: $0, encoding: .utf8) }
        return APNsConfiguration(privateKeyPEM: key, keyID: keyID, teamID: teamID, topic: topic, baseURL: baseURL,
                                 extraRootCertificatePEM: ca)
    }
}
