import Hummingbird
import VroomXModels

/// Tracking links through the API: dispatch makes, reads and revokes an
/// order's link; anyone holding a token reads what it shows.
struct TrackingController {
    let tracking: TrackingService

    func register(_ routes: Routes) {
        routes.on(.trackingStatus) { _, context in
            var reply = try JSONBody.response(try await tracking.status(token: context.parameters.get("token") ?? ""))
            // Whoever holds the link sees it now, and nothing on the way keeps a copy.
            reply.headers[.cacheControl] = "no-store"
            return reply
        }
        routes.on(.dispatchTrackingLink) { request, context in
            let base = tracking.base(host: request.head.authority)
            guard let link = try await tracking.link(of: try context.id(), tenant: try context.caller().tenant, base: base) else {
                throw AppError(404, .notFound, "This order has no tracking link; create one with POST.")
            }
            return try JSONBody.response(link)
        }
        routes.on(.dispatchCreateTrackingLink) { request, context in
            let base = tracking.base(host: request.head.authority)
            return try JSONBody.response(try await tracking.create(for: try context.id(), tenant: try context.caller().tenant, base: base),
                                         status: .created)
        }
        routes.on(.dispatchRevokeTrackingLink) { _, context in
            try await tracking.revoke(for: try context.id(), tenant: try context.caller().tenant)
            return JSONBody.noContent()
        }
    }
}
