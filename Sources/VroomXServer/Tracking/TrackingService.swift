import Foundation
import VroomXModels

/// Links a carrier gives its customer to follow one order: made and revoked
/// by dispatch, read by anyone holding the token, and showing that order's
/// progress alone. A link works until it is revoked or replaced, and ends
/// `TrackingRules.keptAfterDone` after the order is delivered or cancelled.
struct TrackingService: Sendable {
    let store: Store
    let tokens: TrackingToken
    /// The server's address as customers reach it (`VROOMX_PUBLIC_URL`), else the request's.
    let publicURL: String?

    // MARK: Dispatch

    /// The order's live link, if it has one that still works.
    func link(of order: ID<Order>, tenant: ID<Tenant>, base: String) async throws -> TrackingLink? {
        try await store.read { db in
            guard let found = try await OrderRepository.find(order, .dispatch(tenant: tenant), db) else { throw AppError.notFound("Order") }
            guard let row = try await TrackingRepository.live(of: order, tenant: tenant, db) else { return nil }
            let expiry = try await Self.expiry(of: found, tenant: tenant, db)
            // An expired link is no link, here as for the customer.
            if let expiry, expiry <= store.now { return nil }
            return link(row, found, expiry: expiry, base: base)
        }
    }

    /// A new link for the order; one it had stops working.
    func create(for order: ID<Order>, tenant: ID<Tenant>, base: String) async throws -> TrackingLink {
        try await store.write(tenant: tenant) { tx in
            guard let found = try await OrderRepository.find(order, .dispatch(tenant: tenant), tx.db) else { throw AppError.notFound("Order") }
            let expiry = try await Self.expiry(of: found, tenant: tenant, tx.db)
            if let expiry, expiry <= tx.now {
                throw AppError(409, .invalidTransition, "Order \(found.number) was \(found.status.title.lowercased()) more than a week ago: there is nothing left to follow.")
            }
            _ = try await TrackingRepository.revoke(of: order, tx)
            let id = UUID()
            try await TrackingRepository.insert(id, order: order, tx)
            return link(TrackingRepository.Row(id: id, tenant: tenant, order: order, createdAt: tx.now), found, expiry: expiry, base: base)
        }
    }

    /// Whether a dispatcher ever revoked a link of the order.
    func wasRevoked(_ order: ID<Order>, tenant: ID<Tenant>) async throws -> Bool {
        try await store.read { try await TrackingRepository.anyRevoked(of: order, tenant: tenant, $0) }
    }

    /// Ends the order's link (nothing when it has none).
    func revoke(for order: ID<Order>, tenant: ID<Tenant>) async throws {
        try await store.write(tenant: tenant) { tx in
            guard try await OrderRepository.find(order, .dispatch(tenant: tenant), tx.db) != nil else { throw AppError.notFound("Order") }
            _ = try await TrackingRepository.revoke(of: order, tx, byDispatcher: true)
        }
    }

    private func link(_ row: TrackingRepository.Row, _ order: Order, expiry: Date?, base: String) -> TrackingLink {
        let token = tokens.token(for: row.id)
        return TrackingLink(orderID: order.id, token: token, url: base + "/track/" + token, createdAt: row.createdAt, expiresAt: expiry)
    }

    /// The address links are written under: the configured public one, or
    /// the host the request came to when it is a plain host name (a forged
    /// Host header never shapes a link a customer is sent).
    func base(host: String?) -> String {
        if let publicURL { return publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL }
        let plain = host.map { host in
            !host.isEmpty && host.utf8.count <= 255
                && host.utf8.allSatisfy { $0 < 128 && (Character(UnicodeScalar($0)).isLetter || Character(UnicodeScalar($0)).isNumber || "-.:[]".utf8.contains($0)) }
        } ?? false
        return "http://" + (plain ? host ?? "localhost" : "localhost")
    }

    // MARK: The customer

    /// What the link shows; `not_found` alike for a token that was never
    /// given, one revoked or replaced, and one whose order is long done.
    func status(token: String) async throws -> TrackingStatus {
        guard let id = tokens.link(of: token) else { throw Self.gone }
        let found: (Order, Tenant, Date?, CarrierProfile?)? = try await store.read { db in
            guard let row = try await TrackingRepository.live(id, db),
                  let order = try await OrderRepository.find(row.order, .dispatch(tenant: row.tenant), db),
                  let tenant = try await AccountRepository.tenant(row.tenant, db) else { return nil }
            return (order, tenant, try await Self.expiry(of: order, tenant: row.tenant, db), try await CarrierProfileRepository.find(tenant: row.tenant, db))
        }
        guard let (order, carrier, expiry, profile) = found else { throw Self.gone }
        if let expiry, expiry <= store.now { throw Self.gone }
        let progress = try await store.location.progress(of: order.id, tenant: carrier.id)
        // Only a truck followed now says how far it is: a paused or silent phone shows the driver's word alone.
        let live = progress.position.map { store.now.timeIntervalSince($0.recordedAt) <= TrackingRules.livePositionAge } ?? false
        let updated = [order.updatedAt, live ? progress.position?.recordedAt : nil].compactMap { $0 }.max() ?? order.updatedAt
        return TrackingStatus(
            carrier: profile.map { $0.legalName.isEmpty ? carrier.name : $0.legalName } ?? carrier.name,
            carrierPhone: profile?.phone ?? "", orderNumber: order.number,
            vehicle: order.vehicles.count > 1 ? order.vehiclesSummary
                : [order.vehicle.summary, order.vehicle.color].filter { !$0.isEmpty }.joined(separator: ", "),
            status: order.status, pickupCity: TrackingRules.city(of: order.pickup.address),
            deliveryCity: TrackingRules.city(of: order.delivery.address),
            pickupWindow: DayFormat.span(order.pickup.windowStart, order.pickup.windowEnd),
            deliveryWindow: DayFormat.span(order.delivery.windowStart, order.delivery.windowEnd),
            pickedUpAt: order.actualPickupDate, deliveredAt: order.actualDeliveryDate, nextStop: progress.nextStop,
            driverETA: progress.driverETA, computedETA: live ? progress.computedETA.map(TrackingRules.roughTime) : nil,
            milesToGo: live ? progress.distanceMeters.map(TrackingRules.roughMiles) : nil, updatedAt: updated)
    }

    /// The order's completed inspections, as the customer sees them with
    /// their photos (nothing while one is still open on the driver's phone),
    /// pickup before delivery, vehicle by vehicle; each with the vehicle it
    /// is about when the load has several ("Vehicle 2 · 2018 Ford F-150").
    func conditions(token: String) async throws -> [(inspection: Inspection, vehicle: String)] {
        let (order, tenant) = try await linked(token)
        let inspections = try await store.read { db in
            try await InspectionRepository.of(order.id, tenant: tenant, db).filter { $0.completedAt != nil }
        }
        func position(_ inspection: Inspection) -> Int { InspectionRules.position(of: inspection, in: order) }
        return inspections.filter { position($0) < order.vehicles.count }
            .sorted { ($0.kind == .pickup ? 0 : 1, position($0)) < ($1.kind == .pickup ? 0 : 1, position($1)) }.map { inspection in
            let index = position(inspection)
            guard order.vehicles.count > 1, order.vehicles.indices.contains(index) else { return (inspection, "") }
            let summary = order.vehicles[index].summary
            return (inspection, "Vehicle \(index + 1)" + (summary.isEmpty ? "" : " · \(summary)"))
        }
    }

    /// A photo or the signature of one of the linked order's completed inspections, and its storage key.
    func media(token: String, inspection: ID<Inspection>, slot: MediaSlot) async throws -> (InspectionMedia, String) {
        let (order, tenant) = try await linked(token)
        return try await store.read { db in
            guard let found = try await InspectionRepository.find(inspection, tenant: tenant, db), found.orderID == order.id,
                  found.completedAt != nil, let media = found.media.first(where: { $0.slot == slot }), media.kind != .video,
                  let key = try await InspectionRepository.mediaKey(of: inspection, slot: slot, tenant: tenant, db) else {
                throw AppError.notFound("Photo")
            }
            return (media, key)
        }
    }

    /// The order a live, unexpired token names.
    private func linked(_ token: String) async throws -> (Order, ID<Tenant>) {
        guard let id = tokens.link(of: token) else { throw Self.gone }
        let found: (Order, ID<Tenant>, Date?)? = try await store.read { db in
            guard let row = try await TrackingRepository.live(id, db),
                  let order = try await OrderRepository.find(row.order, .dispatch(tenant: row.tenant), db) else { return nil }
            return (order, row.tenant, try await Self.expiry(of: order, tenant: row.tenant, db))
        }
        guard let (order, tenant, expiry) = found, expiry.map({ $0 > store.now }) ?? true else { throw Self.gone }
        return (order, tenant)
    }

    static let gone = AppError(404, .notFound, "This tracking link is not valid or has expired.")

    /// When a link to the order stops working: a week after it was
    /// delivered or cancelled (by its history: an edit after that moves nothing).
    static func expiry(of order: Order, tenant: ID<Tenant>, _ db: any SQLExecutor) async throws -> Date? {
        switch order.status {
        case .delivered: return (order.actualDeliveryDate ?? order.updatedAt).addingTimeInterval(TrackingRules.keptAfterDone)
        case .cancelled:
            let cancelled = try await OrderRepository.reached(.cancelled, order.id, tenant: tenant, db) ?? order.updatedAt
            return cancelled.addingTimeInterval(TrackingRules.keptAfterDone)
        case .new, .assigned, .pickedUp: return nil
        }
    }
}
