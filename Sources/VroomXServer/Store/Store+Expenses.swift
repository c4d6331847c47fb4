import Foundation
import VroomXModels

/// Trip expenses (fuel, tolls, repairs, lodging, other) recorded by drivers.
extension Store {
    /// The expenses of a trip the caller sees: dispatch every one; a driver
    /// those they recorded and those dispatch recorded on their trip —
    /// never another driver's (amounts, notes and fuel are theirs).
    func expensesFilter(trip: ID<Trip>, _ scope: Scope) -> SQL {
        "tenant_id = \(scope.tenant) AND trip_id = \(trip)" + (scope.driverID.map { " AND (driver_id = \($0) OR driver_id IS NULL)" } ?? "")
    }

    /// Which expenses a driver sees, for queries over many trips (`x` is the
    /// expense): their own, and dispatch's on the trips they hold.
    static func expensesVisible(to driver: ID<Driver>, tenant: ID<Tenant>) -> SQL {
        """
         AND (x.driver_id = \(driver) OR (x.driver_id IS NULL AND x.trip_id IN
             (SELECT t.id FROM trips t WHERE t.tenant_id = \(tenant) AND t.driver_id = \(driver))))
        """
    }

    /// The device an expense's changes go to: the driver who recorded it,
    /// or for one dispatch recorded, the driver who holds its trip.
    static func audience(of expenseDriver: ID<Driver>?, tripDriver: ID<Driver>?) -> ID<Driver>? {
        expenseDriver ?? tripDriver
    }

    /// Expenses of a trip the caller may see.
    public func expenses(trip: ID<Trip>, _ scope: Scope) async throws -> [Expense] {
        try await read { db in
            guard try await fetchTrip(trip, scope, db) != nil else { throw AppError.notFound("Trip") }
            return try await db.query("""
                SELECT \(Expense.columns) FROM trip_expenses WHERE \(expensesFilter(trip: trip, scope))
                ORDER BY \(Expense.order.sql)
                """).map(Expense.init(row:))
        }
    }

    public func expenseDocuments(trip: ID<Trip>, _ scope: Scope, page: PageRequest = .init()) async throws -> DocumentPage {
        try await read { db in
            guard try await fetchTrip(trip, scope, db) != nil else { throw AppError.notFound("Trip") }
            return try await documentPage(from: "trip_expenses", where: expensesFilter(trip: trip, scope),
                                          order: Expense.order, page, db)
        }
    }

    /// Records an expense on one of the driver's trips. The id may be chosen
    /// by the client; sending the same expense again returns the stored one.
    /// Money a driver spent is a fact: an expense recorded offline on a trip
    /// dispatch has since given to another driver is kept on that trip, in
    /// the name of the driver who spent it, marked `after_reassignment` —
    /// when it is of a day they held the trip and arrives within a week.
    public func createExpense(_ request: CreateExpenseRequest, _ scope: Scope) async throws -> Expense {
        if let refusal = ExpenseRules.amountProblem(request.amountCents) ?? ExpenseRules.dateProblem(request.date, now: now) {
            throw AppError(refusal)
        }
        let amount = request.amountCents
        let notes = try Validate.text(request.notes ?? "", FieldLimits.expenseNotes)
        return try await write(tenant: scope.tenant) { tx in
            var afterReassignment = false
            var found = try await fetchTrip(request.tripID, scope, tx.db)
            if found == nil, let driver = scope.driverID,
               try await heldWhenSpent(request.tripID, driver: driver, day: request.date, tenant: scope.tenant, now: tx.now, tx.db) {
                found = try await fetchTrip(request.tripID, .dispatch(tenant: scope.tenant), tx.db)
                afterReassignment = true
            }
            guard let trip = found else { throw AppError.notFound("Trip") }
            // Held while counting, so concurrent expenses of one trip cannot all see room under the cap.
            _ = try await lockTrip(trip.id, .dispatch(tenant: scope.tenant), tx.db)
            let recorded = try await tx.first("""
                SELECT COUNT(*) AS n FROM trip_expenses WHERE tenant_id = \(scope.tenant) AND trip_id = \(trip.id)
                """)?.int("n") ?? 0
            if recorded >= Self.maxExpensesPerTrip, try await !isStored(request.id, scope, tx) {
                throw AppError(422, .validationFailed,
                               "Trip \(trip.number) already has \(NumberText.grouped(recorded)) expenses, the most one trip holds. Ask dispatch to merge some.",
                               field: "trip_id")
            }
            let expense = Expense(id: request.id ?? ID(), tripID: trip.id, driverID: scope.driverID, category: request.category,
                                  amountCents: amount, date: request.date, notes: notes, fuel: request.fuel,
                                  afterReassignment: afterReassignment, createdAt: tx.now)
            if let fuel = expense.fuel {
                do {
                    try await checkFuel(fuel, category: expense.category, scope, tx.db)
                } catch let refusal as AppError {
                    // Sent again, an expense stays what it was, whatever became of its unit since.
                    if let existing = try await existingExpense(expense, scope, tx) { return existing }
                    throw refusal
                }
            }
            let doc = try WireDocument.encode(expense)
            // An expense sent again (by the offline app, whose answer was lost) finds its row taken: the same content is the same expense.
            guard try await tx.first("""
                INSERT INTO trip_expenses (id, tenant_id, trip_id, driver_id, category, amount_cents, expense_date, notes,
                                           created_at, doc, fuel_equipment_id, fuel_quantity_milli, fuel_unit, fuel_odometer_miles,
                                           after_reassignment)
                VALUES (\(expense.id), \(scope.tenant), \(trip.id), \(expense.driverID), \(expense.category), \(amount),
                        \(expense.date), \(notes), \(tx.now), \(doc), \(expense.fuel?.equipmentID), \(expense.fuel?.quantityMilli),
                        \(expense.fuel?.unit), \(expense.fuel?.odometerMiles), \(afterReassignment ? 1 : 0))
                ON CONFLICT (id) DO NOTHING
                RETURNING id
                """) != nil else {
                guard let existing = try await existingExpense(expense, scope, tx) else {
                    throw AppError.idTaken
                }
                return existing
            }
            tx.recordUpsert(.expense, id: expense.id.rawValue, document: doc,
                            visibleTo: Self.audience(of: expense.driverID, tripDriver: trip.driverID))
            if let fuel = expense.fuel, let odometer = fuel.odometerMiles,
               let unit = try await fetchEquipment(fuel.equipmentID, scope, locking: true, tx.db) {
                // A fill's odometer is a reading: the same rules, and the truck's odometer follows it.
                let window = OdometerRule.fillWindow(expense.date, now: tx.now)
                _ = try await insertReading(ID(), unit: unit, miles: odometer, at: window.upperBound, within: window,
                                            field: "fuel.odometer_miles", scope, tx)
            }
            return expense
        }
    }

    /// An expense the caller may see, its trip's row and then the
    /// expense's held until the transaction ends (PostgreSQL).
    func lockExpense(_ id: ID<Expense>, trip: ID<Trip>, _ scope: Scope, _ db: any SQLExecutor) async throws -> Expense? {
        guard try await lockTrip(trip, .dispatch(tenant: scope.tenant), db) != nil else { return nil }
        let visible: SQL = scope.driverID.map { Self.expensesVisible(to: $0, tenant: scope.tenant) } ?? ""
        return try await db.first("""
            SELECT \(Expense.columns) FROM trip_expenses x
            WHERE x.tenant_id = \(scope.tenant) AND x.id = \(id) AND x.trip_id = \(trip)\(visible)\(Self.lockingRows(db))
            """).map(Expense.init(row:))
    }

    /// Expenses one trip holds at most: a real trip has tens; a client
    /// looping on the API cannot grow one without end (its page, its feed).
    static let maxExpensesPerTrip = 2_000

    /// Whether an expense with this id is already stored (then sending it
    /// again is not a new one, whatever the count).
    private func isStored(_ id: ID<Expense>?, _ scope: Scope, _ tx: TenantTransaction) async throws -> Bool {
        guard let id else { return false }
        return try await tx.first("SELECT id FROM trip_expenses WHERE tenant_id = \(scope.tenant) AND id = \(id)") != nil
    }

    /// The stored expense with this one's id, when it is the same expense
    /// sent again by whoever recorded it; an id taken by a different expense
    /// (or by another driver's) is `already_exists`, never someone else's row.
    private func existingExpense(_ expense: Expense, _ scope: Scope, _ tx: TenantTransaction) async throws -> Expense? {
        guard let existing = try await tx.first("""
            SELECT \(Expense.columns) FROM trip_expenses WHERE tenant_id = \(scope.tenant) AND id = \(expense.id)
            """).map(Expense.init(row:)) else { return nil }
        guard existing.driverID == scope.driverID, existing.tripID == expense.tripID, existing.category == expense.category,
              existing.amountCents == expense.amountCents, existing.date == expense.date,
              existing.notes == expense.notes, existing.fuel == expense.fuel else {
            throw AppError.idTaken
        }
        return existing
    }

    /// Deletes an expense: a driver their own (also on a trip dispatch has
    /// given away since), dispatch any.
    public func deleteExpense(_ id: ID<Expense>, _ scope: Scope) async throws {
        try await write(tenant: scope.tenant) { tx in
            guard let row = try await tx.first("""
                SELECT e.driver_id, t.driver_id AS trip_driver_id FROM trip_expenses e
                JOIN trips t ON t.tenant_id = e.tenant_id AND t.id = e.trip_id
                WHERE e.tenant_id = \(scope.tenant) AND e.id = \(id)
                """) else { throw AppError.notFound("Expense") }
            let tripDriver: ID<Driver>? = try row.optionalID("trip_driver_id")
            let recordedBy: ID<Driver>? = try row.optionalID("driver_id")
            if let driver = scope.driverID {
                guard recordedBy == driver || (recordedBy == nil && tripDriver == driver) else { throw AppError.notFound("Expense") }
                guard recordedBy == driver else {
                    throw AppError.forbidden("Only dispatch can delete an expense dispatch recorded.")
                }
            }
            try await tx.execute("DELETE FROM trip_expenses WHERE tenant_id = \(scope.tenant) AND id = \(id)")
            tx.recordDelete(.expense, id: id.rawValue, visibleTo: Self.audience(of: recordedBy, tripDriver: tripDriver))
        }
    }
}

/// Driver notifications: dispatch messages, assignments, status changes.
extension Store {
    func notificationsFilter(_ scope: Scope, unreadOnly: Bool) -> SQL {
        scope.filter() + (unreadOnly ? " AND read_at IS NULL" : "")
    }

    public func notifications(_ scope: Scope, unreadOnly: Bool = false, limit: Int = 100) async throws -> [DriverNotification] {
        try await read { db in
            try await db.query("""
                SELECT \(DriverNotification.columns) FROM driver_notifications WHERE \(notificationsFilter(scope, unreadOnly: unreadOnly))
                ORDER BY \(DriverNotification.order.sql) LIMIT \(limit)
                """).map(DriverNotification.init(row:))
        }
    }

    public func notificationDocuments(_ scope: Scope, unreadOnly: Bool = false, page: PageRequest = .init()) async throws -> DocumentPage {
        try await read { db in
            try await documentPage(from: "driver_notifications", where: notificationsFilter(scope, unreadOnly: unreadOnly),
                                   order: DriverNotification.order, page, db)
        }
    }

    public func unreadCount(driver: ID<Driver>, tenant: ID<Tenant>) async throws -> Int {
        try await read { db in
            try await db.first("""
                SELECT COUNT(*) AS unread FROM driver_notifications
                WHERE tenant_id = \(tenant) AND driver_id = \(driver) AND read_at IS NULL
                """)?.int("unread") ?? 0
        }
    }

    /// Marks a notification read, at `readAt` when the phone says when (an
    /// offline read arrives late): never before the message was sent nor
    /// after now. When the receipt arrived is kept beside it. Reading it
    /// again keeps the first time.
    public func markNotificationRead(_ id: ID<DriverNotification>, readAt reported: Date? = nil, _ scope: Scope) async throws -> DriverNotification {
        try await write(tenant: scope.tenant) { tx in
            guard var notification = try await tx.first("""
                SELECT \(DriverNotification.columns) FROM driver_notifications WHERE \(scope.filter()) AND id = \(id)
                """).map(DriverNotification.init(row:)) else { throw AppError.notFound("Notification") }
            if notification.readAt != nil { return notification }
            let readAt = WireTime.date(milliseconds: WireTime.milliseconds(min(max(reported ?? tx.now, notification.createdAt), tx.now)))
            notification.readAt = readAt
            notification.readReceivedAt = tx.now
            let doc = try WireDocument.encode(notification)
            guard try await tx.first("""
                UPDATE driver_notifications SET read_at = \(readAt), read_received_at = \(tx.now), doc = \(doc)
                WHERE tenant_id = \(scope.tenant) AND id = \(id) AND read_at IS NULL RETURNING id
                """) != nil else { throw WriteConflict() }
            tx.recordUpsert(.notification, id: id.rawValue, document: doc, visibleTo: notification.driverID)
            return notification
        }
    }

    /// A message from dispatch to a driver.
    public func sendMessage(_ request: SendMessageRequest, tenant: ID<Tenant>) async throws -> DriverNotification {
        try await sendMessages([request], tenant: tenant)[0]
    }

    /// A message's type and texts, checked: each refusal kept in `problems`.
    static func validMessage(type: NotificationType, title: String, body: String, _ problems: inout Problems) -> (title: String, body: String) {
        problems.check(()) {
            guard type == .dispatchMessage || type == .urgent else {
                throw AppError.validation("type", "A message is dispatch_message or urgent.")
            }
        }
        return (title: problems.check(title) { try Validate.text(title, FieldLimits.messageTitle) },
                body: problems.check(body) { try Validate.text(body, FieldLimits.messageBody) })
    }

    /// Unread messages and notifications a driver may have before dispatch
    /// can send more: the phone's list, the push queue and the feed stay bounded.
    static let maxUnreadMessages = 500

    /// Messages from dispatch (to several drivers at once): all are sent, or none.
    @discardableResult
    public func sendMessages(_ requests: [SendMessageRequest], tenant: ID<Tenant>) async throws -> [DriverNotification] {
        let texts = try requests.map { request in try Problems.first { Self.validMessage(type: request.type, title: request.title, body: request.body, &$0) } }
        let scope = Scope.dispatch(tenant: tenant)
        return try await write(tenant: tenant) { tx in
            var sent: [DriverNotification] = []
            for (request, text) in zip(requests, texts) {
                let driver = try await assignableDriver(request.driverID, tenant: tenant, tx.db)
                let unread = try await tx.first("""
                    SELECT COUNT(*) AS n FROM (SELECT id FROM driver_notifications
                        WHERE tenant_id = \(tenant) AND driver_id = \(driver.id) AND read_at IS NULL LIMIT \(Self.maxUnreadMessages)) AS waiting
                    """)?.int("n") ?? 0
                guard unread < Self.maxUnreadMessages else {
                    throw AppError(422, .validationFailed,
                                   "\(driver.name) has \(NumberText.grouped(unread)) unread messages and notifications; send more once they have read some.",
                                   field: "driver_id")
                }
                if let trip = request.tripID, try await fetchTrip(trip, scope, tx.db) == nil {
                    throw AppError(422, .validationFailed, "No such trip in this carrier.", field: "trip_id")
                }
                if let order = request.orderID, try await fetchOrder(order, scope, tx.db) == nil {
                    throw AppError(422, .validationFailed, "No such order in this carrier.", field: "order_id")
                }
                sent.append(try await insertNotification(driver: request.driverID, type: request.type, title: text.title, body: text.body,
                                                         data: NotificationData(tripID: request.tripID, orderID: request.orderID),
                                                         written: false, tx))
            }
            return sent
        }
    }

    /// A notification for the driver. Those the server writes (`written`)
    /// lose the direction controls typed into their values; a dispatcher's
    /// own message is kept as typed.
    @discardableResult
    func insertNotification(driver: ID<Driver>, type: NotificationType, title: String, body: String,
                            data: NotificationData, written: Bool = true, _ tx: TenantTransaction) async throws -> DriverNotification {
        let (title, body) = written ? (DriverChangeNote.withoutDirectionControls(title), DriverChangeNote.withoutDirectionControls(body))
                                    : (title, body)
        let notification = DriverNotification(id: ID(), driverID: driver, type: type, title: String(title.prefix(200)),
                                              body: String(body.prefix(4000)), data: data, readAt: nil, createdAt: tx.now)
        let doc = try WireDocument.encode(notification)
        try await tx.execute("""
            INSERT INTO driver_notifications (id, tenant_id, driver_id, type, title, body, trip_id, order_id, created_at, doc)
            VALUES (\(notification.id), \(tx.tenant), \(driver), \(type), \(notification.title), \(notification.body),
                    \(data.tripID), \(data.orderID), \(tx.now), \(doc))
            """)
        tx.recordUpsert(.notification, id: notification.id.rawValue, document: doc, visibleTo: driver)
        if pushEnabled { try await enqueuePushes(for: notification, tx) }
        return notification
    }
}
