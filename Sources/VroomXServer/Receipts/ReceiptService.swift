import Foundation
import VroomXModels

/// Photos of the paper behind money: who may add, see and remove the
/// receipts of an expense (its driver — the one who recorded it, or who
/// holds the trip dispatch recorded it on — and dispatch) and the photos of
/// a payment a driver collected (that driver adds them, dispatch sees them).
/// Each change rewrites the photos the expense's or payment's row carries,
/// in the same transaction. The SQL is `ReceiptRepository`'s.
public struct ReceiptService: Sendable {
    let store: Store

    /// An expense or payment the scope may add a photo to, with room for another.
    func checkRoom(on paper: Paper, _ scope: Scope, _ tx: TenantTransaction) async throws {
        try await checkAccess(to: paper, scope, tx.db)
        // Held until commit (PostgreSQL): uploads finishing at once are counted, and written, one after the other.
        try await ReceiptRepository.lock(paper, tx)
        let most = switch paper {
        case .expense, .payment: ReceiptPhoto.maxPerItem
        case .problem: StopProblem.maxPhotos
        case .message: DriverMessage.maxPhotos
        }
        guard try await ReceiptRepository.count(of: paper, tx) < most else {
            let (message, field) = switch paper {
            case .expense: ("At most \(most) photos go with one expense; delete one first.", "receipts")
            case .payment: ("At most \(most) photos go with one payment.", "photos")
            case .problem: ("At most \(most) photos go with one problem.", "photos")
            case .message: ("At most \(most) photos go with one message.", "photos")
            }
            throw AppError(422, .validationFailed, message, field: field)
        }
    }

    /// Attaches a finished upload (an upload's last step, in its transaction).
    func attach(_ photo: ReceiptPhoto, key: String, to paper: Paper, uploadedBy: ID<User>, _ scope: Scope, _ tx: TenantTransaction) async throws {
        try await checkRoom(on: paper, scope, tx)
        try await ReceiptRepository.insert(photo, key: key, of: paper, uploadedBy: uploadedBy, tx)
        try await refresh(paper, tx)
    }

    /// A receipt of an expense the scope sees, and where its bytes are.
    public func receipt(_ id: ID<ReceiptPhoto>, of expense: ID<Expense>, _ scope: Scope) async throws -> (photo: ReceiptPhoto, key: String) {
        try await store.read { db in
            try await checkAccess(to: .expense(expense), scope, db)
            guard let found = try await ReceiptRepository.find(id, of: .expense(expense), tenant: scope.tenant, db) else {
                throw AppError.notFound("Receipt")
            }
            return found
        }
    }

    /// A photo of a problem or a message the scope sees, and where its bytes are.
    func attachedPhoto(_ id: ID<ReceiptPhoto>, of paper: Paper, _ scope: Scope) async throws -> (photo: ReceiptPhoto, key: String) {
        try await store.read { db in
            try await checkAccess(to: paper, scope, db)
            guard let found = try await ReceiptRepository.find(id, of: paper, tenant: scope.tenant, db) else { throw AppError.notFound("Photo") }
            return found
        }
    }

    /// A photo of a payment of the carrier's (dispatch), and where its bytes are.
    public func paymentPhoto(_ id: ID<ReceiptPhoto>, of payment: ID<InvoicePayment>, invoice: ID<Invoice>,
                             tenant: ID<Tenant>) async throws -> (photo: ReceiptPhoto, key: String) {
        try await store.read { db in
            // A removed payment's photo still opens: it shows what was removed.
            guard let found = try await InvoiceRepository.payment(payment, tenant: tenant, includingRemoved: true, db), found.invoiceID == invoice,
                  let photo = try await ReceiptRepository.find(id, of: .payment(payment), tenant: tenant, db) else {
                throw AppError.notFound("Photo")
            }
            return photo
        }
    }

    /// Removes a receipt of an expense; the expense as it is now, and where
    /// the photo's bytes were, for the caller to remove once this committed.
    public func deleteReceipt(_ id: ID<ReceiptPhoto>, of expense: ID<Expense>, _ scope: Scope) async throws -> (expense: Expense, key: String) {
        try await store.write(tenant: scope.tenant) { tx in
            try await checkAccess(to: .expense(expense), scope, tx.db)
            try await ReceiptRepository.lock(.expense(expense), tx)
            guard let key = try await ReceiptRepository.delete(id, of: .expense(expense), tx) else { throw AppError.notFound("Receipt") }
            // Its bytes go once this has committed (`ReceiptController`), or with the trash if this request's own commit is still to come.
            try await ReceiptRepository.trash([key], tx)
            try await refresh(.expense(expense), tx)
            guard let saved = try await ExpenseRepository.find(expense, tenant: scope.tenant, tx.db) else { throw AppError.notFound("Expense") }
            return (saved, key)
        }
    }

    /// An expense the scope sees (a driver: theirs, or dispatch's on a trip
    /// they hold); a payment a driver collected themselves, or any live one for dispatch.
    private func checkAccess(to paper: Paper, _ scope: Scope, _ db: any SQLExecutor) async throws {
        switch paper {
        case .expense(let id):
            guard let holders = try await ExpenseRepository.holders(of: id, tenant: scope.tenant, db) else { throw AppError.notFound("Expense") }
            if let driver = scope.driverID {
                guard holders.recordedBy == driver || (holders.recordedBy == nil && holders.tripDriver == driver) else {
                    throw AppError.notFound("Expense")
                }
            }
        case .payment(let id):
            guard let payment = try await InvoiceRepository.payment(id, tenant: scope.tenant, db),
                  scope.driverID == nil || payment.collectedBy == scope.driverID else { throw AppError.notFound("Payment") }
        case .problem(let id, let order):
            // The order's driver (a driver's scope sees only their orders), or dispatch.
            guard let found = try await OrderRepository.find(order, scope, db), found.problems.contains(where: { $0.id == id }) else {
                throw AppError.notFound("Problem")
            }
        case .message(let id):
            guard let message = try await ConversationRepository.find(id, tenant: scope.tenant, db),
                  scope.driverID == nil || message.driverID == scope.driverID else { throw AppError.notFound("Message") }
        }
    }

    /// Writes the photos into the expense's or payment's row (and the
    /// expense's change into the feed, for its driver's phone).
    private func refresh(_ paper: Paper, _ tx: TenantTransaction) async throws {
        let photos = try await ReceiptRepository.list(of: paper, tx.db, tenant: tx.tenant)
        let json = try WireDocument.encode(photos)
        switch paper {
        case .expense(let id):
            guard var expense = try await ExpenseRepository.find(id, tenant: tx.tenant, tx.db),
                  let holders = try await ExpenseRepository.holders(of: id, tenant: tx.tenant, tx.db) else { throw AppError.notFound("Expense") }
            expense.receipts = photos
            let doc = try WireDocument.encode(expense)
            try await tx.execute("UPDATE trip_expenses SET receipts = \(json), doc = \(doc) WHERE tenant_id = \(tx.tenant) AND id = \(id)")
            tx.recordUpsert(.expense, id: id.rawValue, document: doc,
                            visibleTo: ExpenseService.audience(of: holders.recordedBy, tripDriver: holders.tripDriver))
        case .payment(let id):
            try await tx.execute("UPDATE invoice_payments SET photos = \(json) WHERE tenant_id = \(tx.tenant) AND id = \(id)")
        case .problem(let id, let order):
            // A new version of the order: dispatch and the driver see the photo through the feed.
            guard let current = try await OrderRepository.find(order, .dispatch(tenant: tx.tenant), tx.db),
                  let index = current.problems.firstIndex(where: { $0.id == id }) else { throw AppError.notFound("Problem") }
            var edited = current
            edited.problems[index].photos = photos
            _ = try await store.orders.save(edited, from: current, tx)
        case .message(let id):
            guard var message = try await ConversationRepository.find(id, tenant: tx.tenant, tx.db) else { throw AppError.notFound("Message") }
            message.photos = photos
            try await ConversationRepository.update(message, tx)
        }
    }
}

extension Store {
    /// Receipt photos of expenses and photos of collected payments.
    public var receipts: ReceiptService { ReceiptService(store: self) }
}
