/// How long one database call may take, waiting for a connection or a lock
/// included. Requests get the configured timeout (`VROOMX_DATABASE_TIMEOUT_SECONDS`);
/// migrations and pruning, which may take minutes on a large database (or
/// wait for another instance's migration), run under `maintenance`.
public enum DatabaseDeadline {
    public static let maintenance: Duration = .seconds(3600)

    @TaskLocal static var override: Duration?

    /// Runs `body` with each database call in it allowed `duration`.
    public static func allowing<T>(_ duration: Duration, _ body: () async throws -> T) async rethrows -> T {
        try await $override.withValue(duration, operation: body)
    }
}
