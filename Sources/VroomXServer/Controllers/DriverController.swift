import Hummingbird
import VroomXModels

/// What a driver's app reads and changes. Tenant and driver come from the
/// token: every query is scoped to the caller's own work.
struct DriverController {
    let store: Store
    let reads: ReadCache

    func register(_ routes: Routes) {
        routes.on(.trips) { request, context in
            let (scope, page) = (try context.caller().scope, try request.page())
            return try await listPage("trips", scope, page, request) {
                JSONBody.items(try await store.trips.documents(scope, page: page))
            }
        }
        routes.on(.trip) { _, context in
            JSONBody.document(try await store.trips.document(try context.id(), try context.caller().scope))
        }
        routes.on(.startTrip) { _, context in
            try JSONBody.response(try await store.trips.start(try context.id(), try context.caller().scope))
        }
        routes.on(.tripOrders) { request, context in
            let (trip, scope, page) = (try context.id(as: Trip.self), try context.caller().scope, try request.page())
            return try await listPage("trip \(trip) orders", scope, page, request) {
                JSONBody.items(try await store.orders.tripDocuments(trip, scope, page: page))
            }
        }
        routes.on(.tripExpenses) { request, context in
            JSONBody.items(try await store.expenses.documents(trip: try context.id(), try context.caller().scope, page: try request.page()))
        }
        routes.on(.orders) { request, context in
            let status = try request.value(.orderStatus, as: OrderStatus.self)
            let (scope, page) = (try context.caller().scope, try request.page())
            return try await listPage("orders status=\(status?.rawValue ?? "")", scope, page, request) {
                JSONBody.items(try await store.orders.documents(scope, status: status, page: page))
            }
        }
        routes.on(.order) { _, context in
            JSONBody.document(try await store.orders.document(try context.id(), try context.caller().scope))
        }
        routes.on(.updateOrderStatus) { request, context in
            let body = try await request.decodeJSON(UpdateOrderStatusRequest.self)
            return try JSONBody.response(try await store.orders.updateStatus(
                try context.id(), to: body.status, occurredAt: body.occurredAt, try context.caller().scope))
        }
        routes.on(.updateOrderETA) { request, context in
            let body = try await request.decodeJSON(UpdateETARequest.self)
            return try JSONBody.response(try await store.orders.updateETA(
                try context.id(), pickup: body.pickupETA, delivery: body.deliveryETA, try context.caller().scope))
        }
        routes.on(.createExpense) { request, context in
            let body = try await request.decodeJSON(CreateExpenseRequest.self)
            return try JSONBody.response(try await store.expenses.create(body, try context.caller().scope), status: .created)
        }
        routes.on(.deleteExpense) { _, context in
            try await store.expenses.delete(try context.id(), try context.caller().scope)
            return JSONBody.noContent()
        }
        routes.on(.notifications) { request, context in
            let unread = try request.boolean(.unreadOnly) ?? false
            return JSONBody.items(try await store.notifications.documents(try context.caller().scope, unreadOnly: unread,
                                                                        page: try request.page()))
        }
        routes.on(.markNotificationRead) { _, context in
            try JSONBody.response(try await store.notifications.markRead(try context.id(), try context.caller().scope))
        }
        routes.on(.acknowledgeNotification) { _, context in
            try JSONBody.response(try await store.notifications.acknowledge(try context.id(), try context.caller().scope))
        }
        routes.on(.sendMessage) { request, context in
            let body = try await request.decodeJSON(SendDriverMessageRequest.self)
            return try JSONBody.response(try await store.conversations.send(body, try context.caller().scope), status: .created)
        }
        routes.on(.reportStopProblem) { request, context in
            let body = try await request.decodeJSON(ReportStopProblemRequest.self)
            return try JSONBody.response(try await store.orders.reportProblem(body, try context.caller().scope), status: .created)
        }
        routes.on(.reportDeviceBacklog) { request, context in
            try await store.deviceBacklogs.report(try await request.decodeJSON(DeviceBacklog.self), try context.caller().scope)
            return JSONBody.noContent()
        }
    }

    /// A list's page: a first page (no cursor) from the read cache, which
    /// asks the database when it holds nothing current enough.
    private func listPage(_ list: String, _ scope: Scope, _ page: PageRequest, _ request: Request,
                          read: () async throws -> Reply) async throws -> Reply {
        let seen = try request.integer(.changeSeen)
        guard page.cursor == nil, let driver = scope.driverID else { return try await read() }
        return try await reads.page(.init(tenant: scope.tenant, driver: driver, page: "\(list) limit=\(page.limit)"), seen: seen, read: read)
    }
}
