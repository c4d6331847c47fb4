import Foundation
import VroomXModels

extension TestAPI {
    /// Starts an order's pickup or delivery inspection as the app does and
    /// adds what completing it needs: the required photos, and "customer
    /// not available".
    public func readyInspection(of order: ID<Order>, vehicle: ID<Vehicle>? = nil, _ kind: Inspection.Kind,
                                token: String) async throws -> ID<Inspection> {
        let id = ID<Inspection>()
        let saved = try await call(.saveInspection, id.rawValue, json: SaveInspectionRequest(
            orderID: order, kind: kind, customerUnavailable: true, vehicleID: vehicle), token: token)
        guard saved.status == 200 else { throw TestSetupError("save \(kind) inspection: \(saved.status) \(saved.text)") }
        for slot in MediaSlot.requiredPhotos {
            let put = try await call(.putInspectionMedia, id.rawValue, slot.rawValue, bytes: MediaSamples.jpeg(size: 512), token: token)
            guard put.status == 200 else { throw TestSetupError("put \(slot): \(put.status) \(put.text)") }
        }
        return id
    }

    /// Makes and completes an order's pickup or delivery inspection, which
    /// picks the vehicle up or delivers it. Returns the completed inspection.
    @discardableResult
    public func completeInspection(of order: ID<Order>, vehicle: ID<Vehicle>? = nil, _ kind: Inspection.Kind, token: String,
                                   at occurredAt: Date? = nil) async throws -> Inspection {
        let id = try await readyInspection(of: order, vehicle: vehicle, kind, token: token)
        let completed = try await call(.completeInspection, id.rawValue, json: CompleteInspectionRequest(occurredAt: occurredAt),
                                       token: token)
        guard completed.status == 200 else { throw TestSetupError("complete \(kind) inspection: \(completed.status) \(completed.text)") }
        return try completed.decode(Inspection.self)
    }
}
