import Foundation
import GRDB
import VroomXModels

/// A queued change in the driver's words ("your pickup ETA for O-5005",
/// "the delivery of O-5004"), written when the change is made — while the
/// order, trip or message is still on the phone — and kept with it, so a
/// refusal that comes back after dispatch took the order away can still
/// name it.
enum ChangeWords {
    /// `subject`: what `subject(_:_:)` found for the change (its order's or trip's number, read once).
    static func about(_ mutation: Mutation, subject: String?, _ db: Database) throws -> String {
        let order = subject ?? "an order"
        switch mutation.payload {
        case .updateOrderStatus(let change):
            return "marking \(order) \(change.status.label)"
        case .updateOrderETA(let change):
            let which = change.pickupETA != nil && change.deliveryETA != nil ? "ETAs"
                : change.pickupETA != nil ? "pickup ETA" : "delivery ETA"
            return "the \(which) for \(order)"
        case .createExpense(let request):
            return "the \(MoneyFormat.dollars(request.amountCents)) \(request.category.rawValue) expense on \(subject ?? "a trip")"
        case .deleteExpense(let reference):
            let expense: [Expense] = try AppDatabase.docs(db, "SELECT doc FROM expenses WHERE id = ?", [reference.expenseID.rawValue])
            guard let expense = expense.first else { return "deleting an expense" }
            let trip = try AppDatabase.tripNumber(expense.tripID, db) ?? "a trip"
            return "deleting the \(MoneyFormat.dollars(expense.amountCents)) \(expense.category.rawValue) expense on \(trip)"
        case .markNotificationRead(let reference):
            let found: [DriverNotification] = try AppDatabase.docs(db, "SELECT doc FROM notifications WHERE id = ?",
                                                                   [reference.notificationID.rawValue])
            return found.first.map { "reading “\($0.title)”" } ?? "reading a message"
        case .saveInspection(let save):
            return "the \(save.inspection.kind.rawValue) inspection of \(order)"
        case .completeInspection(let reference):
            guard let inspection = try AppDatabase.inspection(reference.inspectionID, db) else { return "completing an inspection" }
            return "the \(inspection.kind == .pickup ? "pickup" : "delivery") of \(order)"
        case .recordOdometer(let reading):
            let unit = try AppDatabase.unit(reading.equipmentID, db)?.unitNumber ?? "your truck"
            return "the odometer reading of \(unit) (\(NumberText.grouped(reading.miles)) mi)"
        case .recordLocations(let batch):
            return "\(batch.fixes.count) position\(batch.fixes.count == 1 ? "" : "s")"
        case .collectPayment(let request):
            let number = request.reference.flatMap { $0.isEmpty ? nil : " \($0)" } ?? ""
            return "the \(MoneyFormat.dollars(request.amountCents)) \(request.method.label.lowercased())\(number) collected for \(order)"
        case .startTrip:
            return "starting \(subject ?? "a trip")"
        case .sendMessage(let request):
            return "your message “\(request.body.prefix(40))\(request.body.count > 40 ? "…" : "")”"
        case .acknowledgeNotification(let reference):
            let found: [DriverNotification] = try AppDatabase.docs(db, "SELECT doc FROM notifications WHERE id = ?", [reference.notificationID.rawValue])
            return found.first.map { "“Got it” to “\($0.title)”" } ?? "“Got it” to an urgent message"
        case .reportStopProblem(let request):
            return "the problem “\(request.kind.label)” at the \(request.stop.rawValue) of \(order)"
        }
    }

    /// The number of the order or trip a change is about, when the phone has it.
    static func subject(_ mutation: Mutation, _ db: Database) throws -> String? {
        switch mutation.payload {
        case .updateOrderStatus(let change): return try AppDatabase.orderNumber(change.orderID, db)
        case .updateOrderETA(let change): return try AppDatabase.orderNumber(change.orderID, db)
        case .saveInspection(let save): return try AppDatabase.orderNumber(save.inspection.orderID, db)
        case .completeInspection(let reference):
            return try AppDatabase.inspection(reference.inspectionID, db).flatMap { try AppDatabase.orderNumber($0.orderID, db) }
        case .createExpense(let request): return try AppDatabase.tripNumber(request.tripID, db)
        case .collectPayment(let request): return try AppDatabase.orderNumber(request.orderID, db)
        case .startTrip(let reference): return try AppDatabase.tripNumber(reference.tripID, db)
        case .sendMessage(let request):
            if let order = request.orderID { return try AppDatabase.orderNumber(order, db) }
            return try request.tripID.flatMap { try AppDatabase.tripNumber($0, db) }
        case .acknowledgeNotification: return nil
        case .reportStopProblem(let request): return try AppDatabase.orderNumber(request.orderID, db)
        case .deleteExpense, .markNotificationRead, .recordOdometer, .recordLocations: return nil
        }
    }

    /// Why the server refused a change, in words the driver and dispatch
    /// both read: what it was, and what happened. A change about an order
    /// or trip the driver no longer holds says dispatch moved it, not
    /// "Order not found.".
    static func refusal(_ entry: OutboxEntry) -> String {
        let about = entry.about ?? "a \(entry.mutation.kind.subject) change"
        let code = entry.errorCode.map { ErrorCode($0) }
        if code == .notFound, ChangeWords.isAboutAssignedWork(entry.mutation) {
            let number = entry.subject ?? "it"
            return "Not sent: \(about) — dispatch gave \(number) to another driver or took it away."
        }
        return "Refused: \(about) — \(entry.errorMessage ?? "the server refused it.")"
    }

    /// Changes to an order or trip dispatch may take away while they wait.
    static func isAboutAssignedWork(_ mutation: Mutation) -> Bool {
        switch mutation.payload {
        case .updateOrderStatus, .updateOrderETA, .saveInspection, .completeInspection, .createExpense, .collectPayment, .startTrip,
             .reportStopProblem: return true
        case .deleteExpense, .markNotificationRead, .recordOdometer, .recordLocations, .sendMessage, .acknowledgeNotification: return false
        }
    }
}

extension AppDatabase {
    /// A queued file in the driver's words: "the rear photo of the O-5004
    /// pickup inspection", "the video of the O-5004 delivery inspection",
    /// "a photo of TRK-12".
    public func words(for file: UploadItem) throws -> String {
        try reader.read { db in try Self.words(for: file, db) }
    }

    static func words(for file: UploadItem, _ db: Database) throws -> String {
        if let unit = file.equipmentID {
            return "a photo of \(try Self.unit(unit, db)?.unitNumber ?? "your unit")"
        }
        if let expense = file.expenseID {
            let found: [Expense] = try docs(db, "SELECT doc FROM expenses WHERE id = ?", [expense.rawValue])
            return found.first.map { "the receipt of the \(MoneyFormat.dollars($0.amountCents)) \($0.category.rawValue) expense" } ?? "a receipt"
        }
        if let payment = file.paymentID {
            guard let found = try collection(payment, db) else { return "the photo of money you collected" }
            let number = try Self.order(found.orderID, db)?.number ?? "an order"
            return "the photo of the \(MoneyFormat.dollars(found.amountCents)) \(found.method.label.lowercased()) collected for \(number)"
        }
        if let problem = file.problemID {
            return "a photo of the problem at \(try order(holding: problem, db)?.number ?? "an order")"
        }
        if file.messageID != nil { return "a photo with your message to dispatch" }
        let what = switch file.kind {
        case .video: "the video"
        case .signature: "the signature"
        case .photo: "the \(file.slot == .vinPlate ? "VIN plate" : file.slot.title.lowercased()) photo"
        }
        // Another driver's inspection is not in this driver's cache: said without its order.
        guard let id = file.inspectionID, let inspection = try Self.inspection(id, db) else { return what + " of an inspection" }
        let number = try Self.order(inspection.orderID, db)?.number ?? "an order"
        return "\(what) of the \(number) \(inspection.kind.rawValue) inspection"
    }
}

extension ChangeWords {
    /// A change's data, for dispatch to see while it waits or after it was
    /// refused: the ETA given, the money and fuel, the odometer, when.
    static func detail(_ mutation: Mutation) -> String {
        switch mutation.payload {
        case .updateOrderStatus(let change):
            return change.occurredAt.map { "at \(instant($0))" } ?? ""
        case .updateOrderETA(let change):
            return [change.pickupETA.map { "pickup \(instant($0))" }, change.deliveryETA.map { "delivery \(instant($0))" }]
                .compactMap { $0 }.joined(separator: ", ")
        case .createExpense(let request):
            var parts = ["\(MoneyFormat.dollars(request.amountCents)) \(request.category.rawValue) on \(DayFormat.day(request.date))"]
            if let fuel = request.fuel {
                let quantity = Double(fuel.quantityMilli) / 1000
                parts.append(String(format: "%.3f", quantity).replacingOccurrences(of: #"\.?0+$"#, with: "", options: .regularExpression)
                             + (fuel.unit == .gallon ? " gal" : " L") + (fuel.odometerMiles.map { " at \(NumberText.grouped($0)) mi" } ?? ""))
            }
            if let notes = request.notes, !notes.isEmpty { parts.append("“\(notes.prefix(200))”") }
            return parts.joined(separator: ", ")
        case .deleteExpense:
            return ""
        case .markNotificationRead(let reference):
            return reference.readAt.map { "read \(instant($0))" } ?? ""
        case .saveInspection(let save):
            let request = save.inspection
            return [request.odometer.map { "odometer \(NumberText.grouped($0)) mi" },
                    request.damages.flatMap { $0.isEmpty ? nil : NumberText.count($0.count, "damage") },
                    request.customerUnavailable == true ? "customer not there to sign" : nil,
                    request.notes.flatMap { $0.isEmpty ? nil : "“\($0.prefix(200))”" }].compactMap { $0 }.joined(separator: ", ")
        case .completeInspection(let reference):
            return reference.occurredAt.map { "at \(instant($0))" } ?? ""
        case .recordOdometer(let reading):
            return "\(NumberText.grouped(reading.miles)) mi" + (reading.recordedAt.map { " at \(instant($0))" } ?? "")
        case .recordLocations(let batch):
            guard let first = batch.fixes.map(\.recordedAt).min(), let last = batch.fixes.map(\.recordedAt).max() else { return "" }
            return "from \(instant(first)) to \(instant(last))"
        case .collectPayment(let request):
            return ["\(MoneyFormat.dollars(request.amountCents)) \(request.method.label.lowercased())",
                    request.reference.flatMap { $0.isEmpty ? nil : "no. \($0.prefix(100))" },
                    request.collectedOn.map { "on \(DayFormat.day($0))" }].compactMap { $0 }.joined(separator: ", ")
        case .startTrip:
            return ""
        case .sendMessage(let request):
            return "“\(request.body.prefix(200))”" + (request.sentAt.map { " at \(instant($0))" } ?? "")
        case .acknowledgeNotification(let reference):
            return reference.readAt.map { "at \(instant($0))" } ?? ""
        case .reportStopProblem(let request):
            return ([request.note.flatMap { $0.isEmpty ? nil : "“\($0.prefix(200))”" }, request.reportedAt.map { "at \(instant($0))" }]
                .compactMap { $0 }).joined(separator: " ")
        }
    }

    /// "Nov 30, 2026 15:04 UTC": dispatch reads it anywhere.
    static func instant(_ date: Date) -> String {
        let text = WireTime.string(from: date)  // 2026-11-30T15:04:05.000Z
        let clock = text.dropFirst(11).prefix(5)
        return "\(DayFormat.day(LocalDate(date))) \(clock) UTC"
    }
}
