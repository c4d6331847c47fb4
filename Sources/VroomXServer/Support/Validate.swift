import Foundation
import VroomXModels

/// Input checks that answer `validation_failed` naming the field at fault.
enum Validate {
    /// An address as mail takes it unquoted (RFC 5322 dot-atoms): letters,
    /// digits and `!#$%&'*+/=?^_`{|}~.-` before the @, a host name after it.
    /// Never `<`, `>`, `,`, `;`, quotes or spaces, which would let one
    /// address name another recipient in a message's headers.
    static func email(_ raw: String, field: String = "email") throws -> String {
        let email = raw.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        let local = Set("abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+/=?^_`{|}~.-".unicodeScalars)
        let host = Set("abcdefghijklmnopqrstuvwxyz0123456789.-".unicodeScalars)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64, parts[1].contains("."),
              !parts[1].hasPrefix("."), !parts[1].hasSuffix("."), !parts[1].contains(".."),
              parts[0].unicodeScalars.allSatisfy(local.contains), parts[1].unicodeScalars.allSatisfy(host.contains) else {
            throw AppError.validation(field, "Enter a valid email address.")
        }
        return email
    }

    /// Text by its limit in the shared table; `field` when it is named
    /// with a prefix (`pickup.address`).
    static func text(_ raw: String, _ limit: TextLimit, field: String? = nil) throws -> String {
        try text(raw, field: field ?? limit.field, max: limit.max, required: limit.required)
    }

    /// A name by its limit in the shared table (`name(_:field:max:)`).
    static func name(_ raw: String, _ limit: TextLimit, field: String? = nil) throws -> String {
        try name(raw, field: field ?? limit.field, max: limit.max)
    }

    /// One line of visible text (as `name`), or empty: a phone number or a
    /// contact's name, where a line break or a direction override would
    /// mislead whoever reads or dials it.
    static func line(_ raw: String, _ limit: TextLimit, field: String? = nil) throws -> String {
        guard !TextLimit.normalized(raw).isEmpty else { return "" }
        return try name(raw, limit, field: field)
    }

    /// A load board's or broker's reference: one line of visible text, or
    /// none when empty.
    static func externalLoadID(_ raw: String?) throws -> String? {
        guard let raw, !raw.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        return try name(raw, FieldLimits.externalLoadID)
    }

    /// A number by its range in the shared table.
    static func number(_ value: Int, _ limit: NumberLimit, field: String? = nil, unit: String = "") throws -> Int {
        guard limit.allows(value) else { throw AppError(limit.refusal(field: field, unit: unit)) }
        return value
    }

    /// Trimmed text of at most `max` characters, with no control characters
    /// other than line breaks and tabs.
    static func text(_ raw: String, field: String, max: Int, required: Bool = false) throws -> String {
        // Browsers send a text box's line breaks as \r\n: kept as \n. The limit counts code points,
        // as the database's length() does (a family emoji is seven).
        let text = TextLimit.normalized(raw)
        if required, text.isEmpty { throw AppError.validation(field, "\(field) is required.") }
        guard text.unicodeScalars.count <= max else { throw AppError.validation(field, "\(field) is at most \(max) characters.") }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" && $0 != "\t" && $0 != "\r" }) else {
            throw AppError.validation(field, "\(field) contains control characters.")
        }
        return text
    }

    /// Text that names something (a trip or order number): one line of visible
    /// text, without the tabs, breaks or invisible marks (zero-width spaces,
    /// direction overrides) that make two numbers look alike.
    /// Stored composed (NFC), with each run of spaces of any kind as one
    /// space, so that what reads the same is stored the same.
    static func name(_ raw: String, field: String, max: Int) throws -> String {
        let text = try text(raw, field: field, max: max, required: true)
        guard TextLimit.isOneVisibleLine(text) else {
            throw AppError.validation(field, "\(field) is one line of visible text.")
        }
        let stored = text.precomposedStringWithCanonicalMapping.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        // Composing can lengthen text (some marks compose to two code points).
        guard stored.unicodeScalars.count <= max else { throw AppError.validation(field, "\(field) is at most \(max) characters.") }
        guard stored.unicodeScalars.contains(where: { $0.properties.isAlphabetic || $0.properties.numericType != nil }) else {
            throw AppError.validation(field, "\(field) needs a letter or a digit.")
        }
        return stored
    }

    static func cents(_ value: Int, field: String, allowZero: Bool = true, max: Int = MoneyFormat.largestCents) throws -> Int {
        guard value >= (allowZero ? 0 : 1), value <= max else {
            throw AppError.validation(field, allowZero ? "\(field) must be between \(MoneyFormat.dollars(0)) and \(MoneyFormat.dollars(max))."
                                          : "\(field) must be between \(MoneyFormat.dollars(1)) and \(MoneyFormat.dollars(max)).")
        }
        return value
    }

    /// Pay rates each terms take (`FieldLimits.payRate(for:)`).
    static func payRates(_ type: PayType) -> ClosedRange<Int> { FieldLimits.payRate(for: type).range }

    static func payRate(_ rate: Int, type: PayType) throws {
        let range = payRates(type)
        guard range.contains(rate) else {
            let message = switch type {
            case .percentage: "A percentage pay rate is in basis points, 0 to \(range.upperBound)."
            case .perMile: "A per-mile pay rate is in cents, 0 to \(range.upperBound) (\(MoneyFormat.dollars(range.upperBound)) a mile)."
            case .perTrip: "A per-trip pay rate is in cents, 0 to \(range.upperBound) (\(MoneyFormat.dollars(range.upperBound)))."
            case .perVehicle: "A per-vehicle pay rate is in cents, 0 to \(range.upperBound) (\(MoneyFormat.dollars(range.upperBound)) a vehicle)."
            }
            throw AppError.validation("pay_rate", message)
        }
    }

    static func dateRange(_ start: LocalDate?, _ end: LocalDate?, field: String) throws {
        if let start, let end, end < start { throw AppError.validation(field, "\(field) ends before it starts.") }
    }

    static func deviceToken(_ raw: String) throws -> String {
        let token = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (8...256).contains(token.utf8.count),
              token.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || "-_:.".unicodeScalars.contains($0)) }) else {
            throw AppError.validation("token", "A device token is 8 to 256 letters, digits, '-', '_', ':' or '.'.")
        }
        return token
    }

    /// An app installation's secret: 16 to 128 URL-safe characters.
    static func installationID(_ raw: String) throws -> String {
        guard (16...128).contains(raw.utf8.count),
              raw.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || "-_".unicodeScalars.contains($0)) }) else {
            throw AppError.validation("installation_id", "installation_id is 16 to 128 letters, digits, '-' or '_'.")
        }
        return raw
    }

    /// The vehicle of an order; its VIN by the rule of every VIN (see `vin`).
    /// One vehicle's fields, named `\(prefix).vin` and so on in refusals;
    /// its id is the caller's to give.
    static func vehicle(_ vehicle: Vehicle, prefix: String = "vehicle", acceptVINWarning: Bool, now: Date,
                        _ problems: inout Problems) -> Vehicle {
        let year = problems.check(vehicle.year) {
            try vehicle.year.map { try number($0, FieldLimits.vehicleYear, field: "\(prefix).year") }
        }
        let vin = problems.check(vehicle.vin) { try self.vin(vehicle.vin, field: "\(prefix).vin", acceptWarning: acceptVINWarning, now: now) }
        let lot = problems.check(vehicle.lotNumber) {
            try vehicle.lotNumber.flatMap { raw in
                TextLimit.normalized(raw).isEmpty ? nil : try name(raw, FieldLimits.lotNumber, field: "\(prefix).lot_number")
            }
        }
        let price = problems.check(vehicle.priceCents) {
            try vehicle.priceCents.map { try cents($0, field: "\(prefix).price_cents", max: FieldLimits.vehiclePriceCents.range.upperBound) }
        }
        return Vehicle(id: vehicle.id, year: year,
                       make: problems.check(vehicle.make) { try text(vehicle.make, FieldLimits.vehicleMake, field: "\(prefix).make") },
                       model: problems.check(vehicle.model) { try text(vehicle.model, FieldLimits.vehicleModel, field: "\(prefix).model") },
                       vin: vin,
                       color: problems.check(vehicle.color) { try text(vehicle.color, FieldLimits.vehicleColor, field: "\(prefix).color") },
                       type: vehicle.type, operable: vehicle.operable, lotNumber: lot, priceCents: price)
    }

    /// A model year: 1900 to next year (makers sell next year's models early).
    static func modelYear(_ year: Int, field: String, now: Date) throws -> Int {
        let latest = LocalDate(now).year + 1
        guard (1900...latest).contains(year) else { throw AppError.validation(field, "\(field) must be between 1900 and \(latest).") }
        return year
    }

    /// A VIN as stored (upper case), or empty. A malformed VIN is refused;
    /// a North American VIN whose check digit is wrong is refused with
    /// `vin_check_digit` unless the caller accepted the warning.
    static func vin(_ raw: String, field: String, acceptWarning: Bool, now: Date) throws -> String {
        let text = raw.trimmingCharacters(in: .whitespaces).uppercased()
        guard !text.isEmpty else { return "" }
        let decoded = VIN.decode(text, currentYear: LocalDate(now).year)
        guard decoded.isWellFormed else {
            throw AppError.validation(field, "A VIN is 17 letters and digits (no I, O or Q).")
        }
        if decoded.needsConfirmation, !acceptWarning {
            throw AppError(422, .vinCheckDigit,
                           "The check digit of \(decoded.vin) should be \(decoded.expectedCheckDigit ?? "?"): check the VIN for a typo, or confirm it as printed.",
                           field: field)
        }
        return decoded.vin
    }

    /// An instant that has happened: at most `skew` ahead of the server's
    /// clock (phones' clocks drift) and not before 2000.
    static func pastInstant(_ date: Date, field: String, now: Date, skew: TimeInterval = 300) throws -> Date {
        guard date <= now.addingTimeInterval(skew) else { throw AppError.validation(field, "\(field) is in the future.") }
        guard date >= Date(timeIntervalSince1970: 946_684_800) else { throw AppError.validation(field, "\(field) is before 2000.") }
        return WireTime.date(milliseconds: WireTime.milliseconds(date))
    }

    /// A vehicle is delivered after it is picked up: the delivery window may
    /// not end before the pickup window starts. Open-ended windows are never
    /// refused (any day after a start, or up to an end, may work).
    static func stops(pickup: Stop, delivery: Stop) throws {
        if let firstPickupDay = pickup.windowStart, let end = delivery.windowEnd, end < firstPickupDay {
            throw AppError.validation("delivery.window_end", "delivery.window_end is before the pickup window starts (\(firstPickupDay)).")
        }
    }

    static func stop(_ stop: Stop, field: String) throws -> Stop {
        try Problems.first { self.stop(stop, field: field, &$0) }
    }

    static func stop(_ stop: Stop, field: String, _ problems: inout Problems) -> Stop {
        problems.check(()) { try dateRange(stop.windowStart, stop.windowEnd, field: "\(field).window_end") }
        return Stop(name: problems.check(stop.name) { try text(stop.name, FieldLimits.stopName, field: "\(field).name") },
                    address: problems.check(stop.address) { try text(stop.address, FieldLimits.stopAddress, field: "\(field).address") },
                    contactName: problems.check(stop.contactName) { try text(stop.contactName, FieldLimits.stopContactName, field: "\(field).contact_name") },
                    contactPhone: problems.check(stop.contactPhone) { try text(stop.contactPhone, FieldLimits.stopContactPhone, field: "\(field).contact_phone") },
                    windowStart: stop.windowStart, windowEnd: stop.windowEnd,
                    location: problems.check(stop.location) { try stop.location.map { try point($0, field: "\(field).location") } },
                    geofenceRadiusMeters: problems.check(stop.geofenceRadiusMeters) {
                        try stop.geofenceRadiusMeters.map {
                            try range($0, LocationRules.radiusRange, field: "\(field).geofence_radius_meters", unit: "metres")
                        }
                    })
    }

    /// The version an edit started from: one the row has had (1 to its current version).
    static func baseVersion(_ base: Int, current: Int) throws {
        guard (1...max(current, 1)).contains(base) else {
            throw AppError.validation("base_version", "base_version is the version the edit started from: 1 to \(current).")
        }
    }

    static func point(_ point: GeoPoint, field: String) throws -> GeoPoint {
        guard point.isValid else {
            throw AppError.validation(field, "\(field) needs a latitude from -90 to 90 and a longitude from -180 to 180.")
        }
        return point
    }

    static func range(_ value: Int, _ range: ClosedRange<Int>, field: String, unit: String) throws -> Int {
        guard range.contains(value) else {
            throw AppError.validation(field, "\(field) must be between \(range.lowerBound) and \(range.upperBound) \(unit).")
        }
        return value
    }
}

/// Refusals gathered rule by rule, so one pass over a request finds every
/// problem in it: the API answers with the first, a console form shows
/// them all next to their fields.
struct Problems: Sendable {
    private(set) var all: [AppError] = []

    /// The rule's value; when it refuses, the refusal is kept and `given`
    /// (the value as it came) stands in so the other rules still run.
    mutating func check<Value>(_ given: Value, _ rule: () throws -> Value) -> Value {
        do {
            return try rule()
        } catch let error as AppError {
            all.append(error)
        } catch {
            all.append(AppError.validation("form", "This could not be checked."))  // the rules throw only AppError
        }
        return given
    }

    /// Runs `rules` and throws the first refusal, for callers that stop there.
    static func first<Value>(_ rules: (inout Problems) -> Value) throws -> Value {
        var problems = Problems()
        let value = rules(&problems)
        if let first = problems.all.first { throw first }
        return value
    }
}
