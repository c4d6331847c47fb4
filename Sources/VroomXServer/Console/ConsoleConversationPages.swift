import Foundation
import Hummingbird
import VroomXModels

/// Conversations with drivers: the inbox on the Messages page, one driver's
/// conversation with a reply box, and the unread count every page shows
/// (its script asks `/messages/unread` when the feed says a message came).
struct ConsoleConversationPages {
    let console: ConsoleController
    var store: Store { console.store }
    var pages: ConsolePages { console.pages }

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/messages/unread") { request in
            // Asked by the page's script: a failure answers in the API's JSON shape, not as a page.
            let unread: Int
            let newest: (message: DriverMessage, driver: String)?
            let alert: (id: ID<Order>, number: String, at: Date, text: String)?
            let alerts: Int
            do {
                unread = try await store.conversations.inbox(tenant: request.tenant).reduce(0) { $0 + $1.unread }
                newest = try await store.conversations.newestUnread(tenant: request.tenant)
                // Alerts after the browser's last one (the last day at most): the newest is announced, with how many came.
                let dayAgo = store.now.addingTimeInterval(-86_400)
                let since = request.query("alerts_since").flatMap(Int64.init).map(WireTime.date(milliseconds:)).map { max($0, dayAgo) } ?? dayAgo
                (alert, alerts) = try await store.read { db in
                    (try await OrderRepository.latestAlert(tenant: request.tenant, since: since, db),
                     try await OrderRepository.alertCount(tenant: request.tenant, since: since, db))
                }
            } catch {
                let refusal = ErrorMiddleware.appError(for: error)
                return Self.json(try JSONBody.encoder.encode(APIErrorResponse(refusal.body)), status: .init(code: refusal.status))
            }
            // The message that arrived last is announced, whenever the driver wrote it.
            let answer = UnreadAnswer(unread: unread,
                                      latest: newest.map { .init(key: $0.message.id.rawValue, driver: $0.driver,
                                                                 text: String($0.message.body.prefix(140)),
                                                                 url: "/messages/\($0.message.driverID)") },
                                      alert: alert.map { .init(key: "\($0.id):\(WireTime.milliseconds($0.at))", at: WireTime.milliseconds($0.at),
                                                               text: "\($0.number): \($0.text)" + (alerts > 1 ? " (and \(alerts - 1) more orders)" : ""),
                                                               url: "/orders/\($0.id)") },
                                      now: WireTime.milliseconds(store.now))
            return Self.json(try JSONBody.encoder.encode(answer))
        }
        console.get(router, "/messages/:driver/photos/:message/:photo") { request in
            let (photo, key) = try await store.receipts.attachedPhoto(try request.id("photo", "Photo"), of: .message(try request.id("message", "Message")),
                                                                      request.scope)
            return try await InspectionController.serve(request.request, contentType: photo.contentType, sha256: photo.sha256, key: key,
                                                        media: console.media)
        }
        console.get(router, "/messages/:driver") { request in try await conversation(request, errors: FieldErrors()) }
        console.post(router, "/messages/:driver", reply)
    }

    static func json(_ bytes: Data, status: HTTPResponse.Status = .ok) -> Response {
        var headers = ConsolePages.securityHeaders
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    struct UnreadAnswer: Encodable {
        struct Latest: Encodable { let key: String; let driver: String; let text: String; let url: String }
        /// The order alerted last (late or at risk) in the last day.
        struct Alert: Encodable { let key: String; let at: Int64; let text: String; let url: String }
        let unread: Int
        let latest: Latest?
        let alert: Alert?
        /// The server's clock: a browser's first page announces only alerts after it.
        let now: Int64
    }

    /// The inbox rows the Messages page lists.
    static func inbox(_ store: Store, tenant: ID<Tenant>) async throws -> [MessagesView.Conversation] {
        try await store.conversations.inbox(tenant: tenant).map {
            .init(driverID: $0.driverID.rawValue, driver: $0.driverName, last: ($0.lastFrom == .dispatch ? "You: " : "") + String($0.lastBody.prefix(120)),
                  at: ConsoleFormat.time($0.lastAt), unread: $0.unread > 0 ? String($0.unread) : "")
        }
    }

    /// Opening the conversation reads the driver's messages (their phone shows it).
    private func conversation(_ request: ConsoleRequest, errors: FieldErrors, values: [String: String] = [:],
                              status: HTTPResponse.Status = .ok) async throws -> Response {
        let driverID: ID<Driver> = try request.id("driver", "Driver")
        guard let driver = try await store.people.drivers(tenant: request.tenant).first(where: { $0.id == driverID }) else {
            throw AppError.notFound("Driver")
        }
        // Opened by dispatch, not by a link on another site (the session cookie rides along on one).
        if request.request.headers[.init("Sec-Fetch-Site")!] != "cross-site" {
            try await store.conversations.markRead(driver: driverID, tenant: request.tenant)
        }
        let lines = try await store.conversations.conversation(with: driverID, tenant: request.tenant)
        let trips = try await store.trips.open(of: driverID, tenant: request.tenant)
        let driverScope = Scope.driver(tenant: request.tenant, driver: driverID)
        let orders = try await store.orders.list(driverScope, status: .assigned) + store.orders.list(driverScope, status: .pickedUp)
        // The numbers the lines name: the driver's open work, and older work looked up once each.
        var tripNumbers = Dictionary(trips.map { ($0.id, $0.number) }, uniquingKeysWith: { first, _ in first })
        var orderNumbers = Dictionary(orders.map { ($0.id, $0.number) }, uniquingKeysWith: { first, _ in first })
        for id in Set(lines.compactMap(\.orderID)) where orderNumbers[id] == nil {
            orderNumbers[id] = try? await store.orders.order(id, request.scope).number
        }
        for id in Set(lines.compactMap(\.tripID)) where tripNumbers[id] == nil {
            tripNumbers[id] = try? await store.trips.trip(id, request.scope).number
        }
        // A reply stays on the thread of the driver's last message unless dispatch picks another.
        let lastAbout = lines.last { $0.from == .driver }.map { line in line.orderID.map { "order:\($0)" } ?? line.tripID.map { "trip:\($0)" } ?? "" } ?? ""
        let about = values["about"] ?? lastAbout
        func subject(_ line: ConversationLine) -> (label: String, url: String)? {
            if let order = line.orderID { return (orderNumbers[order].map { "Order \($0)" } ?? "An order", "/orders/\(order)") }
            if let trip = line.tripID { return (tripNumbers[trip].map { "Trip \($0)" } ?? "A trip", "/trips/\(trip)") }
            return nil
        }
        let view = ConversationPageView(
            driverID: driverID.rawValue, driver: driver.name, phone: driver.phone,
            lines: lines.map { line in
                let about = subject(line)
                return .init(fromDriver: line.from == .driver, title: line.title, body: line.body, urgent: line.urgent,
                             about: about?.label ?? "", aboutURL: about?.url ?? "", at: ConsoleFormat.time(line.at),
                             read: ConsoleFormat.time(line.readAt), gotIt: ConsoleFormat.time(line.acknowledgedAt),
                             photos: line.photos.map { "/messages/\(driverID)/photos/\(line.id)/\($0.id)" })
            },
            empty: lines.isEmpty,
            subjects: [.init(id: "", name: "In general", selected: about.isEmpty)]
                + trips.map { .init(id: "trip:\($0.id)", name: "Trip \($0.number)", selected: about == "trip:\($0.id)") }
                + orders.map { .init(id: "order:\($0.id)", name: "Order \($0.number)", selected: about == "order:\($0.id)") },
            v: values, e: errors.messages, urgent: values["type"] == NotificationType.urgent.rawValue)
        return pages.page("conversation", title: "Messages · \(driver.name)", session: request.session, section: "messages", view, status: status)
    }

    private func reply(_ request: ConsoleRequest) async throws -> Response {
        let driverID: ID<Driver> = try request.id("driver", "Driver")
        let form = request.form
        let type: NotificationType = form["type"] == NotificationType.urgent.rawValue ? .urgent : .dispatchMessage
        var errors = FieldErrors()
        var (trip, order): (ID<Trip>?, ID<Order>?) = (nil, nil)
        let about = form["about"]
        if about.hasPrefix("trip:") { trip = ID(String(about.dropFirst(5))) } else if about.hasPrefix("order:") { order = ID(String(about.dropFirst(6))) }
        if !about.isEmpty, trip == nil, order == nil { errors.add("about", "Choose what the message is about.") }
        var title = "Dispatch"
        if let id = order, let found = try? await store.orders.order(id, request.scope) { (trip, title) = (found.tripID, "Order \(found.number)") }
        else if let id = trip, let found = try? await store.trips.trip(id, request.scope) { title = "Trip \(found.number)" }
        var problems = Problems()
        _ = NotificationService.validMessage(type: type, title: title, body: form["body"], &problems)
        errors.add(problems)
        if TextLimit.normalized(form["body"]).isEmpty { errors.add("body", "Write a message.") }
        guard errors.isEmpty else { return try await conversation(request, errors: errors, values: form.firstValues, status: .unprocessableContent) }
        do {
            _ = try await store.notifications.send(SendMessageRequest(driverID: driverID, type: type, title: title, body: form["body"],
                                                                  tripID: trip, orderID: order), tenant: request.tenant)
        } catch let error as AppError where error.status < 500 {
            return try await conversation(request, errors: FieldErrors(error, renamed: ["trip_id": "about", "order_id": "about"]),
                                          values: form.firstValues, status: .init(code: error.status))
        }
        return ConsolePages.redirect("/messages/\(driverID)#latest")
    }
}

/// One driver's conversation with dispatch.
struct ConversationPageView: ConsoleView {
    struct Line: ConsoleView {
        let fromDriver: Bool
        let title: String
        let body: String
        let urgent: Bool
        let about: String
        let aboutURL: String
        let at: TimeView?
        /// Dispatch's line: when the driver read it. The driver's: when dispatch did.
        let read: TimeView?
        let gotIt: TimeView?
        /// Where the driver's photos with it open.
        let photos: [String]
    }

    let driverID: String
    let driver: String
    let phone: String
    let lines: [Line]
    let empty: Bool
    let subjects: [OptionView]
    let v: [String: String]
    let e: [String: String]
    let urgent: Bool
}
