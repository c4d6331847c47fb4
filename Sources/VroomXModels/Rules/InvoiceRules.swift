import Foundation

/// How an invoice's money adds up and where it stands: the server applies
/// it to every invoice and payment, the console and the apps show it.
public enum InvoiceRules {
    /// Orders on one invoice at most (a dealer's week of loads).
    public static let ordersPerInvoice = 50
    /// Charges a dispatcher adds to one invoice at most.
    public static let chargesPerInvoice = 20
    /// Payments recorded against one invoice at most (removed ones count): a bound on what a client can grow.
    public static let paymentsPerInvoice = 100

    public static func dueDate(issuedOn: LocalDate, terms: PaymentTerms) -> LocalDate {
        issuedOn.adding(days: terms.days)
    }

    /// The lines' sum. Each line is within ±`MoneyFormat.largestCents` and
    /// an invoice holds at most a few hundred, so the sum cannot overflow.
    public static func total(of lines: [InvoiceLine]) -> Int {
        lines.reduce(0) { $0 + $1.amountCents }
    }

    /// A line per vehicle of a delivered order, at the vehicle's price (none
    /// for a cancelled one: its dry run is billed, not its vehicles).
    public static func vehicleLines(of order: Order) -> [InvoiceLine] {
        guard order.status != .cancelled else { return [] }
        return order.vehicles.map { vehicle in
            let price = vehicle.priceCents ?? (order.vehicles.count == 1 ? order.revenueCents : 0)
            let what = [vehicle.summary, vehicle.vin.isEmpty ? "" : "VIN \(vehicle.vin)"].filter { !$0.isEmpty }.joined(separator: ", ")
            let load = order.externalLoadID.map { " (load \($0))" } ?? ""
            return InvoiceLine(kind: .vehicle, description: "Order \(order.number)\(load): \(what.isEmpty ? "vehicle" : what)",
                               orderID: order.id, amountCents: price)
        }
    }

    /// What names a stop charge whatever its amount ("Detention at pickup,
    /// order O-5004"): the description before its first colon.
    static func stopChargeKey(_ description: String) -> Substring {
        description.prefix { $0 != ":" }
    }

    /// The orders' stop charges (detention, dry runs) an invoice's lines do
    /// not bill yet (the caller sees whether they fit `chargesPerInvoice`).
    public static func newStopCharges(of orders: [Order], terms: StopChargeTerms, besides lines: [InvoiceLine]) -> [InvoiceLine] {
        let billed = Set(lines.filter { $0.kind != .vehicle }.map { stopChargeKey($0.description) })
        return orders.flatMap { $0.stopCharges(terms: terms) }.filter { !billed.contains(stopChargeKey($0.description)) }
    }

    /// Where a sent invoice stands by what was paid against it: paid once
    /// the payments reach the total (more is a credit), partly paid below it.
    public static func status(totalCents: Int, paidCents: Int) -> InvoiceStatus {
        if paidCents >= totalCents { return .paid }
        return paidCents > 0 ? .partlyPaid : .sent
    }

    /// The aging column of an open invoice's balance on `today`: days past its due date.
    public static func bucket(dueOn: LocalDate, today: LocalDate) -> AgingBucket {
        let late = Int((today.startOfDay.timeIntervalSince(dueOn.startOfDay) / 86_400).rounded())
        switch late {
        case ...0: return .current
        case 1...30: return .days1to30
        case 31...60: return .days31to60
        case 61...90: return .days61to90
        default: return .over90
        }
    }

    /// A charge a dispatcher adds: not a vehicle (those come from orders),
    /// within the money limit; only an `other` line may take money off.
    public static func chargeProblem(_ charge: InvoiceCharge, field: String) -> Refusal? {
        if charge.kind == .vehicle {
            return .invalid("\(field).kind", "Vehicle lines come from the invoice's orders; add detention, dry run, fuel surcharge or other.")
        }
        let limit = MoneyFormat.largestCents
        if charge.kind == .other ? charge.amountCents.magnitude > UInt(limit) : !(1...limit).contains(charge.amountCents) {
            let range = charge.kind == .other ? "between -\(MoneyFormat.dollars(limit)) and \(MoneyFormat.dollars(limit))"
                : "between $0.01 and \(MoneyFormat.dollars(limit))"
            return .invalid("\(field).amount_cents", "A \(charge.kind.label.lowercased()) charge is \(range).")
        }
        return nil
    }

    /// A payment is a cent to the most a money field holds.
    public static func paymentProblem(amountCents: Int) -> Refusal? {
        guard (1...MoneyFormat.largestCents).contains(amountCents) else {
            return .invalid("amount_cents", "A payment is between $0.01 and \(MoneyFormat.dollars(MoneyFormat.largestCents)).")
        }
        return nil
    }

    /// Collections one order takes at most (a check, its balance in cash…): a
    /// phone looping cannot fill its invoice's payments.
    public static let collectionsPerOrder = 10

    /// What a driver is handed: a check (or money order), cash, a card, or
    /// other — ACH and wire reach the office, not the driver.
    public static let collectionMethods: [PaymentMethod] = [.check, .cash, .card, .other]

    /// Why money cannot be collected for an order in this state, in the driver's words.
    public static func notCollectable(_ order: Order) -> String {
        switch order.status {
        case .new, .assigned:
            "Order \(order.number) is not picked up yet: complete its pickup inspection first, then record the money (COP)."
        default:
            "Order \(order.number) is \(order.status.label): money is collected at pickup (COP) or on delivery (COD)."
        }
    }

    /// What an order's vehicles come to: the most its driver may collect for it.
    public static func price(of order: Order) -> Int {
        vehicleLines(of: order).reduce(0) { $0 + $1.amountCents }
    }

    /// A driver's collection for an order: a method a driver is handed, an
    /// amount, and with what was collected for it already (`collectedCents`)
    /// no more than the order comes to — a mistyped amount is caught on the
    /// phone and on the server, never booked as a customer's credit.
    public static func collectionProblem(amountCents: Int, method: PaymentMethod, order: Order, collectedCents: Int) -> Refusal? {
        guard collectionMethods.contains(method) else {
            return .invalid("method", "A driver collects a check, cash, a card or other; an ACH or wire payment is recorded by dispatch.")
        }
        if let problem = paymentProblem(amountCents: amountCents) { return problem }
        let price = self.price(of: order)
        guard price > 0 else {
            return .invalid("order_id", "Order \(order.number) has no price to collect against: ask dispatch to set the vehicles' prices.")
        }
        let left = max(price - collectedCents, 0)
        guard amountCents <= left else {
            return .invalid("amount_cents", left == 0
                ? "Order \(order.number) comes to \(MoneyFormat.dollars(price)) and all of it is collected already."
                : "Order \(order.number) comes to \(MoneyFormat.dollars(price)); \(MoneyFormat.dollars(left)) is left to collect.")
        }
        return nil
    }

    /// "INV-1001": the carrier's sequence, as printed.
    public static func number(_ sequence: Int) -> String { "INV-\(sequence)" }
}
