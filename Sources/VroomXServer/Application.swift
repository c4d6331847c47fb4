import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import VroomXModels
import VroomXSecurity

/// The parts of a running server, built once from the configuration. Tests
/// reach the store and the mailbox through it.
public struct ServerServices: Sendable {
    public let configuration: ServerConfiguration
    public let database: any SQLDatabase
    public let store: Store
    public let mailer: any Mailer
    let secrets: Secrets
    let tokens: TokenService
    let authenticator: Authenticator
    let auth: AuthService
    let invitations: DriverInvitations
    public let hub: ChangeHub
    public let realtimeCapacity: RealtimeCapacity
    let push: PushService?
    let media: any MediaStorage
    let uploads: UploadService
    let consolePages: ConsolePages
    /// Fills in stops' coordinates from their addresses, when a geocoder is configured.
    let stops: StopLocator
    public let logger: Logger

    /// Mails customers each pickup's and delivery's bill of lading.
    var documentMail: DocumentMailService {
        DocumentMailService(store: store, bills: BillOfLadingService(store: store, media: media), tracking: tracking, mailer: mailer,
                            logger: logger)
    }

    /// Mails customers the invoices dispatch sends.
    var invoiceMail: QueuedMailService {
        let documents = invoiceDocuments
        return QueuedMailService(store: store, queue: .invoices, what: "invoice", sendAgainFrom: "the invoice's page", mailer: mailer,
                                 logger: logger, message: documents.message(for:))
    }

    /// Mails drivers the statements of their approved settlements.
    var statementMail: QueuedMailService {
        let documents = settlementDocuments
        return QueuedMailService(store: store, queue: .statements, what: "statement", sendAgainFrom: "the driver's pay page", mailer: mailer,
                                 logger: logger, message: documents.message(for:))
    }

    /// Mails dispatch's alerts of late and at-risk orders to the carrier's alert address.
    var orderAlertMail: QueuedMailService {
        let (alerts, base) = (store.orderAlerts, configuration.publicURL)
        return QueuedMailService(store: store, queue: .orderAlerts, what: "alert", sendAgainFrom: "the order's page", mailer: mailer,
                                 logger: logger, message: { try await alerts.message(for: $0, consoleBase: base) })
    }

    var settlementDocuments: SettlementDocuments {
        SettlementDocuments(store: store)
    }

    var invoiceDocuments: InvoiceDocuments {
        InvoiceDocuments(store: store, bills: BillOfLadingService(store: store, media: media))
    }

    /// Customers' tracking links, signed with the server's key.
    var tracking: TrackingService {
        TrackingService(store: store, tokens: TrackingToken(key: secrets.trackingKey), publicURL: configuration.publicURL)
    }

    /// Opens the database, applies migrations and prepares the services.
    public static func make(_ configuration: ServerConfiguration, logger: Logger? = nil) async throws -> ServerServices {
        var logger = logger ?? Logger(label: "vroomx")
        logger.logLevel = configuration.logLevel
        let database = try await openDatabase(configuration, logger: logger)
        let applied = try await DatabaseDeadline.allowing(DatabaseDeadline.maintenance) {
            try await Migrator.migrate(database, now: configuration.clock.now)
        }
        if !applied.isEmpty { logger.info("applied migrations", metadata: ["versions": "\(applied)"]) }
        let commits = CommitSignal()
        let store = Store(database: database, clock: configuration.clock, pushEnabled: configuration.apns != nil,
                          locationRetention: configuration.locationRetention, onCommit: commits.fire)
        // One SQLite server commits everything itself; PostgreSQL's LISTEN connection vouches for other instances.
        let reads = ReadCache(limitBytes: configuration.readCacheBytes, trusted: !(database is PostgresDatabase))
        let hub = ChangeHub(store: store, logger: logger, inboxLimit: configuration.realtimeInboxLimit, reads: reads)
        let realtimeCapacity = RealtimeCapacity(limits: realtimeLimits(configuration, logger: logger))
        commits.connect(hub.committed)
        var push: PushService?
        if let apns = configuration.apns {
            let service = PushService(store: store, provider: try await APNsClient(configuration: apns, clock: configuration.clock),
                                      checkInterval: apns.queueCheckInterval, logger: logger)
            commits.connect { _, _ in service.poke() }
            push = service
            logger.info("push notifications through APNs", metadata: ["apns": "\(apns)"])
        } else {
            logger.notice("push notifications are not configured (VROOMX_APNS_KEY_FILE): notifications reach drivers through the feed only")
        }
        let secrets = try Secrets.load(secret: configuration.jwtSecret, keyFile: configuration.keyFile)
        let tokens = await TokenService(secret: secrets.jwtKey, lifetime: configuration.auth.accessTokenLifetime,
                                        clock: configuration.clock)
        let authenticator = Authenticator(tokens: tokens, store: store)
        ServerMetrics.prepare()
        let mailer: any Mailer = MeasuredMailer(mailer: try configuration.mailer ?? makeMailer(configuration, logger: logger))
        let accountMail = AccountMail(mailer: mailer, logger: logger, driverAppURL: configuration.driverAppURL, publicURL: configuration.publicURL)
        let auth = AuthService(store: store, secrets: secrets, tokens: tokens, authenticator: authenticator,
                               mail: accountMail, policy: configuration.auth, logger: logger)
        let clock = configuration.clock
        let media: any MediaStorage = if let s3 = configuration.s3 {
            S3MediaStorage(client: S3Client(s3, now: { clock.now }))
        } else {
            try FileMediaStorage(root: configuration.resolvedMediaDirectory)
        }
        let uploads = UploadService(store: store, media: media, limits: configuration.uploads)
        return ServerServices(configuration: configuration, database: database, store: store, mailer: mailer, secrets: secrets,
                              tokens: tokens, authenticator: authenticator, auth: auth,
                              invitations: DriverInvitations(store: store, mail: accountMail, perHour: configuration.auth.invitationsPerHour), hub: hub, realtimeCapacity: realtimeCapacity,
                              push: push, media: media, uploads: uploads, consolePages: try await ConsolePages.load(),
                              stops: StopLocator(geocoder: configuration.geocoderURL.map { NominatimGeocoder(baseURL: $0) }, logger: logger),
                              logger: logger)
    }

    /// Raises the descriptor limit as far as allowed and keeps the realtime
    /// socket cap within it, with room left for HTTP connections and files.
    static func realtimeLimits(_ configuration: ServerConfiguration, logger: Logger) -> RealtimeLimits {
        let descriptors = DescriptorLimit.raiseToHardLimit()
        var limits = configuration.realtimeLimits
        limits.sockets = min(limits.sockets, DescriptorLimit.socketBudget(descriptors))
        logger.info("open files limit \(descriptors): at most \(limits.sockets) realtime sockets")
        return limits
    }

    static func openDatabase(_ configuration: ServerConfiguration, logger: Logger) async throws -> any SQLDatabase {
        if let url = configuration.databaseURL {
            return try await PostgresDatabase.open(
                url: url, maxConnections: configuration.databasePoolSize,
                options: .init(timeout: configuration.databaseTimeout, probeInterval: configuration.databaseProbeInterval,
                              preparedStatements: configuration.databasePreparedStatements), logger: logger)
        }
        try FileManager.default.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true)
        return try SQLiteDatabase(path: configuration.sqlitePath, timeout: configuration.databaseTimeout,
                                  memoryMapBytes: configuration.sqliteMemoryMapBytes)
    }

    static func makeMailer(_ configuration: ServerConfiguration, logger: Logger) throws -> any Mailer {
        guard let url = configuration.smtpURL else {
            // Tools (migrate, tenant) never send mail; `serve` refuses to start without a mailer unless asked for this.
            if configuration.developmentMailbox {
                logger.notice("VROOMX_SMTP_URL is not set: sign-in codes are printed to this log (development mailbox)")
            }
            return DevelopmentMailbox(logger: logger)
        }
        return try SMTPMailer(url: url, from: configuration.mailFrom, logger: logger)
    }

    public static var schemaVersion: Int { Migrator.latestVersion }

    /// Removes uploads past their expiry and their partial files; returns how many.
    @discardableResult
    public func pruneExpiredUploads() async throws -> Int {
        try await uploads.pruneExpired()
    }

    /// The one account of an email (at `carrier`, when it has several).
    private func account(email: String, carrier: ID<Tenant>?, role: UserRole? = nil) async throws -> User {
        let accounts = try await store.people.accounts(email: email).filter { role == nil || $0.user.role == role }
        guard !accounts.isEmpty else { throw AppError.notFound(role == .dispatcher ? "Dispatcher" : "User") }
        guard let account = AuthService.account(among: accounts, carrier: carrier) else {
            throw AuthService.carrierRequired(accounts.map(\.choice))
        }
        return account.user
    }

    /// Issues an access token for a user, as sign-in would (for tools and tests).
    public func signIn(email: String, carrier: ID<Tenant>? = nil) async throws -> AuthSession {
        let user = try await account(email: email, carrier: carrier)
        let driver = try await auth.linkedDriver(of: user)
        let refresh = SecureToken.random()
        let session = try await store.createSession(user: user, refreshTokenHash: SecureToken.sha256Hex(refresh),
                                                    lifetime: configuration.auth.sessionLifetime)
        let access = try await tokens.issue(user: user, driver: driver?.id, session: session)
        return AuthSession(accessToken: access.token, expiresAt: access.expiresAt, refreshToken: refresh, user: user, driver: driver)
    }

    /// Opens a console session for a dispatcher, as the sign-in page would
    /// (for tools and benchmarks): the cookie to send, `name=value`.
    public func consoleSignIn(email: String, carrier: ID<Tenant>? = nil) async throws -> String {
        let user = try await account(email: email, carrier: carrier, role: .dispatcher)
        let token = SecureToken.random()
        _ = try await store.createConsoleSession(user: user, tokenHash: SecureToken.sha256Hex(token), csrfToken: SecureToken.random(),
                                                 lifetime: configuration.auth.consoleSessionLifetime)
        return "\(ConsoleController.sessionCookie)=\(token)"
    }
}

/// Builds the HTTP application: one router, every endpoint of the shared
/// route table, JSON errors everywhere.
/// `onServerRunning` is told the bound port once listening (port 0 lets the system choose).
public func buildApplication(_ configuration: ServerConfiguration,
                             onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws -> some ApplicationProtocol {
    var configuration = configuration
    if configuration.demo { configuration.developmentMailbox = true }
    try configuration.checkServable()
    let services = try await ServerServices.make(configuration)
    if configuration.demo {
        try await DemoData.seedIfNeeded(services.store, logger: services.logger)
    }
    return buildApplication(services, onServerRunning: onServerRunning)
}

/// - Parameters:
///   - onServerRunning: told the bound port once listening (use port 0 in
///     the configuration to let the system choose).
///   - upkeep: whether the hourly upkeep runs (tests run each step
///     themselves, when they choose, so it never races what they check).
public func buildApplication(_ services: ServerServices, upkeep: Bool = true,
                             onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
    let configuration = services.configuration
    // HEAD answers as GET does, without the body (monitors and `curl -I` use it).
    let router = Router(context: AppRequestContext.self, options: .autoGenerateHeadEndpoints)
    let console = ConsoleController(pages: services.consolePages, store: services.store, auth: services.auth,
                                    invitations: services.invitations, policy: configuration.auth,
                                    trustedProxyHops: configuration.trustedProxyHops, hub: services.hub, live: services.realtimeCapacity,
                                    media: services.media, uploads: services.uploads, mapTiles: configuration.mapTiles,
                                    stops: services.stops, tracking: services.tracking)
    // Requests are counted only where someone can read the counts.
    if configuration.metricsToken != nil { router.add(middleware: RequestMetricsMiddleware()) }
    if configuration.tracesRequests { router.add(middleware: RequestTracingMiddleware()) }
    router.add(middleware: ErrorMiddleware(routeMissPage: console.routeMissPage))
    if let minimum = configuration.minimumAppVersion { router.add(middleware: AppVersionMiddleware(minimum: minimum)) }
    ServerMetrics.route(router, token: configuration.metricsToken)
    let routes = Routes(router: router, authenticator: services.authenticator, store: services.store)

    ServiceController(database: services.database, readiness: Readiness(configuration, database: services.database)).register(routes)
    AuthController(auth: services.auth, store: services.store, trustedProxyHops: configuration.trustedProxyHops).register(routes)
    DriverController(store: services.store, reads: services.hub.reads).register(routes)
    DispatchController(store: services.store, invitations: services.invitations, stops: services.stops).register(routes)
    FleetController(store: services.store).register(routes)
    LocationController(store: services.store).register(routes)
    SyncController(store: services.store, logger: services.logger).register(routes)
    UploadController(uploads: services.uploads).register(routes)
    InspectionController(store: services.store, media: services.media, uploads: services.uploads).register(routes)
    UnitPhotoController(store: services.store, media: services.media, uploads: services.uploads).register(routes)
    ReceiptController(store: services.store, media: services.media, uploads: services.uploads).register(routes)
    TrackingController(tracking: services.tracking).register(routes)
    DocumentController(bills: BillOfLadingService(store: services.store, media: services.media)).register(routes)
    InvoiceController(store: services.store, documents: services.invoiceDocuments).register(routes)
    SettlementController(store: services.store, documents: services.settlementDocuments).register(routes)
    console.register(router)
    TrackingPage(tracking: services.tracking, pages: services.consolePages, media: services.media).register(router)
    routes.on(.realtime) { request, _ in
        _ = try Realtime.since(request)
        throw AppError(426, .upgradeRequired, "Connect to this endpoint with a WebSocket.")
    }

    let upgrades = UpgradeDecisions()
    let webSocketRouter = Realtime.router(hub: services.hub, authenticator: services.authenticator, capacity: services.realtimeCapacity,
                                          decisions: upgrades, minimumAppVersion: configuration.minimumAppVersion, logger: services.logger)
    // Behind a trusted proxy every connection comes from the proxy: per-client caps belong there.
    let clients = configuration.trustForwardedFor ? nil
        : ClientConnectionLimiter(maxPerClient: configuration.connectionLimits.maxConnectionsPerClient)
    var app = Application(
        router: router,
        server: guardedHTTP1WebSocketServer(webSocketRouter.buildResponder(), upgrades: upgrades,
                                            limits: configuration.connectionLimits, clients: clients),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "vroomx"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: services.logger
    )
    app.addServices(MaintenanceService(services: services, upkeep: upkeep))
    if let push = services.push { app.addServices(push) }
    app.addServices(services.documentMail, services.invoiceMail, services.statementMail, services.orderAlertMail)
    if let plan = configuration.scheduledBackups {
        app.addServices(ScheduledBackups(plan: plan, configuration: configuration, logger: services.logger))
    }
    if let postgres = services.database as? PostgresDatabase {
        app.addServices(PostgresChangeListener(database: postgres, hub: services.hub, logger: services.logger))
    }
    return app
}

/// Background upkeep for the lifetime of the server: hourly, prunes expired
/// sign-in data, feed history past its retention, idempotency keys older
/// than 8 days, breadcrumbs past their retention, abandoned uploads (with their partial files), and tells
/// dispatch about equipment papers running out within 30 days; every
/// 30 s, checks the counters of carriers with realtime subscribers (a
/// safety net under notifications); beats the realtime sockets' hearts.
/// Closes the database on shutdown.
struct MaintenanceService: Service, CustomStringConvertible {
    let services: ServerServices
    let upkeep: Bool
    // Service lifecycle logs its services; never let that print the configuration's secrets.
    var description: String { "MaintenanceService" }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                if upkeep {
                    group.addTask { await every(.seconds(3600), prune) }
                    group.addTask { await every(.seconds(300), alertAtRisk) }
                    group.addTask { await every(.seconds(300), gatherStatusCounts) }
                }
                group.addTask { await every(.seconds(30)) { await services.hub.poll() } }
                group.addTask {
                    await services.hub.beatHearts(every: services.configuration.realtimeHeartbeat) { sessions in
                        await services.authenticator.refresh(sessions)
                    }
                }
            }
        }
        // Services stop in reverse order, so the HTTP server is done by now.
        await services.database.close()
        services.logger.notice("stopped: requests answered, database closed")
    }
}

extension MaintenanceService {
    /// Under the maintenance deadline: pruning a large history may take minutes.
    func prune() async {
        let store = services.store
        do {
            try await DatabaseDeadline.allowing(DatabaseDeadline.maintenance) {
                try await store.pruneExpiredAuthData()
                try await store.pruneChangeLog(olderThan: services.configuration.changeRetention)
                try await store.pruneIdempotencyKeys(olderThan: 8 * 86_400)
                try await store.location.pruneFixes(olderThan: services.configuration.locationRetention)
                try await store.deviceBacklogs.prune()
                try await store.prunePushQueue()
                try await services.pruneExpiredUploads()
                let noticed = try await store.fleet.noticeExpiringPapers()
                if noticed > 0 { services.logger.info("equipment documents expiring soon", metadata: ["count": "\(noticed)"]) }
            }
        } catch {
            services.logger.warning("pruning failed", metadata: ["error": "\(error)"])
        }
    }

    /// Late and at-risk orders no alert told dispatch of.
    func alertAtRisk() async {
        do {
            let alerted = try await services.store.orderAlerts.sweep()
            if alerted > 0 { services.logger.info("orders late or at risk", metadata: ["alerted": "\(alerted)"]) }
        } catch {
            services.logger.warning("alerting late orders failed", metadata: ["error": "\(error)"])
        }
    }

    /// The board's and the trips page's counts summed into a row a status (each change added one).
    func gatherStatusCounts() async {
        do {
            try await DatabaseDeadline.allowing(DatabaseDeadline.maintenance) { try await services.store.gatherStatusCounts() }
        } catch {
            services.logger.warning("gathering the kept counts failed", metadata: ["error": "\(error)"])
        }
    }

    func every(_ interval: Duration, _ work: @Sendable () async -> Void) async {
        while !Task.isCancelled {
            await work()
            try? await Task.sleep(for: interval)
        }
    }
}
