import Foundation
import Hummingbird
import VroomXModels

/// Trips: the list, a new trip, a trip's page with its orders, expenses,
/// revenue, pay and miles; editing its details and status, assigning the
/// driver and moving orders on and off.
struct ConsoleTripPages {
    /// Expenses shown on a trip's page at a time.
    static let expensesPerPage = 50

    let console: ConsoleController
    var store: Store { console.store }
    var pages: ConsolePages { console.pages }

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/trips", list)
        console.get(router, "/trips/new") { request in
            try await tripForm(request, values: ["driver_id": request.query("driver") ?? ""], errors: FieldErrors())
        }
        console.post(router, "/trips", create)
        console.get(router, "/trips/:id", tripPage)
        // A receipt the driver emailed, or one taken at the office: added and removed as the API does.
        console.postFile(router, "/trips/:id/expenses/:expense/receipts", page: "/trips/:id") { request in
            let id: ID<Expense> = try request.id("expense", "Expense")
            try await console.uploads.putWhole(request.request, to: .receipt(id), request.session.identity)
            return Response(status: .noContent)
        }
        console.post(router, "/trips/:id/expenses/:expense/receipts/:receipt/delete", page: "/trips/:id") { request in
            let trip: ID<Trip> = try request.id("id", "Trip")
            let (_, key) = try await store.receipts.deleteReceipt(try request.id("receipt", "Receipt"), of: try request.id("expense", "Expense"),
                                                                  request.scope)
            await console.media.remove(key)
            return ConsolePages.redirect("/trips/\(trip)#trip-expenses")
        }
        console.get(router, "/expenses/:id/receipts/:receipt") { request in
            let (photo, key) = try await store.receipts.receipt(try request.id("receipt", "Receipt"), of: try request.id("id", "Expense"), request.scope)
            return try await InspectionController.serve(request.request, contentType: photo.contentType, sha256: photo.sha256, key: key,
                                                        media: console.media)
        }
        console.get(router, "/trips/:id/edit") { request in
            let trip = try await editableTrip(request)
            return try await tripForm(request, trip: trip, values: Self.formValues(trip), originals: Self.formValues(trip), errors: FieldErrors())
        }
        console.post(router, "/trips/:id", update)
        console.post(router, "/trips/:id/status", page: "/trips/:id") { request in
            guard let status = TripStatus(rawValue: request.form["status"]) else {
                var errors = FieldErrors()
                errors.add("status", "Choose what the trip becomes.")
                return try await tripPage(request, errors: errors, status: .unprocessableContent)
            }
            return try await change(request, field: "status") { id in
                // A cancelled trip's waiting vehicles go back to the board: counted for the notice.
                let waiting = status == .cancelled
                    ? try await store.orders.list(request.scope, trip: id).filter(\.status.isWaiting).count : 0
                let trip = try await store.trips.update(id, UpdateTripRequest(status: status), tenant: request.tenant)
                return "done=status&to=\(status.rawValue)&back=\(waiting)&told=\(trip.driverID == nil ? 0 : 1)"
            }
        }
        console.post(router, "/trips/:id/revenue", page: "/trips/:id") { request in
            try await change(request, field: "revenue") { id in
                _ = try await store.trips.update(id, UpdateTripRequest(revenueFollowsOrders: true), tenant: request.tenant)
                return "done=revenue"
            }
        }
        console.post(router, "/trips/:id/assign", page: "/trips/:id") { request in
            var errors = FieldErrors()
            let driver: ID<Driver>? = FormValue.id(request.form["driver_id"], field: "driver_id", errors: &errors)
            guard errors.isEmpty else { return try await tripPage(request, errors: errors) }
            return try await change(request, field: "driver_id") { id in
                _ = try await store.trips.assign(id, to: driver, tenant: request.tenant)
                return "done=assigned&driver=\(driver?.rawValue ?? "")"
            }
        }
        console.post(router, "/trips/:id/orders", page: "/trips/:id") { request in
            var errors = FieldErrors()
            guard let order: ID<Order> = FormValue.id(request.form["order_id"], field: "order_id", errors: &errors) else {
                errors.add("order_id", "Choose an order to add.")
                return try await tripPage(request, errors: errors, status: .unprocessableContent)
            }
            // Back to the same search: adding several of its orders is one search.
            let search = request.searchText("add_q")
            let keep = search.isEmpty ? "" : "&add_q=" + ConsolePages.queryValue(search)
            return try await change(request, field: "order_id", fragment: "trip-orders") { id in
                let (_, added) = try await store.orders.add(order, to: id, tenant: request.tenant)
                return "done=\(added ? "order_added" : "order_there")&order=\(order)" + keep
            }
        }
        console.post(router, "/trips/:id/orders/:order/remove", page: "/trips/:id") { request in
            let id: ID<Trip> = try request.id("id", "Trip")
            let order: ID<Order> = try request.id("order", "Order")
            _ = try await store.orders.remove(order, from: id, tenant: request.tenant)
            return ConsolePages.redirect("/trips/\(id)?done=order_removed&order=\(order)")
        }
    }

    /// A change made from the trip's page: back to the page, its address
    /// saying what was done (`body` returns that query, see `notice`), or the
    /// page again with the store's refusal next to `field`.
    private func change(_ request: ConsoleRequest, field: String, fragment: String? = nil,
                        _ body: (ID<Trip>) async throws -> String) async throws -> Response {
        let id: ID<Trip> = try request.id("id", "Trip")
        let done: String
        do {
            done = try await body(id)
        } catch let error as AppError where error.status < 500 {
            return try await tripPage(request, errors: FieldErrors(error, fallbackField: field), status: .init(code: error.status))
        }
        return ConsolePages.redirect("/trips/\(id)?\(done)" + (fragment.map { "#" + $0 } ?? ""))
    }

    /// What the dispatcher's last action on the page did, as its address
    /// records it (the page's script hides it on a reload, so it is said
    /// once). Names are looked up; no words come from the address.
    private func notice(_ request: ConsoleRequest, trip: Trip, names: ConsoleOrderPages.Names) async -> String {
        if request.query("added") == "1" { return "Trip \(trip.number) created." }
        if request.query("saved") == "1" { return "Saved." }
        switch request.query("done") {
        case "status":
            guard let status = request.query("to").flatMap(TripStatus.init(rawValue:)) else { return "" }
            switch status {
            case .planned: return "Trip \(trip.number) is planned again."
            case .inProgress: return "Trip \(trip.number) started."
            case .completed: return "Trip \(trip.number) marked completed."
            case .cancelled:
                let back = request.query("back").flatMap { Int($0) }.map { min(max($0, 0), 100_000) } ?? 0
                return "Trip \(trip.number) cancelled."
                    + (back > 0 ? " \(ConsoleFormat.count(back, "vehicle")) that \(back == 1 ? "was" : "were") waiting \(back == 1 ? "is" : "are") back on the board." : "")
                    + (request.query("told") == "1" ? " The driver is told." : "")
            }
        case "revenue":
            return "Revenue follows the orders: \(ConsoleFormat.money(trip.revenueCents))."
        case "assigned":
            guard let raw = request.query("driver"), !raw.isEmpty else { return "Trip \(trip.number) has no driver now: it waits for one." }
            return ID<Driver>(raw).flatMap { names.drivers[$0] }.map { "Trip \(trip.number) assigned to \($0.name)." } ?? ""
        case "order_added", "order_removed", "order_there":
            guard let id = request.query("order").flatMap({ ID<Order>($0) }),
                  let order = try? await store.orders.order(id, request.scope) else { return "" }
            if request.query("done") == "order_there" { return "Order \(order.number) is on this trip already." }
            if request.query("done") == "order_added" {
                // Said at once when the trip now carries more than its driver's trailer holds.
                var units: [Equipment] = []
                if let driver = trip.driverID { units = (try? await store.fleet.units(of: driver, tenant: request.tenant)) ?? [] }
                let load = TripHeadsUp.load((try? await store.orders.list(request.scope, trip: trip.id)) ?? [],
                                            trailer: TripHeadsUp.trailer(of: trip.driverID, units: units))
                return "Order \(order.number) added to this trip." + (load.over ? " More vehicles than the trailer holds: \(load.text)." : "")
            }
            return "Order \(order.number) taken off this trip." + (order.tripID == nil && order.status == .new ? " It waits on the board under New." : "")
        default:
            return ""
        }
    }

    /// Open trips, and finished ones, shown a page at a time each.
    static let perPage = 50

    private func list(_ request: ConsoleRequest) async throws -> Response {
        // The pages asked for, within reason (kept to each list's last page once the totals are known).
        func asked(_ name: String) -> Int { min(max(request.query(name).flatMap { Int($0) } ?? 1, 1), 1_000_000) }
        let (askedOpen, askedFinished) = (asked("open_page"), asked("page"))
        func read(_ open: Int, _ finished: Int) async throws -> Store.TripsPage {
            try await store.tripsPage(tenant: request.tenant, open: ((open - 1) * Self.perPage, Self.perPage),
                                      finished: ((finished - 1) * Self.perPage, Self.perPage))
        }
        var listed = try await read(askedOpen, askedFinished)
        let openPager = ConsolePager.clamped(askedOpen, pageSize: Self.perPage, total: listed.openTotal)
        let finishedPager = ConsolePager.clamped(askedFinished, pageSize: Self.perPage, total: listed.finishedTotal)
        if openPager.page != askedOpen || finishedPager.page != askedFinished {
            listed = try await read(openPager.page, finishedPager.page)
        }
        let drivers = Dictionary(uniqueKeysWithValues: try await store.people.drivers(tenant: request.tenant).map { ($0.id, $0) })
        func row(_ trip: Trip) -> TripRowView {
            TripRowView(trip, driver: trip.driverID.flatMap { drivers[$0] }, orders: listed.orders[trip.id] ?? 0)
        }
        // Each pager keeps the other list's page.
        func link(open: Int, finished: Int) -> String {
            let query = [open > 1 ? "open_page=\(open)" : nil, finished > 1 ? "page=\(finished)" : nil].compactMap { $0 }.joined(separator: "&")
            return query.isEmpty ? "/trips" : "/trips?" + query
        }
        return pages.page("trips", title: "Trips", session: request.session, section: "trips", TripsPageView(
            open: listed.open.map(row), finished: listed.finished.map(row), noOpen: listed.open.isEmpty, noFinished: listed.finished.isEmpty,
            empty: listed.openTotal == 0 && listed.finishedTotal == 0,
            openPager: listed.openTotal > Self.perPage
                ? openPager.view(shown: listed.open.count, label: "Open trips pages") { link(open: $0, finished: finishedPager.page) } : nil,
            pager: listed.finishedTotal > Self.perPage
                ? finishedPager.view(shown: listed.finished.count, label: "Finished trips pages") { link(open: openPager.page, finished: $0) } : nil))
    }

    /// The orders the trip page offers to add: on no trip and not yet picked up (the New tab's, without those on a
    /// trip that has no driver yet), soonest pickup first, a few at a time; a search (the board's) finds any other.
    /// An order on another trip is moved from that trip's page, never taken from it unseen.
    struct AddableOrders {
        var orders: [Order] = []
        var search = ""
        /// More match than are shown.
        var more = false
        var tooSlow = false

        var note: String {
            let quoted = "“\(search)”"
            if tooSlow { return "" }
            if search.isEmpty {
                return more ? "The \(orders.count) soonest pickups of the orders waiting for a trip: search to find another." : ""
            }
            if orders.isEmpty { return "No order waiting for a trip matches \(quoted)." }
            if more { return "The \(orders.count) soonest pickups of the orders waiting for a trip that match \(quoted): add a word to narrow them." }
            return "\(ConsoleFormat.count(orders.count, "order")) waiting for a trip \(orders.count == 1 ? "matches" : "match") \(quoted)."
        }
    }

    static let addableShown = 50

    private func addableOrders(_ request: ConsoleRequest) async throws -> AddableOrders {
        var adding = AddableOrders(search: request.searchText("add_q"))
        let search = adding.search
        do {
            let page = try await ConsoleOrderPages.searching(search) { [store] in
                try await store.boardPage(.init(status: .new, search: search, pickupNewestFirst: false, page: 0, pageSize: Self.addableShown,
                                                onNoTrip: true), tenant: request.tenant)
            }
            (adding.orders, adding.more) = (page.orders, page.later)
        } catch let error as DatabaseUnavailable where error.cause == .timedOut && !search.isEmpty {
            adding.tooSlow = true
        }
        return adding
    }

    private func tripPage(_ request: ConsoleRequest) async throws -> Response {
        try await tripPage(request, errors: FieldErrors())
    }

    private func tripPage(_ request: ConsoleRequest, errors: FieldErrors, status: HTTPResponse.Status = .ok) async throws -> Response {
        let id: ID<Trip> = try request.id("id", "Trip")
        let trip = try await store.trips.trip(id, request.scope)
        let orders = try await store.orders.list(request.scope, trip: id)
        let names = try await ConsoleOrderPages.Names.load(store, tenant: request.tenant, of: orders)
        let adding = trip.status.isOpen ? try await addableOrders(request) : AddableOrders()
        let open = adding.orders
        let expenses = try await store.expenses.list(trip: id, request.scope)
        let driver = trip.driverID.flatMap { names.drivers[$0] }
        // Offered only where the store would allow it (`Trip.statusRefusal`).
        // Counted in vehicles: an order of a dealer load is several.
        let loaded = orders.filter { $0.status == .pickedUp }.reduce(0) { $0 + $1.vehicles.count }
        let waiting = orders.filter(\.status.isWaiting).reduce(0) { $0 + $1.vehicles.count }
        let vehicles = Trip.Vehicles(loaded: loaded, waiting: waiting, delivered: orders.filter { $0.status == .delivered }.count)
        let ready = trip.readyToComplete(vehicles)
        let statusNote: String? = ready ? "Every vehicle is delivered: mark the trip completed to settle its pay."
            : trip.status != .inProgress || loaded + waiting == 0 ? nil : loaded > 0
            ? "\(ConsoleFormat.count(loaded, "vehicle")) on the truck" + (waiting > 0 ? " and \(ConsoleFormat.count(waiting, "vehicle")) still to pick up" : "")
                + ": the trip is completed once every vehicle is delivered."
            : "\(ConsoleFormat.count(waiting, "vehicle")) still to pick up: deliver, cancel or move \(waiting == 1 ? "it" : "them") to complete the trip."
        let actions = Self.statusActions.filter {
            trip.status.canTransition(to: $0.status) && trip.statusRefusal(to: $0.status, vehicles) == nil
        }.map { action in
            let confirm: String? = switch action.status {
            case .completed:
                "Mark trip \(trip.number) completed? " + (orders.filter { $0.status != .cancelled }.isEmpty ? "It carries no vehicles. " : "")
                    + "Its figures are then settled and it cannot be reopened."
            case .cancelled:
                "Cancel trip \(trip.number) for good? "
                    + (waiting > 0 ? "\(ConsoleFormat.count(waiting, "vehicle")) still waiting go\(waiting == 1 ? "es" : "") back to the board. " : "")
                    + (trip.driverID != nil ? "The driver is told. " : "") + "Press OK to cancel the trip."
            default: nil
            }
            return TripPageView.StatusAction(status: action.status.rawValue, label: action.label, danger: action.status == .cancelled,
                                             primary: ready && action.status == .completed, confirm: confirm)
        }
        // A trip holds up to 2,000 expenses: a page of them at a time, with the totals of all.
        let pager = ConsolePager.clamped(request.query("expenses_page").flatMap { Int($0) }, pageSize: Self.expensesPerPage,
                                         total: expenses.count)
        let shown = expenses.dropFirst(pager.offset).prefix(pager.pageSize)
        let spent = expenses.reduce(0) { $0 + $1.amountCents }
        var headsUp: [String] = []
        var units: [Equipment] = []
        if let driver { units = try await store.fleet.units(of: driver.id, tenant: request.tenant) }
        let load = TripHeadsUp.load(orders, trailer: TripHeadsUp.trailer(of: driver?.id, units: units))
        if let driver, trip.status.isOpen {
            headsUp = TripHeadsUp.lines(for: trip, driver: driver, otherTrips: try await store.trips.open(of: driver.id, tenant: request.tenant),
                                        units: units, today: LocalDate(store.now))
            // More vehicles than the trailer holds: loads must be split, or some delivered before others are picked up.
            if load.over { headsUp.insert("More vehicles than the trailer holds: \(load.text).", at: 0) }
        }
        let view = TripPageView(
            // A finished trip has nothing left to carry: it says what it delivered.
            row: TripRowView(trip, driver: driver, orders: orders.count),
            load: trip.status.isOpen ? load.text : TripHeadsUp.delivered(orders), overCapacity: trip.status.isOpen && load.over,
            orderRows: orders.map { OrderRowView($0, names, today: LocalDate(store.now)) }, noOrders: orders.isEmpty,
            openOrders: open.map { order in
                let route = "\(ConsoleFormat.city(order.pickup.address)) → \(ConsoleFormat.city(order.delivery.address))"
                return .init(id: order.id.rawValue, label: [order.number, order.vehiclesSummary, route].filter { !$0.isEmpty }.joined(separator: " · "),
                             selected: !adding.search.isEmpty && open.count == 1)
            },
            hasOpenOrders: !open.isEmpty, addSearch: adding.search, addNote: adding.note, addTooSlow: adding.tooSlow,
            offersAdding: trip.status.isOpen && (!open.isEmpty || !adding.search.isEmpty),
            drivers: names.drivers.values.filter { $0.deactivatedAt == nil || $0.id == trip.driverID }.sorted { $0.name < $1.name }.map {
                .init(id: $0.id.rawValue, name: $0.name, selected: $0.id == trip.driverID)
            },
            isOpen: trip.status.isOpen, statusNote: statusNote, statusActions: actions,
            expensePager: pager.pages > 1 ? pager.view(shown: shown.count, label: "Pages of expenses") {
                "/trips/\(id.rawValue)?expenses_page=\($0)#trip-expenses"
            } : nil,
            expenseCategories: Dictionary(grouping: expenses, by: \.category)
                .map { (category: $0.key, cents: $0.value.reduce(0) { $0 + $1.amountCents }, count: $0.value.count) }
                .sorted { $0.cents > $1.cents }
                .map { .init(category: $0.category.rawValue.capitalized, amount: ConsoleFormat.money($0.cents), count: ConsoleFormat.grouped($0.count)) },
            expenses: shown.map {
                .init(id: $0.id.rawValue, date: DayFormat.day($0.date), category: $0.category.rawValue.capitalized, amount: ConsoleFormat.money($0.amountCents),
                      notes: [$0.fuel?.text(amountCents: $0.amountCents), $0.notes.isEmpty ? nil : $0.notes].compactMap { $0 }.joined(separator: " · "),
                      by: ($0.driverID.map { names.drivers[$0]?.name ?? "A former driver" } ?? "Dispatch")
                        + ($0.afterReassignment ? " (spent offline; reached VroomX after the trip went to another driver)" : ""),
                      receipts: Self.receiptLinks($0), canAddReceipt: $0.receipts.count < ReceiptPhoto.maxPerItem,
                      receiptUploadURL: "/trips/\($0.tripID)/expenses/\($0.id)/receipts")
            },
            noExpenses: expenses.isEmpty, expenseTotal: ConsoleFormat.money(spent),
            // A cancelled order earns nothing.
            ordersRevenue: ConsoleFormat.money(TripService.revenue(of: orders)), revenueByHand: trip.revenueSetByHand,
            // A cancelled trip earns nothing: its figures stay for the record, its net is not a profit.
            net: trip.status == .cancelled ? "— (cancelled)" : ConsoleFormat.money(trip.revenueCents - trip.driverPayCents - spent),
            perMile: trip.miles > 0 ? ConsoleFormat.money(Int((Double(trip.revenueCents) / Double(trip.miles)).rounded())) : "—",
            e: errors.messages, notice: await notice(request, trip: trip, names: names),
            headsUp: headsUp, hasHeadsUp: !headsUp.isEmpty)
        return pages.page("trip", title: "Trip \(trip.number)", session: request.session, section: "trips", view, status: status)
    }

    /// What the trip's page offers to make of it, in the order shown.
    static let statusActions: [(status: TripStatus, label: String)] = [
        (.inProgress, "Start trip"), (.completed, "Mark completed"), (.planned, "Back to planned"), (.cancelled, "Cancel trip"),
    ]

    static func formValues(_ trip: Trip) -> [String: String] {
        [
            "number": trip.number, "origin": trip.origin, "destination": trip.destination,
            "start_date": trip.startDate?.description ?? "", "end_date": trip.endDate?.description ?? "",
            "revenue": ConsoleFormat.dollars(trip.revenueCents), "driver_pay": ConsoleFormat.dollars(trip.driverPayCents),
            "miles": trip.miles > 0 ? String(trip.miles) : "", "base_version": String(trip.version),
        ]
    }

    /// The edit form's fields as the dispatcher reads them.
    static let conflict = EditConflict(fields: [
        ("number", "Trip number"), ("origin", "From"), ("destination", "To"), ("start_date", "Starts"), ("end_date", "Ends"),
        ("revenue", "Revenue"), ("driver_pay", "Driver pay"), ("miles", "Miles"),
    ], emptyKeepsSaved: true)

    /// Trips that are over (completed or cancelled) keep the figures they were settled with.
    private func editableTrip(_ request: ConsoleRequest) async throws -> Trip {
        let trip = try await store.trips.trip(try request.id("id", "Trip"), request.scope)
        guard trip.status.isOpen else {
            throw AppError(409, .invalidTransition, "Trip \(trip.number) is \(trip.status.label); only planned trips and trips under way are edited.")
        }
        return trip
    }

    /// `originals`: the values the edit form was filled with (see `EditConflict`).
    private func tripForm(_ request: ConsoleRequest, trip: Trip? = nil, values: [String: String], originals: [String: String] = [:],
                          errors: FieldErrors, status: HTTPResponse.Status = .ok) async throws -> Response {
        let drivers = try await store.people.drivers(tenant: request.tenant).filter { $0.deactivatedAt == nil }.sorted { $0.name < $1.name }
        let selected = values["driver_id"] ?? ""
        return pages.page("trip-form", title: trip.map { "Edit trip \($0.number)" } ?? "New trip", session: request.session, section: "trips",
                          TripFormView(editing: trip != nil, tripID: trip?.id.rawValue ?? "", savedNumber: trip?.number ?? "",
                                       v: values, e: errors.messages, hasErrors: !errors.isEmpty && errors.messages["base_version"] == nil,
                                       originals: Self.conflict.hiddenFields(originals),
                                       drivers: drivers.map { .init(id: $0.id.rawValue, name: $0.name, selected: $0.id.rawValue == selected) }),
                          status: status)
    }

    /// The form's details as a change to the trip, or every field the form itself could not read.
    /// A field left empty keeps its saved value.
    private static func tripChanges(_ form: ConsoleForm, of trip: Trip) -> Result<UpdateTripRequest, FieldErrors> {
        var errors = FieldErrors()
        let start = FormValue.date(form["start_date"], field: "start_date", errors: &errors)
        let end = FormValue.date(form["end_date"], field: "end_date", errors: &errors)
        let revenue = FormValue.cents(form["revenue"], field: "revenue", errors: &errors)
        let pay = FormValue.cents(form["driver_pay"], field: "driver_pay", errors: &errors)
        let miles = FormValue.integer(form["miles"], field: "miles", range: FieldLimits.tripMiles.range, errors: &errors)
        checkDetails(form, start: start ?? trip.startDate, end: end ?? trip.endDate, numberRequired: false, &errors)
        guard errors.isEmpty else { return .failure(errors) }
        func text(_ field: String) -> String? { form[field].isEmpty ? nil : form[field] }
        // A form without its version is refused (0 is never a version) rather than saved unchecked.
        return .success(UpdateTripRequest(number: text("number"), startDate: start, endDate: end, origin: text("origin"),
                                          destination: text("destination"), revenueCents: revenue, driverPayCents: pay,
                                          miles: miles, baseVersion: Int(form["base_version"]) ?? 0))
    }

    /// The store's rules for the number, the places and the dates, checked
    /// with the form's own so every problem shows at once.
    private static func checkDetails(_ form: ConsoleForm, start: LocalDate?, end: LocalDate?, numberRequired: Bool,
                                     _ errors: inout FieldErrors) {
        if numberRequired || !form["number"].isEmpty { errors.check { _ = try Validate.name(form["number"], FieldLimits.tripNumber) } }
        errors.check { _ = try Validate.text(form["origin"], FieldLimits.tripOrigin) }
        errors.check { _ = try Validate.text(form["destination"], FieldLimits.tripDestination) }
        errors.check { try Validate.dateRange(start, end, field: "end_date") }
    }

    private func update(_ request: ConsoleRequest) async throws -> Response {
        let trip = try await editableTrip(request)
        let typed = request.form.firstValues
        let originals = Self.conflict.originals(request.form)
        let form = request.form.keeping(Self.formValues(trip), shown: originals)
        switch Self.tripChanges(form, of: trip) {
        case .failure(let errors):
            return try await tripForm(request, trip: trip, values: typed, originals: originals, errors: errors, status: .unprocessableContent)
        case .success(var changes):
            // Pay left as the form showed it is not a choice: pay on the driver's terms follows revenue and miles;
            // nor is revenue left as shown, which keeps following the orders if it did.
            if form["driver_pay"] == originals["driver_pay"] { changes.driverPayCents = nil }
            if form["revenue"] == originals["revenue"] { changes.revenueCents = nil }
            do {
                _ = try await store.trips.update(trip.id, changes, tenant: request.tenant)
                return ConsolePages.redirect("/trips/\(trip.id)?saved=1")
            } catch let error as AppError where error.status == 409 && error.body.field == "base_version" {
                let saved = Self.formValues(trip)
                let errors = Self.conflict.errors(record: "trip", typed: typed, originals: originals, saved: saved)
                return try await tripForm(request, trip: trip, values: saved, originals: saved, errors: errors, status: .conflict)
            } catch let error as AppError where error.status < 500 {
                let errors = FieldErrors(error, renamed: ["revenue_cents": "revenue", "driver_pay_cents": "driver_pay"])
                return try await tripForm(request, trip: trip, values: typed, originals: originals, errors: errors, status: .init(code: error.status))
            }
        }
    }

    private func create(_ request: ConsoleRequest) async throws -> Response {
        let form = request.form
        var errors = FieldErrors()
        let driver: ID<Driver>? = FormValue.id(form["driver_id"], field: "driver_id", errors: &errors)
        let start = FormValue.date(form["start_date"], field: "start_date", errors: &errors)
        let end = FormValue.date(form["end_date"], field: "end_date", errors: &errors)
        let revenue = FormValue.cents(form["revenue"], field: "revenue", errors: &errors)
        let pay = FormValue.cents(form["driver_pay"], field: "driver_pay", errors: &errors)
        let miles = FormValue.integer(form["miles"], field: "miles", range: FieldLimits.tripMiles.range, errors: &errors)
        Self.checkDetails(form, start: start, end: end, numberRequired: true, &errors)
        guard errors.isEmpty else { return try await tripForm(request, values: form.firstValues, errors: errors, status: .unprocessableContent) }
        let body = CreateTripRequest(number: form["number"], driverID: driver, startDate: start, endDate: end, origin: form["origin"],
                                     destination: form["destination"], revenueCents: revenue, driverPayCents: pay, miles: miles ?? 0)
        do {
            let trip = try await store.trips.create(body, tenant: request.tenant)
            return ConsolePages.redirect("/trips/\(trip.id)?added=1")
        } catch let error as AppError where error.status < 500 {
            let errors = FieldErrors(error, renamed: ["revenue_cents": "revenue", "driver_pay_cents": "driver_pay"])
            return try await tripForm(request, values: form.firstValues, errors: errors, status: .init(code: error.status))
        }
    }
}

extension ConsoleTripPages {
    /// "Receipt", or "Receipt 1", "Receipt 2"…: the photos of an expense's receipt, each opening in a tab.
    static func receiptLinks(_ expense: Expense) -> [TripPageView.ReceiptLink] {
        expense.receipts.enumerated().map { index, photo in
            .init(url: "/expenses/\(expense.id)/receipts/\(photo.id)",
                  removeURL: "/trips/\(expense.tripID)/expenses/\(expense.id)/receipts/\(photo.id)/delete",
                  label: expense.receipts.count == 1 ? "Receipt" : "Receipt \(index + 1)")
        }
    }
}
