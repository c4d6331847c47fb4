import Foundation
import HTTPTypes
import Hummingbird
import VroomXModels

/// Photos of a unit, for a driver on their own units and dispatch on every
/// unit: a one-request upload (larger files resume through the tus uploads
/// with `equipment_id` in their metadata), authenticated downloads with
/// ranges, and deletion.
struct UnitPhotoController {
    let store: Store
    let media: any MediaStorage
    let uploads: UploadService

    func register(_ routes: Routes) {
        routes.onResponse(.addUnitPhoto) { request, context in
            let identity = try context.caller()
            let unit: ID<Equipment> = try context.id()
            try await uploads.putWhole(request, to: .unitPhoto(unit), identity)
            return try JSONBody.response(try await store.fleet.unit(unit, identity.scope), status: .created).response
        }
        routes.onResponse(.unitPhoto) { request, context in
            let (photo, key) = try await store.fleet.photo(try context.id(), photo: try context.id("photo"), try context.caller().scope)
            return try await InspectionController.serve(request, contentType: photo.contentType, sha256: photo.sha256, key: key, media: media)
        }
        routes.on(.deleteUnitPhoto) { _, context in
            let identity = try context.caller()
            let (unit, key) = try await store.fleet.deletePhoto(try context.id(), photo: try context.id("photo"), user: identity.user,
                                                              identity.scope)
            await media.removeOnceCommitted(key)
            return try JSONBody.response(unit)
        }
    }
}
