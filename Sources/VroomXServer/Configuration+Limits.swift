import Foundation

/// What a single HTTP connection may hold, so that no client can starve
/// the server by being slow, large or numerous. The defaults leave room for
/// a phone on a poor mobile network; see *Security notes* in docs/operations.md.
public struct ConnectionLimits: Sendable, Hashable {
    /// Time to send a complete request head, from the connection's start
    /// and again after each response on a keep-alive connection.
    public var headerTimeout: Duration = .seconds(15)
    /// Largest request head (request line and headers) in bytes: 431 beyond.
    public var maxHeadBytes = 64 * 1024
    /// Most header fields in one request: 431 beyond.
    public var maxHeaderFields = 100
    /// While a request body arrives, at least `bodyRateMinimumBytes` must
    /// come in every `bodyRateWindow` of waiting for them (1 KiB per 20 s is
    /// far below what a phone on EDGE sends), else the connection closes.
    public var bodyRateWindow: Duration = .seconds(20)
    public var bodyRateMinimumBytes = 1024
    /// A response the client stops taking: while the connection's buffers are
    /// full, the client must take (acknowledge) at least 1 KiB in each window
    /// of this length, else the connection closes and lets go of the file it
    /// was sending. A slow reader that keeps reading is never cut.
    public var responseStallTimeout: Duration = .seconds(60)
    /// Body bytes read and discarded after a handler answered without
    /// reading them (a 401 or 413 answered early); then the connection closes.
    public var drainLimitBytes = 64 * 1024
    /// Connections one client address may hold at once (IPv6 counted per
    /// /64); more are closed as they are accepted. Not applied behind a
    /// trusted proxy, where every connection comes from the proxy.
    public var maxConnectionsPerClient = 256
    /// After a shutdown begins, how long connections may finish their work
    /// before they are closed.
    public var shutdownGrace: Duration = .seconds(20)
    /// How long the server keeps reading (and discarding) after answering a
    /// request it refused to parse, so the client reads the answer instead
    /// of a reset.
    public var lingerAfterError: Duration = .seconds(2)
    /// A WebSocket is pinged this often; one that sent nothing (not even the
    /// pong) by the next ping is closed as gone.
    public var webSocketPingInterval: Duration = .seconds(25)

    public init() {}
}

/// Caps on realtime sockets. The per-server cap is also kept below what the
/// process's descriptor limit allows (see `RealtimeCapacity`).
public struct RealtimeLimits: Sendable, Hashable {
    /// Sockets one user may hold; a newer one replaces the oldest (4029).
    public var socketsPerUser = 8
    /// Sockets one carrier may hold on this instance; more are refused (429).
    public var socketsPerCarrier = 2000
    /// Sockets on this instance; more are refused (429).
    public var sockets = 20_000

    public init() {}
}

extension ServerConfiguration {
    /// Reads the `VROOMX_*` limits, each checked against its range.
    static func readLimits(_ environment: [String: String], into configuration: inout ServerConfiguration) throws {
        func integer(_ name: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let value = Int(text), range.contains(value) else {
                throw ConfigurationError("\(name) must be \(range.lowerBound) to \(range.upperBound).")
            }
            return value
        }
        var connections = configuration.connectionLimits
        if let seconds = try integer("VROOMX_HEADER_TIMEOUT_SECONDS", 1...300) { connections.headerTimeout = .seconds(seconds) }
        if let kilobytes = try integer("VROOMX_MAX_HEADER_KB", 8...1024) { connections.maxHeadBytes = kilobytes * 1024 }
        if let seconds = try integer("VROOMX_BODY_RATE_WINDOW_SECONDS", 1...600) { connections.bodyRateWindow = .seconds(seconds) }
        if let bytes = try integer("VROOMX_BODY_RATE_MIN_BYTES", 1...(16 << 20)) { connections.bodyRateMinimumBytes = bytes }
        if let seconds = try integer("VROOMX_RESPONSE_STALL_SECONDS", 1...3600) { connections.responseStallTimeout = .seconds(seconds) }
        if let kilobytes = try integer("VROOMX_DRAIN_LIMIT_KB", 0...(1 << 20)) { connections.drainLimitBytes = kilobytes * 1024 }
        if let count = try integer("VROOMX_MAX_CONNECTIONS_PER_CLIENT", 1...1_000_000) { connections.maxConnectionsPerClient = count }
        if let seconds = try integer("VROOMX_SHUTDOWN_GRACE_SECONDS", 0...3600) { connections.shutdownGrace = .seconds(seconds) }
        configuration.connectionLimits = connections

        var realtime = configuration.realtimeLimits
        if let count = try integer("VROOMX_MAX_SOCKETS_PER_USER", 1...10_000) { realtime.socketsPerUser = count }
        if let count = try integer("VROOMX_MAX_SOCKETS_PER_CARRIER", 1...10_000_000) { realtime.socketsPerCarrier = count }
        if let count = try integer("VROOMX_MAX_SOCKETS", 1...10_000_000) { realtime.sockets = count }
        configuration.realtimeLimits = realtime
    }
}
