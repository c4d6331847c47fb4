/// `GET /healthz`: liveness. The process answers; it never waits on the
/// database, and reports what it last knew of it.
public struct HealthResponse: Codable, Sendable, Hashable {
    public var status: String
    public var database: String
    /// Whether the database answered last time the server needed it (nil
    /// from servers that predate the field).
    public var databaseReachable: Bool?

    public init(status: String, database: String, databaseReachable: Bool? = nil) {
        self.status = status
        self.database = database
        self.databaseReachable = databaseReachable
    }

    enum CodingKeys: String, CodingKey {
        case status, database
        case databaseReachable = "database_reachable"
    }
}

/// `GET /readyz`: readiness. `ready` (200) when this instance can serve
/// traffic; otherwise `not_ready` (503) with the checks that failed, so a
/// load balancer takes the instance out of rotation.
public struct ReadinessResponse: Codable, Sendable, Hashable {
    public var status: String
    public var checks: [ReadinessCheck]

    public init(checks: [ReadinessCheck]) {
        self.status = checks.allSatisfy(\.ok) ? "ready" : "not_ready"
        self.checks = checks
    }
}

public struct ReadinessCheck: Codable, Sendable, Hashable {
    /// `database`, `media_folder`, `data_folder` or `free_disk`.
    public var name: String
    public var ok: Bool
    /// What was found, e.g. `"12034 MB free, 1024 MB required"` or the error.
    public var detail: String

    public init(name: String, ok: Bool, detail: String) {
        self.name = name
        self.ok = ok
        self.detail = detail
    }
}
