/// The one rounding rule for money: a share of an amount in integer cents
/// rounds half a cent away from zero (what a person doing it by hand and
/// a spreadsheet's ROUND do). Driver pay, surcharges and settlements all
/// take their shares here.
public enum MoneyRules {
    /// `basisPoints` hundredths of a percent of `cents` (2500 is 25 %):
    /// 25 % of $10.01 is $2.50 (250.25 ¢ → 250), 25 % of $10.02 is $2.51 (250.5 ¢ → 251).
    /// Both arguments are range-checked by their fields, so the product fits.
    public static func share(of cents: Int, basisPoints: Int) -> Int {
        portion(of: cents, times: basisPoints, over: 10_000)
    }

    /// `cents × numerator / denominator` (an hourly rate for some minutes:
    /// 45 min at $50.00/h is $37.50; 7 min at $10.00/h is 116.67 ¢ → $1.17).
    /// The denominator is positive; a product past the money limit stops there.
    public static func portion(of cents: Int, times numerator: Int, over denominator: Int) -> Int {
        precondition(denominator > 0)
        let product = cents.multipliedReportingOverflow(by: numerator)
        guard !product.overflow, product.partialValue.magnitude / UInt(denominator) <= UInt(MoneyFormat.largestCents) else {
            return (cents < 0) != (numerator < 0) ? -MoneyFormat.largestCents : MoneyFormat.largestCents
        }
        let (quotient, remainder) = product.partialValue.quotientAndRemainder(dividingBy: denominator)
        // Half a cent or more rounds away from zero.
        if remainder.magnitude * 2 >= UInt(denominator) { return quotient + (product.partialValue < 0 ? -1 : 1) }
        return quotient
    }
}
