import Foundation
import Logging
import ServiceLifecycle

/// Backups the server takes itself, on a cron schedule, into a folder or a
/// bucket, keeping the newest few: what `vroomx backup` does from cron, for
/// an operator who would rather set three variables. One at a time; a
/// failure is logged as an error and counted (`vroomx_backups_total`), and
/// the next time on the schedule tries again.
public struct ScheduledBackups: Service, CustomStringConvertible {
    public struct Plan: Sendable, Equatable {
        public var target: BackupTarget
        public var schedule: CronSchedule
        public var keep: Int

        public static let defaultSchedule = "15 2 * * *"
        public static let defaultKeep = 14

        /// `VROOMX_BACKUP_TO` (a folder or s3://bucket/prefix), `VROOMX_BACKUP_SCHEDULE`
        /// (cron, the server's time zone; default 02:15 daily), `VROOMX_BACKUP_KEEP` (default 14).
        static func fromEnvironment(_ environment: [String: String], postgres: Bool) throws -> Plan? {
            guard let to = environment["VROOMX_BACKUP_TO"], !to.trimmingCharacters(in: .whitespaces).isEmpty else {
                for name in ["VROOMX_BACKUP_SCHEDULE", "VROOMX_BACKUP_KEEP"] where !(environment[name] ?? "").isEmpty {
                    throw ConfigurationError("\(name) needs VROOMX_BACKUP_TO: the folder or s3://bucket/prefix the backups go to.")
                }
                return nil
            }
            guard !postgres else {
                throw ConfigurationError("VROOMX_BACKUP_TO backs up the embedded SQLite database; back PostgreSQL up with its own tools (docs/operations.md).")
            }
            let schedule: CronSchedule
            do {
                schedule = try CronSchedule(environment["VROOMX_BACKUP_SCHEDULE"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultSchedule)
            } catch let error as CronSchedule.Invalid {
                throw ConfigurationError("VROOMX_BACKUP_SCHEDULE: \(error.description).")
            }
            let keep = try EnvironmentSettings(environment).integer("VROOMX_BACKUP_KEEP", in: 1...10_000).map { Int($0) } ?? defaultKeep
            return Plan(target: try BackupTarget.parse(to, environment: environment), schedule: schedule, keep: keep)
        }
    }

    let plan: Plan
    let configuration: ServerConfiguration
    let logger: Logger
    let timeZone: TimeZone
    public var description: String { "ScheduledBackups" }

    public init(plan: Plan, configuration: ServerConfiguration, logger: Logger, timeZone: TimeZone = .current) {
        self.plan = plan
        self.configuration = configuration
        self.logger = logger
        self.timeZone = timeZone
    }

    public func run() async throws {
        await checkTarget()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled, let next = plan.schedule.next(after: Date(), in: timeZone) {
                // Sleeps in steps of at most a minute: a clock set forward (or a suspended machine) is noticed in time.
                while Date() < next, !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(Int64(min(60, max(0.05, next.timeIntervalSinceNow)) * 1000)))
                }
                guard !Task.isCancelled else { return }
                await backUpOnce()
            }
        }
    }

    /// At start: reads the target, so a wrong bucket or key is an error now
    /// rather than at the first backup, and sets the last-success gauge from
    /// the newest backup there (an alert on its age holds across restarts).
    func checkTarget() async {
        let next = plan.schedule.next(after: Date(), in: timeZone).map { "\($0)" } ?? "never"
        do {
            let backups = try await plan.target.backups()
            if let newest = backups.map(\.manifest.createdAt).max() { ServerMetrics.lastBackup.set(newest.timeIntervalSince1970) }
            logger.info("backups scheduled", metadata: ["to": "\(plan.target)", "schedule": "\(plan.schedule)", "keep": "\(plan.keep)", "next": "\(next)",
                                                         "there": "\(backups.count)", "newest": "\(backups.last.map { "\($0.manifest.createdAt)" } ?? "none")"])
        } catch {
            ServerMetrics.backupsFailed.increment()
            logger.error("backups scheduled, but their target cannot be read", metadata: ["to": "\(plan.target)", "next": "\(next)", "error": "\(error)"])
        }
    }

    func backUpOnce() async {
        let started = Date()
        do {
            let (location, manifest) = try await plan.target.backUp(configuration, keep: plan.keep)
            ServerMetrics.backupsSucceeded.increment()
            ServerMetrics.lastBackup.set(Date().timeIntervalSince1970)
            logger.notice("backup taken", metadata: ["to": "\(location)", "database_bytes": "\(manifest.databaseBytes)",
                                                       "media_files": "\(manifest.mediaFiles)", "media_bytes": "\(manifest.mediaBytes)",
                                                       "seconds": "\(String(format: "%.1f", Date().timeIntervalSince(started)))"])
        } catch {
            ServerMetrics.backupsFailed.increment()
            logger.error("backup failed", metadata: ["to": "\(plan.target)", "error": "\(error)"])
        }
    }
}
