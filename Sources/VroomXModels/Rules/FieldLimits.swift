import Foundation

/// How long a client's text may be: at most `max` code points (as the
/// databases' `length()` counts them; a family emoji is seven), and
/// whether it may be empty. `documentedIn`: the API document's schemas
/// that carry the field (a test holds them to this limit).
public struct TextLimit: Sendable, Hashable {
    public let field: String
    public let max: Int
    public let required: Bool
    public let documentedIn: [String]

    public init(_ field: String, max: Int, required: Bool = false, documentedIn: [String] = []) {
        self.field = field
        self.max = max
        self.required = required
        self.documentedIn = documentedIn
    }

    /// Whether the text, as it is stored (`normalized`), keeps the limit.
    public func allows(_ text: String) -> Bool {
        let stored = Self.normalized(text)
        return stored.unicodeScalars.count <= max && (!required || !stored.isEmpty)
    }

    /// Text as it is stored: browsers send a text box's line breaks as
    /// \r\n, kept as \n; spaces and breaks around it dropped.
    public static func normalized(_ text: String) -> String {
        text.replacingOccurrences(of: "\r\n", with: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether text is one line of visible characters: no control or format
    /// characters (direction marks, zero-width spaces), line or paragraph
    /// separators, private-use or unassigned ones, nor other invisible
    /// marks. Names and one-line fields keep it, on the phone and the server alike.
    public static func isOneVisibleLine(_ text: String) -> Bool {
        !text.unicodeScalars.contains { scalar in
            let properties = scalar.properties
            switch properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned: return true
            default: return properties.isDefaultIgnorableCodePoint  // variation selectors, fillers, joiners
            }
        }
    }

    /// The refusal of text that breaks the limit, naming `field` (which may
    /// carry a prefix, such as `pickup.address`).
    public func refusal(field: String? = nil, empty: Bool = false) -> Refusal {
        let name = field ?? self.field
        return .invalid(name, empty ? "\(name) is required." : "\(name) is at most \(max) characters.")
    }
}

/// The decimal numbers a client's field may hold (a coordinate, a fix's accuracy).
public struct DecimalLimit: Sendable, Hashable {
    public let field: String
    public let range: ClosedRange<Double>
    public let documentedIn: [String]

    public init(_ field: String, _ range: ClosedRange<Double>, documentedIn: [String] = []) {
        self.field = field
        self.range = range
        self.documentedIn = documentedIn
    }

    /// A finite number within the range (never NaN or infinity).
    public func allows(_ value: Double) -> Bool { value.isFinite && range.contains(value) }
}

/// The whole numbers a client's field may hold.
public struct NumberLimit: Sendable, Hashable {
    public let field: String
    public let range: ClosedRange<Int>
    public let documentedIn: [String]

    public init(_ field: String, _ range: ClosedRange<Int>, documentedIn: [String] = []) {
        self.field = field
        self.range = range
        self.documentedIn = documentedIn
    }

    public func allows(_ value: Int) -> Bool { range.contains(value) }

    /// The range for text parsed as 64-bit numbers.
    public var range64: ClosedRange<Int64> { Int64(range.lowerBound)...Int64(range.upperBound) }

    public func refusal(field: String? = nil, unit: String = "") -> Refusal {
        let name = field ?? self.field
        // Grouped from five digits: "10,000,000 miles", but "1900" as a year is written.
        func text(_ value: Int) -> String { abs(value) >= 10_000 ? NumberText.grouped(value) : String(value) }
        let bounds = "\(text(range.lowerBound)) and \(text(range.upperBound))"
        return .invalid(name, "\(name) must be between \(bounds)\(unit.isEmpty ? "" : " " + unit).")
    }

    /// `value` when it is in range, else the refusal.
    public func checked(_ value: Int, field: String? = nil, unit: String = "") throws(Refusal) -> Int {
        guard allows(value) else { throw refusal(field: field, unit: unit) }
        return value
    }
}

/// Every limit on a string or number a client sends, in one table: the
/// server's checks, the console's forms, the app's input checks and the API
/// document all read it.
public enum FieldLimits {
    // Trips
    public static let tripNumber = TextLimit("number", max: 64, required: true, documentedIn: ["CreateTripRequest", "UpdateTripRequest"])
    public static let tripOrigin = TextLimit("origin", max: 500, documentedIn: ["CreateTripRequest", "UpdateTripRequest"])
    public static let tripDestination = TextLimit("destination", max: 500, documentedIn: ["CreateTripRequest", "UpdateTripRequest"])
    public static let tripMiles = NumberLimit("miles", 0...10_000_000, documentedIn: ["CreateTripRequest", "UpdateTripRequest"])

    // Orders, their stops and vehicles
    /// What a trip or an order earns, and what a trip pays its driver (integer cents).
    public static let revenueCents = NumberLimit("revenue_cents", 0...MoneyFormat.largestCents,
                                                 documentedIn: ["CreateTripRequest", "UpdateTripRequest", "CreateOrderRequest", "UpdateOrderRequest"])
    public static let driverPayCents = NumberLimit("driver_pay_cents", 0...MoneyFormat.largestCents,
                                                   documentedIn: ["CreateTripRequest", "UpdateTripRequest"])

    public static let orderNumber = TextLimit("number", max: 64, required: true, documentedIn: ["CreateOrderRequest"])
    public static let paymentTerms = TextLimit("payment_terms", max: 100, documentedIn: ["CreateOrderRequest", "UpdateOrderRequest",
                                                                                      "CreateCustomerRequest", "UpdateCustomerRequest"])
    /// A load board's or broker's reference for a load.
    public static let externalLoadID = TextLimit("external_load_id", max: 64, documentedIn: ["CreateOrderRequest", "UpdateOrderRequest"])
    public static let stopName = TextLimit("name", max: 200, documentedIn: ["Stop"])
    public static let stopAddress = TextLimit("address", max: 500, required: true, documentedIn: ["Stop"])
    public static let stopContactName = TextLimit("contact_name", max: 200, documentedIn: ["Stop"])
    public static let stopContactPhone = TextLimit("contact_phone", max: 40, documentedIn: ["Stop"])
    public static let vehicleMake = TextLimit("make", max: 100, documentedIn: ["Vehicle"])
    public static let vehicleModel = TextLimit("model", max: 100, documentedIn: ["Vehicle"])
    public static let vehicleColor = TextLimit("color", max: 50, documentedIn: ["Vehicle"])
    public static let vehicleYear = NumberLimit("year", 1900...2100, documentedIn: ["Vehicle"])
    /// The auction's lot number or the dealer's buyer number the vehicle is released against.
    public static let lotNumber = TextLimit("lot_number", max: 40, documentedIn: ["Vehicle"])
    /// What moving one vehicle earns (integer cents); an order earns the sum of its vehicles'.
    public static let vehiclePriceCents = NumberLimit("price_cents", 0...MoneyFormat.largestCents, documentedIn: ["Vehicle"])
    /// Dealer and auction loads come with up to a full trailer of vehicles.
    public static let vehiclesPerOrder = 12

    // Expenses and fuel
    public static let expenseAmountCents = NumberLimit("amount_cents", 1...100_000_00, documentedIn: ["CreateExpenseRequest"])
    public static let expenseNotes = TextLimit("notes", max: 2000, documentedIn: ["CreateExpenseRequest"])
    /// Thousandths of a gallon or litre.
    public static let fuelQuantityMilli = NumberLimit("quantity_milli", 1...2_000_000, documentedIn: ["FuelPurchase"])

    // Messages to drivers
    public static let messageTitle = TextLimit("title", max: 200, required: true, documentedIn: ["SendMessageRequest"])
    public static let messageBody = TextLimit("body", max: 4000, documentedIn: ["SendMessageRequest"])
    /// A driver's message to dispatch: a few lines typed on a phone.
    public static let driverMessage = TextLimit("body", max: 2000, required: true, documentedIn: ["SendDriverMessageRequest"])

    // People
    public static let personName = TextLimit("name", max: 200, required: true, documentedIn: ["CreateDriverRequest", "UpdateDriverRequest"])
    public static let phone = TextLimit("phone", max: 40, documentedIn: ["CreateDriverRequest", "UpdateDriverRequest",
                                                                       "CreateCustomerRequest", "UpdateCustomerRequest",
                                                                       "UpdateCarrierProfileRequest"])

    // Customers
    public static let customerName = TextLimit("name", max: 200, required: true, documentedIn: ["CreateCustomerRequest", "UpdateCustomerRequest"])
    public static let billingContact = TextLimit("billing_contact", max: 200, documentedIn: ["CreateCustomerRequest", "UpdateCustomerRequest"])
    public static let customerAddress = TextLimit("address", max: 500, documentedIn: ["CreateCustomerRequest", "UpdateCustomerRequest"])
    public static let customerNotes = TextLimit("notes", max: 2000, documentedIn: ["CreateCustomerRequest", "UpdateCustomerRequest"])
    // The carrier's profile (what its documents say)
    public static let legalName = TextLimit("legal_name", max: 200, documentedIn: ["UpdateCarrierProfileRequest"])
    public static let carrierAddress = TextLimit("address", max: 500, documentedIn: ["UpdateCarrierProfileRequest"])
    public static let bolTerms = TextLimit("bol_terms", max: 4000, documentedIn: ["UpdateCarrierProfileRequest"])
    public static let factoringCompany = TextLimit("factoring_company", max: 200, documentedIn: ["UpdateCarrierProfileRequest"])
    public static let factoringRemitTo = TextLimit("factoring_remit_to", max: 500, documentedIn: ["UpdateCarrierProfileRequest"])
    public static let factoringNotice = TextLimit("factoring_notice", max: 2000, documentedIn: ["UpdateCarrierProfileRequest"])
    public static let detentionFreeMinutes = NumberLimit("detention_free_minutes", StopTimes.freeMinutesRange,
                                                         documentedIn: ["UpdateCarrierProfileRequest"])
    public static let detentionCentsPerHour = NumberLimit("detention_cents_per_hour", StopTimes.chargeCentsRange,
                                                          documentedIn: ["UpdateCarrierProfileRequest"])
    public static let dryRunFeeCents = NumberLimit("dry_run_fee_cents", StopTimes.chargeCentsRange, documentedIn: ["UpdateCarrierProfileRequest"])
    // Problems a driver reports at a stop
    public static let stopProblemNote = TextLimit("note", max: 1000, documentedIn: ["ReportStopProblemRequest"])

    // Invoices and payments
    public static let chargeDescription = TextLimit("description", max: 200, documentedIn: ["InvoiceCharge"])
    public static let invoiceNotes = TextLimit("notes", max: 2000, documentedIn: ["CreateInvoiceRequest", "UpdateInvoiceRequest"])
    public static let voidReason = TextLimit("reason", max: 500, required: true, documentedIn: ["VoidInvoiceRequest"])
    public static let paymentReference = TextLimit("reference", max: 100, documentedIn: ["RecordPaymentRequest", "CollectPaymentRequest"])
    public static let paymentNote = TextLimit("note", max: 500, documentedIn: ["RecordPaymentRequest"])
    public static let paymentAmountCents = NumberLimit("amount_cents", 1...MoneyFormat.largestCents, documentedIn: ["RecordPaymentRequest"])
    // Driver settlements: what dispatch enters for a driver.
    public static let payItemDescription = TextLimit("description", max: 200, documentedIn: ["CreatePayItemRequest", "CreateRecurringDeductionRequest"])
    public static let payItemAmountCents = NumberLimit("amount_cents", 1...10_000_000, documentedIn: ["CreatePayItemRequest",
                                                                                                      "CreateRecurringDeductionRequest"])
    public static let settlementReference = TextLimit("reference", max: 100, documentedIn: ["MarkSettlementPaidRequest"])
    /// MC and USDOT numbers: digits.
    public static let mcNumberDigits = 8
    public static let dotNumberDigits = 9

    /// What a search box takes (the customer list's `q`).
    public static let searchText = 100

    /// A driver's pay rate, by their terms: basis points of revenue (10000 is 100 %), cents a mile, cents a
    /// trip. The document states the widest (`payRate`); each terms' own range is `payRate(for:)`.
    public static func payRate(for type: PayType) -> NumberLimit {
        switch type {
        case .percentage: return NumberLimit("pay_rate", 0...10_000)
        case .perMile: return NumberLimit("pay_rate", 0...100_00)
        case .perTrip: return payRate
        case .perVehicle: return NumberLimit("pay_rate", 0...10_000_00)
        }
    }
    public static let payRate = NumberLimit("pay_rate", 0...1_000_000_00, documentedIn: ["CreateDriverRequest", "UpdateDriverRequest"])

    // The fleet
    public static let unitNumber = TextLimit("unit_number", max: 32, required: true, documentedIn: ["Equipment", "EquipmentFields"])
    public static let unitMake = TextLimit("make", max: 100, documentedIn: ["EquipmentFields"])
    public static let unitModel = TextLimit("model", max: 100, documentedIn: ["EquipmentFields"])
    public static let plate = TextLimit("plate", max: 16, documentedIn: ["Equipment", "EquipmentFields"])
    public static let unitNotes = TextLimit("notes", max: 2000, documentedIn: ["EquipmentFields"])
    public static let documentNumber = TextLimit("number", max: 64, documentedIn: ["EquipmentDocument", "AddEquipmentDocumentRequest"])
    public static let documentNotes = TextLimit("notes", max: 2000, documentedIn: ["EquipmentDocument", "AddEquipmentDocumentRequest"])
    /// Every odometer: a unit's, a reading, a fill's, an inspection's.
    public static let odometerMiles = NumberLimit("odometer_miles", 0...9_999_999,
                                                  documentedIn: ["Equipment", "FuelPurchase"])
    public static let readingMiles = NumberLimit("miles", odometerMiles.range, documentedIn: ["OdometerReading", "RecordOdometerRequest"])
    public static let inspectionOdometer = NumberLimit("odometer", odometerMiles.range, documentedIn: ["SaveInspectionRequest"])

    // Inspections
    public static let inspectionNotes = TextLimit("notes", max: 4000, documentedIn: ["SaveInspectionRequest"])
    public static let damageNote = TextLimit("note", max: 300, documentedIn: ["Damage"])
    public static let signerName = TextLimit("signer_name", max: 200, documentedIn: ["SaveInspectionRequest"])

    /// A trailer's capacity and a unit's gross vehicle weight rating.
    public static let capacityCars = NumberLimit("capacity_cars", 1...20, documentedIn: ["EquipmentSpecs"])
    public static let gvwrPounds = NumberLimit("gvwr_pounds", 1...200_000, documentedIn: ["EquipmentSpecs"])

    // What a phone reports it holds
    public static let backlogCount = NumberLimit("waiting_changes", 0...1_000_000)

    // Where a truck is: a point, and what a phone says of a fix
    public static let latitude = DecimalLimit("latitude", -90...90, documentedIn: ["GeoPoint", "GeoPosition"])
    public static let longitude = DecimalLimit("longitude", -180...180, documentedIn: ["GeoPoint", "GeoPosition"])
    public static let fixAccuracy = DecimalLimit("accuracy_meters", 0...100_000, documentedIn: ["GeoPosition"])
    public static let fixSpeed = DecimalLimit("speed_meters_per_second", 0...150, documentedIn: ["GeoPosition"])
    public static let fixHeading = DecimalLimit("heading", 0...360, documentedIn: ["GeoPosition"])

    /// Every limit the API document carries, for the test that holds it to them.
    public static let texts: [TextLimit] = [
        tripNumber, tripOrigin, tripDestination, orderNumber, paymentTerms, stopName, stopAddress, stopContactName, stopContactPhone,
        vehicleMake, vehicleModel, vehicleColor, expenseNotes, messageTitle, messageBody, driverMessage, personName, phone, unitNumber, unitMake,
        unitModel, plate, unitNotes, documentNumber, documentNotes, inspectionNotes, damageNote, signerName, externalLoadID, customerName,
        billingContact, customerAddress, customerNotes, legalName, carrierAddress, bolTerms, lotNumber, factoringCompany, factoringRemitTo,
        factoringNotice, chargeDescription, invoiceNotes, voidReason, paymentReference, paymentNote, payItemDescription, settlementReference,
    ]
    public static let numbers: [NumberLimit] = [
        tripMiles, vehicleYear, expenseAmountCents, fuelQuantityMilli, odometerMiles, readingMiles, inspectionOdometer,
        capacityCars, gvwrPounds, revenueCents, driverPayCents, payRate, vehiclePriceCents, paymentAmountCents, payItemAmountCents,
    ]
    public static let decimals: [DecimalLimit] = [latitude, longitude, fixAccuracy, fixSpeed, fixHeading]
}
