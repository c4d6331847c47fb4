import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import VroomXModels

/// Wakes this instance's realtime subscribers when any instance commits:
/// every write transaction on PostgreSQL ends with
/// `pg_notify('vroomx_changes', 'tenant:seq')`, delivered on commit to every
/// listener. After each (re)connection the hub re-reads every watched
/// carrier's counter, so notifications missed while disconnected are not lost.
/// The read cache answers from memory only while this connection listens.
/// A transaction that ends sessions also sends `ended:<session>` for each
/// (`EndedSessions`); each instance also sends itself `probe:…` to prove the
/// connection still hears (`ListenProbe`).
struct PostgresChangeListener: Service, CustomStringConvertible {
    static let channel = "vroomx_changes"
    var description: String { "PostgresChangeListener" }
    let database: PostgresDatabase
    let hub: ChangeHub
    let logger: Logger
    var probe = ListenProbe()

    func run() async {
        await cancelWhenGracefulShutdown {
            var delay: Duration = .milliseconds(250)
            while !Task.isCancelled {
                do {
                    let connection = try await database.makeListenConnection(id: 1)
                    delay = .milliseconds(250)
                    // A connection that stops hearing without closing is closed, so the loop reconnects.
                    let watchdog = Task {
                        let listening = await probe.watch { payload in
                            try await database.write { db in try await db.execute("SELECT pg_notify(\(Self.channel), \(payload))") }
                        }
                        if !listening {
                            logger.warning("realtime: the LISTEN connection no longer hears this instance's notifications; reconnecting")
                            try? await connection.close()
                        }
                    }
                    defer { watchdog.cancel() }
                    do {
                        try await connection.listen(on: Self.channel) { notifications in
                            await hub.poll()
                            // Every commit from here on is heard: pages read now can be kept.
                            hub.reads.notificationsArrive()
                            for try await notification in notifications { deliver(notification.payload) }
                        }
                    } catch {
                        hub.reads.notificationsLost()
                        try? await connection.close()
                        throw error
                    }
                    hub.reads.notificationsLost()
                    try? await connection.close()
                } catch {
                    if Task.isCancelled { return }
                    logger.warning("realtime: LISTEN connection lost; reconnecting", metadata: ["error": "\(error)"])
                    try? await Task.sleep(for: delay)
                    // Capped at a second: a refused connection costs nothing,
                    // and other instances' changes arrive soon after the database returns.
                    delay = min(delay * 2, .seconds(1))
                }
            }
        }
    }

    func deliver(_ payload: String) {
        if payload.hasPrefix(ListenProbe.prefix) { return probe.heard(payload) }
        Self.deliver(payload, to: hub)
    }

    static func deliver(_ payload: String, to hub: ChangeHub) {
        if payload.hasPrefix(EndedSessions.notificationPrefix) {
            if let session = ID<Session>(String(payload.dropFirst(EndedSessions.notificationPrefix.count))) {
                hub.store.endedSessions.insert([session])
            }
            return
        }
        let parts = payload.split(separator: ":")
        guard parts.count == 2, let tenant = ID<Tenant>(String(parts[0])), let sequence = Int64(parts[1]) else { return }
        hub.committed(tenant: tenant, sequence: sequence)
    }
}
