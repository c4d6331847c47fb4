import Testing
import VroomXModels

@Suite("VIN rules (49 CFR 565)")
struct VINTests {
    @Test("published VINs: check digit, model year, maker and region")
    func knownVINs() {
        let accord = VIN.decode("1HGCM82633A004352", currentYear: 2026)
        #expect(accord.isWellFormed && accord.checkDigitValid && accord.northAmerican && accord.problems.isEmpty)
        #expect(accord.modelYear == 2003 && accord.make == "Honda" && accord.region == "United States")
        // An X check digit, and a numeric 7th character keeping the year in the first cycle.
        let truck = VIN.decode("1M8GDM9AXKP042788", currentYear: 2026)
        #expect(truck.checkDigitValid && truck.expectedCheckDigit == "X" && truck.modelYear == 1989 && truck.make == nil)
        // Heavy trucks and trailers do not use position 7 for the year cycle: this Peterbilt is a 2019, not a 1989.
        let peterbilt = VIN.decode("1XPBDP9X9KD123456", currentYear: 2026)
        #expect(peterbilt.checkDigitValid && peterbilt.modelYear == 2019 && peterbilt.make == "Peterbilt")
        #expect(VIN.decode("1FUJHHDR0LL654321", currentYear: 2026).modelYear == 2020)
        // Spaces, dashes and lower case are what people type; the decoding is of the VIN itself.
        #expect(VIN.decode("5yj3e1ea-9lf 000123", currentYear: 2026).vin == "5YJ3E1EA9LF000123")
    }

    @Test("a wrong check digit on a North-American VIN needs confirming, says what it should be, and elsewhere is only noted")
    func checkDigit() {
        let typo = VIN.decode("1HGCM82653A004352", currentYear: 2026)
        #expect(typo.isWellFormed && !typo.checkDigitValid && typo.needsConfirmation && typo.expectedCheckDigit == "3")
        #expect(typo.problems.first?.contains("should be 3") == true)
        let european = VIN.decode("WBA3A5C50CF256985", currentYear: 2026)
        #expect(european.make == "BMW" && european.region == "Germany" && !european.needsConfirmation)
        // Changing any one character changes the check digit's verdict (the weights never miss a position but the 9th).
        let valid = Array("1HGCM82633A004352")
        for position in valid.indices where position != 8 {
            var changed = valid
            changed[position] = valid[position] == "5" ? "6" : "5"
            #expect(!VIN.decode(String(changed), currentYear: 2026).checkDigitValid, "position \(position + 1)")
        }
    }

    @Test("malformed VINs are refused with a reason, never decoded")
    func malformed() {
        for (text, reason) in [("1HGCM82633A00435", "17 characters"), ("1HGCM82633A0043521", "17 characters"),
                               ("1HGCM82633AO04352", "I, O or Q"), ("1HGCM82633A00435!", "letters and digits"),
                               ("", "17 characters"), (String(repeating: "1", count: 10_000), "17 characters")] {
            let decoded = VIN.decode(text, currentYear: 2026)
            #expect(!decoded.isWellFormed && decoded.modelYear == nil && decoded.make == nil)
            #expect(decoded.problems.first?.contains(reason) == true, "\(text.prefix(20)): \(decoded.problems)")
        }
    }

    @Test("the model year follows the 30-year cycle and position 7, never more than a year ahead")
    func modelYears() {
        // "L" is 1990 or 2020: a letter in position 7 means the later cycle.
        #expect(VIN.decode("5YJ3E1EA9LF000123", currentYear: 2026).modelYear == 2020)
        #expect(VIN.decode("5YJ3E19A9LF000123", currentYear: 2026).modelYear == 1990)
        // "Y" is 2000 or 2030: 2030 is too far ahead in 2026, whatever position 7 says.
        #expect(VIN.decode("5YJ3E1EA9YF000123", currentYear: 2026).modelYear == 2000)
        #expect(VIN.decode("5YJ3E1EA9YF000123", currentYear: 2029).modelYear == 2030)
    }
}
