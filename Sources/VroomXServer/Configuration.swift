import Foundation
import Logging
import VroomXModels

/// Everything `vroomx serve` can be told, from flags and the environment.
public struct ServerConfiguration: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public var host = "127.0.0.1"
    public var port = 8080
    /// `postgres://…` for PostgreSQL; nil for the SQLite file in the data directory.
    public var databaseURL: String?
    public var dataDirectory = URL(fileURLWithPath: "vroomx-data")
    /// Signing secret for access tokens; nil to use (or create) the key file.
    public var jwtSecret: String?
    /// `smtp://user:pass@host:587` (STARTTLS when offered) or `smtps://…:465`;
    /// nil for the development mailbox that prints codes to the log.
    public var smtpURL: String?
    public var mailFrom = "VroomX <no-reply@vroomx.local>"
    public var trustForwardedFor = false
    public var auth = AuthPolicy()
    public var logLevel: Logger.Level = .info
    /// Seed the demo carrier on start (once).
    public var demo = false
    /// The time source; tests move it by hand.
    public var clock = Clock.system
    /// Overrides the mailer (tests pass a `DevelopmentMailbox` they can read).
    public var mailer: (any Mailer)?

    public init() {}

    /// Safe to log: secrets and credentials are left out.
    public var description: String {
        "ServerConfiguration(host: \(host), port: \(port), database: \(usesPostgres ? "postgres" : "sqlite"), "
            + "dataDirectory: \(dataDirectory.path), smtp: \(smtpURL == nil ? "development mailbox" : "configured"))"
    }

    public var debugDescription: String { description }

    public var sqlitePath: String { dataDirectory.appendingPathComponent("vroomx.sqlite").path }
    public var keyFile: URL { dataDirectory.appendingPathComponent("jwt-secret.key") }
    public var usesPostgres: Bool { databaseURL != nil }
    /// Connections per server instance in the PostgreSQL pool.
    public var databasePoolSize = 20
    /// How long the change feed keeps history; older cursors re-snapshot.
    public var changeRetention: TimeInterval = 30 * 86_400
    /// Changes a realtime socket may have queued before it is dropped as too slow.
    public var realtimeInboxLimit = 5000
    /// Apple Push Notification service; nil when not configured (notifications
    /// are still recorded and reach the app through the feed).
    public var apns: APNsConfiguration?
    /// Inspection media: a folder (the embedded default) holding finished
    /// files and uploads in progress. With several instances, share it.
    public var mediaDirectory: URL?
    public var resolvedMediaDirectory: URL { mediaDirectory ?? dataDirectory.appendingPathComponent("media") }
    /// Largest file accepted per kind of media, in bytes.
    public var maxPhotoBytes: Int64 = 25 << 20
    public var maxVideoBytes: Int64 = 500 << 20
    public var maxSignatureBytes: Int64 = 2 << 20
    /// How long an unfinished upload may be resumed before it is cleaned up.
    public var uploadLifetime: TimeInterval = 24 * 3600

    public func maxBytes(_ kind: MediaKind) -> Int64 {
        switch kind {
        case .photo: return maxPhotoBytes
        case .video: return maxVideoBytes
        case .signature: return maxSignatureBytes
        }
    }

    /// Heartbeat period of realtime sockets (also how often a socket notices an expired token).
    public var realtimeHeartbeat: Duration = .seconds(25)
    /// Deadlines and caps per connection (slow or oversized requests, many connections).
    public var connectionLimits = ConnectionLimits()
    /// Caps on realtime sockets per user, carrier and instance.
    public var realtimeLimits = RealtimeLimits()

    /// Reads `VROOMX_*` variables over the defaults.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        if let host = environment["VROOMX_HOST"], !host.isEmpty { configuration.host = host }
        if let port = environment["VROOMX_PORT"], !port.isEmpty {
            guard let value = Int(port), (0...65535).contains(value) else { throw ConfigurationError("VROOMX_PORT must be a port number.") }
            configuration.port = value
        }
        if let url = environment["VROOMX_DATABASE_URL"], !url.isEmpty { configuration.databaseURL = url }
        if let directory = environment["VROOMX_DATA_DIR"], !directory.isEmpty {
            configuration.dataDirectory = URL(fileURLWithPath: directory)
        }
        if let secret = environment["VROOMX_JWT_SECRET"], !secret.isEmpty { configuration.jwtSecret = secret }
        if let smtp = environment["VROOMX_SMTP_URL"], !smtp.isEmpty { configuration.smtpURL = smtp }
        if let size = environment["VROOMX_DATABASE_POOL_SIZE"], !size.isEmpty {
            guard let value = Int(size), (1...500).contains(value) else { throw ConfigurationError("VROOMX_DATABASE_POOL_SIZE must be 1 to 500.") }
            configuration.databasePoolSize = value
        }
        if let days = environment["VROOMX_CHANGE_RETENTION_DAYS"], !days.isEmpty {
            guard let value = Int(days), (1...3650).contains(value) else {
                throw ConfigurationError("VROOMX_CHANGE_RETENTION_DAYS must be 1 to 3650.")
            }
            configuration.changeRetention = TimeInterval(value) * 86_400
        }
        configuration.apns = try APNsConfiguration.fromEnvironment(environment)
        if let directory = environment["VROOMX_MEDIA_DIR"], !directory.isEmpty { configuration.mediaDirectory = URL(fileURLWithPath: directory) }
        for (name, keyPath) in [("VROOMX_MAX_PHOTO_MB", \ServerConfiguration.maxPhotoBytes), ("VROOMX_MAX_VIDEO_MB", \.maxVideoBytes)] {
            if let text = environment[name], !text.isEmpty {
                guard let megabytes = Int64(text), (1...100_000).contains(megabytes) else { throw ConfigurationError("\(name) must be 1 to 100000.") }
                configuration[keyPath: keyPath] = megabytes << 20
            }
        }
        if let from = environment["VROOMX_MAIL_FROM"], !from.isEmpty { configuration.mailFrom = from }
        if let trust = environment["VROOMX_TRUST_PROXY"] { configuration.trustForwardedFor = ["1", "true", "yes"].contains(trust.lowercased()) }
        if let level = environment["VROOMX_LOG_LEVEL"], !level.isEmpty {
            guard let value = Logger.Level(rawValue: level) else {
                throw ConfigurationError("VROOMX_LOG_LEVEL must be trace, debug, info, notice, warning, error or critical.")
            }
            configuration.logLevel = value
        }
        try readLimits(environment, into: &configuration)
        return configuration
    }
}
