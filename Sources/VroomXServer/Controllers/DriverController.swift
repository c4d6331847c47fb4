import Hummingbird
import VroomXModels

/// What a driver's app reads and changes. Tenant and driver come from the
/// token: every query is scoped to the caller's own work.
struct DriverController {
    let store: Store

    func register(_ routes: Routes) {
        routes.on(.trips) { _, context in
            JSONBody.items(try await store.tripDocuments(try context.caller().scope))
        }
        routes.on(.trip) { _, context in
            JSONBody.document(try await store.tripDocument(try context.id(), try context.caller().scope))
        }
        routes.on(.tripOrders) { _, context in
            JSONBody.items(try await store.tripOrderDocuments(try context.id(), try context.caller().scope))
        }
        routes.on(.tripExpenses) { _, context in
            JSONBody.items(try await store.expenseDocuments(trip: try context.id(), try context.caller().scope))
        }
        routes.on(.orders) { request, context in
            let status = try request.query("status", OrderStatus.init(rawValue:), expected: "an order status")
            return JSONBody.items(try await store.orderDocuments(try context.caller().scope, status: status))
        }
        routes.on(.order) { _, context in
            JSONBody.document(try await store.orderDocument(try context.id(), try context.caller().scope))
        }
        routes.on(.updateOrderStatus) { request, context in
            let body = try await request.decodeJSON(UpdateOrderStatusRequest.self)
            return try JSONBody.response(try await store.updateOrderStatus(
                try context.id(), to: body.status, occurredAt: body.occurredAt, try context.caller().scope))
        }
        routes.on(.updateOrderETA) { request, context in
            let body = try await request.decodeJSON(UpdateETARequest.self)
            return try JSONBody.response(try await store.updateETA(
                try context.id(), pickup: body.pickupETA, delivery: body.deliveryETA, try context.caller().scope))
        }
        routes.on(.createExpense) { request, context in
            let body = try await request.decodeJSON(CreateExpenseRequest.self)
            return try JSONBody.response(try await store.createExpense(body, try context.caller().scope), status: .created)
        }
        routes.on(.deleteExpense) { _, context in
            try await store.deleteExpense(try context.id(), try context.caller().scope)
            return JSONBody.noContent()
        }
        routes.on(.notifications) { request, context in
            let unread = try request.query("unread", { ["true": true, "false": false][$0] }, expected: "true or false") ?? false
            let limit = try request.query("limit", { Int($0).flatMap { (1...500).contains($0) ? $0 : nil } },
                                          expected: "an integer from 1 to 500") ?? 100
            return JSONBody.items(try await store.notificationDocuments(try context.caller().scope, unreadOnly: unread, limit: limit))
        }
        routes.on(.markNotificationRead) { _, context in
            try JSONBody.response(try await store.markNotificationRead(try context.id(), try context.caller().scope))
        }
    }
}
