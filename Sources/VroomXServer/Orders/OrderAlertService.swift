import Foundation
import VroomXModels

/// Dispatch is told when an order becomes late or at risk, and again only
/// as it gets further (the pickup at risk, late, the delivery at risk, late)
/// (`Order.timeliness`): every console page announces it, and the carrier's
/// alert address gets it by email when it gave one. An order's own facts
/// (its windows, the driver's ETA, its status) are judged whenever it is
/// saved; the calendar and the truck's position by a sweep every few minutes.
public struct OrderAlertService: Sendable {
    let store: Store
    /// Orders read at once by the sweep (it pages through those due).
    static let sweepPage = 500

    /// Within the write that saved `order`: alerts when it is late or at
    /// risk and no alert told of it yet. Returns whether it alerted.
    @discardableResult
    static func alertIfDue(_ order: Order, computedETA: Date? = nil, _ tx: TenantTransaction) async throws -> Bool {
        guard let standing = order.timeliness(today: LocalDate(tx.now), computedETA: computedETA) else { return false }
        guard try await OrderRepository.markAlerted(order.id, rank: standing.rank, text: order.alertText(standing, computedETA: computedETA), tx) else {
            return false
        }
        if let profile = try await CarrierProfileRepository.find(tenant: tx.tenant, tx.db), !profile.alertEmail.isEmpty {
            try await QueuedMailRepository.orderAlerts.enqueue(order.id.rawValue, recipient: profile.alertEmail, tx)
        }
        return true
    }

    /// Every carrier's open orders whose next window ends by tomorrow and
    /// that no alert told of: late by the calendar, or at risk by the
    /// driver's ETA or the truck's position. Returns how many it alerted.
    public func sweep() async throws -> Int {
        var alerted = 0
        let tomorrow = LocalDate(store.now).adding(days: 1)
        for tenant in try await store.people.tenants() {
            let due = try await store.read { try await OrderRepository.dueForAlert(by: tomorrow, tenant: tenant.id, $0) }
            var positions: [ID<Driver>: [GeoPosition]] = [:]
            for first in stride(from: 0, to: due.count, by: Self.sweepPage) {
                let page = Array(due[first..<min(first + Self.sweepPage, due.count)])
                for (order, alertedRank) in try await store.read({ try await OrderRepository.withAlertRank(page, dueBy: tomorrow, tenant: tenant.id, $0) }) {
                    var computed: Date?
                    if let driver = order.driverID {
                        if positions[driver] == nil {
                            positions[driver] = try await store.read { try await LocationRepository.latestFixes(of: driver, tenant: tenant.id, limit: 60, $0) }
                        }
                        // The truck's position counts when its last two fixes agree: one that jumped a continent away does not alert.
                        let recent = positions[driver] ?? []
                        if let latest = LocationService.computedETA(of: order, recent: recent, now: store.now),
                           let before = LocationService.computedETA(of: order, recent: Array(recent.dropFirst()), now: store.now) {
                            computed = min(latest, before)
                        }
                    }
                    // Told of already (a pickup still late, sweep after sweep): nothing to write.
                    guard let standing = order.timeliness(today: LocalDate(store.now), computedETA: computed),
                          standing.rank > alertedRank else { continue }
                    let told = try await store.write(tenant: tenant.id) { tx in
                        // Changed since it was read: its save judged it, the next sweep looks again.
                        guard let current = try await OrderRepository.find(order.id, .dispatch(tenant: tx.tenant), tx.db),
                              current.version == order.version, try await Self.alertIfDue(current, computedETA: computed, tx) else { return false }
                        // The console hears of it through the feed, as of any change to the order.
                        tx.recordUpsert(.order, id: current.id.rawValue, document: try WireDocument.encode(current), visibleTo: current.driverID)
                        return true
                    }
                    if told { alerted += 1 }
                }
            }
        }
        return alerted
    }

    /// The email of an alert: what is wrong, and where to see the order
    /// (`consoleBase`: the server's public address, when it has one).
    func message(for entry: QueuedMailRepository.Entry, consoleBase: String?) async throws -> MailMessage {
        guard let id = ID<Order>(entry.subject) else { throw AppError.notFound("Order") }
        let order = try await store.orders.order(id, .dispatch(tenant: entry.tenant))
        guard let alert = try await store.read({ try await OrderRepository.alert(of: id, tenant: entry.tenant, $0) }) else {
            throw AppError.notFound("Alert")
        }
        var lines = ["Order \(order.number)" + (order.externalLoadID.map { " (load \($0))" } ?? "") + ": \(alert.text).", "",
                     "Vehicle: \(order.vehiclesSummary.isEmpty ? "not described" : order.vehiclesSummary)",
                     "Pickup: \(order.pickup.address)", "Delivery: \(order.delivery.address)"]
        if let base = consoleBase { lines += ["", "Open it: \(base)/orders/\(order.id)"] }
        return MailMessage(to: entry.recipient, subject: "\(alert.text.prefix { $0 != ":" }): order \(order.number)", body: lines.joined(separator: "\n"))
    }
}

extension Store {
    /// Alerts to dispatch of late and at-risk orders.
    public var orderAlerts: OrderAlertService { OrderAlertService(store: self) }
}
