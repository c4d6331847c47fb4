import Foundation
import Hummingbird
import VroomXModels

/// The page a customer's tracking link opens: one order's progress, no
/// sign-in, nothing else of the carrier's reachable from it. It refreshes
/// itself while open (`track.js`).
struct TrackingPage {
    let tracking: TrackingService
    let pages: ConsolePages
    let media: any MediaStorage

    func register(_ router: Router<AppRequestContext>) {
        router.get("/track/:token") { _, context in
            let token = context.parameters.get("token") ?? ""
            do {
                let status = try await tracking.status(token: token)
                var view = TrackingView(status, now: tracking.store.now)
                view.conditions = try await tracking.conditions(token: token).map {
                    TrackingView.Condition($0.inspection, vehicle: $0.vehicle, token: token)
                }
                return render(view, status: .ok)
            } catch let error as AppError where error.status == 404 {
                return render(TrackingView.gone, status: .notFound)
            }
        }
        // The inspection's photos and signature, to the link's holder only.
        router.get("/track/:token/media/:inspection/:slot") { request, context in
            guard let inspection = context.parameters.get("inspection").flatMap(ID<Inspection>.init) else { throw AppError.notFound("Photo") }
            let slot = MediaSlot(context.parameters.get("slot") ?? "")
            guard slot.isValid else { throw AppError.notFound("Photo") }
            let (described, key) = try await tracking.media(token: context.parameters.get("token") ?? "", inspection: inspection, slot: slot)
            var response = try await InspectionController.serve(request, contentType: described.contentType, sha256: described.sha256, key: key,
                                                                media: media)
            response.headers[.init("Referrer-Policy")!] = "no-referrer"
            // Not kept for a year in the customer's browser: the link may be revoked.
            response.headers[.cacheControl] = "private, max-age=300"
            return response
        }
    }

    private func render(_ view: TrackingView, status: HTTPResponse.Status) -> Response {
        var headers: HTTPFields = [:]
        // The link is the key: never sent on to another site.
        headers[.init("Referrer-Policy")!] = "no-referrer"
        headers[.init("X-Robots-Tag")!] = "noindex"
        let html = pages.templates.render(view, template: "track") ?? "<!doctype html><title>Tracking</title><p>This page is missing.</p>"
        var response = ConsolePages.html(html, status: status)
        for field in headers { response.headers[field.name] = field.value }
        return response
    }
}

/// What the tracking page shows.
struct TrackingView: ConsoleView {
    struct Step: ConsoleView {
        let label: String
        let done: Bool
        let current: Bool
        let time: TimeView?
    }

    let found: Bool
    let carrier: String
    var carrierPhone = ""
    let number: String
    let vehicle: String
    let statusLabel: String
    let status: String
    let from: String
    let to: String
    let pickupWindow: String
    let deliveryWindow: String
    let steps: [Step]
    /// "Expected at the delivery" lines: the driver's word and the estimate from the truck's position.
    let headingTo: String
    let driverETA: TimeView?
    let computedETA: TimeView?
    let milesToGo: String
    let updated: TimeView?
    /// The vehicle's condition at each completed inspection.
    var conditions: [Condition] = []

    struct Condition: ConsoleView {
        struct Photo: ConsoleView {
            let src: String
            let label: String
        }

        let heading: String
        let inspected: TimeView?
        let damages: [String]
        let noDamages: Bool
        let photos: [Photo]
        let signature: String?
        let signed: String

        init(_ inspection: Inspection, vehicle: String, token: String) {
            heading = (inspection.kind == .pickup ? "Condition at pickup" : "Condition at delivery") + (vehicle.isEmpty ? "" : " · \(vehicle)")
            inspected = ConsoleFormat.time(inspection.completedAt)
            damages = inspection.damages.map { "\($0.locationLabel): \($0.type.rawValue), \($0.severity.rawValue)" + ($0.note.isEmpty ? "" : " (\($0.note))") }
            noDamages = inspection.damages.isEmpty
            let base = "/track/\(token)/media/\(inspection.id)/"
            let ordered = inspection.media.sorted { $0.slot.walkOrder < $1.slot.walkOrder }
            photos = ordered.filter { $0.kind == .photo }.map { Photo(src: base + $0.slot.rawValue, label: $0.slot.title) }
            signature = ordered.first { $0.kind == .signature }.map { base + $0.slot.rawValue }
            signed = inspection.customerUnavailable ? "Nobody was there to sign."
                : inspection.signerName.map { "Signed by \($0)" } ?? (signature == nil ? "" : "Signed")
        }
    }

    static let gone = TrackingView(found: false, carrier: "", number: "", vehicle: "", statusLabel: "", status: "", from: "", to: "",
                                   pickupWindow: "", deliveryWindow: "", steps: [], headingTo: "", driverETA: nil, computedETA: nil,
                                   milesToGo: "", updated: nil)

    init(found: Bool, carrier: String, number: String, vehicle: String, statusLabel: String, status: String, from: String, to: String,
         pickupWindow: String, deliveryWindow: String, steps: [Step], headingTo: String, driverETA: TimeView?, computedETA: TimeView?,
         milesToGo: String, updated: TimeView?) {
        (self.found, self.carrier, self.number, self.vehicle, self.statusLabel, self.status) = (found, carrier, number, vehicle, statusLabel, status)
        (self.from, self.to, self.pickupWindow, self.deliveryWindow, self.steps) = (from, to, pickupWindow, deliveryWindow, steps)
        (self.headingTo, self.driverETA, self.computedETA, self.milesToGo, self.updated) = (headingTo, driverETA, computedETA, milesToGo, updated)
    }

    init(_ status: TrackingStatus, now: Date) {
        let order = status.status
        let reached = order == .pickedUp || order == .delivered
        let steps = [
            Step(label: order == .cancelled ? "Cancelled" : "Booked", done: true, current: order == .new || order == .assigned || order == .cancelled,
                 time: nil),
            Step(label: "Picked up", done: reached, current: order == .pickedUp, time: ConsoleFormat.time(status.pickedUpAt)),
            Step(label: "Delivered", done: order == .delivered, current: order == .delivered, time: ConsoleFormat.time(status.deliveredAt)),
        ]
        self.init(found: true, carrier: status.carrier, number: status.orderNumber, vehicle: status.vehicle,
                  statusLabel: order == .assigned ? "Scheduled for pickup" : order.title, status: order.rawValue, from: status.pickupCity,
                  to: status.deliveryCity, pickupWindow: status.pickupWindow ?? "", deliveryWindow: status.deliveryWindow ?? "",
                  steps: order == .cancelled ? [steps[0]] : steps,
                  headingTo: status.nextStop.map { $0 == .pickup ? "pickup" : "delivery" } ?? "",
                  driverETA: ConsoleFormat.time(status.driverETA), computedETA: ConsoleFormat.time(status.computedETA),
                  milesToGo: status.milesToGo.map { "about \(NumberText.grouped($0)) mi to go" } ?? "", updated: ConsoleFormat.time(status.updatedAt))
        carrierPhone = status.carrierPhone
    }
}
