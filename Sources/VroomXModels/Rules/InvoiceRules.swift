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

    /// A line per vehicle of a delivered order, at the vehicle's price.
    public static func vehicleLines(of order: Order) -> [InvoiceLine] {
        order.vehicles.map { vehicle in
            let price = vehicle.priceCents ?? (order.vehicles.count == 1 ? order.revenueCents : 0)
            let what = [vehicle.summary, vehicle.vin.isEmpty ? "" : "VIN \(vehicle.vin)"].filter { !$0.isEmpty }.joined(separator: ", ")
            let load = order.externalLoadID.map { " (load \($0))" } ?? ""
            return InvoiceLine(kind: .vehicle, description: "Order \(order.number)\(load): \(what.isEmpty ? "vehicle" : what)",
                               orderID: order.id, amountCents: price)
        }
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

    /// "INV-1001": the carrier's sequence, as printed.
    public static func number(_ sequence: Int) -> String { "INV-\(sequence)" }
}
