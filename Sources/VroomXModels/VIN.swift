/// What a vehicle identification number says, by the rules of 49 CFR 565:
/// 17 characters from `A-H J-N P R-Z 0-9`, a check digit in position 9
/// (required in North America), the model year in position 10 and the
/// maker in the first three (the WMI). Server and apps apply the same rule.
public struct VINDecoding: Codable, Sendable, Hashable {
    /// The VIN as checked: upper case, spaces and dashes removed.
    public var vin: String
    /// 17 characters of the allowed alphabet.
    public var isWellFormed: Bool
    /// Whether position 9 is the check digit the other 16 characters give.
    public var checkDigitValid: Bool
    /// The check digit the other characters give (`0`–`9` or `X`).
    public var expectedCheckDigit: String?
    /// Built for North America (first character 1–5), where the check digit is required.
    public var northAmerican: Bool
    public var modelYear: Int?
    /// The manufacturer from the built-in table of common makers, if listed.
    public var make: String?
    /// Country or region of manufacture, from the first character.
    public var region: String?
    /// What is wrong, for people: empty when nothing is.
    public var problems: [String]

    enum CodingKeys: String, CodingKey {
        case vin, isWellFormed = "well_formed", checkDigitValid = "check_digit_valid", expectedCheckDigit = "expected_check_digit"
        case northAmerican = "north_american", modelYear = "model_year", make, region, problems
        case needsConfirmation = "needs_confirmation"
    }

    public init(vin: String, isWellFormed: Bool, checkDigitValid: Bool, expectedCheckDigit: String?, northAmerican: Bool,
                modelYear: Int?, make: String?, region: String?, problems: [String]) {
        self.vin = vin
        self.isWellFormed = isWellFormed
        self.checkDigitValid = checkDigitValid
        self.expectedCheckDigit = expectedCheckDigit
        self.northAmerican = northAmerican
        self.modelYear = modelYear
        self.make = make
        self.region = region
        self.problems = problems
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(vin: try container.decode(String.self, forKey: .vin), isWellFormed: try container.decode(Bool.self, forKey: .isWellFormed),
                  checkDigitValid: try container.decode(Bool.self, forKey: .checkDigitValid),
                  expectedCheckDigit: try container.decodeIfPresent(String.self, forKey: .expectedCheckDigit),
                  northAmerican: try container.decode(Bool.self, forKey: .northAmerican),
                  modelYear: try container.decodeIfPresent(Int.self, forKey: .modelYear),
                  make: try container.decodeIfPresent(String.self, forKey: .make), region: try container.decodeIfPresent(String.self, forKey: .region),
                  problems: try container.decode([String].self, forKey: .problems))
        // Derived from the others: read, not kept.
        _ = try container.decodeIfPresent(Bool.self, forKey: .needsConfirmation)
    }

    /// Written with `needs_confirmation`, so a client need not know the rule.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(vin, forKey: .vin)
        try container.encode(isWellFormed, forKey: .isWellFormed)
        try container.encode(checkDigitValid, forKey: .checkDigitValid)
        try container.encodeIfPresent(expectedCheckDigit, forKey: .expectedCheckDigit)
        try container.encode(northAmerican, forKey: .northAmerican)
        try container.encodeIfPresent(modelYear, forKey: .modelYear)
        try container.encodeIfPresent(make, forKey: .make)
        try container.encodeIfPresent(region, forKey: .region)
        try container.encode(problems, forKey: .problems)
        try container.encode(needsConfirmation, forKey: .needsConfirmation)
    }

    /// A wrong check digit on a North-American VIN: the one finding a client
    /// must confirm (a typo is likelier than a car that breaks the rule).
    public var needsConfirmation: Bool { isWellFormed && northAmerican && !checkDigitValid }
}

public enum VIN {
    /// The characters a VIN may use: no I, O or Q (read as 1 and 0).
    static let alphabet = Set("ABCDEFGHJKLMNPRSTUVWXYZ0123456789")

    /// Decodes a VIN. `currentYear` bounds the model year (a year code
    /// repeats every 30 years; the later reading is taken unless it is more
    /// than a year ahead).
    public static func decode(_ text: String, currentYear: Int) -> VINDecoding {
        let vin = String(text.uppercased().filter { $0 != " " && $0 != "-" }.prefix(64))
        let characters = Array(vin)
        var problems: [String] = []
        let wellFormed = characters.count == 17 && characters.allSatisfy { alphabet.contains($0) }
        if characters.count != 17 {
            problems.append("A VIN is 17 characters; this has \(characters.count).")
        } else if let bad = characters.first(where: { !alphabet.contains($0) }) {
            problems.append(bad == "I" || bad == "O" || bad == "Q"
                            ? "A VIN never contains I, O or Q (they read as 1 and 0); found \(bad)."
                            : "A VIN has only letters and digits; found \(bad).")
        }
        guard wellFormed else {
            return VINDecoding(vin: vin, isWellFormed: false, checkDigitValid: false, expectedCheckDigit: nil, northAmerican: false,
                               modelYear: nil, make: nil, region: nil, problems: problems)
        }
        let expected = checkDigit(characters)
        let valid = expected == characters[8]
        let northAmerican = ("1"..."5").contains(characters[0])
        if !valid {
            problems.append(northAmerican
                            ? "The check digit (9th character) should be \(expected) for the rest of this VIN: check it for a typo."
                            : "The 9th character is not the North-American check digit (\(expected)); VINs from elsewhere need not have one.")
        }
        return VINDecoding(vin: vin, isWellFormed: true, checkDigitValid: valid, expectedCheckDigit: String(expected),
                           northAmerican: northAmerican, modelYear: modelYear(characters, currentYear: currentYear),
                           make: manufacturers[String(characters[0..<3])] ?? manufacturers[String(characters[0..<2])],
                           region: region(characters[0]), problems: problems)
    }

    /// Position 9: each character's value times its position's weight, mod 11 (10 is X).
    static func checkDigit(_ characters: [Character]) -> Character {
        let weights = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2]
        var sum = 0
        for (character, weight) in zip(characters, weights) { sum += value(character) * weight }
        let remainder = sum % 11
        return remainder == 10 ? "X" : Character(String(remainder))
    }

    static func value(_ character: Character) -> Int {
        if let digit = character.wholeNumberValue { return digit }
        let values: [Character: Int] = [
            "A": 1, "B": 2, "C": 3, "D": 4, "E": 5, "F": 6, "G": 7, "H": 8, "J": 1, "K": 2, "L": 3, "M": 4, "N": 5,
            "P": 7, "R": 9, "S": 2, "T": 3, "U": 4, "V": 5, "W": 6, "X": 7, "Y": 8, "Z": 9,
        ]
        return values[character] ?? 0
    }

    /// Position 10 names a year in a 30-year cycle (1980–2009, 2010–2039).
    /// For cars and light trucks since 2010, a letter in position 7 means
    /// the later cycle and a digit the earlier one; heavy trucks and
    /// trailers do not follow that rule, so for their makers (and wherever
    /// position 7 says nothing) the later reading counts unless it is more
    /// than a year ahead.
    static func modelYear(_ characters: [Character], currentYear: Int) -> Int? {
        let codes = Array("ABCDEFGHJKLMNPRSTVWXY123456789")
        guard let index = codes.firstIndex(of: characters[9]) else { return nil }
        let early = 1980 + index, late = 2010 + index
        if !heavyVehicleMakers.contains(String(characters[0..<3])) {
            if characters[6].isLetter, late <= currentYear + 1 { return late }
            if characters[6].isNumber { return early }
        }
        return late <= currentYear + 1 ? late : early
    }

    /// Makers of heavy trucks and car-hauler trailers (whose VINs do not
    /// use position 7 for the model-year cycle).
    static let heavyVehicleMakers: Set<String> = [
        "1XP", "2XP", "1XK", "2XK", "1NK", "2NK", "1FU", "1FV", "3AK", "3AL", "1M1", "1M2", "4V4", "4V5", "4VG", "1HT", "1HS", "3HS",
        "3HA", "5PV", "5KJ", "5KK", "1GR", "1JJ", "1UY", "1DW", "4WW", "5JY", "4ZE", "5TB", "1C9", "4V1",
    ]

    static func region(_ first: Character) -> String? {
        switch first {
        case "1", "4", "5": return "United States"
        case "2": return "Canada"
        case "3": return "Mexico"
        case "J": return "Japan"
        case "K": return "South Korea"
        case "L": return "China"
        case "S": return "United Kingdom"
        case "V": return "France or Spain"
        case "W": return "Germany"
        case "Y": return "Sweden or Finland"
        case "Z": return "Italy"
        default: return nil
        }
    }

    /// World manufacturer identifiers of the makers a US car hauler sees most.
    static let manufacturers: [String: String] = [
        "1C3": "Chrysler", "1C4": "Jeep", "1C6": "Ram", "1FA": "Ford", "1FM": "Ford", "1FT": "Ford", "1FD": "Ford", "1G1": "Chevrolet",
        "1XP": "Peterbilt", "2XP": "Peterbilt", "1XK": "Kenworth", "2XK": "Kenworth", "1NK": "Kenworth", "1FU": "Freightliner",
        "1FV": "Freightliner", "3AK": "Freightliner", "3AL": "Freightliner", "1M1": "Mack", "1M2": "Mack", "4V4": "Volvo Trucks",
        "4V5": "Volvo Trucks", "1HT": "International", "1HS": "International", "3HS": "International", "5KJ": "Western Star",
        "1GC": "Chevrolet", "1GN": "Chevrolet", "1GT": "GMC", "1GK": "GMC", "1G6": "Cadillac", "1GY": "Cadillac", "1HG": "Honda",
        "1J4": "Jeep", "1LN": "Lincoln", "1N4": "Nissan", "1N6": "Nissan", "19X": "Honda", "19U": "Acura", "2C3": "Chrysler",
        "2C4": "Chrysler", "2FM": "Ford", "2G1": "Chevrolet", "2HG": "Honda", "2HK": "Honda", "2T1": "Toyota", "2T3": "Toyota",
        "3C4": "Chrysler", "3C6": "Ram", "3FA": "Ford", "3GC": "Chevrolet", "3GN": "Chevrolet", "3N1": "Nissan", "3VW": "Volkswagen",
        "4JG": "Mercedes-Benz", "4S3": "Subaru", "4S4": "Subaru", "4T1": "Toyota", "4T3": "Toyota", "5FN": "Honda", "5J6": "Honda",
        "5LM": "Lincoln", "5N1": "Nissan", "5NP": "Hyundai", "5TD": "Toyota", "5TF": "Toyota", "5UX": "BMW", "5YJ": "Tesla",
        "7SA": "Tesla", "JF1": "Subaru", "JF2": "Subaru", "JHM": "Honda", "JM1": "Mazda", "JM3": "Mazda", "JN1": "Nissan",
        "JN8": "Nissan", "JT": "Toyota", "KM8": "Hyundai", "KMH": "Hyundai", "KNA": "Kia", "KND": "Kia", "SAJ": "Jaguar",
        "SAL": "Land Rover", "WA1": "Audi", "WAU": "Audi", "WBA": "BMW", "WBS": "BMW", "WDB": "Mercedes-Benz", "WDD": "Mercedes-Benz",
        "WP0": "Porsche", "WP1": "Porsche", "WVW": "Volkswagen", "WVG": "Volkswagen", "YV1": "Volvo", "YV4": "Volvo", "ZFF": "Ferrari",
    ]
}
