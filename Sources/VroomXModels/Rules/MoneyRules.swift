/// The one rounding rule for money: a share of an amount in integer cents
/// rounds half a cent away from zero (what a person doing it by hand and
/// a spreadsheet's ROUND do). Driver pay, surcharges and settlements all
/// take their shares here.
public enum MoneyRules {
    /// `basisPoints` hundredths of a percent of `cents` (2500 is 25 %):
    /// 25 % of $10.01 is $2.50 (250.25 ¢ → 250), 25 % of $10.02 is $2.51 (250.5 ¢ → 251).
    /// Both arguments are range-checked by their fields, so the product fits.
    public static func share(of cents: Int, basisPoints: Int) -> Int {
        let product = cents.multipliedReportingOverflow(by: basisPoints)
        guard !product.overflow else { return cents < 0 ? -MoneyFormat.largestCents : MoneyFormat.largestCents }
        let (quotient, remainder) = product.partialValue.quotientAndRemainder(dividingBy: 10_000)
        // Half a cent or more rounds away from zero.
        if remainder.magnitude * 2 >= 10_000 { return quotient + (product.partialValue < 0 ? -1 : 1) }
        return quotient
    }
}
