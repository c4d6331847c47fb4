import Foundation
import Hummingbird
import Metrics
import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory
import VroomXModels
import VroomXSecurity

/// The numbers an operator watches, kept with swift-metrics and served in
/// Prometheus's text format at `GET /metrics` (only with
/// `VROOMX_METRICS_TOKEN` set, and only to a request bearing it). What each
/// measures and the dashboards' queries: docs/operations.md, "Metrics".
public enum ServerMetrics {
    /// Every metric of this process. swift-metrics is bootstrapped once per
    /// process, here, before the first metric is made.
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        // Libraries name their metrics as OpenTelemetry does ("http.server.request.duration"): dots are not
        // Prometheus names.
        factory.nameAndLabelSanitizer = { name, labels in
            (prometheusName(name), labels.map { (prometheusName($0.0), $0.1) })
        }
        MetricsSystem.bootstrap(factory)
        return registry
    }()

    static func prometheusName(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") ? $0 : "_" })
    }

    static func counter(_ name: String, _ labels: [(String, String)] = []) -> Counter {
        _ = registry
        return Counter(label: name, dimensions: labels)
    }

    static func timer(_ name: String, _ labels: [(String, String)] = []) -> Metrics.Timer {
        _ = registry
        return Metrics.Timer(label: name, dimensions: labels, preferredDisplayUnit: .seconds)
    }

    static func meter(_ name: String, _ labels: [(String, String)] = []) -> Meter {
        _ = registry
        return Meter(label: name, dimensions: labels)
    }

    // MARK: What is measured (each name once, with the same labels everywhere)

    static let requestsInFlight = meter("vroomx_http_requests_in_flight")
    static let mutationsApplied = counter("vroomx_mutations_total", [("outcome", "applied")])
    static let mutationsRejected = counter("vroomx_mutations_total", [("outcome", "rejected")])
    static let mutationsReplayed = counter("vroomx_mutations_total", [("outcome", "replayed")])
    static let realtimeSockets = meter("vroomx_realtime_sockets")
    static let consoleStreams = meter("vroomx_console_live_streams")
    static let uploadBytes = counter("vroomx_upload_bytes_total")
    static let locationFixes = counter("vroomx_location_fixes_total")
    /// SQLite's writes, and the commits that made them durable (several writes a commit under load).
    static let sqliteWrites = counter("vroomx_sqlite_writes_total")
    static let sqliteCommits = counter("vroomx_sqlite_commits_total")
    static let pushQueueDepth = meter("vroomx_push_queue_depth")
    static func mail(_ outcome: String) -> Counter { mailOutcomes[outcome] ?? counter("vroomx_mail_total", [("outcome", outcome)]) }
    static let backupsSucceeded = counter("vroomx_backups_total", [("outcome", "succeeded")])
    static let backupsFailed = counter("vroomx_backups_total", [("outcome", "failed")])
    /// When the last scheduled backup succeeded (Unix seconds): alert on `time() - … > 90000`.
    static let lastBackup = meter("vroomx_backup_last_success_timestamp_seconds")

    /// Sets up swift-metrics and makes every series now, at zero: a counter
    /// that first appeared at 1 would hide its first increase from
    /// Prometheus's `increase()` (the first outage after a restart).
    static func prepare() {
        _ = registry
        let counters = [mutationsApplied, mutationsRejected, mutationsReplayed, uploadBytes, locationFixes, sqliteWrites, sqliteCommits,
                        backupsSucceeded, backupsFailed]
            + apnsAnswers.values + mailOutcomes.values + unavailableCauses.values
        for counter in counters { counter.increment(by: 0) }
        for meter in [requestsInFlight, realtimeSockets, consoleStreams, pushQueueDepth] + poolInUse.values { meter.set(0) }
        _ = poolWait
    }

    /// Prometheus's text format, for a request that bears the token; without
    /// the setting, a 404 that says how to turn it on.
    static func route(_ router: Router<AppRequestContext>, token: String?) {
        router.get(RouterPath(Endpoint.metrics.path)) { request, _ -> Response in
            guard let token else { throw AppError(404, .notFound, "Metrics are off: set VROOMX_METRICS_TOKEN to serve them.") }
            // The scheme is case-insensitive (RFC 9110); the token is not.
            let given = request.headers[.authorization] ?? ""
            let scheme = given.prefix(7).lowercased(), credentials = given.dropFirst(7)
            guard scheme == "bearer ", constantTimeEqual(Array(credentials.utf8), Array(token.utf8)) else {
                throw AppError(401, .invalidToken, "Send the metrics token (VROOMX_METRICS_TOKEN) as a Bearer token.")
            }
            var response = Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
            response.headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            response.headers[.cacheControl] = "no-store"
            return response
        }
    }
}

/// Counts what a mailer sent and what failed.
final class MeasuredMailer: Mailer {
    let mailer: any Mailer

    init(mailer: any Mailer) { self.mailer = mailer }

    func send(_ message: MailMessage) async throws {
        do {
            try await mailer.send(message)
            ServerMetrics.mail("sent").increment()
        } catch {
            ServerMetrics.mail("failed").increment()
            throw error
        }
    }
}

extension ServerMetrics {
    enum Backend: String {
        case sqlite, postgres
    }

    static let poolWait = [Backend.sqlite: timer("vroomx_database_pool_wait_seconds", [("backend", "sqlite")]),
                                   .postgres: timer("vroomx_database_pool_wait_seconds", [("backend", "postgres")])]
    static let poolInUse = [Backend.sqlite: meter("vroomx_database_pool_in_use", [("backend", "sqlite")]),
                                    .postgres: meter("vroomx_database_pool_in_use", [("backend", "postgres")])]

    /// A request got a connection (SQLite: a reader or the writer) after waiting since `start`.
    static func leased(_ backend: Backend, waitingSince start: ContinuousClock.Instant) {
        poolWait[backend]?.record(duration: ContinuousClock.now - start)
        poolInUse[backend]?.increment()
    }

    static func returned(_ backend: Backend) { poolInUse[backend]?.decrement() }

    static let apnsAnswers = ["delivered", "invalid_token", "retry", "rejected"].reduce(into: [String: Counter]()) {
        $0[$1] = counter("vroomx_apns_answers_total", [("outcome", $1)])
    }

    static func apnsAnswer(_ outcome: PushOutcome) -> Counter {
        let name = switch outcome {
        case .delivered: "delivered"
        case .invalidToken: "invalid_token"
        case .retry: "retry"
        case .rejected: "rejected"
        }
        return apnsAnswers[name] ?? counter("vroomx_apns_answers_total", [("outcome", name)])
    }

    static let mailOutcomes = ["sent": counter("vroomx_mail_total", [("outcome", "sent")]),
                                       "failed": counter("vroomx_mail_total", [("outcome", "failed")])]
    static let unavailableCauses: [DatabaseUnavailable.Cause: Counter] = [.unreachable, .connectionLost, .timedOut, .busy, .storageFull]
        .reduce(into: [:]) { $0[$1] = counter("vroomx_database_unavailable_total", [("cause", $1.rawValue)]) }

    static func databaseUnavailable(_ cause: DatabaseUnavailable.Cause) -> Counter {
        unavailableCauses[cause] ?? counter("vroomx_database_unavailable_total", [("cause", cause.rawValue)])
    }
}
