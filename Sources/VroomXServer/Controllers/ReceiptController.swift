import Foundation
import Hummingbird
import VroomXModels

/// The paper behind money: receipt photos of expenses (their driver and
/// dispatch), money a driver collected on delivery or at pickup with the
/// photo of the check, and dispatch banking it. Files come in one request
/// here, or resumable through the tus uploads (`expense_id` or
/// `payment_id` in their metadata).
struct ReceiptController {
    let store: Store
    let media: any MediaStorage
    let uploads: UploadService

    func register(_ routes: Routes) {
        routes.onResponse(.addExpenseReceipt) { request, context in
            let identity = try context.caller()
            let expense: ID<Expense> = try context.id()
            try await uploads.putWhole(request, to: .receipt(expense), identity)
            guard let saved = try await store.read({ try await ExpenseRepository.find(expense, tenant: identity.tenant, $0) }) else {
                throw AppError.notFound("Expense")
            }
            return try JSONBody.response(saved, status: .created).response
        }
        routes.onResponse(.expenseReceipt) { request, context in
            let (photo, key) = try await store.receipts.receipt(try context.id("receipt"), of: try context.id(), try context.caller().scope)
            return try await InspectionController.serve(request, contentType: photo.contentType, sha256: photo.sha256, key: key, media: media)
        }
        routes.on(.deleteExpenseReceipt) { _, context in
            let (expense, key) = try await store.receipts.deleteReceipt(try context.id("receipt"), of: try context.id(), try context.caller().scope)
            await media.removeOnceCommitted(key)
            return try JSONBody.response(expense)
        }
        routes.on(.collectPayment) { request, context in
            let body = try await request.decodeJSON(CollectPaymentRequest.self)
            return try JSONBody.response(try await store.invoices.collect(body, try context.caller().scope), status: .created)
        }
        routes.onResponse(.addCollectionPhoto) { request, context in
            let identity = try context.caller()
            let payment: ID<InvoicePayment> = try context.id()
            try await uploads.putWhole(request, to: .collectionPhoto(payment), identity)
            guard let saved = try await store.read({ try await InvoiceRepository.payment(payment, tenant: identity.tenant, $0) }) else {
                throw AppError.notFound("Payment")
            }
            return try JSONBody.response(saved, status: .created).response
        }
        routes.on(.dispatchDepositPayment) { request, context in
            let body = try await request.decodeOptionalJSON(DepositPaymentRequest.self)
            return try JSONBody.response(try await store.invoices.deposit(try context.id("payment"), of: try context.id(), on: body?.depositedOn,
                                                                          tenant: try context.caller().tenant))
        }
        routes.onResponse(.dispatchPaymentPhoto) { request, context in
            let (photo, key) = try await store.receipts.paymentPhoto(try context.id("photo"), of: try context.id("payment"), invoice: try context.id(),
                                                                     tenant: try context.caller().tenant)
            return try await InspectionController.serve(request, contentType: photo.contentType, sha256: photo.sha256, key: key, media: media)
        }
    }
}
