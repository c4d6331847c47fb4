import Crypto
import Foundation
import Logging
import VroomXModels
import VroomXSecurity

/// Applies a batch of offline mutations: each in order, exactly once (keyed
/// by its id in the store's idempotent transaction), with the server's
/// current rows returned beside a rejection.
struct MutationService {
    let store: Store
    let logger: Logger

    /// Mutations applied in one transaction. One commit (and one turn of
    /// the carrier's change counter) serves them all, while a writer waiting
    /// behind a long batch waits for a hundred mutations at most.
    static let mutationsPerTransaction = 100

    /// Applies each mutation in order, each atomically and exactly once. A
    /// rejection does not stop the batch; only mutations that declared a
    /// dependency on a rejected one are skipped. A database that cannot
    /// serve (`DatabaseUnavailable`) stops it: the request answers 503 and
    /// the client sends the whole batch again (what was applied replays).
    ///
    /// Up to `mutationsPerTransaction` mutations share a transaction, each
    /// in its own savepoint, so a rejected one undoes only itself.
    func apply(_ batch: MutationBatch, identity: Identity) async throws -> [MutationResult] {
        var results: [MutationResult] = []
        var rejected: Set<ID<Mutation>> = []
        var start = batch.mutations.startIndex
        while start < batch.mutations.endIndex {
            let chunk = batch.mutations[start..<min(start + Self.mutationsPerTransaction, batch.mutations.endIndex)]
            let rejectedBefore = rejected
            // A write conflict or a deadlock runs the whole chunk again, from the state before it.
            let (chunkResults, chunkRejected) = try await store.committing(tenant: identity.tenant) { transaction in
                var rejected = rejectedBefore
                var results: [MutationResult] = []
                for mutation in chunk {
                    results.append(try await apply(mutation, in: transaction, identity: identity, rejected: &rejected))
                }
                return (results, rejected)
            }
            results += chunkResults
            rejected = chunkRejected
            start = chunk.endIndex
        }
        return results
    }

    /// One mutation of a batch, inside the batch's transaction.
    private func apply(_ mutation: Mutation, in transaction: TenantTransaction, identity: Identity,
                       rejected: inout Set<ID<Mutation>>) async throws -> MutationResult {
        let scope = identity.scope
        if let failed = mutation.dependsOn.first(where: rejected.contains) {
            rejected.insert(mutation.id)
            return MutationResult(id: mutation.id, outcome: .rejected, code: .dependencyFailed,
                                  message: "Not applied: mutation \(failed) it depends on was rejected.")
        }
        do {
            let (stored, replayed) = try await store.idempotent(
                in: transaction, user: identity.user, key: mutation.id.rawValue, requestHash: try Self.hash(mutation)
            ) {
                let (row, order) = try await execute(mutation, scope)
                let result = MutationResult(id: mutation.id, outcome: .applied, row: row, order: order)
                return Store.StoredReply(status: 200, body: String(decoding: try JSONBody.encoder.encode(result), as: UTF8.self))
            }
            var result = try JSONBody.decoder.decode(MutationResult.self, from: Data(stored.body.utf8))
            result.replayed = replayed
            return result
        } catch {
            let answer = ErrorMiddleware.appError(for: error)
            // Without the database or storage nothing else in the batch can land either: the client retries it whole.
            if answer.status == 503 || answer.status == 507 { throw error }
            rejected.insert(mutation.id)
            if answer.status >= 500 {
                // One change the server cannot apply must not hold up the others behind it: it is
                // answered on its own (`internal_error`, which the app retries later) and the batch goes on.
                logger.error("mutation failed", metadata: ["kind": "\(mutation.kind.rawValue)", "error": "\(String(reflecting: error))"])
            }
            // The truth as this transaction sees it, earlier mutations of the batch included.
            let truth = answer.status < 500 ? try? await transaction.step { try await currentRows(of: mutation, scope, transaction.db) } : nil
            return MutationResult(id: mutation.id, outcome: .rejected, code: answer.code, message: answer.body.message,
                                  row: truth?.row, order: truth?.order)
        }
    }

    /// Applies one mutation: the row it changed, and for an inspection its
    /// order (which completing the inspection moves).
    func execute(_ mutation: Mutation, _ scope: Scope) async throws -> (row: ChangeRow?, order: Order?) {
        switch mutation.payload {
        case .updateOrderStatus(let change):
            return (.order(try await store.updateOrderStatus(change.orderID, to: change.status, occurredAt: change.occurredAt, scope)), nil)
        case .updateOrderETA(let change):
            return (.order(try await store.updateETA(change.orderID, pickup: change.pickupETA, delivery: change.deliveryETA,
                                                     expected: change.expected, baseVersion: mutation.baseVersion, scope)), nil)
        case .createExpense(let request):
            guard request.id != nil else { throw AppError.validation("payload.id", "An offline expense carries its own id.") }
            return (.expense(try await store.createExpense(request, scope)), nil)
        case .deleteExpense(let reference):
            try await store.deleteExpense(reference.expenseID, scope)
            return (nil, nil)
        case .markNotificationRead(let reference):
            return (.notification(try await store.markNotificationRead(reference.notificationID, scope)), nil)
        case .saveInspection(let save):
            let inspection = try await store.saveInspection(save.inspectionID, save.inspection, scope)
            return (.inspection(inspection), nil)
        case .completeInspection(let reference):
            let (inspection, order) = try await store.completeInspection(reference.inspectionID, occurredAt: reference.occurredAt, scope)
            return (.inspection(inspection), order)
        case .recordOdometer(let request):
            guard request.id != nil else { throw AppError.validation("payload.id", "An offline odometer reading carries its own id.") }
            return (.equipment(try await store.recordOdometer(request, scope).unit), nil)
        case .recordLocations(let request):
            // Positions are not rows of the device's cache; the arrivals they make reach it through the feed.
            _ = try await store.recordLocations(request, scope)
            return (nil, nil)
        }
    }

    /// The server's current rows, returned with a rejection so the client can
    /// put the truth back in its cache.
    func currentRows(of mutation: Mutation, _ scope: Scope, _ db: any SQLExecutor) async throws -> (row: ChangeRow?, order: Order?) {
        switch mutation.payload {
        case .updateOrderStatus(let change): return (try await store.fetchOrder(change.orderID, scope, db).map(ChangeRow.order), nil)
        case .updateOrderETA(let change): return (try await store.fetchOrder(change.orderID, scope, db).map(ChangeRow.order), nil)
        case .saveInspection(let save):
            // An inspection refused at its start has no row: the client drops its copy.
            let inspection = try await store.fetchVisibleInspection(save.inspectionID, scope, db)
            return (inspection.map(ChangeRow.inspection), try await store.fetchOrder(save.inspection.orderID, scope, db))
        case .completeInspection(let reference):
            guard let inspection = try await store.fetchVisibleInspection(reference.inspectionID, scope, db) else { return (nil, nil) }
            return (.inspection(inspection), try await store.fetchOrder(inspection.orderID, scope, db))
        case .recordOdometer(let request): return (try await store.fetchEquipment(request.equipmentID, scope, db).map(ChangeRow.equipment), nil)
        case .createExpense, .deleteExpense, .markNotificationRead, .recordLocations: return (nil, nil)
        }
    }

    static func hash(_ mutation: Mutation) throws -> String {
        SHA256.hash(data: try JSONBody.encoder.encode(mutation)).hexString
    }
}
