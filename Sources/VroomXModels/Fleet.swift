import Foundation

// The carrier's own fleet: trucks (tractors) and the car-hauler trailers
// they pull, their papers, odometer readings and fuel.

public enum EquipmentKind: String, Codable, Sendable, CaseIterable {
    case truck
    case trailer
}

public enum EquipmentStatus: String, Codable, Sendable, CaseIterable {
    case active
    case inShop = "in_shop"
    case outOfService = "out_of_service"
    case retired

    public var label: String {
        switch self {
        case .active: return "active"
        case .inShop: return "in shop"
        case .outOfService: return "out of service"
        case .retired: return "retired"
        }
    }
}

public enum TrailerType: String, Codable, Sendable, CaseIterable {
    case open
    case enclosed
}

public enum FuelType: String, Codable, Sendable, CaseIterable {
    case diesel
    case gasoline
    case electric
    case other
}

/// What a unit can do. Every field is optional: a truck has no car
/// capacity, an older trailer may have no recorded GVWR.
public struct EquipmentSpecs: Codable, Sendable, Hashable {
    public var trailerType: TrailerType?
    /// Cars a trailer carries.
    public var capacityCars: Int?
    /// Gross vehicle weight rating, pounds.
    public var gvwrPounds: Int?
    public var fuelType: FuelType?

    public init(trailerType: TrailerType? = nil, capacityCars: Int? = nil, gvwrPounds: Int? = nil, fuelType: FuelType? = nil) {
        self.trailerType = trailerType
        self.capacityCars = capacityCars
        self.gvwrPounds = gvwrPounds
        self.fuelType = fuelType
    }

    enum CodingKeys: String, CodingKey {
        case trailerType = "trailer_type"
        case capacityCars = "capacity_cars"
        case gvwrPounds = "gvwr_pounds"
        case fuelType = "fuel_type"
    }
}

public enum EquipmentDocumentKind: String, Codable, Sendable, CaseIterable {
    case registration
    case insurance
    case annualInspection = "annual_inspection"
    case iftaDecal = "ifta_decal"
    case permit
    case other

    public var label: String {
        switch self {
        case .registration: return "registration"
        case .insurance: return "insurance"
        case .annualInspection: return "annual DOT inspection"
        case .iftaDecal: return "IFTA decal"
        case .permit: return "permit"
        case .other: return "document"
        }
    }
}

/// A paper a unit must carry, and when it runs out.
public struct EquipmentDocument: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<EquipmentDocument>
    public var kind: EquipmentDocumentKind
    public var number: String
    public var expiresOn: LocalDate?
    public var notes: String
    /// When the server told dispatch it expires within the notice period
    /// (once per document; nil until then).
    public var expiryNoticeAt: Date?
    public var createdAt: Date

    public init(id: ID<EquipmentDocument>, kind: EquipmentDocumentKind, number: String, expiresOn: LocalDate?,
                notes: String, expiryNoticeAt: Date?, createdAt: Date) {
        self.id = id
        self.kind = kind
        self.number = number
        self.expiresOn = expiresOn
        self.notes = notes
        self.expiryNoticeAt = expiryNoticeAt
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, number, notes
        case expiresOn = "expires_on"
        case expiryNoticeAt = "expiry_notice_at"
        case createdAt = "created_at"
    }
}

/// A photo of a unit (a dent, the tyres, the plate), stored through the
/// same media pipeline as inspection photos; its bytes are at
/// `GET /v1/equipment/{unit}/photos/{id}`.
public struct EquipmentPhoto: Codable, Sendable, Hashable, Identifiable {
    /// A unit keeps at most this many photos.
    public static let maxPerUnit = 30

    public var id: ID<EquipmentPhoto>
    public var contentType: String
    public var sizeBytes: Int64
    public var sha256: String
    /// Who took it (a driver of the unit or a dispatcher).
    public var uploadedBy: ID<User>
    public var uploadedAt: Date

    public init(id: ID<EquipmentPhoto>, contentType: String, sizeBytes: Int64, sha256: String, uploadedBy: ID<User>, uploadedAt: Date) {
        self.id = id
        self.contentType = contentType
        self.sizeBytes = sizeBytes
        self.sha256 = sha256
        self.uploadedBy = uploadedBy
        self.uploadedAt = uploadedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, sha256
        case contentType = "content_type"
        case sizeBytes = "size_bytes"
        case uploadedBy = "uploaded_by"
        case uploadedAt = "uploaded_at"
    }
}

extension EquipmentDocument {
    /// Dispatch is told, and pages flag, papers running out within this many days.
    public static let noticeDays = 30

    /// Where a paper stands on a day: whole days from `today` to its expiry.
    public enum Standing: Sendable, Hashable {
        case noExpiry
        case expired(daysAgo: Int)
        /// Runs out within `noticeDays`.
        case due(inDays: Int)
        case valid(inDays: Int)

        public var needsRenewal: Bool {
            switch self {
            case .expired, .due: return true
            case .noExpiry, .valid: return false
            }
        }
    }

    public func standing(on today: LocalDate) -> Standing {
        guard let expiresOn else { return .noExpiry }
        let days = Int((expiresOn.startOfDay.timeIntervalSince(today.startOfDay) / 86_400).rounded())
        if days < 0 { return .expired(daysAgo: -days) }
        return days <= Self.noticeDays ? .due(inDays: days) : .valid(inDays: days)
    }
}

/// A truck or trailer of the carrier. The driver it is assigned to sees it
/// (with its papers) in the app; dispatch sees the whole fleet.
public struct Equipment: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<Equipment>
    public var kind: EquipmentKind
    /// The unit number painted on the door ("T-12"), unique in the carrier.
    public var unitNumber: String
    public var make: String
    public var model: String
    public var year: Int?
    public var vin: String
    public var plate: String
    /// Two-letter state or province of the plate.
    public var plateState: String
    public var status: EquipmentStatus
    public var specs: EquipmentSpecs
    public var notes: String
    public var driverID: ID<Driver>?
    /// The last odometer reading, miles, and when it was taken.
    public var odometerMiles: Int?
    public var odometerAt: Date?
    public var documents: [EquipmentDocument]
    /// Oldest first.
    public var photos: [EquipmentPhoto]
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: ID<Equipment>, kind: EquipmentKind, unitNumber: String, make: String = "", model: String = "",
                year: Int? = nil, vin: String = "", plate: String = "", plateState: String = "", status: EquipmentStatus = .active,
                specs: EquipmentSpecs = EquipmentSpecs(), notes: String = "", driverID: ID<Driver>? = nil,
                odometerMiles: Int? = nil, odometerAt: Date? = nil, documents: [EquipmentDocument] = [],
                photos: [EquipmentPhoto] = [], version: Int = 1, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.kind = kind
        self.unitNumber = unitNumber
        self.make = make
        self.model = model
        self.year = year
        self.vin = vin
        self.plate = plate
        self.plateState = plateState
        self.status = status
        self.specs = specs
        self.notes = notes
        self.driverID = driverID
        self.odometerMiles = odometerMiles
        self.odometerAt = odometerAt
        self.documents = documents
        self.photos = photos
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Documents stored, and phones' caches written, before units had
    /// photos decode with none.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(VroomXModels.ID<Equipment>.self, forKey: .id)
        kind = try c.decode(EquipmentKind.self, forKey: .kind)
        unitNumber = try c.decode(String.self, forKey: .unitNumber)
        make = try c.decode(String.self, forKey: .make)
        model = try c.decode(String.self, forKey: .model)
        year = try c.decodeIfPresent(Int.self, forKey: .year)
        vin = try c.decode(String.self, forKey: .vin)
        plate = try c.decode(String.self, forKey: .plate)
        plateState = try c.decode(String.self, forKey: .plateState)
        status = try c.decode(EquipmentStatus.self, forKey: .status)
        specs = try c.decode(EquipmentSpecs.self, forKey: .specs)
        notes = try c.decode(String.self, forKey: .notes)
        driverID = try c.decodeIfPresent(VroomXModels.ID<Driver>.self, forKey: .driverID)
        odometerMiles = try c.decodeIfPresent(Int.self, forKey: .odometerMiles)
        odometerAt = try c.decodeIfPresent(Date.self, forKey: .odometerAt)
        documents = try c.decode([EquipmentDocument].self, forKey: .documents)
        photos = try c.decodeIfPresent([EquipmentPhoto].self, forKey: .photos) ?? []
        version = try c.decode(Int.self, forKey: .version)
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        updatedAt = try c.decode(Date.self, forKey: .updatedAt)
    }

    /// "T-12 · 2019 Peterbilt 389".
    public var summary: String {
        let vehicle = [year.map(String.init), make, model].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
        return vehicle.isEmpty ? unitNumber : "\(unitNumber) · \(vehicle)"
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, make, model, year, vin, plate, status, specs, notes, documents, photos, version
        case unitNumber = "unit_number"
        case plateState = "plate_state"
        case driverID = "driver_id"
        case odometerMiles = "odometer_miles"
        case odometerAt = "odometer_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// The fields of a unit dispatch sets. Creating needs `kind` and
/// `unit_number`; an update changes only the fields present.
public struct EquipmentFields: Codable, Sendable, Hashable {
    public var kind: EquipmentKind?
    public var unitNumber: String?
    public var make: String?
    public var model: String?
    public var year: Int?
    public var vin: String?
    public var plate: String?
    public var plateState: String?
    public var status: EquipmentStatus?
    public var specs: EquipmentSpecs?
    public var notes: String?
    /// For an update: the version the edit started from (see `UpdateOrderRequest`).
    public var baseVersion: Int?
    /// A VIN whose check digit is wrong is refused unless this is true
    /// (some older and imported vehicles carry such VINs).
    public var acceptVINWarning: Bool?

    public init(kind: EquipmentKind? = nil, unitNumber: String? = nil, make: String? = nil, model: String? = nil,
                year: Int? = nil, vin: String? = nil, plate: String? = nil, plateState: String? = nil,
                status: EquipmentStatus? = nil, specs: EquipmentSpecs? = nil, notes: String? = nil,
                baseVersion: Int? = nil, acceptVINWarning: Bool? = nil) {
        self.kind = kind
        self.unitNumber = unitNumber
        self.make = make
        self.model = model
        self.year = year
        self.vin = vin
        self.plate = plate
        self.plateState = plateState
        self.status = status
        self.specs = specs
        self.notes = notes
        self.baseVersion = baseVersion
        self.acceptVINWarning = acceptVINWarning
    }

    enum CodingKeys: String, CodingKey {
        case kind, make, model, year, vin, plate, status, specs, notes
        case unitNumber = "unit_number"
        case plateState = "plate_state"
        case baseVersion = "base_version"
        case acceptVINWarning = "accept_vin_warning"
    }
}

/// Give a unit to a driver, or take it back with `driver_id: null`. A
/// driver drives one truck and one trailer at a time: assigning another
/// unit of the same kind takes the previous one back.
public struct AssignEquipmentRequest: Codable, Sendable, Hashable {
    public var driverID: ID<Driver>?
    public init(driverID: ID<Driver>?) { self.driverID = driverID }
    enum CodingKeys: String, CodingKey { case driverID = "driver_id" }

    // `driver_id` must be sent: null takes it back, while a body without the
    // key (an empty one) is a mistake, not a request to unassign.
    public init(from decoder: any Decoder) throws {
        driverID = try decoder.container(keyedBy: CodingKeys.self).decode(ID<Driver>?.self, forKey: .driverID)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(driverID, forKey: .driverID)
    }
}

/// Several units moved to one status at once (all or none).
public struct EquipmentStatusChange: Codable, Sendable, Hashable {
    public var ids: [ID<Equipment>]
    public var status: EquipmentStatus
    public init(ids: [ID<Equipment>], status: EquipmentStatus) {
        self.ids = ids
        self.status = status
    }
}

public struct AddEquipmentDocumentRequest: Codable, Sendable, Hashable {
    public var kind: EquipmentDocumentKind
    public var number: String?
    public var expiresOn: LocalDate?
    public var notes: String?

    public init(kind: EquipmentDocumentKind, number: String? = nil, expiresOn: LocalDate? = nil, notes: String? = nil) {
        self.kind = kind
        self.number = number
        self.expiresOn = expiresOn
        self.notes = notes
    }

    enum CodingKeys: String, CodingKey {
        case kind, number, notes
        case expiresOn = "expires_on"
    }
}

/// What a CSV import did: every row created or updated, or (nothing
/// written) the lines that were wrong.
public struct ImportResult: Codable, Sendable, Hashable {
    public var created: Int
    public var updated: Int
    public init(created: Int, updated: Int) {
        self.created = created
        self.updated = updated
    }
}

extension ErrorCode {
    /// An odometer reading lower than the unit's last one.
    public static let odometerDecreased = ErrorCode("odometer_decreased")
    /// A VIN whose check digit does not match; send again with the warning accepted.
    public static let vinCheckDigit = ErrorCode("vin_check_digit")
    /// A CSV file with bad lines: `details` lists each line and field.
    public static let importFailed = ErrorCode("import_failed")
}
