import Hummingbird
import VroomXModels

/// What a carrier's dispatchers do: manage drivers, plan trips and orders,
/// assign work and message drivers. Scoped to the dispatcher's carrier.
struct DispatchController {
    let store: Store
    let invitations: DriverInvitations
    let stops: StopLocator

    func register(_ routes: Routes) {
        routes.on(.dispatchDrivers) { request, context in
            JSONBody.items(try await store.people.driverDocuments(tenant: try context.caller().tenant, page: try request.page()))
        }
        routes.on(.dispatchCreateDriver) { request, context in
            let body = try await request.decodeJSON(CreateDriverRequest.self)
            return try JSONBody.response(try await invitations.invite(body, tenant: try context.caller().tenant), status: .created)
        }
        routes.on(.dispatchUpdateDriver) { request, context in
            let body = try await request.decodeJSON(UpdateDriverRequest.self)
            return try JSONBody.response(try await store.people.updateDriver(try context.id(), body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchDeactivateDriver) { _, context in
            try JSONBody.response(try await store.people.deactivate(try context.id(), tenant: try context.caller().tenant))
        }
        routes.on(.dispatchReactivateDriver) { _, context in
            try JSONBody.response(try await store.people.reactivate(try context.id(), tenant: try context.caller().tenant))
        }
        routes.on(.dispatchDeviceBacklogs) { _, context in
            try JSONBody.response(Items(try await store.deviceBacklogs.reports(tenant: try context.caller().tenant)))
        }
        routes.on(.dispatchTrips) { request, context in
            let status = try request.value(.tripStatus, as: TripStatus.self)
            return JSONBody.items(try await store.trips.documents(try context.caller().scope, status: status, page: try request.page()))
        }
        routes.on(.dispatchCreateTrip) { request, context in
            let body = try await request.decodeJSON(CreateTripRequest.self)
            return try JSONBody.response(try await store.trips.create(body, tenant: try context.caller().tenant), status: .created)
        }
        routes.on(.dispatchTrip) { _, context in
            JSONBody.document(try await store.trips.document(try context.id(), try context.caller().scope))
        }
        routes.on(.dispatchUpdateTrip) { request, context in
            let body = try await request.decodeJSON(UpdateTripRequest.self)
            return try JSONBody.response(try await store.trips.update(try context.id(), body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchAssignTrip) { request, context in
            let body = try await request.decodeJSON(AssignTripRequest.self)
            return try JSONBody.response(try await store.trips.assign(try context.id(), to: body.driverID, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchTripExpenses) { request, context in
            JSONBody.items(try await store.expenses.documents(trip: try context.id(), try context.caller().scope, page: try request.page()))
        }
        routes.on(.dispatchOrders) { request, context in
            let status = try request.value(.orderStatus, as: OrderStatus.self)
            let trip = try request.id(.tripFilter, as: Trip.self)
            let customer = try request.id(.customerFilter, as: Customer.self)
            return JSONBody.items(try await store.orders.documents(try context.caller().scope, trip: trip, status: status, customer: customer,
                                                                 page: try request.page()))
        }
        // Stops are looked up before the write (`Routes.on(_:preparing:_:)`).
        routes.on(.dispatchCreateOrder, preparing: { request, _ in
            await stops.located(try await request.decodeJSON(CreateOrderRequest.self))
        }) { body, context in
            try JSONBody.response(try await store.orders.create(body, tenant: try context.caller().tenant), status: .created)
        }
        routes.on(.dispatchOrder) { _, context in
            JSONBody.document(try await store.orders.document(try context.id(), try context.caller().scope))
        }
        routes.on(.dispatchUpdateOrder, preparing: { request, context in
            let body = try await request.decodeJSON(UpdateOrderRequest.self)
            return await stops.located(body, editing: try await store.orders.order(try context.id(), try context.caller().scope))
        }) { body, context in
            try JSONBody.response(try await store.orders.update(try context.id(), body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchAssignOrder) { request, context in
            let body = try await request.decodeJSON(AssignOrderRequest.self)
            return try JSONBody.response(try await store.orders.assign(try context.id(), body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchCustomers) { request, context in
            JSONBody.items(try await store.customers.documents(tenant: try context.caller().tenant, search: try request.search(.customerSearch),
                                                               page: try request.page()))
        }
        routes.on(.dispatchCreateCustomer) { request, context in
            let body = try await request.decodeJSON(CreateCustomerRequest.self)
            return try JSONBody.response(try await store.customers.create(body, tenant: try context.caller().tenant), status: .created)
        }
        routes.on(.dispatchCustomer) { _, context in
            JSONBody.document(try await store.customers.document(try context.id(), tenant: try context.caller().tenant))
        }
        routes.on(.dispatchUpdateCustomer) { request, context in
            let body = try await request.decodeJSON(UpdateCustomerRequest.self)
            return try JSONBody.response(try await store.customers.update(try context.id(), body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchCarrierProfile) { _, context in
            try JSONBody.response(try await store.carrierProfile.profile(tenant: try context.caller().tenant))
        }
        routes.on(.dispatchUpdateCarrierProfile) { request, context in
            let body = try await request.decodeJSON(UpdateCarrierProfileRequest.self)
            return try JSONBody.response(try await store.carrierProfile.update(body, tenant: try context.caller().tenant))
        }
        routes.on(.dispatchSendMessage) { request, context in
            let body = try await request.decodeJSON(SendMessageRequest.self)
            return try JSONBody.response(try await store.notifications.send(body, tenant: try context.caller().tenant), status: .created)
        }
        routes.on(.dispatchConversations) { _, context in
            try JSONBody.response(Items(try await store.conversations.inbox(tenant: try context.caller().tenant)))
        }
        routes.on(.dispatchConversation) { _, context in
            try JSONBody.response(Items(try await store.conversations.conversation(with: try context.id(), tenant: try context.caller().tenant)))
        }
        routes.on(.dispatchReadConversation) { _, context in
            _ = try await store.conversations.markRead(driver: try context.id(), tenant: try context.caller().tenant)
            return JSONBody.noContent()
        }
    }
}
