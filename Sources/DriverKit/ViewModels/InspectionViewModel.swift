import Foundation
import GRDB
import Observation
import VroomXModels

/// One file of the inspection screen: what to frame, and where its file is
/// (missing, on its way, refused, or on the server).
public struct InspectionSlotState: Sendable, Hashable, Identifiable {
    public enum Status: Sendable, Hashable {
        case missing
        /// On the device, not on the server yet (how much of it is sent).
        case waiting(progress: Double)
        /// The server refused it: retake it (or discard it).
        case failed(reason: String, upload: String)
        case done
    }

    public let slot: MediaSlot
    public let required: Bool
    public let status: Status
    public var id: MediaSlot { slot }
    public var title: String { slot.title }
    /// The outline over the viewfinder says this.
    public var framing: String { slot.framing }

    public var statusText: String {
        switch status {
        case .missing: return required ? "Required" : "Optional"
        case .waiting(let progress): return progress > 0 ? "Uploading \(Int(progress * 100))%" : "Waiting to upload"
        case .failed(let reason, _): return "Refused: \(reason)"
        case .done: return "Uploaded"
        }
    }

    /// SF Symbol beside the slot (its status is also in words, never colour alone).
    public var symbol: String {
        switch status {
        case .missing: return slot.kind == .video ? "video" : slot.kind == .signature ? "signature" : "camera"
        case .waiting: return "arrow.up.circle"
        case .failed: return "exclamationmark.circle"
        case .done: return "checkmark.circle.fill"
        }
    }

    public var accessibilityLabel: String { "\(title), \(statusText)" }
}

/// The pickup or delivery inspection of an order (seed 002's flow): the
/// photo slots, the walkthrough video, damages, odometer and signature, and
/// whether it can be completed — all from the device, online or not.
public struct InspectionState: Sendable, Hashable {
    public let inspection: Inspection
    public let order: Order?
    public let photos: [InspectionSlotState]
    public let walkthrough: InspectionSlotState
    public let signature: InspectionSlotState
    /// Further angles the driver may add.
    public let optionalAngles: [MediaSlot]
    /// The slot for the next damage's close-up, while any is left.
    public let nextDamageSlot: MediaSlot?

    public var title: String {
        "\(inspection.kind == .pickup ? "Pickup" : "Delivery") inspection" + (order.map { " · \($0.number)" } ?? "")
    }
    /// Which of the order's vehicles this is ("Vehicle 2 of 3 · 2018 Chevrolet Silverado"), or the one vehicle.
    public var vehicleTitle: String? {
        guard let order, let vehicle = InspectionRules.vehicle(of: order, inspection.vehicleID) else { return nil }
        let position = order.vehicles.firstIndex(of: vehicle).map { $0 + 1 } ?? 1
        let name = [vehicle.summary, vehicle.color].filter { !$0.isEmpty }.joined(separator: ", ")
        return order.vehicles.count == 1 ? name : "Vehicle \(position) of \(order.vehicles.count)" + (name.isEmpty ? "" : " · \(name)")
    }
    public var isCompleted: Bool { inspection.completedAt != nil }
    /// Why "Complete" is not possible yet (nil: it is).
    public var blockedReason: String? {
        if isCompleted { return "This inspection is completed." }
        let missing = photos.filter { $0.required && $0.status == .missing }.map(\.title)
        if !missing.isEmpty { return "Take the \(missing.count == 1 ? "photo" : "photos") still missing: \(missing.joined(separator: ", "))." }
        if photos.contains(where: { if case .failed = $0.status { return true } else { return false } }) {
            return "Retake the photos the server refused."
        }
        if !inspection.customerUnavailable && signature.status == .missing {
            return "Get the customer's signature, or mark the customer not available."
        }
        return nil
    }
    public var canComplete: Bool { blockedReason == nil }

    init(inspection: Inspection, order: Order?, uploads: [UploadItem]) {
        self.inspection = inspection
        self.order = order
        let onServer = Set(inspection.media.map(\.slot))
        let queued = Dictionary(uploads.filter { $0.status != .completed }.map { ($0.slot, $0) }) { _, latest in latest }
        func state(_ slot: MediaSlot, required: Bool) -> InspectionSlotState {
            let status: InspectionSlotState.Status
            if let item = queued[slot] {
                status = item.status == .failed ? .failed(reason: item.lastError ?? "refused", upload: item.id) : .waiting(progress: item.progress)
            } else {
                status = onServer.contains(slot) ? .done : .missing
            }
            return InspectionSlotState(slot: slot, required: required, status: status)
        }
        let taken = onServer.union(queued.keys)
        photos = MediaSlot.requiredPhotos.map { state($0, required: true) }
            + (MediaSlot.optionalPhotos + MediaSlot.damagePhotos).filter(taken.contains).map { state($0, required: false) }
        walkthrough = state(.walkthrough, required: false)
        signature = state(.signature, required: false)
        optionalAngles = MediaSlot.optionalPhotos.filter { !taken.contains($0) }
        nextDamageSlot = MediaSlot.damagePhotos.first { !taken.contains($0) }
    }
}

/// Drives the inspection screen: opens (or resumes) the order's pickup or
/// delivery inspection and records everything through the outbox and the
/// upload queue, so it all works without signal.
@MainActor @Observable
public final class InspectionViewModel {
    public private(set) var lastError: String?
    public let inspectionID: ID<Inspection>
    let app: DriverApp
    let live: LiveQuery<InspectionState?>
    let read: @Sendable (Database) throws -> InspectionState?

    /// The inspection of one of the order's vehicles (by default the first).
    public init(app: DriverApp, order: ID<Order>, vehicle: ID<Vehicle>? = nil, kind: Inspection.Kind) throws {
        self.app = app
        let id = try app.startInspection(order: order, vehicle: vehicle, kind: kind)
        inspectionID = id
        read = { db in
            guard let inspection = try AppDatabase.inspection(id, db) else { return nil }
            let uploads = try Row.decodeAll(db, sql: "SELECT * FROM upload_queue WHERE inspection_id = ? ORDER BY created_at",
                                            arguments: [id.rawValue], UploadItem.init(row:))
            return InspectionState(inspection: inspection, order: try AppDatabase.order(inspection.orderID, db), uploads: uploads)
        }
        live = LiveQuery(app.database, placeholder: nil, read)
    }

    /// What the screen shows (follows the database a moment after each change).
    public var state: InspectionState? { live.value }

    /// The inspection as stored this instant: what decisions are made on.
    var current: InspectionState? { try? app.database.reader.read(read) }

    /// A photo, the video or the signature image for a slot, just taken
    /// (with the camera or on the signature pad): stamped with when and
    /// where; one chosen from the library (`justTaken: false`) is not.
    public func attach(_ file: URL, to slot: MediaSlot, justTaken: Bool = true) async {
        do {
            let captured = justTaken ? await app.captureNow() : nil
            try await app.attach(file, to: inspectionID, slot: slot, captured: captured)
            lastError = nil
        } catch {
            lastError = Self.message(error)
        }
    }

    /// What the driver typed as the odometer ("48,210"); empty clears nothing.
    public func setOdometer(_ text: String) {
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { return }
        guard let miles = DriverInput.miles(text) else {
            lastError = DriverInput.milesRule
            return
        }
        attempt { try app.updateInspection(inspectionID, odometer: miles) }
    }

    public func setNotes(_ notes: String) { attempt { try app.updateInspection(inspectionID, notes: notes) } }

    public func setCustomerUnavailable(_ unavailable: Bool) {
        attempt { try app.updateInspection(inspectionID, customerUnavailable: unavailable) }
    }

    /// The signer's name in print, beside their signature on the bill of lading.
    public func setSignerName(_ name: String) {
        attempt { try app.updateInspection(inspectionID, signerName: name) }
    }

    /// Marks a damage (its close-up goes in `photoSlot`, taken with `attach`).
    public func addDamage(_ damage: Damage) {
        let damages = (current?.inspection.damages ?? []) + [damage]
        attempt { try app.updateInspection(inspectionID, damages: damages) }
    }

    public func removeDamage(at index: Int) {
        guard var damages = current?.inspection.damages, damages.indices.contains(index) else { return }
        damages.remove(at: index)
        attempt { try app.updateInspection(inspectionID, damages: damages) }
    }

    /// Completes it: the order is picked up or delivered (on the device at
    /// once; on the server when its files are there).
    public func complete() {
        if let reason = current?.blockedReason {
            lastError = reason
            return
        }
        attempt { try app.completeInspection(inspectionID) }
    }

    /// The same stop's next vehicle not inspected yet, with the signer's
    /// name carried over: a dealer load is inspected in one pass, car after
    /// car (nil once every vehicle is done).
    public func nextVehicle() throws -> InspectionViewModel? {
        guard let state = current, let order = state.order,
              let next = InspectionRules.remaining(order, state.inspection.kind, completed: try app.database.inspections(order: order.id))
                .first(where: { $0.id != InspectionRules.vehicle(of: order, state.inspection.vehicleID)?.id }) else { return nil }
        let model = try InspectionViewModel(app: app, order: order.id, vehicle: next.id, kind: state.inspection.kind)
        if let signer = state.inspection.signerName, model.current?.inspection.signerName == nil { model.setSignerName(signer) }
        if state.inspection.customerUnavailable { model.setCustomerUnavailable(true) }
        return model
    }

    /// A refused file: send it again, or drop it to retake the photo.
    public func retry(_ upload: String) { attempt { try app.retryUpload(upload) } }
    public func discard(_ upload: String) async {
        do { try await app.discardUpload(upload) } catch { lastError = Self.message(error) }
    }

    private func attempt(_ action: () throws -> Void) {
        do {
            try action()
            lastError = nil
        } catch {
            lastError = Self.message(error)
        }
    }

    static func message(_ error: any Error) -> String {
        (error as? LocalRejection)?.message ?? "\(error)"
    }
}
