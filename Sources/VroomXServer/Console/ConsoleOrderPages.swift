import Foundation
import Hummingbird
import VroomXModels

/// The load board, an order's page and bill of lading, creating, editing,
/// cancelling and importing orders.
struct ConsoleOrderPages {
    let console: ConsoleController
    var store: Store { console.store }
    var pages: ConsolePages { console.pages }

    static let boardPageSize = 50

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/board", board)
        console.get(router, "/orders/:id/problems/:problem/photos/:photo") { request in
            let paper = Paper.problem(try request.id("problem", "Problem"), order: try request.id("id", "Order"))
            let (photo, key) = try await store.receipts.attachedPhoto(try request.id("photo", "Photo"), of: paper, request.scope)
            return try await InspectionController.serve(request.request, contentType: photo.contentType, sha256: photo.sha256, key: key,
                                                        media: console.media)
        }
        console.get(router, "/orders/new") { request in
            var values = ["trip_id": request.query("trip") ?? ""]
            // From a customer's page: the order is theirs, on their terms.
            if let id = request.query("customer").flatMap(ID<Customer>.init),
               let customer = try? await store.customers.customer(id, tenant: request.tenant) {
                (values["customer"], values["payment_terms"]) = (customer.name, customer.paymentTerms)
            }
            return try await orderForm(request, order: nil, values: values, errors: FieldErrors())
        }
        console.post(router, "/orders", page: "/board", create)
        // What a VIN typed on the order form says (year, maker, a wrong check digit), for the form's script.
        console.get(router, "/vin/:vin") { request in
            let raw = request.context.parameters.get("vin") ?? ""
            let decoded = VIN.decode(String((raw.removingPercentEncoding ?? raw).prefix(64)), currentYear: LocalDate(Date()).year)
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try JSONBody.encoder.encode(decoded))))
        }
        console.get(router, "/orders/import") { request in
            pages.page("import", title: "Import orders", session: request.session, section: "board", Self.importPage)
        }
        console.post(router, "/orders/import", importCSV)
        console.get(router, "/orders/:id") { request in try await orderPage(request) }
        console.get(router, "/orders/:id/edit") { request in
            let order = try await store.orders.order(try request.id("id", "Order"), request.scope)
            let values = Self.formValues(order, customer: try await customerName(of: order, request))
            return try await orderForm(request, order: order, values: values, originals: values, errors: FieldErrors())
        }
        console.post(router, "/orders/:id", update)
        console.post(router, "/orders/:id/cancel", page: "/orders/:id") { request in
            let id: ID<Order> = try request.id("id", "Order")
            _ = try await store.orders.update(id, UpdateOrderRequest(status: .cancelled), tenant: request.tenant)
            return ConsolePages.redirect("/orders/\(id)")
        }
        // Paperwork the driver did not do in the app: dispatch marks the vehicle picked up or delivered (now).
        console.post(router, "/orders/:id/status", page: "/orders/:id") { request in
            let id: ID<Order> = try request.id("id", "Order")
            guard let status = OrderStatus(rawValue: request.form["status"]), status == .pickedUp || status == .delivered else {
                throw AppError.validation("status", "status is picked_up or delivered.")
            }
            do {
                _ = try await store.orders.updateStatus(id, to: status, occurredAt: nil, request.scope)
                return ConsolePages.redirect("/orders/\(id)?moved=\(status.rawValue)")
            } catch let error as AppError where error.status < 500 {
                return ConsolePages.redirect("/orders/\(id)?refused=" + ConsolePages.queryValue(error.body.message))
            }
        }
        console.post(router, "/orders/:id/tracking", page: "/orders/:id") { request in
            let id: ID<Order> = try request.id("id", "Order")
            guard let tracking = console.tracking else { throw AppError.notFound("Tracking") }
            let base = tracking.base(host: request.request.head.authority)
            let replaced = try await tracking.link(of: id, tenant: request.tenant, base: base) != nil
            _ = try await tracking.create(for: id, tenant: request.tenant, base: base)
            return ConsolePages.redirect("/orders/\(id)?tracking=\(replaced ? "replaced" : "made")#tracking")
        }
        console.post(router, "/orders/:id/tracking/revoke", page: "/orders/:id") { request in
            let id: ID<Order> = try request.id("id", "Order")
            try await console.tracking?.revoke(for: id, tenant: request.tenant)
            return ConsolePages.redirect("/orders/\(id)?tracking=revoked#tracking")
        }
        console.post(router, "/orders/:id/bill-of-lading/email", page: "/orders/:id") { request in
            let id: ID<Order> = try request.id("id", "Order")
            guard let kind = Inspection.Kind(rawValue: request.form["kind"]) else { throw AppError.validation("kind", "kind is pickup or delivery.") }
            let refusal = try await store.emailBillOfLadingAgain(id, kind: kind, tenant: request.tenant)
            return ConsolePages.redirect("/orders/\(id)?mail=\(refusal?.rawValue ?? "queued")")
        }
        console.get(router, "/orders/:id/bill-of-lading.pdf") { request in
            let (number, bytes) = try await BillOfLadingService(store: store, media: console.media).pdf(of: try request.id("id", "Order"),
                                                                                                        tenant: request.tenant)
            return DocumentController.pdf(bytes, named: "bill-of-lading-\(number).pdf")
        }
        console.get(router, "/orders/:id/bill-of-lading") { request in try await orderPage(request, template: "bill-of-lading") }
        router.get("/console/media/:id/:slot") { request, context in
            guard let session = try await console.session(request) else { throw AppError(401, .missingToken, "Sign in first.") }
            guard let id = context.parameters.get("id").flatMap(ID<Inspection>.init) else { throw AppError.notFound("Inspection") }
            let slot = MediaSlot(context.parameters.get("slot") ?? "")
            guard slot.isValid else { throw AppError.notFound("Photo") }
            let (described, key) = try await store.inspections.media(id, slot: slot, .dispatch(tenant: session.identity.tenant))
            return try await InspectionController.serve(request, contentType: described.contentType, sha256: described.sha256, key: key,
                                                        media: console.media)
        }
    }

    /// The order page's tracking link, or what makes one; nothing when neither applies.
    static func trackingPanel(_ link: TrackingLink?, canCreate: Bool) -> OrderPageView.TrackingPanel? {
        guard link?.url != nil || canCreate else { return nil }
        return .init(url: link?.url, expires: ConsoleFormat.time(link?.expiresAt), canCreate: canCreate)
    }

    // MARK: The board

    /// "Imported 3 orders. They are on the Assigned tab.", or where each went
    /// when some went to a driver and others wait on New.
    static func importedNotice(_ request: ConsoleRequest) -> String {
        guard let count = request.query("imported").flatMap({ Int($0) }), (1...1_000_000).contains(count) else { return "" }
        let assigned = min(max(request.query("assigned").flatMap { Int($0) } ?? 0, 0), count)
        let imported = "Imported \(ConsoleFormat.count(count, "order"))"
        if assigned > 0, assigned < count {
            return "\(imported): \(ConsoleFormat.grouped(count - assigned)) on the New tab, \(ConsoleFormat.grouped(assigned)) on Assigned."
        }
        return "\(imported). \(count == 1 ? "It is" : "They are") on the \(assigned == count ? "Assigned" : "New") tab."
    }

    private func board(_ request: ConsoleRequest) async throws -> Response {
        let status = request.query("status").flatMap(OrderStatus.init(rawValue:)) ?? .new
        let search = request.searchText("q")
        let newestFirst = request.query("sort") == "pickup_desc"
        var page = min(max((request.query("page").flatMap { Int($0) } ?? 1), 1), 100_000) - 1
        // Next and Previous name the order beside the page (`after`, `before`), Last asks for the tab's end: read from
        // there, however deep. A typed page number still works, by skipping.
        let wantsLast = request.query("at") == "last"
        var anchor: Store.BoardAnchor? = request.query("after").flatMap { ID<Order>($0) }.map { .after($0) }
            ?? request.query("before").flatMap { ID<Order>($0) }.map { .before($0) }
        func query() -> Store.BoardQuery {
            Store.BoardQuery(status: status, search: search, pickupNewestFirst: newestFirst, page: page, pageSize: Self.boardPageSize, anchor: anchor)
        }
        // A search that runs past its deadline is stopped (the database frees its connection) and says so.
        var tooSlow = false
        let (found, tally): (Store.BoardPage, [OrderStatus: Int])
        do {
            (found, tally) = try await Self.searching(search) { [store] in
                // One after the other when searching (a search holds one statement thread, not two), and for the
                // last page, whose size the count gives.
                guard search.isEmpty, !wantsLast else {
                    let counts = try await store.orderCounts(tenant: request.tenant, search: search)
                    if wantsLast {
                        let end = ConsolePager.clamped(.max, pageSize: Self.boardPageSize, total: counts[status] ?? 0)
                        (page, anchor) = (end.page - 1, .last(rows: end.total - end.offset))
                    }
                    return (try await store.boardPage(query(), tenant: request.tenant), counts)
                }
                let query = query()
                async let found = store.boardPage(query, tenant: request.tenant)
                async let counts = store.orderCounts(tenant: request.tenant, search: search)
                return (try await found, try await counts)
            }
        } catch let error as DatabaseUnavailable where error.cause == .timedOut && !search.isEmpty {
            (found, tally, tooSlow) = (Store.BoardPage(orders: [], earlier: false, later: false), [:], true)
        }
        let orders = found.orders
        let total = tally[status] ?? 0
        func link(status: OrderStatus = status, page: Int = 1, sort: Bool = newestFirst, at place: String? = nil) -> String {
            var parts = ["status=\(status.rawValue)"]
            if !search.isEmpty { parts.append("q=" + ConsolePages.queryValue(search)) }
            if sort { parts.append("sort=pickup_desc") }
            if page > 1 { parts.append("page=\(page)") }
            if let place { parts.append(place) }
            return "/board?" + parts.joined(separator: "&")
        }
        // A page past the last (a list that shrank, an edited address, a Next whose orders all left) shows the last
        // page, not an empty board.
        let last = ConsolePager(page: 1, pageSize: Self.boardPageSize, total: total).pages
        if orders.isEmpty, total > 0, !tooSlow, !wantsLast { return ConsolePages.redirect(link(page: last, at: "at=last")) }
        let lookup = try await Names.load(store, tenant: request.tenant, of: orders)
        // The page's number is where it was asked for, unless the tab changed meanwhile: nothing before it is the
        // first page, nothing after it the last. The links follow what is there, so no order is out of reach.
        let shown = !found.earlier ? 1 : !found.later ? last : min(max(page + 1, 2), last)
        let pager = ConsolePager(page: shown, pageSize: Self.boardPageSize, total: total)
        let pagerView = pager.view(
            shown: orders.count, label: "Pages", ends: true,
            first: found.earlier ? link() : nil,
            prev: found.earlier ? orders.first.map { link(page: shown - 1, at: "before=\($0.id)") } : nil,
            next: found.later ? orders.last.map { link(page: shown + 1, at: "after=\($0.id)") } : nil,
            last: found.later ? link(page: last, at: "at=last") : nil)
        // A stopped search counted nothing: its tabs say so, not zero.
        let tabs = OrderStatus.allCases.map { tab in
            BoardView.Tab(label: tab.title, count: tooSlow ? "–" : ConsoleFormat.grouped(tally[tab] ?? 0), href: link(status: tab),
                          current: tab == status, hit: !search.isEmpty && (tally[tab] ?? 0) > 0)
        }
        // A search finds nothing here but matches on other tabs: say where.
        let elsewhere = search.isEmpty ? [] : OrderStatus.allCases.compactMap { tab -> BoardView.Tab? in
            guard tab != status, let count = tally[tab], count > 0 else { return nil }
            return BoardView.Tab(label: tab.title, count: ConsoleFormat.grouped(count), href: link(status: tab), current: false, hit: true)
        }
        return self.pages.page("board", title: "Load board", session: request.session, section: "board", BoardView(
            tabs: tabs, matching: !search.isEmpty, tooSlow: tooSlow, elsewhere: elsewhere, foundElsewhere: !elsewhere.isEmpty,
            status: status.rawValue, statusLabel: status.title, q: search, imported: Self.importedNotice(request),
            orders: orders.map { OrderRowView($0, lookup, today: LocalDate(store.now)) }, empty: orders.isEmpty,
            pager: pagerView,
            sortAscHref: link(sort: false), sortDescHref: link(sort: true), sortDesc: newestFirst))
    }

    /// How long a board search may take: past it, the page asks for a
    /// narrower search instead of keeping a database connection busy.
    static let searchDeadline: Duration = .seconds(3)

    /// Searches running at once on an instance, whatever the carriers: the
    /// rest of the database's threads (SQLite has 8) stay free for every
    /// other read, however many carriers search.
    static let searchSlots = AsyncSemaphore(permits: 3)

    /// Runs `body` under the search deadline when there is a search, in one
    /// of the search slots; the wait for a slot counts against the deadline.
    static func searching<T>(_ search: String, _ body: () async throws -> T) async throws -> T {
        guard !search.isEmpty else { return try await body() }
        let start = ContinuousClock.now
        return try await searchSlots.withPermit(timeout: searchDeadline,
                                                orThrow: DatabaseUnavailable(.timedOut, "every search slot stayed busy past the deadline")) {
            try await DatabaseDeadline.allowing(max(.milliseconds(200), searchDeadline - (ContinuousClock.now - start)), body)
        }
    }

    /// Drivers', trips' and the listed orders' customers' names for lists.
    struct Names: Sendable {
        var drivers: [ID<Driver>: Driver] = [:]
        var trips: [ID<Trip>: Trip] = [:]
        var customers: [ID<Customer>: Customer] = [:]

        static func load(_ store: Store, tenant: ID<Tenant>, of orders: [Order] = []) async throws -> Names {
            var names = Names()
            for driver in try await store.people.drivers(tenant: tenant) { names.drivers[driver.id] = driver }
            // Only the trips and customers the page shows: a carrier may have tens of thousands.
            let trips = Set(orders.compactMap(\.tripID)).sorted()
            for trip in try await store.trips.some(trips, tenant: tenant) { names.trips[trip.id] = trip }
            let customers = Set(orders.compactMap(\.customerID)).sorted()
            for customer in try await store.customers.some(customers, tenant: tenant) { names.customers[customer.id] = customer }
            return names
        }
    }

    // MARK: An order

    private func orderPage(_ request: ConsoleRequest, template: String = "order") async throws -> Response {
        let id: ID<Order> = try request.id("id", "Order")
        let order = try await store.orders.order(id, request.scope)
        let names = try await Names.load(store, tenant: request.tenant, of: [order])
        let inspectionList = try await store.inspections.documents(of: id, request.scope).array
        let inspections = (try? WireDocument.list(of: Inspection.self, from: inspectionList)) ?? []
        var notice = request.query("added") == "1" ? "Order \(order.number) created." : request.query("saved") == "1" ? "Saved." : ""
        if request.query("existing_customer") == "1" {
            notice = "Order \(order.number) created for \(names.customers[order.customerID ?? ID()]?.name ?? "the customer"), whom you already have: "
                + "their details were not changed (edit them on their page)."
        }
        // Notices by code: no text a link carries reaches the page.
        switch request.query("mail") {
        case "queued": notice = "The bill of lading is on its way to the customer again."
        case BillOfLadingResend.Refusal.notCompleted.rawValue: notice = "That inspection is not completed yet: there is no bill of lading of it to send."
        case BillOfLadingResend.Refusal.noEmail.rawValue: notice = "Give the order a customer with an email address first."
        default: break
        }
        if request.query("moved") == OrderStatus.pickedUp.rawValue { notice = "Marked picked up." }
        if request.query("moved") == OrderStatus.delivered.rawValue {
            notice = "Marked delivered." + (order.customerID == nil ? "" : " A draft invoice for the customer is ready under Invoices.")
        }
        if let refused = request.query("refused") { notice = "Not changed: " + String(refused.prefix(300)) }
        if request.query("tracking") == "made" { notice = "Tracking link made: copy it to the customer." }
        if request.query("tracking") == "replaced" { notice = "New tracking link made: copy it to the customer. The earlier link no longer works." }
        if request.query("tracking") == "revoked" { notice = "Tracking link revoked: it no longer works." }
        let named = (request.query("unpinned") ?? "").split(separator: ",")
        let unpinned = StopKind.allCases.filter { named.contains(Substring($0.rawValue)) && order.stop($0).location == nil }
        if !unpinned.isEmpty {
            let stops = unpinned.map { "\($0 == .pickup ? "pickup" : "delivery")" }.joined(separator: " and ")
            notice = "Saved. The \(stops)'s map point went with the old address: add the new one's on Edit to watch for arrival there."
        }
        let history = try await store.orderHistory(id, tenant: request.tenant)
        // Arrivals the truck's positions showed take their place among the status changes.
        let arrivals: [(Date, OrderPageView.Event)] = [(order.arrivedAtPickup, "Arrived at the pickup (truck's position)"),
                                                       (order.departedPickupAt, "Left the pickup (truck's position)"),
                                                       (order.arrivedAtDelivery, "Arrived at the delivery (truck's position)"),
                                                       (order.departedDeliveryAt, "Left the delivery (truck's position)")]
            .compactMap { when, text in when.map { ($0, OrderPageView.Event(time: ConsoleFormat.time($0), text: text)) } }
            + (try await store.read { try await OrderRepository.alert(of: id, tenant: request.tenant, $0) }.map { alert in
                [(alert.at, OrderPageView.Event(time: ConsoleFormat.time(alert.at), text: "Dispatch alerted: \(alert.text)"))]
            } ?? [])
        let statuses = history.isEmpty ? Self.timeline(order) : history.map { ($0.occurredAt, Self.historyLine($0)) }
        let etas = try await store.etaHistory(id, tenant: request.tenant).map { ($0.recordedAt, Self.etaLine($0)) }
        let mails = try await store.read { try await DocumentMailRepository.of(id, tenant: request.tenant, $0) }.map { mail in
            (mail.sentAt ?? mail.createdAt, OrderPageView.Event(time: ConsoleFormat.time(mail.sentAt ?? mail.createdAt), text: Self.mailLine(mail)))
        }
        // Messages about the order, either way, among the rest of its story.
        let messages = try await store.conversations.about(order: id, tenant: request.tenant).map { message in
            let who = names.drivers[message.driver]?.name ?? "A former driver"
            let words = "“\(message.line.body.prefix(300))\(message.line.body.count > 300 ? "…" : "")”"
            let text = message.line.from == .driver ? "\(who) wrote: \(words)"
                : "Dispatch wrote to \(who)\(message.line.urgent ? " (urgent)" : ""): \(words)"
            return (message.line.at, OrderPageView.Event(time: ConsoleFormat.time(message.line.at), text: text))
        }
        let progress = try await store.location.progress(of: id, tenant: request.tenant)
        let profile = try await store.carrierProfile.profile(tenant: request.tenant)
        let link = try await console.tracking?.link(of: id, tenant: request.tenant, base: console.tracking?.base(host: request.request.head.authority) ?? "")
        let done = try await store.read { try await TrackingService.expiry(of: order, tenant: request.tenant, $0) }.map { $0 <= store.now } ?? false
        var view = OrderPageView(
            row: OrderRowView(order, names, today: LocalDate(store.now)), order: .init(order, terms: profile.stopChargeTerms, now: store.now),
            notice: notice,
            timeline: (statuses + arrivals + etas + mails + messages).sorted { $0.0 < $1.0 }.map(\.1),
            pickupETA: ConsoleFormat.time(order.pickupETA), deliveryETA: ConsoleFormat.time(order.deliveryETA),
            computedETA: ConsoleFormat.time(progress.computedETA), computedStop: progress.nextStop?.rawValue ?? "",
            distance: progress.distanceMeters.map(LocationRules.distanceText), seen: ConsoleFormat.time(progress.position?.recordedAt),
            inspections: Self.inspections(inspections, of: order),
            noInspections: inspections.isEmpty, inspectionsAwaited: order.status.isOpen, canCancel: [.new, .assigned].contains(order.status), driverTold: order.driverID != nil,
            canEdit: ![.delivered, .cancelled].contains(order.status), paymentTerms: order.paymentTerms,
            canMarkPickedUp: order.status == .assigned, canMarkDelivered: order.status == .pickedUp,
            tracking: Self.trackingPanel(link, canCreate: console.tracking != nil && !done && order.status != .cancelled),
            // Once per stop, when every vehicle's inspection there is done.
            emailKinds: Inspection.Kind.allCases.filter { kind in
                inspections.contains { $0.kind == kind } && InspectionRules.remaining(order, kind, completed: inspections).isEmpty
            }.map(\.rawValue))
        if let invoiceID = try await store.invoices.invoices(ofOrders: [order.id], tenant: request.tenant)[order.id] {
            let invoice = try await store.invoices.invoice(invoiceID, tenant: request.tenant)
            view.invoice = .init(id: invoiceID.rawValue, label: invoice.number.map { "Invoice \($0) · \(invoice.status.label)" } ?? "Draft invoice")
        }
        if template == "bill-of-lading" {
            let numbers = [profile.mcNumber.isEmpty ? "" : "MC \(profile.mcNumber)", profile.dotNumber.isEmpty ? "" : "USDOT \(profile.dotNumber)"]
                .filter { !$0.isEmpty }.joined(separator: " · ")
            view.carrierHeader = .init(name: profile.legalName.isEmpty ? request.session.carrier : profile.legalName,
                                       lines: [profile.address, [profile.phone, profile.email].filter { !$0.isEmpty }.joined(separator: " · "), numbers]
                                           .filter { !$0.isEmpty }, terms: profile.bolTerms)
        }
        let title = template == "bill-of-lading" ? "Bill of lading \(order.number)" : "Order \(order.number)"
        return pages.page(template, title: title, session: request.session, section: "board", view)
    }

    /// "Bill of lading (pickup) emailed to billing@…", or why it was not.
    static func mailLine(_ mail: DocumentMailRepository.Entry) -> String {
        let what = "Bill of lading (\(mail.kind.rawValue))"
        switch mail.state {
        case .sent: return "\(what) emailed to \(mail.recipient)"
        case .queued, .sending: return "\(what) being emailed to \(mail.recipient)" + (mail.attempts > 0 ? " (try \(mail.attempts + 1))" : "")
        case .failed: return "\(what) not emailed to \(mail.recipient): \(mail.note)"
        case .skipped: return "\(what) not emailed: \(mail.note)"
        }
    }

    // MARK: Creating and editing

    /// The edit form's fields as the dispatcher reads them.
    static let conflict = EditConflict(fields: [
        ("customer", "Customer"), ("external_load_id", "Load ID"), ("payment_terms", "Payment terms"),
        ("pickup_name", "Pickup place"), ("pickup_address", "Pickup address"), ("pickup_contact_name", "Pickup contact"),
        ("pickup_contact_phone", "Pickup phone"), ("pickup_window_start", "Pickup from"), ("pickup_window_end", "Pickup to"),
        ("delivery_name", "Delivery place"), ("delivery_address", "Delivery address"), ("delivery_contact_name", "Delivery contact"),
        ("delivery_contact_phone", "Delivery phone"), ("delivery_window_start", "Delivery from"), ("delivery_window_end", "Delivery to"),
        ("pickup_point", "Pickup map point"), ("pickup_radius", "Pickup fence"),
        ("delivery_point", "Delivery map point"), ("delivery_radius", "Delivery fence"),
    ] + OrderFormVehicles.conflictFields)

    static func formValues(_ order: Order, customer: String) -> [String: String] {
        var values: [String: String] = [
            "number": order.number, "trip_id": order.tripID?.rawValue ?? "", "customer": customer,
            "external_load_id": order.externalLoadID ?? "", "payment_terms": order.paymentTerms,
            "base_version": String(order.version),
        ].merging(OrderFormVehicles.values(order.vehicles)) { first, _ in first }
        for (prefix, stop) in [("pickup", order.pickup), ("delivery", order.delivery)] {
            values["\(prefix)_name"] = stop.name
            values["\(prefix)_address"] = stop.address
            values["\(prefix)_contact_name"] = stop.contactName
            values["\(prefix)_contact_phone"] = stop.contactPhone
            values["\(prefix)_window_start"] = stop.windowStart?.description ?? ""
            values["\(prefix)_window_end"] = stop.windowEnd?.description ?? ""
            values["\(prefix)_point"] = stop.location?.text ?? ""
            values["\(prefix)_radius"] = stop.geofenceRadiusMeters.map { String(LocationRules.feet(fromMetres: $0)) } ?? ""
        }
        return values
    }

    /// `originals`: the values the edit form was filled with (see `EditConflict`).
    private func orderForm(_ request: ConsoleRequest, order: Order?, values: [String: String], originals: [String: String] = [:],
                           errors: FieldErrors, status: HTTPResponse.Status = .ok) async throws -> Response {
        let trips = try await store.trips.open(tenant: request.tenant)
        let selected = values["trip_id"] ?? ""
        let customers = try await store.customers.page(nil, offset: 0, limit: Self.suggestedCustomers, tenant: request.tenant).map {
            OrderFormView.CustomerOption(name: $0.name, terms: $0.paymentTerms)
        }
        return pages.page("order-form", title: order.map { "Edit \($0.number)" } ?? "New order", session: request.session,
                          section: "board", OrderFormView(
                            editing: order != nil, orderID: order?.id.rawValue ?? "", v: values, e: errors.messages,
                            geocoder: console.stops.geocoder != nil,
                            defaultRadiusFeet: LocationRules.feet(fromMetres: LocationRules.defaultRadiusMeters),
                            hasErrors: !errors.isEmpty && errors.messages["base_version"] == nil,
                            originals: Self.conflict.hiddenFields(originals),
                            trips: trips.map { .init(id: $0.id.rawValue, number: $0.number, route: "\($0.origin) → \($0.destination)",
                                                     selected: $0.id.rawValue == selected) },
                            customers: customers,
                            customerKinds: CustomerKind.allCases.map {
                                ChoiceView(value: $0.rawValue, label: $0.label, selected: (values["new_customer_kind"] ?? "broker") == $0.rawValue)
                            },
                            vehicles: OrderFormVehicles.views(values: values, errors: errors.messages),
                            vehiclesTotal: ConsoleFormat.money(OrderFormVehicles.total(values))),
                          status: status)
    }

    /// How many of the carrier's customers the form suggests by name (any other is found when typed in full).
    static let suggestedCustomers = 1_000

    private func customerName(of order: Order, _ request: ConsoleRequest) async throws -> String {
        guard let id = order.customerID else { return "" }
        return try await store.customers.customer(id, tenant: request.tenant).name
    }

    /// The customer the form names: none, one the carrier has (by name,
    /// ignoring case), or a new one when the dispatcher ticked "add" — the
    /// order form never has to be left to add one. A name the carrier does
    /// not have is otherwise a question next to the field.
    enum NamedCustomer {
        case none
        case existing(ID<Customer>)
        case new(CreateCustomerRequest)
    }

    private func namedCustomer(_ form: ConsoleForm, tenant: ID<Tenant>, errors: inout FieldErrors) async throws -> NamedCustomer {
        let name = form["customer"].trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else { return .none }
        if let customer = try await store.customers.named(name, tenant: tenant) { return .existing(customer.id) }
        guard form["new_customer"] == "yes" else {
            errors.add("customer", "You have no customer named \(name) yet. Tick “Add as a new customer” to add them with this order, or pick one from the list.")
            return .none
        }
        let request = CreateCustomerRequest(name: name, kind: CustomerKind(rawValue: form["new_customer_kind"]), email: form["new_customer_email"],
                                            phone: form["new_customer_phone"])
        var problems = Problems()
        _ = CustomerService.checked(request, &problems)
        errors.add(problems, renamed: ["name": "customer", "email": "new_customer_email", "phone": "new_customer_phone"])
        return .new(request)
    }

    /// The customer's id, adding a new one first.
    private func customerID(_ named: NamedCustomer, tenant: ID<Tenant>) async throws -> ID<Customer>? {
        switch named {
        case .none: return nil
        case .existing(let id): return id
        case .new(let request): return try await store.customers.create(request, tenant: tenant).id
        }
    }

    /// The form's order, and every field the form itself could not read
    /// (those stand empty in the order).
    static func orderRequest(_ form: ConsoleForm) -> (request: CreateOrderRequest, errors: FieldErrors, renamed: [String: String]) {
        var errors = FieldErrors()
        let (vehicles, rows) = OrderFormVehicles.read(form, errors: &errors)
        let trip: ID<Trip>? = FormValue.id(form["trip_id"], field: "trip_id", errors: &errors)
        func stop(_ prefix: String) -> Stop {
            Stop(name: form["\(prefix)_name"], address: form["\(prefix)_address"], contactName: form["\(prefix)_contact_name"],
                 contactPhone: form["\(prefix)_contact_phone"],
                 windowStart: FormValue.date(form["\(prefix)_window_start"], field: "\(prefix)_window_start", errors: &errors),
                 windowEnd: FormValue.date(form["\(prefix)_window_end"], field: "\(prefix)_window_end", errors: &errors),
                 location: FormValue.point(form["\(prefix)_point"], field: "\(prefix)_point", errors: &errors),
                 geofenceRadiusMeters: FormValue.integer(form["\(prefix)_radius"], field: "\(prefix)_radius",
                                                         range: LocationRules.radiusRangeFeet, errors: &errors).map(LocationRules.metres(fromFeet:)))
        }
        let pickup = stop("pickup")
        let delivery = stop("delivery")
        return (CreateOrderRequest(
            number: form["number"], tripID: trip, vehicles: vehicles, pickup: pickup, delivery: delivery, paymentTerms: form["payment_terms"],
            acceptVINWarning: form["accept_vin_warning"] == "yes", externalLoadID: form["external_load_id"]),
                errors, OrderFormVehicles.renamed(rows: rows))
    }

    private func create(_ request: ConsoleRequest) async throws -> Response {
        var (body, errors, renamed) = Self.orderRequest(request.form)
        // The store's rules too, so every problem shows at once.
        var problems = Problems()
        _ = ValidOrder(body, now: Date(), &problems)
        errors.add(problems, renamed: renamed)
        let customer = try await namedCustomer(request.form, tenant: request.tenant, errors: &errors)
        guard errors.isEmpty else {
            return try await orderForm(request, order: nil, values: Self.typed(request, problems.all), errors: errors, status: .unprocessableContent)
        }
        do {
            body.customerID = try await customerID(customer, tenant: request.tenant)
            body = await console.stops.located(body)
            let order = try await store.orders.create(body, tenant: request.tenant)
            // "Add as a new customer" for a name the carrier has: the order is theirs, and the page says their details stayed.
            if case .existing = customer, request.form["new_customer"] == "yes" {
                return ConsolePages.redirect("/orders/\(order.id)?added=1&existing_customer=1")
            }
            return ConsolePages.redirect("/orders/\(order.id)?added=1")
        } catch let error as AppError where error.status < 500 {
            return try await orderForm(request, order: nil, values: Self.typed(request, [error]),
                                       errors: FieldErrors(error, renamed: renamed), status: .init(code: error.status))
        }
    }

    private func update(_ request: ConsoleRequest) async throws -> Response {
        let id: ID<Order> = try request.id("id", "Order")
        let order = try await store.orders.order(id, request.scope)
        let originals = Self.conflict.originals(request.form)
        let savedValues = Self.formValues(order, customer: try await customerName(of: order, request))
        let form = request.form.keeping(savedValues, shown: originals)
        var (body, errors, renamed) = Self.orderRequest(form)
        // The number and the trip are not edited here (the trip is assigned from the order's page).
        // The form's version: details someone else saved meanwhile are not overwritten unseen.
        // A form without it is refused (0 is never a version) rather than saved unchecked.
        let base = Int(request.form["base_version"]) ?? 0
        (body.pickup, body.delivery) = (Self.exactWhereShown(body.pickup, "pickup", saved: order.pickup, request.form, originals),
                                        Self.exactWhereShown(body.delivery, "delivery", saved: order.delivery, request.form, originals))
        var changes = UpdateOrderRequest(pickup: body.pickup, delivery: body.delivery, paymentTerms: body.paymentTerms, baseVersion: base,
                                         acceptVINWarning: body.acceptVINWarning, externalLoadID: body.externalLoadID ?? "",
                                         vehicles: body.vehicles)
        var problems = Problems()
        _ = OrderService.edited(order, by: changes, now: Date(), &problems)
        errors.add(problems, renamed: renamed)
        let customer = try await namedCustomer(form, tenant: request.tenant, errors: &errors)
        guard errors.isEmpty else {
            return try await orderForm(request, order: order, values: Self.typed(request, problems.all), originals: originals, errors: errors,
                                       status: .unprocessableContent)
        }
        do {
            changes.customerID = .some(try await customerID(customer, tenant: request.tenant))
            let saved = try await store.orders.update(id, await console.stops.located(changes, editing: order), tenant: request.tenant)
            // A stop whose new address took its map point away (no geocoder found one) is said so: it no longer
            // has an arrival fence, and nothing else on the page would tell.
            let unpinned = StopKind.allCases.filter { order.stop($0).location != nil && saved.stop($0).location == nil }
            return ConsolePages.redirect("/orders/\(id)?saved=1" + (unpinned.isEmpty ? "" : "&unpinned=" + unpinned.map(\.rawValue).joined(separator: ",")))
        } catch let error as AppError where error.status == 409 && error.body.field == "base_version" {
            // The form shows what is saved now (theirs), so saving again never blanks fields they changed.
            let current = try await store.orders.order(id, request.scope)
            let saved = Self.formValues(current, customer: try await customerName(of: current, request))
            let errors = Self.conflict.errors(record: "order", typed: request.form.firstValues, originals: originals, saved: saved)
            return try await orderForm(request, order: order, values: saved, originals: saved, errors: errors, status: .conflict)
        } catch let error as AppError where error.status < 500 {
            return try await orderForm(request, order: order, values: Self.typed(request, [error]), originals: originals,
                                       errors: FieldErrors(error, renamed: renamed), status: .init(code: error.status))
        }
    }

    /// The stop with its map point and fence exact where the form's fields
    /// were left as shown: the form shows points to 5 decimals and fences to
    /// 5 feet, and rounding a saved one would move the stop (and clear an
    /// arrival made there) or resize its fence. What is typed is taken as
    /// typed. (With a new address the saved point goes: `StopLocator`.)
    static func exactWhereShown(_ stop: Stop, _ prefix: String, saved: Stop, _ form: ConsoleForm, _ originals: [String: String]) -> Stop {
        var kept = stop
        if form["\(prefix)_point"] == originals["\(prefix)_point"], stop.location != nil { kept.location = saved.location }
        if form["\(prefix)_radius"] == originals["\(prefix)_radius"], stop.geofenceRadiusMeters != nil {
            kept.geofenceRadiusMeters = saved.geofenceRadiusMeters
        }
        return kept
    }

    /// What the dispatcher typed, shown again; a VIN whose check digit is
    /// wrong also offers to keep it as printed, and a VIN confirmed so stays
    /// confirmed while other fields are fixed.
    static func typed(_ request: ConsoleRequest, _ refusals: [AppError]) -> [String: String] {
        var values = request.form.firstValues
        if refusals.contains(where: { $0.body.code == .vinCheckDigit }) || values["accept_vin_warning"] == "yes" { values["vin_warning"] = "yes" }
        return values
    }

    // MARK: Import

    /// A CSV of orders: every bad line answered with its line number and
    /// field, and nothing written unless every line is good.
    private func importCSV(_ request: ConsoleRequest) async throws -> Response {
        let text = request.form.values["csv"]?.first ?? ""
        let result: OrderImport.Outcome
        do {
            // One import at a time per carrier: each waits for the carrier's number claim holding a pooled
            // database connection, so a burst of them took the connections other carriers' requests needed.
            guard console.imports.take(request.tenant) else {
                throw OrderImport.Problems(lines: [OrderImport.Problem(
                    line: 1, field: "file", message: "Another import for this carrier is still running. Import this file once it has finished.")])
            }
            defer { console.imports.give(request.tenant) }
            result = try await OrderImport.run(text, store: store, tenant: request.tenant)
        } catch let problems as OrderImport.Problems {
            return pages.page("import", title: "Import orders", session: request.session, section: "board",
                              Self.importPage.refused(problems.lines.map { ($0.line, $0.field, $0.message) }, csv: text),
                              status: .unprocessableContent)
        }
        return ConsolePages.redirect("/board?status=\(result.status.rawValue)&imported=\(result.count)&assigned=\(result.assigned)")
    }

    static let importPage = ImportView(heading: "Import orders", orders: true, units: false, action: "/orders/import",
                                       back: "/board", backLabel: "Board", template: "/orders/import/template.csv")
}
