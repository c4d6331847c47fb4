import Foundation
import Hummingbird
import Logging
import NIOCore
import VroomXModels

/// The change feed and the batch of offline mutations, over HTTP (the
/// mutations themselves are applied by `MutationService`).
struct SyncController {
    let store: Store
    let logger: Logger
    static let defaultPageSize = 500
    static let maxBatch = 500

    func register(_ routes: Routes) {
        routes.on(.sync) { request, context in
            let scope = try context.caller().scope
            let since = try request.integer(.since) ?? 0
            let limit = try request.count(.syncLimit) ?? Self.defaultPageSize
            let snapshotAfter = request.text(.snapshotAfter)
            let page: Store.FeedPage
            if since == 0 || snapshotAfter != nil {
                page = try await store.snapshot(after: snapshotAfter, cursor: snapshotAfter == nil ? nil : since, limit: limit, scope)
            } else {
                page = try await store.feed(since: since, limit: limit, scope)
            }
            return Self.reply(page)
        }
        routes.on(.mutations) { request, context in
            let batch = try await request.decodeJSON(MutationBatch.self)
            guard batch.mutations.count <= Self.maxBatch else {
                throw AppError.validation("mutations", "A batch holds at most \(Self.maxBatch) mutations.")
            }
            let results = try await MutationService(store: store, logger: logger).apply(batch, identity: try context.caller())
            return try JSONBody.response(MutationBatchResult(results))
        }
    }

    /// The page as JSON, with each row's stored document spliced in.
    static func reply(_ page: Store.FeedPage) -> Reply {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(FeedJSON.capacity(page.changes))
        buffer.writeStaticString("{\"changes\":")
        FeedJSON.write(page.changes, into: &buffer)
        buffer.writeString(",\"cursor\":\(page.cursor),\"has_more\":\(page.hasMore),\"reset\":\(page.reset)")
        if let after = page.snapshotAfter { buffer.writeString(",\"snapshot_after\":\"\(after)\"") }
        buffer.writeStaticString("}")
        return Reply(status: .ok, body: buffer)
    }
}
