import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import VroomXModels
import VroomXServer

@main
struct VroomX: AsyncParsableCommand {
    static func main() async {
        prepareProcess()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// Logs as text, or as JSON lines with VROOMX_LOG_FORMAT=json; and makes
    /// sure SIGTERM and SIGINT reach the graceful-shutdown handler even when
    /// the parent process passed them down blocked.
    static func prepareProcess() {
        let json = ProcessInfo.processInfo.environment["VROOMX_LOG_FORMAT"] == "json"
        LoggingSystem.bootstrap { label in
            json ? JSONLogHandler(label: label) as any LogHandler : StreamLogHandler.standardOutput(label: label)
        }
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "vroomx",
        abstract: "The VroomX server: sign-in, tenants, trips, orders and the driver API.",
        discussion: """
            Configuration comes from flags and the environment: VROOMX_DATABASE_URL (unset: SQLite in \
            VROOMX_DATA_DIR, default ./vroomx-data), VROOMX_HOST, VROOMX_PORT, VROOMX_JWT_SECRET, VROOMX_SMTP_URL, \
            VROOMX_MAIL_FROM, VROOMX_TRUST_PROXY, VROOMX_DATABASE_POOL_SIZE, VROOMX_LOG_LEVEL, VROOMX_LOG_FORMAT (text|json); \
            connection limits such as VROOMX_HEADER_TIMEOUT_SECONDS, VROOMX_MAX_CONNECTIONS_PER_CLIENT, VROOMX_MAX_SOCKETS_PER_USER \
            and VROOMX_SHUTDOWN_GRACE_SECONDS are listed in docs/operations.md.
            """,
        subcommands: [Serve.self, Migrate.self, TenantCommand.self, BackupCommand.self, RestoreCommand.self, CheckCommand.self],
        defaultSubcommand: Serve.self
    )
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the server.")

    @Option(help: "Port to listen on (default VROOMX_PORT or 8080).") var port: Int?
    @Option(help: "Address to bind (default VROOMX_HOST or 127.0.0.1).") var host: String?
    @Flag(help: "Seed a demo carrier (once) and print the emails to sign in with.") var demo = false

    func run() async throws {
        var configuration = try ServerConfiguration.fromEnvironment()
        if let port { configuration.port = port }
        if let host { configuration.host = host }
        configuration.demo = demo
        // Held for the life of the process: a second server on this SQLite folder is refused.
        let folderLock = configuration.databaseURL == nil ? try DataFolderLock.acquire(configuration.dataDirectory) : nil
        defer { withExtendedLifetime(folderLock) {} }
        let tracing = try RequestTracing.start(ProcessInfo.processInfo.environment)
        configuration.tracesRequests = tracing != nil
        let app = try await buildApplication(configuration) { [demo, configuration] port in
            // Once listening, with the port bound (the one the system chose for port 0).
            if demo { Self.printDemoAccounts(configuration, port: port) }
        }
        // The tracing service first: services stop in reverse order, so it sends the last requests' spans.
        var group = ServiceGroupConfiguration(services: (tracing.map { [$0] } ?? []) + [app], gracefulShutdownSignals: [.sigterm, .sigint],
                                              logger: Logger(label: "vroomx"))
        // Connections are closed once the grace period ends; should anything else still hold on
        // (a database call that never returns), cancel it rather than wait forever.
        group.maximumGracefulShutdownDuration = configuration.connectionLimits.shutdownGrace + .seconds(10)
        try await ServiceGroup(configuration: group).run()
    }

    static func printDemoAccounts(_ configuration: ServerConfiguration, port: Int) {
        // Through the log, so the lines keep their order with it (and stay JSON under VROOMX_LOG_FORMAT=json).
        Logger(label: "vroomx").notice("""

            VroomX demo carrier "Demo Auto Transport" is ready on http://\(configuration.host):\(port)
              dispatcher: \(DemoData.dispatcherEmail)
              drivers:    \(DemoData.driverEmails.joined(separator: ", "))
            Dispatch console: open http://\(configuration.host):\(port)/ and sign in as the dispatcher.
            Apps and API: POST /v1/auth/otp {"email": "…"}.
            Sign-in codes: \(configuration.smtpURL == nil ? "they appear in this log." : "they are emailed.")

            """)
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "migrate", abstract: "Apply database migrations and exit.")

    func run() async throws {
        let configuration = try ServerConfiguration.fromEnvironment()
        let services = try await ServerServices.make(configuration)
        print("Database is at schema version \(ServerServices.schemaVersion) (\(services.database.dialect.rawValue)).")
        await services.database.close()
    }
}

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Check that trips, orders and the board's kept counts agree (exit 0), or not (1); 2 if it could not check.",
        discussion: """
            Reads the database the server uses (VROOMX_DATA_DIR or VROOMX_DATABASE_URL, as for serve); it never makes or \
            migrates one. The counts the board and the trips page show are kept by the database as rows change \
            (order_status_counts, order_day_counts, trip_status_counts, trip_day_counts), as is each trip's number of \
            expenses (trip_expense_counts). Should one ever differ from the rows (rows edited by hand with triggers \
            off), --repair-counts counts that carrier's rows (or that trip's expenses) again, leaving the others alone; \
            writes to orders, trips and expenses wait meanwhile.
            """)
    @Flag(name: .customLong("repair-counts"), help: "Count again the kept counts that differ from their rows, then check.") var repairCounts = false

    func run() async throws {
        var logger = Logger(label: "vroomx")
        logger.logLevel = .error
        let report: ConsistencyCheck.Report
        do {
            report = try await ConsistencyCheck.run(try ServerConfiguration.fromEnvironment(), repairCounts: repairCounts, logger: logger)
        } catch {
            // Exit 2, not 1: a monitor tells "could not check" from "found problems".
            FileHandle.standardError.write(Data("vroomx check: could not check: \(error)\n".utf8))
            throw ExitCode(2)
        }
        print("Checked \(report.location): \(NumberText.count(report.carriers, "carrier")), "
              + "\(NumberText.count(report.trips, "trip")), \(NumberText.count(report.orders, "order")).")
        // A screenful of each kind is enough to act on; the rest are counted.
        for (lines, label) in [(report.repaired, "Repaired"), (report.countProblems, "Problem"), (report.rowProblems, "Problem")] {
            for line in lines.prefix(Self.shownLines) { print("\(label): \(line)") }
            if lines.count > Self.shownLines { print("… and \(NumberText.grouped(lines.count - Self.shownLines)) more like these.") }
        }
        if !report.countProblems.isEmpty && !repairCounts { print("Counts that differ from their rows are counted again with --repair-counts.") }
        if !report.rowProblems.isEmpty { print("Trips and orders above need a look: this command changes no trip or order.") }
        guard report.countProblems.isEmpty && report.rowProblems.isEmpty else { throw ExitCode(1) }
        print("Consistent: trips, orders and the kept counts agree.")
    }

    static let shownLines = 50
}

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup", abstract: "Copy the database and media, while the server runs, into a folder or an S3 bucket.",
        discussion: """
            SQLite only (PostgreSQL: pg_dump or base backups, see docs/operations.md). Each backup is a new folder \
            vroomx-YYYYMMDD-HHMMSS under the target. In a folder, unchanged media files are hard links to the previous \
            backup's; in a bucket (s3://bucket/prefix, with VROOMX_BACKUP_S3_ENDPOINT, _ACCESS_KEY_ID and \
            _SECRET_ACCESS_KEY, or the media's VROOMX_S3_* settings) each media file is sent once. For a schedule set \
            VROOMX_BACKUP_TO on the server (and VROOMX_BACKUP_SCHEDULE, VROOMX_BACKUP_KEEP), or run this from cron.
            """)
    @Option(name: .customLong("to"), help: "The folder or s3://bucket/prefix that holds the backups (default VROOMX_BACKUP_TO).") var target: String?
    @Option(help: "Keep only the newest N backups there.") var keep: Int?
    @Flag(help: "List the backups there instead of taking one.") var list = false

    func run() async throws {
        if let keep, keep < 1 { throw ValidationError("--keep is at least 1.") }
        let environment = ProcessInfo.processInfo.environment
        guard let target = [target, environment["VROOMX_BACKUP_TO"]].compactMap({ $0 }).first(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
            throw ValidationError("--to names the folder or s3://bucket/prefix that holds the backups (or set VROOMX_BACKUP_TO).")
        }
        let destination = try BackupTarget.parse(target, environment: environment)
        if list {
            let backups = try await destination.backups()
            if backups.isEmpty { print("No backups in \(destination) (each is a vroomx-YYYYMMDD-HHMMSS right under the folder or prefix --to names).") }
            for (location, manifest) in backups {
                print("\(location)  \(manifest.createdAt)  schema \(manifest.schemaVersion)  database \(manifest.databaseBytes) bytes  "
                      + "\(manifest.mediaFiles) media files, \(manifest.mediaBytes) bytes")
            }
            return
        }
        let began = Date()
        let (location, manifest) = try await destination.backUp(try ServerConfiguration.fromEnvironment(environment), keep: keep)
        let unchanged = if case .folder = destination { "unchanged, linked" } else { "already in the bucket" }
        print("Backed up to \(location): database \(manifest.databaseBytes) bytes (schema \(manifest.schemaVersion)), "
              + "\(manifest.mediaFiles) media files, \(manifest.mediaBytes) bytes (\(manifest.mediaLinked) \(unchanged)) in "
              + String(format: "%.1f s.", Date().timeIntervalSince(began)))
    }
}

struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore", abstract: "Bring a backup back into the data directory (which holds no database) and check it.")
    @Argument(help: "The backup: its folder, or s3://bucket/prefix/vroomx-YYYYMMDD-HHMMSS.") var backup: String

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let configuration = try ServerConfiguration.fromEnvironment(environment)
        let manifest = try await BackupTarget.restore(backup, environment: environment, into: configuration)
        print("Restored the backup of \(manifest.createdAt) into \(configuration.dataDirectory.path): integrity, foreign keys and "
              + "\(manifest.mediaFiles) media files checked. Start the server with the same settings as before (mail, media) "
              + "to migrate it to this version.")
    }
}

struct TenantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tenant", abstract: "Manage carriers.", subcommands: [Create.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a carrier and its first dispatcher.")
        @Option(help: "The carrier's name.") var name: String
        @Option(name: .customLong("dispatcher-email"), help: "Email of the first dispatcher.") var dispatcherEmail: String

        func run() async throws {
            let services = try await ServerServices.make(try ServerConfiguration.fromEnvironment())
            let result = await Result(catching: { try await services.store.people.createTenant(name: name, dispatcherEmail: dispatcherEmail) })
            await services.database.close()
            switch result {
            case .success(let (tenant, user)):
                print("Created carrier \"\(tenant.name)\" (\(tenant.id)); dispatcher \(user.email) can now sign in.")
            case .failure(let error as AppError):
                throw ValidationError(error.body.message)
            case .failure(let error):
                throw error
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List carriers.")

        func run() async throws {
            let services = try await ServerServices.make(try ServerConfiguration.fromEnvironment())
            for tenant in try await services.store.people.tenants() {
                print("\(tenant.id)  \(tenant.name)")
            }
            await services.database.close()
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
