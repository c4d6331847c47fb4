import Testing
import VroomXModels

/// Figures people read: thousands grouped, cents always two digits, signs kept, no trap at the extremes.
@Suite struct FigureTextTests {
    @Test func numbersAreGroupedInThousands() {
        #expect(NumberText.grouped(0) == "0")
        #expect(NumberText.grouped(999) == "999")
        #expect(NumberText.grouped(1_000) == "1,000")
        #expect(NumberText.grouped(-1_234_567) == "-1,234,567")
        #expect(NumberText.grouped(100_000) == "100,000")
        #expect(NumberText.grouped(Int.min) == "-9,223,372,036,854,775,808")
        #expect(NumberText.grouped(UInt64.max) == "18,446,744,073,709,551,615")
    }

    @Test func dollarsHaveTwoDigitsOfCents() {
        #expect(MoneyFormat.dollars(0) == "$0.00")
        #expect(MoneyFormat.dollars(5) == "$0.05")
        #expect(MoneyFormat.dollars(-5) == "-$0.05")
        #expect(MoneyFormat.dollars(125_050) == "$1,250.50")
        #expect(MoneyFormat.dollars(-100_000_00) == "-$100,000.00")
        #expect(MoneyFormat.dollars(Int.max) == "$92,233,720,368,547,758.07")
        #expect(MoneyFormat.dollars(Int.min) == "-$92,233,720,368,547,758.08")
    }

    @Test func statusTitlesAreTheirLabelsCapitalized() {
        for status in TripStatus.allCases { #expect(status.title.lowercased() == status.label && status.title.first?.isUppercase == true) }
        for status in OrderStatus.allCases { #expect(status.title.lowercased() == status.label && status.title.first?.isUppercase == true) }
    }
}
