import Foundation
import VroomXModels

/// The durable push queue: a push waits in the database until APNs took it,
/// so a restart loses none.
extension Store {
    static let pushLifetime: TimeInterval = 24 * 3600

    /// Queues one push per iOS device of the driver, in the notification's
    /// transaction (Android tokens are kept for a future FCM sender).
    /// `notBefore`: when they go (now by default). `replacingQueued`: a
    /// notification that gathered more drops its pushes not yet sent first.
    /// `highPriority`: at once whatever its type (work taken away).
    func enqueuePushes(for notification: DriverNotification, notBefore: Date? = nil, replacingQueued: Bool = false,
                       highPriority: Bool = false, _ tx: TenantTransaction) async throws {
        if replacingQueued {
            try await tx.execute("DELETE FROM push_queue WHERE tenant_id = \(tx.tenant) AND notification_id = \(notification.id)")
        }
        let tokens = try await tx.query("""
            SELECT t.token FROM device_tokens t JOIN drivers d ON d.tenant_id = t.tenant_id AND d.user_id = t.user_id
            WHERE d.tenant_id = \(tx.tenant) AND d.id = \(notification.driverID) AND t.platform = 'ios'
            """).map { try $0.string("token") }
        guard !tokens.isEmpty else { return }
        let unread = try await tx.first("""
            SELECT COUNT(*) AS unread FROM driver_notifications
            WHERE tenant_id = \(tx.tenant) AND driver_id = \(notification.driverID) AND read_at IS NULL
            """)?.int("unread") ?? 0
        // The badge is the driver's unread count, this notification included.
        let payload = PushPayload(
            aps: .init(alert: .init(title: notification.title, body: notification.body), badge: unread, sound: "default"),
            notificationType: notification.type, notificationID: notification.id,
            tripID: notification.data.tripID, orderID: notification.data.orderID)
        let json = try payload.encodedFitting()
        // Assignments and urgent messages go at once; the rest may wait for power-saving delivery.
        let priority = highPriority || notification.type == .urgent || notification.type == .tripAssignment ? 10 : 5
        // The newest notice about a trip (or an order on none) replaces the older one on the device: a notification
        // that gathered more replaces its own first alert.
        let collapse: String? = notification.type == .statusChange || notification.type == .tripAssignment
            ? (notification.data.tripID.map { "trip-\($0)" } ?? notification.data.orderID.map { "order-\($0)" }) : nil
        let due = max(notBefore ?? tx.now, tx.now)
        for token in tokens {
            try await tx.execute("""
                INSERT INTO push_queue (id, tenant_id, notification_id, device_token, payload, priority, collapse_id, expires_at,
                                        next_attempt_at, created_at)
                VALUES (\(UUID().uuidString.lowercased()), \(tx.tenant), \(notification.id), \(token), \(json), \(priority), \(collapse),
                        \(due.addingTimeInterval(Self.pushLifetime)), \(due), \(tx.now))
                """)
        }
    }

    struct QueuedPush: Sendable {
        let request: PushRequest
        let attempts: Int
    }

    /// Claims due pushes for `lease` seconds. Two instances never claim the
    /// same push: the UPDATE re-checks the due time on the row it locks.
    func claimDuePushes(limit: Int, lease: TimeInterval) async throws -> [QueuedPush] {
        let now = self.now
        return try await writeRows { db in
            try await db.query("""
                UPDATE push_queue SET next_attempt_at = \(now.addingTimeInterval(lease))
                WHERE id IN (SELECT id FROM push_queue WHERE status = 'pending' AND next_attempt_at <= \(now)
                             ORDER BY next_attempt_at LIMIT \(limit))
                  AND status = 'pending' AND next_attempt_at <= \(now)
                RETURNING id, device_token, payload, priority, collapse_id, expires_at, attempts
                """).map { row in
                QueuedPush(request: PushRequest(id: try row.string("id"), deviceToken: try row.string("device_token"),
                                                payload: try row.string("payload"), priority: try row.int("priority"),
                                                collapseID: try row.optionalString("collapse_id"), expiresAt: try row.date("expires_at")),
                           attempts: try row.int("attempts"))
            }
        }
    }

    /// What becomes of a push after APNs answered.
    enum PushSettlement: Sendable {
        case delivered
        /// The token is dead: forget it and everything queued for it.
        case forgetToken
        /// Try again at this time (unless out of attempts or past expiry).
        case retry(at: Date, error: String)
        case failed(error: String)
    }

    /// Records a group of outcomes in one transaction (one commit for many
    /// pushes is what lets the queue keep up with APNs).
    func settlePushes(_ settlements: [(push: PushRequest, settlement: PushSettlement)], maxAttempts: Int) async throws {
        guard !settlements.isEmpty else { return }
        let now = self.now
        var delivered: [String] = []
        var deadTokens: Set<String> = []
        for (push, settlement) in settlements {
            switch settlement {
            case .delivered: delivered.append(push.id)
            case .forgetToken: deadTokens.insert(push.deviceToken)
            case .retry, .failed: break
            }
        }
        try await writeRows { db in
            if !delivered.isEmpty {
                try await db.execute("DELETE FROM push_queue WHERE id IN (\(SQL.list(delivered)))")
            }
            if !deadTokens.isEmpty {
                try await db.execute("DELETE FROM device_tokens WHERE token IN (\(SQL.list(Array(deadTokens))))")
                try await db.execute("DELETE FROM push_queue WHERE device_token IN (\(SQL.list(Array(deadTokens))))")
            }
            for (push, settlement) in settlements {
                switch settlement {
                case .delivered, .forgetToken:
                    continue
                case .retry(let retryAt, let error):
                    try await db.execute("""
                        UPDATE push_queue SET attempts = attempts + 1, last_error = \(error), next_attempt_at = \(retryAt),
                            status = CASE WHEN attempts + 1 >= \(maxAttempts) OR expires_at <= \(retryAt) THEN 'failed' ELSE 'pending' END
                        WHERE id = \(push.id)
                        """)
                case .failed(let error):
                    try await db.execute("""
                        UPDATE push_queue SET attempts = attempts + 1, last_error = \(error), status = 'failed', next_attempt_at = \(now)
                        WHERE id = \(push.id)
                        """)
                }
            }
        }
    }

    /// Failed pushes are kept a week for support, then dropped.
    func prunePushQueue() async throws {
        let cutoff = now.addingTimeInterval(-7 * 86_400)
        try await writeRows { db in try await db.execute("DELETE FROM push_queue WHERE status = 'failed' AND created_at < \(cutoff)") }
    }

    public func pendingPushCount() async throws -> Int {
        try await read { db in try await db.first("SELECT COUNT(*) AS n FROM push_queue WHERE status = 'pending'")?.int("n") ?? 0 }
    }
}

extension PushPayload {
    /// The JSON, with the body (then the title) shortened until it fits
    /// APNs' 4 KB limit. The full text is in the app's feed.
    func encodedFitting() throws -> String {
        var payload = self
        while true {
            let json = try WireDocument.encode(payload)
            let excess = json.utf8.count - Self.maxBytes
            if excess <= 0 { return json }
            if !payload.aps.alert.body.isEmpty {
                payload.aps.alert.body = Self.shortened(payload.aps.alert.body, by: excess)
            } else if !payload.aps.alert.title.isEmpty {
                payload.aps.alert.title = Self.shortened(payload.aps.alert.title, by: excess)
            } else {
                return json // cannot happen: the rest is a few hundred bytes
            }
        }
    }

    /// Drops at least `bytes` UTF-8 bytes (whole characters) and marks the cut.
    static func shortened(_ text: String, by bytes: Int) -> String {
        let ellipsis = "…"
        let budget = text.utf8.count - bytes - ellipsis.utf8.count
        var kept = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > budget { break }
            kept.append(character)
            used += size
        }
        return kept.isEmpty ? "" : kept + ellipsis
    }
}
