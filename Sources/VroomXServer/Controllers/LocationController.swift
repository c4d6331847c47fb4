import Foundation
import Hummingbird
import VroomXModels

/// A driver's positions in; where drivers are and where a trip went, out to dispatch.
struct LocationController {
    let store: Store

    func register(_ routes: Routes) {
        routes.on(.recordLocations) { request, context in
            let body = try await request.decodeJSON(RecordLocationsRequest.self)
            return try JSONBody.response(try await store.recordLocations(body, try context.caller().scope))
        }
        routes.on(.dispatchPositions) { _, context in
            try JSONBody.response(Items(try await store.positions(tenant: try context.caller().tenant)))
        }
        routes.on(.dispatchOrderProgress) { _, context in
            try JSONBody.response(try await store.progress(of: try context.id(), tenant: try context.caller().tenant))
        }
        routes.on(.dispatchTripTrack) { _, context in
            var response = try JSONBody.response(try await store.track(of: try context.id(), tenant: try context.caller().tenant))
            response.headers[.contentType] = "application/geo+json"
            return response
        }
    }
}
