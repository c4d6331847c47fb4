import Foundation

/// What a driver's expense may say: applied by the server and by the app
/// before the expense is queued.
public enum ExpenseRules {
    /// An amount spent: a cent to the most one expense records.
    public static func amountProblem(_ cents: Int) -> Refusal? {
        let limit = FieldLimits.expenseAmountCents
        guard !limit.allows(cents) else { return nil }
        return .invalid(limit.field, "\(limit.field) must be between \(MoneyFormat.dollars(limit.range.lowerBound)) and \(MoneyFormat.dollars(limit.range.upperBound)).")
    }

    /// An expense is money already spent: dated no later than today
    /// anywhere on earth (UTC+14; the driver's zone is not known), so a typo
    /// in the year cannot date a fill, and the odometer reading it carries,
    /// in the future.
    public static func dateProblem(_ date: LocalDate, now: Date) -> Refusal? {
        guard date > LocalDate(now.addingTimeInterval(14 * 3600)) else { return nil }
        return .invalid("date", "The date \(date) is in the future: an expense is dated the day the money was spent.")
    }

    /// Fuel is bought on a fuel expense, in a believable quantity, with an
    /// odometer reading an odometer can show. (Whose truck it is, and the
    /// reading against the truck's others, are checked against the fleet.)
    public static func fuelProblem(_ fuel: FuelPurchase, category: ExpenseCategory) -> Refusal? {
        guard category == .fuel else { return .invalid("fuel", "Only a fuel expense says what fuel it bought.") }
        let quantity = FieldLimits.fuelQuantityMilli
        guard quantity.allows(fuel.quantityMilli) else {
            return .invalid("fuel.quantity_milli", "fuel.quantity_milli is thousandths of a gallon or litre: 1 to \(NumberText.grouped(quantity.range.upperBound)).")
        }
        if let miles = fuel.odometerMiles, !FieldLimits.odometerMiles.allows(miles) {
            return FieldLimits.odometerMiles.refusal(field: "fuel.odometer_miles")
        }
        return nil
    }
}
