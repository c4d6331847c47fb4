import VroomXModels

extension APIOperation {
    /// The office: drivers, trips, orders, messages.
    static var dispatching: [APIOperation] { [
        APIOperation(.dispatchDrivers, .dispatch, "The carrier's drivers", answer: .list(Driver.self)),
        APIOperation(.dispatchCreateDriver, .dispatch, "Create a driver (and the user they sign in as); the driver is mailed an invitation",
                     body: .json(CreateDriverRequest.self),
                     answer: .created(Driver.self),
                     refusals: [
                         409: "already_exists: someone at this carrier already signs in with this email (other carriers' accounts are never looked at: a person can drive for several)",
                         429: "rate_limited: the carrier added its hourly allowance of drivers (200; refused invitations do not count) (Retry-After)"
                     ]),
        APIOperation(.dispatchTrips, .dispatch, "The carrier's trips", answer: .list(Trip.self), refusals: [400: "invalid_parameter"]),
        APIOperation(.dispatchCreateTrip, .dispatch, "Create a trip (optionally assigned)",
                     body: .json(CreateTripRequest.self),
                     answer: .created(Trip.self),
                     refusals: [409: "already_exists: trip number taken"]),
        APIOperation(.dispatchTrip, .dispatch, "A trip",
                     answer: .ok(Trip.self),
                     refusals: [404: "not_found (also for rows of another driver or carrier)"]),
        APIOperation(.dispatchUpdateTrip, .dispatch, "Edit a trip or change its status",
                     details: "A trip becomes completed only when none of its vehicles is still waiting or on the truck (409 invalid_transition, field status, otherwise); it starts only with a driver; it goes back to planned or is cancelled only with no vehicle on the truck (409 invalid_transition), and cancelling sends its waiting vehicles back to new, on no trip and with no driver. A completed or cancelled trip's details are settled (409 invalid_transition). With base_version (the version the edit started from, 1 to the current version; anything else is 422), a trip changed since is 409 conflict, field base_version, and nothing is written. A number another trip of the carrier has is 409 already_exists.",
                     body: .json(UpdateTripRequest.self),
                     answer: .ok(Trip.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "invalid_transition, conflict (field base_version) or already_exists (field number)"
                     ]),
        APIOperation(.dispatchAssignTrip, .dispatch, "Assign a trip to a driver (notifies them), or unassign",
                     body: .json(AssignTripRequest.self),
                     answer: .ok(Trip.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "conflict: the trip is closed or carries picked-up vehicles"
                     ]),
        APIOperation(.dispatchTripExpenses, .dispatch, "Expenses of a trip",
                     answer: .list(Expense.self),
                     refusals: [
                         400: "invalid_parameter: the id is not a UUID",
                         404: "not_found (also for rows of another driver or carrier)"
                     ]),
        APIOperation(.dispatchOrders, .dispatch, "The carrier's orders", details: "customer_id narrows them to one customer's.",
                     answer: .list(Order.self), refusals: [400: "invalid_parameter"]),
        APIOperation(.dispatchCreateOrder, .dispatch, "Create an order (on a trip: assigned to its driver)",
                     details: "customer_id names one of the carrier's customers (another carrier's is 422, field customer_id); with no payment_terms the order takes the customer's.",
                     body: .json(CreateOrderRequest.self),
                     answer: .created(Order.self),
                     refusals: [409: "already_exists: order number taken"]),
        APIOperation(.dispatchOrder, .dispatch, "An order",
                     answer: .ok(Order.self),
                     refusals: [404: "not_found (also for rows of another driver or carrier)"]),
        APIOperation(.dispatchUpdateOrder, .dispatch, "Edit an order or change its status (notifies the driver)",
                     details: "With base_version (the version the edit started from, 1 to the current version; anything else is 422), details someone else changed since are 409 conflict, field base_version; a driver's ETA or status meanwhile is not a conflict. customer_id: null takes the customer off; an empty external_load_id removes it.",
                     body: .json(UpdateOrderRequest.self),
                     answer: .ok(Order.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "invalid_transition, or conflict (field base_version)"
                     ]),
        APIOperation(.dispatchAssignOrder, .dispatch, "Move an order to a trip or driver, or unassign it",
                     body: .json(AssignOrderRequest.self),
                     answer: .ok(Order.self),
                     refusals: [404: "not_found (also for rows of another driver or carrier)", 409: "conflict: already picked up"]),
        APIOperation(.dispatchSendMessage, .dispatch, "Message a driver (dispatch_message or urgent)",
                     details: "The driver must be in this carrier and not deactivated (422, field driver_id).",
                     body: .json(SendMessageRequest.self),
                     answer: Answer(201, "Sent", .json(DriverNotification.self))),
        APIOperation(.dispatchOrderInspections, .dispatch, "Inspections of an order",
                     answer: Answer(200, "Inspections", .list(Inspection.self)),
                     refusals: [403: "forbidden: the endpoint is for another role (or driver_not_found)", 404: "not_found"]),
        APIOperation(.dispatchUpdateDriver, .dispatch, "Edit a driver's name, phone or pay terms",
                     details: "The email is their sign-in and stays; trips already assigned keep their pay. With base_version (the version the edit started from), fields someone else changed since are 409 conflict, field base_version. Pay terms apply to trips assigned from then on.",
                     body: .json(UpdateDriverRequest.self),
                     answer: .ok(Driver.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "conflict (field base_version): someone else changed the driver since that version",
                         422: "validation_failed: a name, phone or pay rate out of range for the terms (field says which)"
                     ]),
        APIOperation(.dispatchDeactivateDriver, .dispatch, "Deactivate a driver who left",
                     details: "Their sessions end, their device tokens go, sign-in is refused (account_deactivated); their history stays.",
                     answer: .ok(Driver.self),
                     refusals: [
                         404: "not_found (also for rows of another driver or carrier)",
                         409: "conflict: the driver still has trips planned or under way, or orders not delivered"
                     ]),
        APIOperation(.dispatchReactivateDriver, .dispatch, "Let a deactivated driver sign in and take work again",
                     answer: .ok(Driver.self),
                     refusals: [404: "not_found (also for rows of another driver or carrier)"]),
        APIOperation(.dispatchImportOrders, .dispatch, "Create orders from a CSV file (all lines or none)",
                     body: .csv("Header line, then one order per line. Columns: number, pickup_address, delivery_address, revenue (required); external_load_id, customer (a name: the carrier's customer, or a new one made with the orders), customer_email, customer_phone (for a new customer), trip, year, make, model, vin, color, pickup_name, pickup_contact, pickup_phone, pickup_from, pickup_to, delivery_name, delivery_contact, delivery_phone, delivery_from, delivery_to (YYYY-MM-DD or MM/DD/YYYY), payment_terms, vin_confirmed. At most 5,000 lines."),
                     answer: .ok(ImportResult.self),
                     refusals: [
                         413: "payload_too_large (files are limited to 4 MiB)",
                         415: "unsupported_media_type: send text/csv",
                         422: "import_failed: problems lists every bad line (line, field, message); nothing was written"
                     ]),
        APIOperation(.dispatchImportCustomers, .dispatch, "Create or update customers from a CSV file (all lines or none)",
                     body: .csv("Header line, then one customer per line. Columns: name (required), kind (shipper, broker, dealer, auction), billing_contact, email, phone, address, payment_terms, notes. A name the carrier has (ignoring case) updates that customer with the columns given. At most 5,000 lines."),
                     answer: .ok(ImportResult.self),
                     refusals: [
                         413: "payload_too_large (files are limited to 4 MiB)",
                         415: "unsupported_media_type: send text/csv",
                         422: "import_failed: problems lists every bad line (line, field, message); nothing was written"
                     ]),
        APIOperation(.dispatchCustomers, .dispatch, "The carrier's customers, by name",
                     details: "q finds customers whose name, billing contact, email or phone contain it (ignoring case).",
                     answer: .list(Customer.self), refusals: [400: "invalid_parameter"]),
        APIOperation(.dispatchCreateCustomer, .dispatch, "Add a shipper, broker, dealer or auction",
                     body: .json(CreateCustomerRequest.self),
                     answer: .created(Customer.self),
                     refusals: [409: "already_exists (field name): the carrier has a customer of this name, ignoring case"]),
        APIOperation(.dispatchCustomer, .dispatch, "A customer",
                     answer: .ok(Customer.self),
                     refusals: [404: "not_found (also for another carrier's customer)"]),
        APIOperation(.dispatchUpdateCustomer, .dispatch, "Edit a customer",
                     details: "The fields present change. With base_version (the version the edit started from), a customer changed since is 409 conflict, field base_version.",
                     body: .json(UpdateCustomerRequest.self),
                     answer: .ok(Customer.self),
                     refusals: [
                         404: "not_found (also for another carrier's customer)",
                         409: "conflict (field base_version), or already_exists (field name)"
                     ]),
        APIOperation(.dispatchTrackingLink, .dispatch, "An order's tracking link for its customer",
                     details: "url is under VROOMX_PUBLIC_URL when it is set (else the address the request came to). The link works until it is revoked or replaced, and for 7 days after the order is delivered or cancelled (expires_at).",
                     answer: .ok(TrackingLink.self),
                     refusals: [404: "not_found: no such order in this carrier, or it has no live link"]),
        APIOperation(.dispatchCreateTrackingLink, .dispatch, "Make a tracking link for the order's customer (one it had stops working)",
                     answer: .created(TrackingLink.self),
                     refusals: [
                         404: "not_found (also for another carrier's order)",
                         409: "invalid_transition: the order was delivered or cancelled more than 7 days ago"
                     ]),
        APIOperation(.dispatchRevokeTrackingLink, .dispatch, "Stop the order's tracking link from working",
                     answer: Answer(204, "Revoked (or there was none)", .empty),
                     refusals: [404: "not_found (also for another carrier's order)"]),
        APIOperation(.trackingStatus, .dispatch, "What a tracking link shows: one order's progress",
                     details: "No sign-in: the token is the key. Status, cities, windows, pickup and delivery times, the driver's ETA, and while the truck's position is recent (15 minutes; a driver who paused sharing has none) the computed ETA and miles to go. No address, driver or position. A token never given, revoked, replaced or expired is 404 alike.",
                     answer: .ok(TrackingStatus.self),
                     refusals: [404: "not_found: the link is not valid or has expired"]),
        APIOperation(.dispatchDeviceBacklogs, .dispatch, "What each driver's phones have not sent yet",
                     details: "What each phone last reported still holds: work waiting on the device, refused changes with their reasons, kept inspections.",
                     answer: .list(ReportedBacklog.self)),
    ] }
}
