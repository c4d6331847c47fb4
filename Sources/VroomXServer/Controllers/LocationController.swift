import Foundation
import Hummingbird
import VroomXModels

/// A driver's positions in; where drivers are and where a trip went, out to dispatch.
struct LocationController {
    let store: Store

    func register(_ routes: Routes) {
        routes.on(.recordLocations) { request, context in
            let body = try await JSONBody.decode(RecordLocationsRequest.self, from: request, reading: LocationBatchReader.read)
            let scope = try context.caller().scope
            // A batch reads, then writes: on SQLite's statement threads throughout, not there and back twice.
            return try await withTaskExecutorPreference(store.database.statementExecutor) {
                try JSONBody.response(try await store.location.record(body, scope))
            }
        }
        routes.on(.dispatchPositions) { _, context in
            try JSONBody.response(Items(try await store.location.positions(tenant: try context.caller().tenant)))
        }
        routes.on(.dispatchOrderProgress) { _, context in
            try JSONBody.response(try await store.location.progress(of: try context.id(), tenant: try context.caller().tenant))
        }
        routes.on(.dispatchTripTrack) { _, context in
            var response = try JSONBody.response(try await store.location.track(of: try context.id(), tenant: try context.caller().tenant))
            response.headers[.contentType] = "application/geo+json"
            return response
        }
    }
}
