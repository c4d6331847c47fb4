import Foundation
import Hummingbird
import NIOCore
import VroomXModels

/// Drivers (list and invite), messages to drivers, and the pay report.
struct ConsolePeoplePages {
    let console: ConsoleController
    var store: Store { console.store }
    var pages: ConsolePages { console.pages }

    func register(_ router: Router<AppRequestContext>) {
        console.get(router, "/drivers") { request in try await drivers(request) }
        console.get(router, "/drivers/new") { request in
            driverForm(request, values: ["pay_type": PayType.percentage.rawValue], errors: FieldErrors())
        }
        console.post(router, "/drivers", invite)
        console.get(router, "/drivers/:id/edit") { request in
            let id: ID<Driver> = try request.id("id", "Driver")
            guard let driver = try await store.people.driver(id, tenant: request.tenant) else { throw AppError.notFound("Driver") }
            return driverForm(request, driver: driver, values: Self.formValues(driver), errors: FieldErrors())
        }
        console.post(router, "/drivers/:id", page: "/drivers/:id/edit", edit)
        console.post(router, "/drivers/:id/deactivate", page: "/drivers") { request in
            do {
                let driver = try await store.people.deactivate(try request.id("id", "Driver"), tenant: request.tenant)
                return ConsolePages.redirect("/drivers?changed=" + driver.id.rawValue)
            } catch let error as AppError where error.status == 409 {
                return try await drivers(request, problem: error.body.message, status: .conflict)
            }
        }
        console.post(router, "/drivers/:id/reactivate", page: "/drivers") { request in
            let driver = try await store.people.reactivate(try request.id("id", "Driver"), tenant: request.tenant)
            return ConsolePages.redirect("/drivers?changed=" + driver.id.rawValue)
        }
        console.get(router, "/messages") { request in
            try await messages(request, values: ["driver_id": request.query("driver") ?? ""], errors: FieldErrors())
        }
        console.post(router, "/messages", send)
    }

    // MARK: Drivers

    /// The drivers, active first, then those who left; `problem` is why an
    /// action on the page was refused.
    private func drivers(_ request: ConsoleRequest, problem: String? = nil, status: HTTPResponse.Status = .ok) async throws -> Response {
        let overview = try await store.driverOverview(tenant: request.tenant)
        let changed = overview.first { $0.driver.id.rawValue == request.query("changed") }?.driver
        let saved = overview.first { $0.driver.id.rawValue == request.query("saved") }?.driver
        let invited = overview.first { $0.driver.id.rawValue == request.query("invited") }?.driver
        let backlogs = Dictionary(grouping: try await store.deviceBacklogs.reports(tenant: request.tenant), by: \.driverID)
        func row(_ line: Store.DriverOverview) -> DriversView.Row {
            DriversView.Row(
                phoneWork: Self.phoneWork(backlogs[line.driver.id] ?? []),
                id: line.driver.id.rawValue, name: line.driver.name, email: line.driver.email, phone: line.driver.phone,
                pay: ConsoleFormat.label(line.driver.payType, rate: line.driver.payRate),
                trip: line.currentTrip.map { .init(id: $0.id.rawValue, number: $0.number, status: $0.status.title) },
                busy: line.currentTrip != nil, unread: line.unreadMessages,
                seen: ConsoleFormat.time(line.lastSeenAt), deactivated: ConsoleFormat.time(line.driver.deactivatedAt))
        }
        let sorted = overview.sorted { $0.driver.name < $1.driver.name }
        let former = sorted.filter { $0.driver.deactivatedAt != nil }
        return pages.page("drivers", title: "Drivers", session: request.session, section: "drivers", DriversView(
            drivers: sorted.filter { $0.driver.deactivatedAt == nil }.map(row), former: former.map(row), hasFormer: !former.isEmpty,
            empty: overview.isEmpty, invited: invited?.email ?? "", saved: saved.map { "Saved \($0.name)." } ?? "",
            changed: changed.map { .init(name: $0.name, deactivated: $0.deactivatedAt != nil) }, problem: problem ?? ""),
                          status: status)
    }

    /// What a driver's phones hold that has not reached dispatch: "2 waiting
    /// · 1 refused", with each item (what, its data, why) and when the phone
    /// said so.
    static let phoneWorkShown = 8

    static func phoneWork(_ reports: [ReportedBacklog]) -> DriversView.PhoneWork? {
        guard !reports.isEmpty else { return nil }
        let waiting = reports.reduce(0) { $0 + $1.backlog.waitingChanges + $1.backlog.waitingFiles }
        let items = reports.flatMap(\.backlog.items)
        let refused = items.filter { $0.status == .refused }.count
        let kept = items.filter { $0.status == .kept }.count
        let summary = [waiting > 0 ? "\(NumberText.grouped(waiting)) waiting" : nil, refused > 0 ? "\(NumberText.grouped(refused)) refused" : nil,
                       kept > 0 ? "\(NumberText.grouped(kept)) kept" : nil].compactMap { $0 }.joined(separator: " · ")
        // The first few, refusals first: the page stays small however much a phone holds.
        let shown = items.filter { $0.status != .waiting }.prefix(phoneWorkShown) + items.filter { $0.status == .waiting }
        return .init(
            summary: summary, alert: refused > 0 || kept > 0, reported: ConsoleFormat.time(reports.map(\.reportedAt).max()),
            more: items.count > phoneWorkShown ? "and \(NumberText.count(items.count - phoneWorkShown, "more item")) on the phone" : "",
            items: shown.prefix(phoneWorkShown).map { item in
                // A refusal's reason already says what was refused: said once.
                let line = item.reason.isEmpty ? item.what : item.reason.contains(item.what) ? item.reason : "\(item.what): \(item.reason)"
                return .init(status: item.status.rawValue, line: line, detail: item.detail, made: ConsoleFormat.time(item.madeAt))
            })
    }

    /// The invitation form, or a driver's edit form.
    private func driverForm(_ request: ConsoleRequest, driver: Driver? = nil, values: [String: String], errors: FieldErrors,
                            status: HTTPResponse.Status = .ok) -> Response {
        let chosen = values["pay_type"] ?? PayType.percentage.rawValue
        return pages.page("driver-form", title: driver.map { "Edit \($0.name)" } ?? "Invite a driver", session: request.session,
                          section: "drivers", DriverFormView(
            v: values, e: errors.messages, hasErrors: !errors.isEmpty, driverID: driver?.id.rawValue ?? "",
            editing: driver != nil, email: driver?.email ?? "", heading: driver.map { "Edit \($0.name)" } ?? "Invite a driver",
            payTypes: [(PayType.percentage, "Percentage of revenue (%)"), (.perMile, "Per mile ($)"), (.perTrip, "Per trip ($)"),
                                                                                                   (.perVehicle, "Per vehicle ($)")].map {
                .init(value: $0.0.rawValue, label: $0.1, selected: chosen == $0.0.rawValue)
            }), status: status)
    }

    /// The form's pay terms: percentages are typed as 25, 27.5 or 25 % and
    /// kept in basis points; money in dollars and kept in cents.
    static func payTerms(_ form: ConsoleForm, errors: inout FieldErrors) -> (type: PayType, rate: Int?) {
        // A form always sends one of its choices: anything else is refused, never read as a percentage.
        guard let type = PayType(rawValue: form["pay_type"]) else {
            errors.add("pay_type", "Choose how the driver is paid.")
            return (.percentage, nil)
        }
        var rateText = form["pay_rate"].trimmingCharacters(in: .whitespaces)
        if type == .percentage, rateText.hasSuffix("%") { rateText = rateText.dropLast().trimmingCharacters(in: .whitespaces) }
        var rateErrors = FieldErrors()
        let rate = FormValue.cents(rateText, field: "pay_rate", errors: &rateErrors)
        if type != .percentage { errors.add(rateErrors) }  // money's own messages ("a dot for cents") say it best
        return (type, rate)
    }

    /// The store's refusals next to their fields; a rate the form could not
    /// read, or out of range for its terms, says what the terms take.
    static func add(_ problems: Problems, rate: Int?, type: PayType, to errors: inout FieldErrors) {
        if rate == nil || problems.all.contains(where: { $0.body.field == "pay_rate" }) { errors.add("pay_rate", payRateHint(type)) }
        errors.add(problems)
    }

    /// A new driver, who then signs in to the app with a code sent to this email.
    private func invite(_ request: ConsoleRequest) async throws -> Response {
        let form = request.form
        var errors = FieldErrors()
        let (type, rate) = Self.payTerms(form, errors: &errors)
        let body = CreateDriverRequest(email: form["email"], name: form["name"], phone: form["phone"], payType: type, payRate: rate ?? 0)
        // The store's rules too, so every problem shows at once.
        var problems = Problems()
        _ = PeopleService.validDriver(body, &problems)
        Self.add(problems, rate: rate, type: type, to: &errors)
        guard errors.isEmpty else { return driverForm(request, values: form.firstValues, errors: errors, status: .unprocessableContent) }
        do {
            let driver = try await console.invitations.invite(body, tenant: request.tenant)
            return ConsolePages.redirect("/drivers?invited=" + driver.id.rawValue)
        } catch let error as AppError where error.status < 500 {
            return driverForm(request, values: form.firstValues, errors: FieldErrors(error), status: .init(code: error.status))
        }
    }

    /// A driver's name, phone and pay terms, changed (the email is their sign-in and stays).
    private func edit(_ request: ConsoleRequest) async throws -> Response {
        let id: ID<Driver> = try request.id("id", "Driver")
        guard let driver = try await store.people.driver(id, tenant: request.tenant) else { throw AppError.notFound("Driver") }
        let form = request.form
        var errors = FieldErrors()
        let (type, rate) = Self.payTerms(form, errors: &errors)
        // A form without its version is refused (0 is never a version) rather than saved unchecked.
        let changes = UpdateDriverRequest(name: form["name"], phone: form["phone"], payType: type, payRate: rate ?? 0,
                                          baseVersion: Int(form["base_version"]) ?? 0)
        var problems = Problems()
        _ = PeopleService.edited(driver, by: changes, &problems)
        Self.add(problems, rate: rate, type: type, to: &errors)
        guard errors.isEmpty else {
            return driverForm(request, driver: driver, values: form.firstValues, errors: errors, status: .unprocessableContent)
        }
        do {
            _ = try await store.people.updateDriver(id, changes, tenant: request.tenant)
            return ConsolePages.redirect("/drivers?saved=" + id.rawValue)
        } catch let error as AppError where error.status == 409 && error.body.field == "base_version" {
            var errors = FieldErrors()
            errors.add("form", "Someone else changed \(driver.name) while you were editing, so your changes were not saved. "
                       + "The form now shows what is saved; make your changes again.")
            return driverForm(request, driver: driver, values: Self.formValues(driver), errors: errors, status: .conflict)
        } catch let error as AppError where error.status < 500 {
            return driverForm(request, driver: driver, values: form.firstValues, errors: FieldErrors(error), status: .init(code: error.status))
        }
    }

    /// A driver as the edit form shows them: rates in the form's units (25 for 25 %, 0.65 dollars a mile).
    static func formValues(_ driver: Driver) -> [String: String] {
        let rate = driver.payType == .percentage
            ? (driver.payRate % 100 == 0 ? String(driver.payRate / 100) : ConsoleFormat.dollars(driver.payRate))
            : ConsoleFormat.dollars(driver.payRate)
        return ["name": driver.name, "email": driver.email, "phone": driver.phone, "pay_type": driver.payType.rawValue,
                "pay_rate": rate, "base_version": String(driver.version)]
    }

    /// What a rate is on each terms, in the form's own units.
    static func payRateHint(_ type: PayType) -> String {
        let most = Validate.payRates(type).upperBound
        switch type {
        case .percentage: return "Enter a percentage of revenue from 0 to \(most / 100), like 25 or 27.5."
        case .perMile: return "Enter dollars a mile, at most \(MoneyFormat.dollars(most)), like 0.65."
        case .perTrip: return "Enter dollars a trip, at most \(MoneyFormat.dollars(most)), like 350."
        case .perVehicle: return "Enter dollars a vehicle, at most \(MoneyFormat.dollars(most)), like 150."
        }
    }

    // MARK: Messages

    private func messages(_ request: ConsoleRequest, values: [String: String], errors: FieldErrors,
                          status: HTTPResponse.Status = .ok) async throws -> Response {
        let drivers = try await store.people.drivers(tenant: request.tenant).filter { $0.deactivatedAt == nil }.sorted { $0.name < $1.name }
        let sent = try await store.sentMessages(tenant: request.tenant, limit: 200)
        let conversations = try await ConsoleConversationPages.inbox(store, tenant: request.tenant)
        let selected = values["driver_id"] ?? ""
        return pages.page("messages", title: "Messages", session: request.session, section: "messages", MessagesView(
            v: values, e: errors.messages, hasErrors: !errors.isEmpty,
            drivers: drivers.map { .init(id: $0.id.rawValue, name: $0.name, selected: $0.id.rawValue == selected) },
            allSelected: selected == "today", urgent: values["type"] == NotificationType.urgent.rawValue,
            sent: sent.map { message in
                .init(driver: message.driverName, title: message.notification.title, body: message.notification.body,
                      long: message.notification.body.count > 160 || message.notification.body.filter(\.isNewline).count > 1,
                      opening: String(message.notification.body.prefix(while: { !$0.isNewline }).prefix(120)),
                      urgent: message.notification.type == .urgent, sentAt: ConsoleFormat.time(message.notification.createdAt),
                      readAt: ConsoleFormat.time(message.notification.readAt), gotIt: ConsoleFormat.time(message.notification.acknowledgedAt),
                      readLate: Self.lateReceipt(message.notification).flatMap(ConsoleFormat.time))
            },
            noneSent: sent.isEmpty, sentTo: Int(request.query("sent") ?? "").map { ConsoleFormat.count($0, "driver") } ?? "",
            conversations: conversations, noConversations: conversations.isEmpty),
                          status: status)
    }

    /// When a read receipt reached the server, if that was more than a
    /// minute after the driver read the message.
    static func lateReceipt(_ notification: DriverNotification) -> Date? {
        guard let read = notification.readAt, let received = notification.readReceivedAt, received.timeIntervalSince(read) > 60 else { return nil }
        return received
    }

    /// To one driver, or to every driver on a trip today.
    private func send(_ request: ConsoleRequest) async throws -> Response {
        let form = request.form
        var errors = FieldErrors()
        let type: NotificationType = form["type"] == NotificationType.urgent.rawValue ? .urgent : .dispatchMessage
        var recipients: [ID<Driver>] = []
        if form["driver_id"] == "today" {
            recipients = try await store.driversOnTripsToday(tenant: request.tenant, today: LocalDate(store.now))
            if recipients.isEmpty { errors.add("driver_id", "No driver is on a trip today.") }
        } else if let driver: ID<Driver> = FormValue.id(form["driver_id"], field: "driver_id", errors: &errors) {
            recipients = [driver]
        } else {
            errors.add("driver_id", "Choose who gets the message.")
        }
        var problems = Problems()
        _ = NotificationService.validMessage(type: type, title: form["title"], body: form["body"], &problems)
        errors.add(problems)
        guard errors.isEmpty else { return try await messages(request, values: form.firstValues, errors: errors, status: .unprocessableContent) }
        do {
            try await store.notifications.send(recipients.map {
                SendMessageRequest(driverID: $0, type: type, title: form["title"], body: form["body"])
            }, tenant: request.tenant)
        } catch let error as AppError where error.status < 500 {
            return try await messages(request, values: form.firstValues, errors: FieldErrors(error, fallbackField: "driver_id"),
                                      status: .init(code: error.status))
        }
        return ConsolePages.redirect("/messages?sent=\(recipients.count)")
    }

    /// The calendar month around a day. At the ends of the calendar the
    /// server keeps (a month before 1900 or after 2999 is no date), the day
    /// itself stands in for the bound that cannot be written.
    static func month(of day: LocalDate) -> (LocalDate, LocalDate) {
        let first = LocalDate(year: day.year, month: day.month, day: 1) ?? day
        let nextMonth = day.month == 12 ? LocalDate(year: day.year + 1, month: 1, day: 1) : LocalDate(year: day.year, month: day.month + 1, day: 1)
        return (first, nextMonth?.adding(days: -1) ?? LocalDate(year: day.year, month: 12, day: 31) ?? day)
    }

    /// A CSV field, quoted when it must be; a leading = + - @ is defused so
    /// a spreadsheet never runs it as a formula.
    /// "-85.50", "12": digits, at most one point, a leading minus.
    static func isPlainNumber(_ value: String) -> Bool {
        let digits = value.hasPrefix("-") ? value.dropFirst() : Substring(value)
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") } && digits.filter { $0 == "." }.count <= 1
            && digits.first != "." && digits.last != "."
    }

    static func csvField(_ value: String) -> String {
        var value = value
        // A spreadsheet reads a cell starting with = + - @ as a formula; a plain negative amount stays a number.
        if let first = value.first, "=+-@".contains(first), !Self.isPlainNumber(value) { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
