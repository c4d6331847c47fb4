import Foundation

/// An odometer reading. Readings of a unit only go up: one lower than the
/// last is refused (`odometer_decreased`).
public struct OdometerReading: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<OdometerReading>
    public var equipmentID: ID<Equipment>
    public var miles: Int
    /// When it was read (the phone's time of the tap).
    public var recordedAt: Date
    public var driverID: ID<Driver>?

    public init(id: ID<OdometerReading>, equipmentID: ID<Equipment>, miles: Int, recordedAt: Date, driverID: ID<Driver>?) {
        self.id = id
        self.equipmentID = equipmentID
        self.miles = miles
        self.recordedAt = recordedAt
        self.driverID = driverID
    }

    enum CodingKeys: String, CodingKey {
        case id, miles
        case equipmentID = "equipment_id"
        case recordedAt = "recorded_at"
        case driverID = "driver_id"
    }
}

public struct RecordOdometerRequest: Codable, Sendable, Hashable {
    /// Client-chosen, so a reading queued offline is recorded once.
    public var id: ID<OdometerReading>?
    public var equipmentID: ID<Equipment>
    public var miles: Int
    public var recordedAt: Date?

    public init(id: ID<OdometerReading>? = nil, equipmentID: ID<Equipment>, miles: Int, recordedAt: Date? = nil) {
        self.id = id
        self.equipmentID = equipmentID
        self.miles = miles
        self.recordedAt = recordedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, miles
        case equipmentID = "equipment_id"
        case recordedAt = "recorded_at"
    }
}

public enum FuelUnit: String, Codable, Sendable, CaseIterable {
    case gallon = "gal"
    case litre = "l"

    /// Thousandths of a US gallon in one thousandth of this unit's volume,
    /// as a ratio (litres are converted for miles per gallon).
    public func gallons(milli: Int) -> Double {
        switch self {
        case .gallon: return Double(milli) / 1000
        case .litre: return Double(milli) / 1000 / 3.785411784
        }
    }
}

/// What a fuel expense bought: for which truck, how much, at what odometer.
/// The quantity is in thousandths of the unit (12.345 gal = 12345).
public struct FuelPurchase: Codable, Sendable, Hashable {
    public var equipmentID: ID<Equipment>
    public var quantityMilli: Int
    public var unit: FuelUnit
    public var odometerMiles: Int?

    public init(equipmentID: ID<Equipment>, quantityMilli: Int, unit: FuelUnit = .gallon, odometerMiles: Int? = nil) {
        self.equipmentID = equipmentID
        self.quantityMilli = quantityMilli
        self.unit = unit
        self.odometerMiles = odometerMiles
    }

    /// "118.25 gal at 413,480 mi, $3.491/gal": what a fill-up bought, as
    /// the console and the driver's app show it.
    public func text(amountCents: Int) -> String {
        let unitName = unit == .gallon ? "gal" : "L"
        var quantity = String(format: "%.3f", Double(quantityMilli) / 1000)
        while quantity.hasSuffix("0") { quantity.removeLast() }
        if quantity.hasSuffix(".") { quantity.removeLast() }
        var text = "\(quantity) \(unitName)"
        if let miles = odometerMiles { text += " at \(NumberText.grouped(miles)) mi" }
        if let price = pricePerUnitMilli(amountCents: amountCents) {
            text += String(format: ", $%.3f/%@", Double(price) / 1000, unitName)
        }
        return text
    }

    /// Price per unit in tenths of a cent (3.899 $/gal = 3899), from the
    /// expense's total.
    public func pricePerUnitMilli(amountCents: Int) -> Int? {
        guard quantityMilli > 0 else { return nil }
        return Int((Double(amountCents) * 10 * 1000 / Double(quantityMilli)).rounded())
    }

    enum CodingKeys: String, CodingKey {
        case unit
        case equipmentID = "equipment_id"
        case quantityMilli = "quantity_milli"
        case odometerMiles = "odometer_miles"
    }
}

/// Fuel economy of a truck over a period, by the full-tank method: miles
/// between the first and the last fill with an odometer reading, over the
/// fuel bought after the first of them (the first fill's fuel was burnt
/// before the period). Fills count in the order they were bought.
public struct FuelReport: Codable, Sendable, Hashable {
    public var equipmentID: ID<Equipment>
    public var from: LocalDate
    public var to: LocalDate
    public var fills: Int
    public var gallons: Double
    public var costCents: Int
    /// Miles measured between fills (nil with fewer than two fills with odometers).
    public var miles: Int?
    public var milesPerGallon: Double?
    public var costPerMileCents: Double?
    /// Average price paid per gallon, cents.
    public var averagePricePerGallonCents: Double?

    public init(equipmentID: ID<Equipment>, from: LocalDate, to: LocalDate, fills: Int, gallons: Double, costCents: Int,
                miles: Int?, milesPerGallon: Double?, costPerMileCents: Double?, averagePricePerGallonCents: Double?) {
        self.equipmentID = equipmentID
        self.from = from
        self.to = to
        self.fills = fills
        self.gallons = gallons
        self.costCents = costCents
        self.miles = miles
        self.milesPerGallon = milesPerGallon
        self.costPerMileCents = costPerMileCents
        self.averagePricePerGallonCents = averagePricePerGallonCents
    }

    /// One fill of the period, as the report needs it.
    public struct Fill: Sendable, Hashable {
        public var date: LocalDate
        public var amountCents: Int
        public var gallons: Double
        public var odometerMiles: Int?
        public init(date: LocalDate, amountCents: Int, gallons: Double, odometerMiles: Int?) {
            self.date = date
            self.amountCents = amountCents
            self.gallons = gallons
            self.odometerMiles = odometerMiles
        }
    }

    /// The report of these fills (any order).
    public static func compute(_ equipment: ID<Equipment>, from: LocalDate, to: LocalDate, fills: [Fill]) -> FuelReport {
        let gallons = fills.reduce(0) { $0 + $1.gallons }
        let cost = fills.reduce(0) { $0 + $1.amountCents }
        let measured = consistentReadings(fills)
        var miles: Int?
        var mpg: Double?
        var costPerMile: Double?
        if let first = measured.first, let last = measured.last, measured.count >= 2, let start = first.odometerMiles,
           let end = last.odometerMiles, end > start {
            let burnt = measured.dropFirst()
            let burntGallons = burnt.reduce(0) { $0 + $1.gallons }
            let burntCost = burnt.reduce(0) { $0 + $1.amountCents }
            miles = end - start
            if burntGallons > 0 { mpg = (Double(end - start) / burntGallons * 100).rounded() / 100 }
            costPerMile = (Double(burntCost) / Double(end - start) * 10).rounded() / 10
        }
        return FuelReport(equipmentID: equipment, from: from, to: to, fills: fills.count, gallons: (gallons * 1000).rounded() / 1000,
                          costCents: cost, miles: miles, milesPerGallon: mpg, costPerMileCents: costPerMile,
                          averagePricePerGallonCents: gallons > 0 ? (Double(cost) / gallons * 10).rounded() / 10 : nil)
    }

    /// The fills whose odometers agree with each other, in the order they
    /// were bought: the longest run in which each reading is no lower than
    /// the one before and no further than a truck can drive in the days
    /// between (`OdometerRule`). A typo — a digit dropped or added, on the
    /// first fill as on any other — is left out rather than taken as the
    /// start or the end of the distance. Each fill looks back at most
    /// `lookBack` fills, so a long period costs linear time.
    static func consistentReadings(_ fills: [Fill], lookBack: Int = 64) -> [Fill] {
        let read = fills.filter { $0.odometerMiles != nil }
            .sorted { ($0.date, $0.odometerMiles ?? 0) < ($1.date, $1.odometerMiles ?? 0) }
        guard !read.isEmpty else { return [] }
        var length = [Int](repeating: 1, count: read.count)
        var previous = [Int?](repeating: nil, count: read.count)
        for index in read.indices {
            let miles = read[index].odometerMiles ?? 0
            for earlier in max(0, index - lookBack)..<index {
                let before = read[earlier].odometerMiles ?? 0
                guard before <= miles, Double(miles - before) <= OdometerRule.plausibleMiles(from: read[earlier].date, to: read[index].date),
                      length[earlier] + 1 > length[index] else { continue }
                length[index] = length[earlier] + 1
                previous[index] = earlier
            }
        }
        // The longest run; of equal ones, the one that ends latest.
        var end = 0
        for index in read.indices where length[index] >= length[end] { end = index }
        var run: [Fill] = []
        var cursor: Int? = end
        while let index = cursor {
            run.append(read[index])
            cursor = previous[index]
        }
        return run.reversed()
    }

    enum CodingKeys: String, CodingKey {
        case from, to, fills, gallons, miles
        case equipmentID = "equipment_id"
        case costCents = "cost_cents"
        case milesPerGallon = "miles_per_gallon"
        case costPerMileCents = "cost_per_mile_cents"
        case averagePricePerGallonCents = "average_price_per_gallon_cents"
    }
}
