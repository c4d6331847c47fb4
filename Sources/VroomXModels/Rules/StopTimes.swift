import Foundation

/// A truck's time at one stop: from its arrival (the fence, or the
/// driver's report of waiting when that came first) to its departure (the
/// fence again; the moment the vehicle was marked picked up or delivered
/// when the phone told nothing after it).
public struct StopVisit: Sendable, Hashable {
    public var arrivedAt: Date?
    public var departedAt: Date?
    /// True when the end is the status mark, not the truck leaving.
    public var endsAtStatusMark: Bool

    /// Time on site, when both ends are known (never negative).
    public var onSite: TimeInterval? {
        guard let arrivedAt, let departedAt else { return nil }
        return max(0, departedAt.timeIntervalSince(arrivedAt))
    }
}

/// What a carrier bills for time and wasted trips at stops (its settings).
public struct StopChargeTerms: Sendable, Hashable {
    /// Minutes at a stop before detention starts (2 h is usual).
    public var freeMinutes: Int
    /// Detention's rate per hour, in cents (0: time is shown, not billed).
    public var detentionCentsPerHour: Int
    /// The fee for a dry run, in cents (0: not billed).
    public var dryRunCents: Int

    public init(freeMinutes: Int = StopTimes.defaultFreeMinutes, detentionCentsPerHour: Int = StopTimes.defaultDetentionCentsPerHour,
                dryRunCents: Int = StopTimes.defaultDryRunCents) {
        self.freeMinutes = freeMinutes
        self.detentionCentsPerHour = detentionCentsPerHour
        self.dryRunCents = dryRunCents
    }
}

/// Detention, written once: time on site beyond the free time, counted in
/// whole quarter hours (a started quarter is not billed), at the hourly
/// rate with the one rounding rule for money.
public enum StopTimes {
    public static let defaultFreeMinutes = 120
    public static let defaultDetentionCentsPerHour = 50_00
    public static let defaultDryRunCents = 150_00
    /// Detention is counted in steps of this many minutes.
    public static let stepMinutes = 15
    /// Free time a carrier may set: up to a day.
    public static let freeMinutesRange = 0...1_440
    /// An hourly rate or a fee a carrier may set: up to $10,000.
    public static let chargeCentsRange = 0...1_000_000

    /// Billable minutes for a stay: beyond the free time, in whole steps.
    public static func detentionMinutes(onSite: TimeInterval, freeMinutes: Int) -> Int {
        guard onSite.isFinite, onSite > 0 else { return 0 }
        let minutes = Int(min(onSite, 366 * 86_400) / 60)  // a year bounds a stay a bad clock could claim
        let beyond = max(0, minutes - freeMinutes)
        return beyond / stepMinutes * stepMinutes
    }

    /// What `minutes` of detention cost at `centsPerHour`.
    public static func detentionCents(minutes: Int, centsPerHour: Int) -> Int {
        MoneyRules.portion(of: centsPerHour, times: minutes, over: 60)
    }

    /// "1 h 30 min", "45 min", "2 h".
    public static func duration(_ interval: TimeInterval) -> String {
        guard interval.isFinite else { return "–" }
        let minutes = Int(max(0, min(interval, 366 * 86_400)) / 60)
        let (hours, rest) = minutes.quotientAndRemainder(dividingBy: 60)
        if hours == 0 { return "\(rest) min" }
        return rest == 0 ? "\(hours) h" : "\(hours) h \(rest) min"
    }
}

extension Order {
    public func departed(from kind: StopKind) -> Date? { kind == .pickup ? departedPickupAt : departedDeliveryAt }

    /// A dry run the driver reported: billed even when dispatch cancels the order after it.
    public var hadDryRun: Bool { problems.contains { $0.kind == .dryRun } }

    /// Whether an invoice may bill it: delivered, or cancelled after a dry run (the fee, no vehicles).
    public var isBillable: Bool { status == .delivered || (status == .cancelled && hadDryRun) }

    /// The truck's time at a stop (see `StopVisit`).
    public func visit(_ kind: StopKind) -> StopVisit {
        // A report of waiting made where the truck's position said it was far away does not count.
        let waiting = problems.filter { $0.stop == kind && $0.kind == .waiting && $0.truckWasNear }.map(\.reportedAt).min()
        let arrived = [arrived(at: kind), waiting].compactMap { $0 }.min()
        if let departed = departed(from: kind) {
            return StopVisit(arrivedAt: arrived, departedAt: departed, endsAtStatusMark: false)
        }
        let marked = kind == .pickup ? actualPickupDate : actualDeliveryDate
        if let arrived, let marked, marked > arrived { return StopVisit(arrivedAt: arrived, departedAt: marked, endsAtStatusMark: true) }
        return StopVisit(arrivedAt: arrived, departedAt: nil, endsAtStatusMark: false)
    }

    /// Minutes of detention at a stop under the carrier's terms (0 when none).
    public func detentionMinutes(at kind: StopKind, terms: StopChargeTerms) -> Int {
        visit(kind).onSite.map { StopTimes.detentionMinutes(onSite: $0, freeMinutes: terms.freeMinutes) } ?? 0
    }

    /// The charges its stops earn under the carrier's terms: detention at
    /// each stop past the free time, and the dry-run fee once when a dry run
    /// was reported. What the invoice of the order offers to bill.
    public func stopCharges(terms: StopChargeTerms) -> [InvoiceLine] {
        var charges: [InvoiceLine] = []
        for kind in StopKind.allCases {
            let minutes = detentionMinutes(at: kind, terms: terms)
            let cents = StopTimes.detentionCents(minutes: minutes, centsPerHour: terms.detentionCentsPerHour)
            guard minutes > 0, cents > 0 else { continue }
            let free = StopTimes.duration(TimeInterval(terms.freeMinutes * 60))
            charges.append(InvoiceLine(kind: .detention, description: "Detention at \(kind.rawValue), order \(number): "
                                         + "\(StopTimes.duration(TimeInterval(minutes * 60))) beyond \(free) free at "
                                         + "\(MoneyFormat.dollars(terms.detentionCentsPerHour))/h", orderID: id, amountCents: cents))
        }
        if terms.dryRunCents > 0, let dryRun = problems.first(where: { $0.kind == .dryRun }) {
            charges.append(InvoiceLine(kind: .dryRun, description: "Dry run at \(dryRun.stop.rawValue), order \(number)", orderID: id,
                                         amountCents: terms.dryRunCents))
        }
        return charges
    }
}
