import Foundation
import Hummingbird
import VroomXModels

/// The settlement API: a driver's Earnings and statements; dispatch's
/// weeks, approvals, payments and what it enters for a driver.
struct SettlementController {
    let store: Store
    let documents: SettlementDocuments

    func register(_ routes: Routes) {
        routes.on(.earnings) { _, context in
            let identity = try context.caller()
            guard let driver = identity.driver else { throw AppError.notFound("Driver") }
            return try JSONBody.response(try await store.settlements.earnings(driver: driver, tenant: identity.tenant))
        }
        routes.onResponse(.settlementStatement) { _, context in
            let identity = try context.caller()
            guard let driver = identity.driver else { throw AppError.notFound("Settlement") }
            let (name, bytes) = try await documents.pdf(of: try context.id(), driver: driver, tenant: identity.tenant)
            return DocumentController.pdf(bytes, named: name)
        }
        routes.on(.dispatchSettlements) { request, context in
            let week = try request.date(.settlementWeek) ?? LocalDate(store.now)
            return try JSONBody.response(Items(try await store.settlements.week(week, tenant: try context.caller().tenant)))
        }
        routes.on(.dispatchSettlement) { _, context in
            try JSONBody.response(try await store.settlements.stored(try context.id(), tenant: try context.caller().tenant))
        }
        routes.on(.dispatchDriverPay) { request, context in
            let week = try request.date(.settlementWeek) ?? LocalDate(store.now)
            return try JSONBody.response(try await store.settlements.setup(driver: try context.id(), week: week, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchApproveSettlement) { request, context in
            let body = try await request.decodeJSON(ApproveSettlementRequest.self)
            return try JSONBody.response(try await store.settlements.approve(driver: try context.id(), body, tenant: try context.caller().tenant),
                                         status: .created)
        }
        routes.on(.dispatchMarkSettlementPaid) { request, context in
            let body = try await request.decodeOptionalJSON(MarkSettlementPaidRequest.self) ?? .init()
            return try JSONBody.response(try await store.settlements.markPaid(try context.id(), body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchReopenSettlement) { _, context in
            try JSONBody.response(try await store.settlements.reopen(try context.id(), tenant: try context.caller().tenant))
        }
        routes.on(.dispatchEmailStatement) { _, context in
            try JSONBody.response(try await store.settlements.emailStatement(try context.id(), tenant: try context.caller().tenant))
        }
        routes.onResponse(.dispatchSettlementStatement) { _, context in
            let (name, bytes) = try await documents.pdf(of: try context.id(), tenant: try context.caller().tenant)
            return DocumentController.pdf(bytes, named: name)
        }
        routes.on(.dispatchAddPayItem) { request, context in
            let body = try await request.decodeJSON(CreatePayItemRequest.self)
            return try JSONBody.response(try await store.settlements.addItem(driver: try context.id(), body, tenant: try context.caller().tenant),
                                         status: .created)
        }
        routes.on(.dispatchRemovePayItem) { _, context in
            try await store.settlements.removeItem(try context.id("item"), driver: try context.id(), tenant: try context.caller().tenant)
            return JSONBody.noContent()
        }
        routes.on(.dispatchAddDeduction) { request, context in
            let body = try await request.decodeJSON(CreateRecurringDeductionRequest.self)
            return try JSONBody.response(try await store.settlements.addDeduction(driver: try context.id(), body, tenant: try context.caller().tenant),
                                         status: .created)
        }
        routes.on(.dispatchEndDeduction) { _, context in
            try await store.settlements.endDeduction(try context.id("deduction"), driver: try context.id(), tenant: try context.caller().tenant)
            return JSONBody.noContent()
        }
    }
}
