import Testing
import VroomXModels

@Suite("Driver pay on terms")
struct PayTests {
    @Test("pay on the driver's terms: a share, per mile, per trip or per vehicle, and never past the largest amount a money field holds")
    func driverPay() {
        #expect(PayType.percentage.driverPay(rate: 2500, revenueCents: 400_000, miles: 700, vehicles: 3) == 100_000)
        #expect(PayType.perMile.driverPay(rate: 65, revenueCents: 400_000, miles: 700, vehicles: 3) == 45_500)
        #expect(PayType.perTrip.driverPay(rate: 90_000, revenueCents: 400_000, miles: 700, vehicles: 3) == 90_000)
        #expect(PayType.perVehicle.driverPay(rate: 15_000, revenueCents: 400_000, miles: 700, vehicles: 3) == 45_000)
        #expect(PayType.perVehicle.driverPay(rate: Int.max, revenueCents: 0, miles: 0, vehicles: Int.max) == MoneyFormat.largestCents)
        // The largest rate and miles each field takes: $100 a mile over 10,000,000 miles is $1,000,000,000.
        #expect(PayType.perMile.driverPay(rate: 100_00, revenueCents: 0, miles: 10_000_000, vehicles: 3) == MoneyFormat.largestCents)
        #expect(PayType.percentage.driverPay(rate: 10_000, revenueCents: MoneyFormat.largestCents, miles: 0, vehicles: 3) == MoneyFormat.largestCents)
        // Half a cent rounds up, less rounds down: the one rule (MoneyRules.share).
        #expect(PayType.percentage.driverPay(rate: 2500, revenueCents: 1001, miles: 0, vehicles: 3) == 250)
        #expect(PayType.percentage.driverPay(rate: 2500, revenueCents: 1002, miles: 0, vehicles: 3) == 251)
        #expect(MoneyRules.share(of: -1002, basisPoints: 2500) == -251)
        #expect(MoneyRules.share(of: Int.max, basisPoints: 10_000) == MoneyFormat.largestCents)
    }
}
