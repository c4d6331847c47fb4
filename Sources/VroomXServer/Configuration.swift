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
    /// Where drivers get the carrier's driver app (App Store or TestFlight
    /// link), and the address clients reach this server at: both go into
    /// the invitation a new driver is mailed, when set.
    public var driverAppURL: String?
    public var publicURL: String?
    /// Proxies of our own in front that append to `X-Forwarded-For` (0:
    /// none, the peer is the client).
    public var trustedProxyHops = 0
    /// Whether a proxy of our own stands in front.
    public var trustForwardedFor: Bool { trustedProxyHops > 0 }
    public var auth = AuthPolicy()
    public var logLevel: Logger.Level = .info
    /// Seed the demo carrier on start (once).
    public var demo = false
    /// The time source; tests move it by hand.
    public var clock = Clock.system
    /// Overrides the mailer (tests pass a `DevelopmentMailbox` they can read).
    public var mailer: (any Mailer)?
    /// Without SMTP, print sign-in codes to the log. Only for development
    /// (`--demo` or `VROOMX_DEV_MAILBOX=true`): anyone who reads the log
    /// could sign in as anyone, so a server without either refuses to start.
    public var developmentMailbox = false

    /// Refuses a setup that would be unsafe to serve with.
    public func checkServable() throws {
        guard smtpURL != nil || mailer != nil || developmentMailbox else {
            throw ConfigurationError("""
                No mail server is configured, so sign-in codes could not reach anyone. Set VROOMX_SMTP_URL \
                (smtp://user:password@host:587), or for development VROOMX_DEV_MAILBOX=true (or --demo) to print codes to the log.
                """)
        }
    }

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
    /// The deadline of every database call, waiting for a connection or a
    /// lock included: past it the request answers 503 and can be retried.
    /// Far above any healthy call (milliseconds), short enough that a client
    /// hears back before it gives up itself.
    public var databaseTimeout: Duration = .seconds(10)
    /// How often an unreachable PostgreSQL is tried again while requests fail
    /// fast; it is also how long a wait for a pooled connection may last
    /// before the database is checked.
    public var databaseProbeInterval: Duration = .milliseconds(500)
    /// Whether PostgreSQL statements are prepared once per connection
    /// (`VROOMX_DATABASE_PREPARED_STATEMENTS=false` behind PgBouncer in
    /// transaction mode, which moves a client between sessions).
    public var databasePreparedStatements = true
    /// How much of the SQLite file each connection reads through a memory
    /// map (`VROOMX_SQLITE_MMAP_MB`, 256 by default; 0 reads by copying pages):
    /// see `SQLiteDatabase.init` for why.
    public var sqliteMemoryMapBytes: Int64 = 256 << 20
    /// Memory for drivers' first pages answered without the database
    /// (`VROOMX_READ_CACHE_MB`, 64 by default; 0 reads every page from the
    /// database): see `ReadCache`.
    public var readCacheBytes = 64 << 20
    /// The oldest driver app the API serves (`VROOMX_MIN_APP_VERSION`): an
    /// app that says it is older is answered 426 `app_update_required`.
    /// None by default.
    public var minimumAppVersion: AppVersion?
    /// Readiness fails below this much free space where the data and media live.
    public var minFreeDiskBytes: Int64 = 1024 << 20
    /// How long the change feed keeps history; older cursors re-snapshot.
    public var changeRetention: TimeInterval = 30 * 86_400
    /// A Nominatim search server that finds stops' coordinates from their
    /// addresses (`VROOMX_GEOCODER_URL`); off by default.
    public var geocoderURL: String?
    /// Tiles behind the console's map (`VROOMX_MAP_TILE_URL`); none by default.
    public var mapTiles: MapTiles?
    /// `GET /metrics` answers only a request bearing this (off when nil).
    public var metricsToken: String?
    /// Whether each request is a span for the process's tracer (set by
    /// `vroomx serve` once it has bootstrapped one: `OTEL_EXPORTER_OTLP_ENDPOINT`).
    public var tracesRequests = false
    /// How long drivers' breadcrumbs are kept (their last position stays).
    public var locationRetention: TimeInterval = TimeInterval(LocationRules.defaultRetentionDays) * 86_400
    /// Changes a realtime socket may have queued before it is dropped as too slow.
    public var realtimeInboxLimit = 5000
    /// Apple Push Notification service; nil when not configured (notifications
    /// are still recorded and reach the app through the feed).
    public var apns: APNsConfiguration?
    /// Inspection media: a folder (the embedded default) holding finished
    /// files and uploads in progress. With several instances, share it.
    public var mediaDirectory: URL?
    public var resolvedMediaDirectory: URL { mediaDirectory ?? dataDirectory.appendingPathComponent("media") }
    /// Inspection media in an S3-compatible bucket instead of the folder
    /// (what several instances share); nil for the folder.
    public var s3: S3Configuration?
    /// Size caps, lifetime and quotas of media uploads.
    public var uploads = UploadLimits()
    /// Backups the server takes itself (`VROOMX_BACKUP_TO`); none when nil.
    public var scheduledBackups: ScheduledBackups.Plan?

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
        if let text = environment["VROOMX_DATABASE_TIMEOUT_SECONDS"], !text.isEmpty {
            guard let seconds = Double(text), seconds.isFinite, (0.1...600).contains(seconds) else {
                throw ConfigurationError("VROOMX_DATABASE_TIMEOUT_SECONDS must be a number of seconds from 0.1 to 600.")
            }
            configuration.databaseTimeout = .milliseconds(Int64((seconds * 1000).rounded()))
        }
        if let text = environment["VROOMX_DATABASE_PREPARED_STATEMENTS"]?.lowercased(), !text.isEmpty {
            switch text {
            case "true", "yes", "1": configuration.databasePreparedStatements = true
            case "false", "no", "0": configuration.databasePreparedStatements = false
            default: throw ConfigurationError("VROOMX_DATABASE_PREPARED_STATEMENTS must be true or false.")
            }
        }
        if let text = environment["VROOMX_MIN_APP_VERSION"], !text.isEmpty {
            guard let version = AppVersion(text) else {
                throw ConfigurationError("VROOMX_MIN_APP_VERSION must be a version such as 1.4 or 1.4.2.")
            }
            configuration.minimumAppVersion = version
        }
        if let text = environment["VROOMX_SQLITE_MMAP_MB"], !text.isEmpty {
            guard let megabytes = Int64(text), (0...65_536).contains(megabytes) else {
                throw ConfigurationError("VROOMX_SQLITE_MMAP_MB must be a whole number of megabytes from 0 to 65536.")
            }
            configuration.sqliteMemoryMapBytes = megabytes << 20
        }
        if let text = environment["VROOMX_READ_CACHE_MB"], !text.isEmpty {
            guard let megabytes = Int(text), (0...65_536).contains(megabytes) else {
                throw ConfigurationError("VROOMX_READ_CACHE_MB must be a whole number of megabytes from 0 to 65536.")
            }
            configuration.readCacheBytes = megabytes << 20
        }
        if let text = environment["VROOMX_MIN_FREE_DISK_MB"], !text.isEmpty {
            guard let megabytes = Int64(text), (0...(1 << 30)).contains(megabytes) else {
                throw ConfigurationError("VROOMX_MIN_FREE_DISK_MB must be 0 to 1073741824.")
            }
            configuration.minFreeDiskBytes = megabytes << 20
        }
        if let days = environment["VROOMX_CHANGE_RETENTION_DAYS"], !days.isEmpty {
            guard let value = Int(days), (1...3650).contains(value) else {
                throw ConfigurationError("VROOMX_CHANGE_RETENTION_DAYS must be 1 to 3650.")
            }
            configuration.changeRetention = TimeInterval(value) * 86_400
        }
        for (name, keyPath) in [("VROOMX_DRIVER_APP_URL", \ServerConfiguration.driverAppURL), ("VROOMX_PUBLIC_URL", \.publicURL)] {
            guard let url = environment[name], !url.isEmpty else { continue }
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil,
                  url.utf8.count <= 500 else {
                throw ConfigurationError("\(name) must be an http(s) address, e.g. https://vroomx.example.com.")
            }
            configuration[keyPath: keyPath] = url
        }
        if let url = environment["VROOMX_GEOCODER_URL"], !url.isEmpty {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil else {
                throw ConfigurationError("VROOMX_GEOCODER_URL must be the http(s) address of a Nominatim server, e.g. https://nominatim.example.com.")
            }
            configuration.geocoderURL = url
        }
        if let template = environment["VROOMX_MAP_TILE_URL"], !template.isEmpty {
            guard let tiles = MapTiles(template: template) else {
                throw ConfigurationError("VROOMX_MAP_TILE_URL must be an http(s) URL with {z}, {x} and {y}, e.g. https://tile.example.com/{z}/{x}/{y}.png.")
            }
            configuration.mapTiles = tiles
        }
        if let token = environment["VROOMX_METRICS_TOKEN"], !token.isEmpty {
            guard token.count >= 16, token.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline }) else {
                throw ConfigurationError("VROOMX_METRICS_TOKEN must be at least 16 characters without spaces, e.g. from `openssl rand -hex 24`.")
            }
            configuration.metricsToken = token
        }
        if let days = try EnvironmentSettings(environment).integer("VROOMX_LOCATION_RETENTION_DAYS", in: 1...3650) {
            configuration.locationRetention = TimeInterval(days) * 86_400
        }
        configuration.apns = try APNsConfiguration.fromEnvironment(environment)
        if let directory = environment["VROOMX_MEDIA_DIR"], !directory.isEmpty { configuration.mediaDirectory = URL(fileURLWithPath: directory) }
        configuration.s3 = try S3Configuration.fromEnvironment(environment)
        configuration.scheduledBackups = try ScheduledBackups.Plan.fromEnvironment(environment, postgres: configuration.usesPostgres)
        let settings = EnvironmentSettings(environment)
        if let megabytes = try settings.integer("VROOMX_MAX_PHOTO_MB", in: 1...100_000) { configuration.uploads.maxPhotoBytes = megabytes << 20 }
        if let megabytes = try settings.integer("VROOMX_MAX_VIDEO_MB", in: 1...100_000) { configuration.uploads.maxVideoBytes = megabytes << 20 }
        if let count = try settings.integer("VROOMX_MAX_OPEN_UPLOADS_PER_USER", in: 1...10_000) {
            configuration.uploads.openUploadsPerUser = Int(count)
        }
        if let megabytes = try settings.integer("VROOMX_MAX_OPEN_UPLOAD_MB_PER_USER", in: 1...10_000_000) {
            configuration.uploads.openBytesPerUser = megabytes << 20
        }
        if let gigabytes = try settings.integer("VROOMX_MEDIA_QUOTA_GB_PER_CARRIER", in: 1...1_000_000) {
            configuration.uploads.storedBytesPerCarrier = gigabytes << 30
        }
        if let from = environment["VROOMX_MAIL_FROM"], !from.isEmpty { configuration.mailFrom = from }
        if let devMailbox = environment["VROOMX_DEV_MAILBOX"] {
            configuration.developmentMailbox = ["1", "true", "yes"].contains(devMailbox.lowercased())
        }
        if let trust = environment["VROOMX_TRUST_PROXY"]?.lowercased(), !trust.isEmpty {
            switch trust {
            case "true", "yes": configuration.trustedProxyHops = 1
            case "false", "no": configuration.trustedProxyHops = 0
            default:
                guard let hops = DecimalText.int64(trust, in: 0...10) else {
                    throw ConfigurationError("VROOMX_TRUST_PROXY must be true, false or the number of proxies in front (0 to 10).")
                }
                configuration.trustedProxyHops = Int(hops)
            }
        }
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

/// Reads numeric settings from the environment, each range-checked, so a
/// typo stops the server at start with a message naming the variable.
struct EnvironmentSettings {
    let environment: [String: String]

    init(_ environment: [String: String]) { self.environment = environment }

    /// Nil when unset or empty.
    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = environment[name], !text.isEmpty else { return nil }
        guard let value = DecimalText.int64(text, in: range) else {
            throw ConfigurationError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound).")
        }
        return value
    }
}
