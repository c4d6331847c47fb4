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
    func apply(_ batch: MutationBatch, identity: Identity) async throws -> [MutationResult] {
        guard Set(batch.mutations.map(\.id)).count == batch.mutations.count else {
            throw AppError.validation("mutations", "Each mutation in a batch needs its own id.")
        }
        var results: [MutationResult] = []
        var rejected: Set<ID<Mutation>> = []
        var start = batch.mutations.startIndex
        while start < batch.mutations.endIndex {
            let chunk = batch.mutations[start..<min(start + Self.mutationsPerTransaction, batch.mutations.endIndex)]
            let (chunkResults, chunkRejected) = try await applyInOneTransaction(chunk, identity: identity, rejected: rejected)
            results += chunkResults
            for result in chunkResults {
                (result.replayed == true ? ServerMetrics.mutationsReplayed
                    : result.outcome == .applied ? ServerMetrics.mutationsApplied : ServerMetrics.mutationsRejected).increment()
            }
            rejected = chunkRejected
            start = chunk.endIndex
        }
        return results
    }

    /// Up to `mutationsPerTransaction` mutations in one transaction, first
    /// all at once: their keys claimed in one statement and their answers
    /// stored in another. When one of them is refused there, that
    /// transaction is rolled back and they run again, each in a savepoint
    /// of its own, so a refusal undoes only itself. (A write conflict or a
    /// deadlock runs a transaction again from the state before it.)
    private func applyInOneTransaction(_ chunk: ArraySlice<Mutation>, identity: Identity,
                                       rejected before: Set<ID<Mutation>>) async throws -> ([MutationResult], Set<ID<Mutation>>) {
        do {
            return try await store.committing(tenant: identity.tenant) { transaction in
                try await applyAtOnce(chunk, in: transaction, identity: identity, rejected: before, pairs: CancellingPairs(chunk))
            }
        } catch is RefusedAtOnce {
            return try await store.committing(tenant: identity.tenant) { transaction in
                var rejected = before
                var results: [MutationResult] = []
                let pairs = CancellingPairs(chunk)
                for mutation in chunk {
                    results.append(try await applyInSavepoint(mutation, in: transaction, identity: identity, rejected: &rejected, pairs: pairs))
                }
                return (results, rejected)
            }
        }
    }

    /// A mutation was refused where nothing but the whole transaction can
    /// undo what it wrote before the refusal.
    private struct RefusedAtOnce: Error {}

    private func applyAtOnce(_ chunk: ArraySlice<Mutation>, in transaction: TenantTransaction, identity: Identity,
                             rejected before: Set<ID<Mutation>>, pairs: CancellingPairs) async throws -> ([MutationResult], Set<ID<Mutation>>) {
        var rejected = before
        // A mutation skipped for a refused dependency claims no key.
        let plan: [(mutation: Mutation, step: PlannedStep)] = try chunk.map { mutation in
            if let failed = Self.failedDependency(of: mutation, rejected: &rejected) { return (mutation, .skipped(after: failed)) }
            return (mutation, .keyed(requestHash: try Self.hash(mutation)))
        }
        let keys = plan.compactMap { mutation, step -> (key: String, requestHash: String)? in
            guard case .keyed(let requestHash) = step else { return nil }
            return (mutation.id.rawValue, requestHash)
        }
        let seen = try await store.claim(keys, user: identity.user, in: transaction)
        var answers: [Store.Answer] = []
        var results: [MutationResult] = []
        for (mutation, step) in plan {
            let requestHash: String
            switch step {
            case .skipped(let failed):
                results.append(Self.dependencyFailed(mutation, failed))
                continue
            case .keyed(let hash):
                requestHash = hash
            }
            let key = mutation.id.rawValue
            if let stored = seen[key] {
                // A reused key (idempotency_key_reused) or an answer that no longer reads is told in a savepoint, for that mutation alone.
                guard stored.requestHash == requestHash, let result = try? Self.result(stored.reply, replayed: true) else {
                    throw RefusedAtOnce()
                }
                results.append(result)
                continue
            }
            let reply: Store.StoredReply
            do {
                reply = try await TenantTransaction.$ambient.withValue(transaction) { try await appliedReply(mutation, identity.scope, pairs) }
            } catch {
                // Without the database or storage nothing else can land either: the client retries the batch whole.
                if [503, 507].contains(ErrorMiddleware.appError(for: error).status) { throw error }
                throw RefusedAtOnce()
            }
            guard let result = try? Self.result(reply, replayed: false) else { throw RefusedAtOnce() }
            answers.append(Store.Answer(key: key, requestHash: requestHash, reply: reply))
            results.append(result)
        }
        try await store.storeAnswers(answers, user: identity.user, in: transaction)
        return (results, rejected)
    }

    /// One mutation in a savepoint of its own inside the batch's transaction.
    private func applyInSavepoint(_ mutation: Mutation, in transaction: TenantTransaction, identity: Identity,
                                  rejected: inout Set<ID<Mutation>>, pairs: CancellingPairs) async throws -> MutationResult {
        let scope = identity.scope
        if let failed = Self.failedDependency(of: mutation, rejected: &rejected) { return Self.dependencyFailed(mutation, failed) }
        do {
            let requestHash = try Self.hash(mutation)
            let (stored, replayed) = try await transaction.step {
                try await store.idempotent(in: transaction, user: identity.user, key: mutation.id.rawValue, requestHash: requestHash) {
                    try await appliedReply(mutation, scope, pairs)
                }
            }
            return try Self.result(stored, replayed: replayed)
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
            // The truth as this transaction sees it, earlier mutations of the batch included. Missing it is
            // no reason to refuse the batch; a transaction the database ended is.
            var truth: (row: ChangeRow?, order: Order?)?
            if answer.status < 500 {
                do {
                    truth = try await transaction.step { try await currentRows(of: mutation, scope, transaction.db) }
                } catch let lost as DatabaseUnavailable {
                    throw lost
                } catch {
                    truth = nil
                }
            }
            return MutationResult(id: mutation.id, outcome: .rejected, code: answer.code, message: answer.body.message,
                                  row: truth?.row, order: truth?.order)
        }
    }

    /// Applies the mutation; its answer as stored for replay.
    private func appliedReply(_ mutation: Mutation, _ scope: Scope, _ pairs: CancellingPairs) async throws -> Store.StoredReply {
        let applied = try await TenantTransaction.$mutation.withValue(mutation.id) {
            let transaction = TenantTransaction.ambient
            let recorded = transaction?.recordedCount
            let applied = try await pairs.cancels(mutation, store: store, scope) ? Applied() : try await execute(mutation, scope)
            // One that changed nothing (the status the order already had, the same ETA) still tells the device it was applied.
            if let transaction, transaction.recordedCount == recorded, let row = applied.row, let driver = scope.driverID,
               let current = try await lockedCurrentRow(row, scope, transaction.db) {
                try transaction.recordUnchanged(current, for: driver)
            }
            return applied
        }
        let result = MutationResult(id: mutation.id, outcome: .applied, row: applied.row, order: applied.order, positions: applied.positions)
        return Store.StoredReply(status: 200, body: try WireJSON.string(result))
    }

    /// The answer as the client receives it, the same whether fresh or replayed.
    private static func result(_ reply: Store.StoredReply, replayed: Bool) throws -> MutationResult {
        var result = try JSONBody.decoder.decode(MutationResult.self, from: Data(reply.body.utf8))
        result.replayed = replayed
        return result
    }

    private enum PlannedStep {
        case skipped(after: ID<Mutation>)
        case keyed(requestHash: String)
    }

    /// The refused mutation this one depends on, if any; it is then refused too.
    private static func failedDependency(of mutation: Mutation, rejected: inout Set<ID<Mutation>>) -> ID<Mutation>? {
        guard let failed = mutation.dependsOn.first(where: rejected.contains) else { return nil }
        rejected.insert(mutation.id)
        return failed
    }

    private static func dependencyFailed(_ mutation: Mutation, _ failed: ID<Mutation>) -> MutationResult {
        MutationResult(id: mutation.id, outcome: .rejected, code: .dependencyFailed,
                       message: "Not applied: mutation \(failed) it depends on was rejected.")
    }

    /// What applying one mutation produced.
    struct Applied {
        var row: ChangeRow? = nil
        /// For an inspection, its order (which completing the inspection moves).
        var order: Order? = nil
        /// For a batch of positions, what became of its fixes.
        var positions: RecordLocationsResult? = nil
    }

    /// Applies one mutation.
    func execute(_ mutation: Mutation, _ scope: Scope) async throws -> Applied {
        switch mutation.payload {
        case .updateOrderStatus(let change):
            return Applied(row: .order(try await store.orders.updateStatus(change.orderID, to: change.status, occurredAt: change.occurredAt, scope)))
        case .updateOrderETA(let change):
            return Applied(row: .order(try await store.orders.updateETA(change.orderID, pickup: change.pickupETA, delivery: change.deliveryETA,
                                                                 expected: change.expected, baseVersion: mutation.baseVersion, scope)))
        case .createExpense(let request):
            guard request.id != nil else { throw AppError.validation("payload.id", "An offline expense carries its own id.") }
            return Applied(row: .expense(try await store.expenses.create(request, scope)))
        case .deleteExpense(let reference):
            try await store.expenses.delete(reference.expenseID, scope)
            return Applied()
        case .markNotificationRead(let reference):
            return Applied(row: .notification(try await store.notifications.markRead(reference.notificationID, readAt: reference.readAt, scope)))
        case .saveInspection(let save):
            return Applied(row: .inspection(try await store.inspections.save(save.inspectionID, save.inspection, scope)))
        case .completeInspection(let reference):
            let (inspection, order) = try await store.inspections.complete(reference.inspectionID, occurredAt: reference.occurredAt, scope)
            return Applied(row: .inspection(inspection), order: order)
        case .recordOdometer(let request):
            guard request.id != nil else { throw AppError.validation("payload.id", "An offline odometer reading carries its own id.") }
            return Applied(row: .equipment(try await store.fleet.recordOdometer(request, scope).unit))
        case .recordLocations(let request):
            // Positions are not rows of the device's cache; the arrivals they make reach it through the feed.
            return Applied(positions: try await store.location.record(request, scope))
        case .collectPayment(let request):
            // A payment is dispatch's record, not a row of the driver's cache.
            _ = try await store.invoices.collect(request, scope)
            return Applied()
        case .startTrip(let reference):
            return Applied(row: .trip(try await store.trips.start(reference.tripID, scope)))
        case .sendMessage(let request):
            return Applied(row: .message(try await store.conversations.send(request, scope)))
        case .acknowledgeNotification(let reference):
            return Applied(row: .notification(try await store.notifications.acknowledge(reference.notificationID, at: reference.readAt, scope)))
        case .reportStopProblem(let request):
            return Applied(row: .order(try await store.orders.reportProblem(request, scope)))
        }
    }

    /// The row a mutation that changed nothing returned, read again in the
    /// driver's scope and, on PostgreSQL, locked until commit (with what
    /// decides who sees it): dispatch's edit or reassignment of it then
    /// comes after this in the feed, never before a stale copy of it. Nil
    /// when the driver may no longer see it.
    private func lockedCurrentRow(_ row: ChangeRow, _ scope: Scope, _ db: any SQLExecutor) async throws -> ChangeRow? {
        switch row {
        case .order(let order):
            return try await OrderRepository.find(order.id, scope, locking: true, db).map(ChangeRow.order)
        case .inspection(let inspection):
            guard try await OrderRepository.find(inspection.orderID, scope, locking: true, db) != nil else { return nil }
            return try await store.inspections.visible(inspection.id, scope, db).map(ChangeRow.inspection)
        case .expense(let expense):
            return try await ExpenseRepository.lock(expense.id, trip: expense.tripID, scope, db).map(ChangeRow.expense)
        case .equipment(let unit):
            return try await EquipmentRepository.find(unit.id, scope, locking: true, db).map(ChangeRow.equipment)
        case .notification, .message:
            return row  // a driver's own message never changes hands, and read stays read
        case .driver, .trip, .customer:
            return nil
        }
    }

    /// The server's current rows, returned with a rejection so the client can
    /// put the truth back in its cache.
    func currentRows(of mutation: Mutation, _ scope: Scope, _ db: any SQLExecutor) async throws -> (row: ChangeRow?, order: Order?) {
        switch mutation.payload {
        case .updateOrderStatus(let change): return (try await OrderRepository.find(change.orderID, scope, db).map(ChangeRow.order), nil)
        case .updateOrderETA(let change): return (try await OrderRepository.find(change.orderID, scope, db).map(ChangeRow.order), nil)
        case .saveInspection(let save):
            // An inspection refused at its start has no row: the client drops its copy.
            let inspection = try await store.inspections.visible(save.inspectionID, scope, db)
            return (inspection.map(ChangeRow.inspection), try await OrderRepository.find(save.inspection.orderID, scope, db))
        case .completeInspection(let reference):
            guard let inspection = try await store.inspections.visible(reference.inspectionID, scope, db) else { return (nil, nil) }
            return (.inspection(inspection), try await OrderRepository.find(inspection.orderID, scope, db))
        case .recordOdometer(let request): return (try await EquipmentRepository.find(request.equipmentID, scope, db).map(ChangeRow.equipment), nil)
        case .createExpense(let request):
            // A refused fill-up's odometer must not stay the truck's reading on the phone: the truck as it stands.
            guard let fuel = request.fuel else { return (nil, nil) }
            return (try await EquipmentRepository.find(fuel.equipmentID, scope, db).map(ChangeRow.equipment), nil)
        case .startTrip(let reference): return (try await TripRepository.find(reference.tripID, scope, db).map(ChangeRow.trip), nil)
        case .acknowledgeNotification(let reference):
            return (try await NotificationRepository.find(reference.notificationID, scope, db).map(ChangeRow.notification), nil)
        case .sendMessage: return (nil, nil)
        case .reportStopProblem(let request): return (try await OrderRepository.find(request.orderID, scope, db).map(ChangeRow.order), nil)
        case .deleteExpense, .markNotificationRead, .recordLocations, .collectPayment: return (nil, nil)
        }
    }

    static func hash(_ mutation: Mutation) throws -> String {
        SHA256.hash(data: try WireJSON.encode(mutation)).hexString
    }
}

/// An expense created and deleted in the same batch, whose creation never
/// reached the server before (its id was never applied: the device sent it
/// once without an answer, then the driver deleted it): neither is applied,
/// both answer `applied`, and nothing appears in the feed — dispatch never
/// sees an expense that only ever existed on the phone. One per transaction
/// attempt (a retried transaction starts over).
final class CancellingPairs: @unchecked Sendable {
    /// Creations a later mutation of the batch deletes, and nothing but
    /// that creation decides whether the deletion applies (it depends on no
    /// other mutation): the shape a device's outbox sends.
    private let pairedCreations: Set<ID<Mutation>>
    /// Creations skipped so far; their deletions are skipped too. Touched by
    /// one transaction's mutations, which run one after another.
    private var cancelled: Set<ID<Expense>> = []

    init(_ chunk: ArraySlice<Mutation>) {
        var creations: [ID<Expense>: ID<Mutation>] = [:]
        var paired: Set<ID<Mutation>> = []
        for mutation in chunk {
            switch mutation.payload {
            case .createExpense(let request):
                if let id = request.id { creations[id] = mutation.id }
            case .deleteExpense(let reference):
                if let creation = creations[reference.expenseID], Set(mutation.dependsOn).isSubset(of: [creation]) {
                    paired.insert(creation)
                }
            default:
                break
            }
        }
        pairedCreations = paired
    }

    /// Whether the mutation (reached because its id was never applied) is
    /// one half of a pair that cancels out.
    func cancels(_ mutation: Mutation, store: Store, _ scope: Scope) async throws -> Bool {
        switch mutation.payload {
        case .createExpense(let request):
            guard let id = request.id, pairedCreations.contains(mutation.id), let db = TenantTransaction.ambient?.db,
                  try await ExpenseRepository.find(id, tenant: scope.tenant, db) == nil
            else { return false }
            cancelled.insert(id)
            return true
        case .deleteExpense(let reference):
            return cancelled.contains(reference.expenseID)
        default:
            return false
        }
    }
}
