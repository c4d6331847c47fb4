import Foundation
import VroomXModels

/// Problems a driver reports at a stop: kept on the order (dispatch sees
/// them on the order and the board through the feed) and told to dispatch
/// as a line of the driver's conversation, so every console page announces it.
extension OrderService {
    /// How long a report may have waited on a phone with no signal.
    static let longestProblemWait: TimeInterval = 7 * 86_400

    /// Records the driver's report once: the same id again answers the order
    /// as it stands; an id already used for another report is refused.
    public func reportProblem(_ request: ReportStopProblemRequest, _ scope: Scope) async throws -> Order {
        guard let driver = scope.driverID else { throw AppError(403, .forbidden, "Only the order's driver reports a problem at its stops.") }
        let note = try Validate.text((request.note ?? "").trimmingCharacters(in: .whitespacesAndNewlines), FieldLimits.stopProblemNote)
        return try await store.write(tenant: scope.tenant) { tx in
            guard let order = try await OrderRepository.find(request.orderID, scope, locking: true, tx.db) else {
                throw AppError.notFound("Order")
            }
            if let earlier = order.problems.first(where: { $0.id == request.id }) {
                guard earlier.stop == request.stop, earlier.kind == request.kind, earlier.note == note else {
                    throw AppError(409, .idempotencyKeyReused, "This problem id was used for another report.", field: "id")
                }
                return order
            }
            if let refusal = order.problemRefusal(request.kind, at: request.stop) { throw AppError(refusal) }
            // The id is the report's wherever it is used: another order's (another carrier's) is refused.
            do {
                try await tx.execute("INSERT INTO stop_problem_ids (id, tenant_id, order_id) VALUES (\(request.id), \(tx.tenant), \(order.id))")
            } catch DatabaseConstraintError.unique {
                throw AppError(409, .idempotencyKeyReused, "This problem id was used for another report.", field: "id")
            }
            // Reported when the phone says (a report that waited for a signal), never later than now nor before a week ago,
            // nor before the order existed (nor a delivery's before the pickup): the time starts detention.
            let reported = order.problemTime(max(request.reportedAt ?? tx.now, tx.now.addingTimeInterval(-Self.longestProblemWait)),
                                             at: request.stop, now: tx.now)
            var problem = StopProblem(id: request.id, stop: request.stop, kind: request.kind, note: note,
                                      reportedAt: WireTime.date(milliseconds: WireTime.milliseconds(reported)))
            // Where the truck was then, by its nearest fix within 30 minutes of the report (none: unknown).
            if let target = order.stop(request.stop).location {
                let span = reported.addingTimeInterval(-1800)...reported.addingTimeInterval(1800)
                let fixes = try await LocationRepository.fixes(of: driver, tenant: tx.tenant, in: span, limit: 3600, tx.db)
                if let nearest = fixes.min(by: { abs($0.recordedAt.timeIntervalSince(reported)) < abs($1.recordedAt.timeIntervalSince(reported)) }) {
                    problem.truckDistanceMeters = (nearest.point.distance(to: target)).rounded()
                }
            }
            var reportedOn = order
            reportedOn.problems.append(problem)
            let saved = try await save(reportedOn, from: order, tx)
            try await ConversationRepository.insert(DriverMessage(id: ID(), driverID: driver, tripID: saved.tripID, orderID: saved.id,
                                                                  body: "Problem reported: \(problem.summary)", sentAt: problem.reportedAt,
                                                                  createdAt: tx.now), tx)
            return saved
        }
    }
}
