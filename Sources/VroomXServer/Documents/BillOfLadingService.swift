import Foundation
import VroomXModels

/// An order's bill of lading as a PDF, made from what is stored: the
/// carrier's profile, the order and its customer, and each inspection with
/// its photos (JPEGs embedded as they are) and signature.
struct BillOfLadingService: Sendable {
    let store: Store
    let media: any MediaStorage

    /// Files larger than this are left off the document (a phone photo is a few MB).
    static let largestPicture: Int64 = 12 << 20
    /// What one document embeds at most; further photos stay on the inspection's page.
    static let picturesBudget: Int64 = 80 << 20
    /// What an emailed document embeds at most: mail servers refuse messages over 20–25 MB.
    static let emailPicturesBudget: Int64 = 10 << 20

    func pdf(of id: ID<Order>, tenant: ID<Tenant>, picturesBudget: Int64 = Self.picturesBudget) async throws -> (number: String, bytes: [UInt8]) {
        let scope = Scope.dispatch(tenant: tenant)
        let (order, customer, inspections, keys) = try await store.read { db in
            guard let order = try await OrderRepository.find(id, scope, db) else { throw AppError.notFound("Order") }
            var customer: Customer?
            if let named = order.customerID { customer = try await CustomerRepository.find(named, tenant: tenant, db) }
            let inspections = try await InspectionRepository.of(id, tenant: tenant, db).sorted { $0.kind == .pickup && $1.kind == .delivery }
            var keys: [String: String] = [:]
            for inspection in inspections {
                for item in inspection.media where item.kind != .video {
                    keys["\(inspection.id)/\(item.slot.rawValue)"] = try await InspectionRepository.mediaKey(of: inspection.id, slot: item.slot,
                                                                                                         tenant: tenant, db)
                }
            }
            return (order, customer, inspections, keys)
        }
        let profile = try await store.carrierProfile.profile(tenant: tenant)
        let carrier = try await store.people.tenant(tenant).name
        var driver: String?, trip: String?
        if let id = order.driverID { driver = try await store.people.driver(id, tenant: tenant)?.name }
        if let id = order.tripID { trip = try await store.trips.trip(id, scope).number }
        var budget = picturesBudget
        var conditions: [BillOfLading.Condition] = []
        for inspection in inspections {
            var photos: [BillOfLading.Photo] = []
            var signature: PDFImage?
            var leftOut = 0
            var signatureLeftOut = false
            // The signature first: it is small, and a bill of lading without it is no receipt.
            for item in inspection.media.sorted(by: { ($0.kind == MediaKind.signature ? -1 : $0.slot.walkOrder) < ($1.kind == MediaKind.signature ? -1 : $1.slot.walkOrder) })
            where item.kind != .video {
                guard let key = keys["\(inspection.id)/\(item.slot.rawValue)"],
                      let image = try await picture(key, signature: item.kind == MediaKind.signature, budget: &budget) else {
                    if item.kind == .photo { leftOut += 1 } else if item.kind == MediaKind.signature { signatureLeftOut = true }
                    continue
                }
                if item.kind == MediaKind.signature { signature = image } else { photos.append((item.slot.title, image, item.captured)) }
            }
            conditions.append(.init(inspection: inspection, photos: photos, signature: signature, photosLeftOut: leftOut,
                                    signatureLeftOut: signatureLeftOut))
        }
        let bill = BillOfLading(carrierName: carrier, profile: profile, order: order, customer: customer, driver: driver ?? "Not assigned",
                                trip: trip, conditions: conditions, now: store.now)
        return (order.number, try await Self.making.withPermit { try BillOfLadingPDF.make(bill) })
    }

    /// A stored file's picture, when it is one and fits the budget.
    private func picture(_ key: String, signature: Bool, budget: inout Int64) async throws -> PDFImage? {
        guard let reader = try await media.open(key) else { return nil }
        defer { reader.close() }
        guard reader.size <= Self.largestPicture, reader.size <= budget else { return nil }
        budget -= reader.size
        return PDFImage(try await reader.prefix(Int(reader.size)), png: signature)
    }

    /// Documents made at once on this instance: each holds its photos in memory and a core busy.
    private static let making = AsyncSemaphore(permits: 2)
}
