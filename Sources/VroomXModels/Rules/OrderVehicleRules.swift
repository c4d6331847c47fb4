import Foundation

/// How an order's vehicles and its revenue fit together: applied by the
/// server to every request and by the console's form before it sends one.
public enum OrderVehicleRules {
    /// An order moves 1 to `FieldLimits.vehiclesPerOrder` vehicles.
    public static func count(_ count: Int, field: String = "vehicles") -> Refusal? {
        let most = FieldLimits.vehiclesPerOrder
        if count < 1 { return .invalid(field, "An order moves at least one vehicle.") }
        if count > most { return .invalid(field, "An order moves at most \(most) vehicles; split a bigger load into several orders.") }
        return nil
    }

    /// Each vehicle's price, from the prices a request gave (nil where it
    /// gave none) and the order's revenue if it gave one. The order earns
    /// the sum of its vehicles' prices, so:
    /// - a single vehicle without a price earns the order's revenue (the
    ///   request shape from before several vehicles per order);
    /// - a vehicle of several without a price earns nothing, but several
    ///   with no price at all beside a revenue are refused (which vehicle
    ///   earns what is not ours to guess);
    /// - a revenue that is not the sum is refused.
    /// Each price is already within `FieldLimits.vehiclePriceCents`.
    public static func prices(_ given: [Int?], revenue: Int?) -> Result<[Int], Refusal> {
        if given.count == 1, given[0] == nil { return .success([revenue ?? 0]) }
        if given.count > 1, given.allSatisfy({ $0 == nil }), let revenue, revenue > 0 {
            return .failure(.invalid("vehicles", "Give each vehicle's price: the order's revenue is the sum of them."))
        }
        let prices = given.map { $0 ?? 0 }
        // Twelve prices each within the limit cannot overflow; their sum must keep the revenue's limit too.
        let sum = prices.reduce(0, +)
        if sum > MoneyFormat.largestCents {
            return .failure(.invalid("revenue_cents", "The vehicles' prices add up to more than \(MoneyFormat.dollars(MoneyFormat.largestCents))."))
        }
        if let revenue, revenue != sum {
            return .failure(.invalid("revenue_cents",
                                     "The order's revenue is the sum of its vehicles' prices, \(MoneyFormat.dollars(sum)): leave it out or make it match."))
        }
        return .success(prices)
    }
}
