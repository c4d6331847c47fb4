import Foundation

/// The condition report a driver makes at every pickup and delivery:
/// photos per slot, a walkthrough video, damages, odometer, position, and
/// the customer's signature (or a note that nobody was there to sign).
public struct Inspection: Codable, Sendable, Hashable, Identifiable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case pickup
        case delivery

        /// The order status completing this inspection moves to.
        public var completedStatus: OrderStatus { self == .pickup ? .pickedUp : .delivered }

        /// The inspection that must be completed to reach `status`, if any.
        public init?(completing status: OrderStatus) {
            switch status {
            case .pickedUp: self = .pickup
            case .delivered: self = .delivery
            default: return nil
            }
        }

        /// The order status an inspection of this kind is made in.
        public var orderStatus: OrderStatus { self == .pickup ? .assigned : .pickedUp }
    }

    public var id: ID<Inspection>
    public var orderID: ID<Order>
    /// The vehicle of the order it is about (each is inspected at each stop);
    /// nil in an inspection from before, which is about the order's first.
    public var vehicleID: ID<Vehicle>?
    /// The driver who made it.
    public var driverID: ID<Driver>?
    public var kind: Kind
    public var odometer: Int?
    public var notes: String
    public var position: GeoPosition?
    public var damages: [Damage]
    public var customerUnavailable: Bool
    /// The signer's name in print, as the driver typed it beside the signature.
    public var signerName: String?
    /// Uploaded media by slot (photos, `walkthrough`, `signature`).
    public var media: [InspectionMedia]
    public var completedAt: Date?
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: ID<Inspection>, orderID: ID<Order>, driverID: ID<Driver>?, kind: Kind, odometer: Int? = nil,
                notes: String = "", position: GeoPosition? = nil, damages: [Damage] = [], customerUnavailable: Bool = false,
                media: [InspectionMedia] = [], completedAt: Date? = nil, version: Int = 1, createdAt: Date, updatedAt: Date,
                vehicleID: ID<Vehicle>? = nil) {
        self.id = id
        self.orderID = orderID
        self.vehicleID = vehicleID
        self.driverID = driverID
        self.kind = kind
        self.odometer = odometer
        self.notes = notes
        self.position = position
        self.damages = damages
        self.customerUnavailable = customerUnavailable
        self.media = media
        self.completedAt = completedAt
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Limits that keep an inspection (and each change of it in the feed) small
    /// (the notes' length: `FieldLimits.inspectionNotes`).
    public static let maxDamages = MediaSlot.maxDamagePhotos

    /// Required photo slots not uploaded yet.
    public var missingSlots: [MediaSlot] {
        let present = Set(media.map(\.slot))
        return MediaSlot.requiredPhotos.filter { !present.contains($0) }
    }

    /// Why the inspection cannot be completed yet, if anything stops it.
    public var incompleteReason: String? {
        let missing = missingSlots
        if !missing.isEmpty {
            return "Photos missing: " + missing.map(\.rawValue).joined(separator: ", ") + "."
        }
        if !customerUnavailable && !media.contains(where: { $0.slot == .signature }) {
            return "Add the customer's signature or mark the customer not available."
        }
        return nil
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, odometer, notes, position, damages, media, version
        case orderID = "order_id"
        case vehicleID = "vehicle_id"
        case driverID = "driver_id"
        case customerUnavailable = "customer_unavailable"
        case signerName = "signer_name"
        case completedAt = "completed_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// Where the inspection was made, from the phone's location services.
public struct GeoPosition: Codable, Sendable, Hashable {
    public var latitude: Double
    public var longitude: Double
    /// Horizontal accuracy (radius of 68 % confidence), metres.
    public var accuracyMeters: Double?
    public var recordedAt: Date
    /// Metres per second, when the phone knows.
    public var speedMetersPerSecond: Double?
    /// Degrees clockwise from true north, when the phone knows.
    public var heading: Double?

    public init(latitude: Double, longitude: Double, accuracyMeters: Double? = nil, recordedAt: Date,
                speedMetersPerSecond: Double? = nil, heading: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracyMeters = accuracyMeters
        self.recordedAt = recordedAt
        self.speedMetersPerSecond = speedMetersPerSecond
        self.heading = heading
    }

    public var isValid: Bool {
        point.isValid && (accuracyMeters ?? 0) >= 0
    }

    public var point: GeoPoint { GeoPoint(latitude: latitude, longitude: longitude) }

    enum CodingKeys: String, CodingKey {
        case latitude, longitude, heading
        case accuracyMeters = "accuracy_meters"
        case recordedAt = "recorded_at"
        case speedMetersPerSecond = "speed_meters_per_second"
    }
}

/// One damage marked on the vehicle diagram.
public struct Damage: Codable, Sendable, Hashable {
    /// Industry damage codes, as on a bill of lading.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        case scratch, dent, chip, crack, broken, missing, rust, paint, other
    }

    public enum Severity: String, Codable, Sendable, CaseIterable {
        case minor, moderate, severe
    }

    /// Where on the vehicle, e.g. `front_bumper`, `left_rear_door`.
    public var location: String

    /// The location as people read it: `rear_bumper` → "Rear bumper".
    public var locationLabel: String {
        let words = location.replacingOccurrences(of: "_", with: " ").trimmingCharacters(in: .whitespaces)
        return words.prefix(1).uppercased() + words.dropFirst()
    }
    public var type: Kind
    public var severity: Severity
    public var note: String
    /// The photo slot showing it, if any.
    public var photoSlot: MediaSlot?

    public init(location: String, type: Kind, severity: Severity, note: String = "", photoSlot: MediaSlot? = nil) {
        self.location = location
        self.type = type
        self.severity = severity
        self.note = note
        self.photoSlot = photoSlot
    }

    enum CodingKeys: String, CodingKey {
        case location, type, severity, note
        case photoSlot = "photo_slot"
    }
}

/// A named place for one file of an inspection: the standard photo angles,
/// extra photos (`damage_1`, …), the walkthrough video, the signature.
public struct MediaSlot: RawRepresentable, Codable, Sendable, Hashable, Comparable, CustomStringConvertible,
    ExpressibleByStringLiteral {
    public let rawValue: String
    public init(stringLiteral value: String) { self.rawValue = value }
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public static let front = MediaSlot("front")
    public static let rear = MediaSlot("rear")
    public static let leftSide = MediaSlot("left_side")
    public static let rightSide = MediaSlot("right_side")
    public static let odometer = MediaSlot("odometer")
    public static let vinPlate = MediaSlot("vin_plate")
    public static let walkthrough = MediaSlot("walkthrough")
    public static let signature = MediaSlot("signature")

    /// Every inspection needs at least these photos.
    public static let requiredPhotos: [MediaSlot] = [.front, .rear, .leftSide, .rightSide, .odometer, .vinPlate]
    /// Further standard angles a driver may add.
    public static let optionalPhotos: [MediaSlot] = ["front_left", "front_right", "rear_left", "rear_right", "interior", "roof",
                                                      "wheels", "keys"].map { MediaSlot(rawValue: $0) }
    /// Close-ups of damages: `damage_1` … `damage_30`.
    public static let maxDamagePhotos = 30
    public static let damagePhotos: [MediaSlot] = (1...maxDamagePhotos).map { MediaSlot("damage_\($0)") }

    /// Every slot an inspection has. The list is closed so one inspection
    /// (and each change of it in the feed) stays small whatever a client sends.
    public static let all: [MediaSlot] = requiredPhotos + optionalPhotos + damagePhotos + [.walkthrough, .signature]
    private static let known = Set(all)

    /// One of the inspection's slots.
    public var isValid: Bool { Self.known.contains(self) }

    /// Where the slot comes in a walk around the vehicle: the required angles
    /// in the order a driver shoots them, the optional ones, then damages by
    /// number (damage 2 before damage 10), the video and the signature.
    public var walkOrder: Int { Self.positions[self] ?? Self.all.count }
    private static let positions = Dictionary(uniqueKeysWithValues: all.enumerated().map { ($0.element, $0.offset) })

    /// Lowercase letters, digits and `_`, starting with a letter, at most 32
    /// characters: the shape of slot names and of damage location codes
    /// (`front_bumper`), safe in a storage path and a URL.
    public static func isCode(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...32).contains(bytes.count), (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[0]) else { return false }
        return bytes.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            || $0 == UInt8(ascii: "_") }
    }

    /// How people read it: "Front", "Left side", "VIN plate", "Damage 3".
    public var title: String {
        switch self {
        case .vinPlate: return "VIN plate"
        default:
            let words = rawValue.replacingOccurrences(of: "_", with: " ")
            return words.prefix(1).uppercased() + words.dropFirst()
        }
    }

    /// What the camera screen tells the driver to frame (the outline drawn over the viewfinder).
    public var framing: String {
        switch self {
        case .front: return "The whole front of the vehicle, bumper to roof"
        case .rear: return "The whole rear of the vehicle, bumper to roof"
        case .leftSide: return "The driver's side, front wheel to rear wheel"
        case .rightSide: return "The passenger's side, front wheel to rear wheel"
        case .odometer: return "The odometer, readable, with the ignition on"
        case .vinPlate: return "The VIN plate at the base of the windshield, all 17 characters sharp"
        case .walkthrough: return "Walk around the vehicle slowly, filming every panel"
        case .signature: return "The customer signs for the vehicle"
        default: return kind == .photo && rawValue.hasPrefix("damage_") ? "Close up on the damage, with a panel edge in frame" : "The \(title.lowercased()), in focus"
        }
    }

    /// What the slot holds.
    public var kind: MediaKind {
        switch self {
        case .walkthrough: return .video
        case .signature: return .signature
        default: return .photo
        }
    }
}

public enum MediaKind: String, Codable, Sendable, CaseIterable {
    case photo, video, signature
}

/// A file attached to an inspection, once its upload completed.
public struct InspectionMedia: Codable, Sendable, Hashable {
    public var slot: MediaSlot
    public var kind: MediaKind
    /// Detected from the bytes, not taken from the client.
    public var contentType: String
    public var sizeBytes: Int64
    /// Hex SHA-256 of the stored file.
    public var sha256: String
    public var uploadedAt: Date
    /// When and where the phone took it, when it said (a photo chosen from
    /// the library, or sent by an older app, has none).
    public var captured: MediaCapture?

    public init(slot: MediaSlot, kind: MediaKind, contentType: String, sizeBytes: Int64, sha256: String, uploadedAt: Date,
                captured: MediaCapture? = nil) {
        self.slot = slot
        self.kind = kind
        self.contentType = contentType
        self.sizeBytes = sizeBytes
        self.sha256 = sha256
        self.uploadedAt = uploadedAt
        self.captured = captured
    }

    enum CodingKeys: String, CodingKey {
        case slot, kind, sha256
        case contentType = "content_type"
        case sizeBytes = "size_bytes"
        case uploadedAt = "uploaded_at"
        case captured
    }
}

/// When a photo or video was taken (by the phone's clock corrected to the
/// server's) and where the phone was then: evidence of the vehicle's
/// condition at that place and time. The app sends it with the upload, in
/// `Upload-Metadata` (`taken_at`, and `latitude`, `longitude`,
/// `accuracy_meters` when it had a position).
public struct MediaCapture: Codable, Sendable, Hashable {
    public var takenAt: Date
    public var position: GeoPoint?
    /// How far off the position may be, in meters.
    public var accuracyMeters: Double?

    public init(takenAt: Date, position: GeoPoint? = nil, accuracyMeters: Double? = nil) {
        self.takenAt = takenAt
        self.position = position
        self.accuracyMeters = accuracyMeters
    }

    enum CodingKeys: String, CodingKey {
        case position
        case takenAt = "taken_at"
        case accuracyMeters = "accuracy_meters"
    }

    /// "41.50312, -87.74481 ±8 m"; nil without a position.
    public var placeText: String? {
        position.map { $0.text + (accuracyMeters.map { " ±\(Int($0.rounded())) m" } ?? "") }
    }

    /// How far ahead of the server's clock a stamp may be (the phone's
    /// correction is only as good as its last answer from the server).
    public static let allowedAhead: TimeInterval = 600

    /// The `Upload-Metadata` pairs that carry it.
    public var metadata: [String: String] {
        var values = ["taken_at": WireTime.string(from: takenAt)]
        if let position {
            // Fixed decimals, never an exponent ("1e-05"), which the server does not read.
            values["latitude"] = String(format: "%.7f", position.latitude)
            values["longitude"] = String(format: "%.7f", position.longitude)
            if let accuracyMeters { values["accuracy_meters"] = String(format: "%.1f", accuracyMeters) }
        }
        return values
    }

    /// Read from an upload's metadata: nil when it names no time; an error
    /// naming the key when a value is no time, no place on the globe, or a
    /// stamp later than `now` allows.
    public static func from(metadata: [String: String], now: Date? = nil) throws(FieldProblem) -> MediaCapture? {
        guard let text = metadata["taken_at"] else {
            if metadata["latitude"] != nil || metadata["longitude"] != nil || metadata["accuracy_meters"] != nil {
                throw FieldProblem("taken_at", "A position is sent with the time it was taken (taken_at).")
            }
            return nil
        }
        guard let takenAt = WireTime.parse(text), takenAt.timeIntervalSince1970 > 946_684_800 else {
            throw FieldProblem("taken_at", "taken_at must be a time like 2026-11-30T14:02:00.000Z.")
        }
        if let now, takenAt.timeIntervalSince(now) > allowedAhead {
            throw FieldProblem("taken_at", "taken_at is later than now.")
        }
        var capture = MediaCapture(takenAt: takenAt)
        switch (metadata["latitude"], metadata["longitude"]) {
        case (nil, nil):
            guard metadata["accuracy_meters"] == nil else {
                throw FieldProblem("accuracy_meters", "accuracy_meters goes with a latitude and longitude.")
            }
        case (let latitude?, let longitude?):
            guard let lat = decimal(latitude), let lon = decimal(longitude), GeoPoint(latitude: lat, longitude: lon).isValid else {
                throw FieldProblem("latitude", "latitude and longitude must be a place on the globe (-90 to 90, -180 to 180).")
            }
            capture.position = GeoPoint(latitude: lat, longitude: lon)
            if let accuracy = metadata["accuracy_meters"] {
                guard let meters = decimal(accuracy), FieldLimits.fixAccuracy.allows(meters) else {
                    throw FieldProblem("accuracy_meters", "accuracy_meters must be a number of meters, 0 to 100,000.")
                }
                capture.accuracyMeters = meters
            }
        default:
            throw FieldProblem("latitude", "Send both latitude and longitude, or neither.")
        }
        return capture
    }

    /// A number as the app writes it: digits, a point, a leading minus (no
    /// exponent, hex or plus); -0 reads as 0.
    private static func decimal(_ text: String) -> Double? {
        guard text.wholeMatch(of: /-?[0-9]{1,6}(\.[0-9]{1,17})?/) != nil, let value = Double(text) else { return nil }
        return value + 0.0
    }
}

/// `POST /v1/inspections/{id}/complete`, body optional. Completing the
/// pickup inspection picks the vehicle up; the delivery one delivers it.
public struct CompleteInspectionRequest: Codable, Sendable, Hashable {
    /// When the driver completed it, which is also the pickup or delivery
    /// time; defaults to the server's now.
    public var occurredAt: Date?

    public init(occurredAt: Date? = nil) { self.occurredAt = occurredAt }

    enum CodingKeys: String, CodingKey { case occurredAt = "occurred_at" }
}

/// `PUT /v1/inspections/{id}`: starts an inspection or updates it while it
/// is open. The id is the client's, so an inspection begun offline keeps it.
public struct SaveInspectionRequest: Codable, Sendable, Hashable {
    public var orderID: ID<Order>
    /// The vehicle it is about; when absent (yesterday's apps), the order's first.
    public var vehicleID: ID<Vehicle>?
    public var kind: Inspection.Kind
    public var odometer: Int?
    public var notes: String?
    public var position: GeoPosition?
    public var damages: [Damage]?
    public var customerUnavailable: Bool?
    /// The person signing, in print (an empty one removes it).
    public var signerName: String?

    public init(orderID: ID<Order>, kind: Inspection.Kind, odometer: Int? = nil, notes: String? = nil, position: GeoPosition? = nil,
                damages: [Damage]? = nil, customerUnavailable: Bool? = nil, signerName: String? = nil, vehicleID: ID<Vehicle>? = nil) {
        self.signerName = signerName
        self.vehicleID = vehicleID
        self.orderID = orderID
        self.kind = kind
        self.odometer = odometer
        self.notes = notes
        self.position = position
        self.damages = damages
        self.customerUnavailable = customerUnavailable
    }

    enum CodingKeys: String, CodingKey {
        case kind, odometer, notes, position, damages
        case orderID = "order_id"
        case vehicleID = "vehicle_id"
        case customerUnavailable = "customer_unavailable"
        case signerName = "signer_name"
    }
}

/// A field of a request that breaks a rule, and why: the server answers
/// it as `422 validation_failed` naming the field; the app refuses it on
/// the device before anything is queued.
public struct FieldProblem: Error, Sendable, Hashable {
    public let field: String
    public let message: String

    public init(_ field: String, _ message: String) {
        self.field = field
        self.message = message
    }
}

extension SaveInspectionRequest {
    /// The first field that breaks the inspection's rules, if any.
    public var problem: FieldProblem? {
        let odometerLimit = FieldLimits.inspectionOdometer
        if let odometer, !odometerLimit.allows(odometer) {
            return FieldProblem("odometer", "The odometer reading must be 0 to \(NumberText.grouped(odometerLimit.range.upperBound)).")
        }
        if let notes, !FieldLimits.inspectionNotes.allows(notes) {  // counted as stored (`TextLimit.normalized`)
            return FieldProblem("notes", "notes is at most \(FieldLimits.inspectionNotes.max) characters.")
        }
        if let position, !position.isValid {
            return FieldProblem("position", "Latitude must be -90 to 90 and longitude -180 to 180.")
        }
        if let signerName, !FieldLimits.signerName.allows(signerName) || !TextLimit.isOneVisibleLine(TextLimit.normalized(signerName)) {
            return FieldProblem("signer_name", "The signer's name is one line of at most \(FieldLimits.signerName.max) characters.")
        }
        guard let damages else { return nil }
        guard damages.count <= Inspection.maxDamages else {
            return FieldProblem("damages", "At most \(Inspection.maxDamages) damages.")
        }
        for (index, damage) in damages.enumerated() {
            guard MediaSlot.isCode(damage.location) else {
                return FieldProblem("damages[\(index)].location", "A location is a code like front_bumper.")
            }
            if let slot = damage.photoSlot, !slot.isValid || slot.kind != .photo {
                return FieldProblem("damages[\(index)].photo_slot", "Name a photo slot (damage_1 … damage_\(MediaSlot.maxDamagePhotos)).")
            }
            guard FieldLimits.damageNote.allows(damage.note) else {
                return FieldProblem("damages[\(index)].note", "A damage note is at most \(FieldLimits.damageNote.max) characters.")
            }
        }
        return nil
    }
}

/// The tus 1.0 resumable upload protocol as VroomX speaks it
/// (https://tus.io/protocols/resumable-upload): core, creation,
/// termination, checksum (sha1, sha256) and expiration.
public enum Tus {
    public static let version = "1.0.0"
    public static let extensions = "creation,termination,checksum,expiration"
    public static let checksumAlgorithms = "sha1,sha256"
    public static let patchContentType = "application/offset+octet-stream"

    /// `Upload-Metadata`: comma-separated `key base64(value)` pairs.
    public static func encodeMetadata(_ values: [String: String]) -> String {
        values.sorted { $0.key < $1.key }
            .map { "\($0.key) \(Data($0.value.utf8).base64EncodedString())" }
            .joined(separator: ",")
    }

    /// Nil when the header is malformed.
    public static func decodeMetadata(_ header: String) -> [String: String]? {
        var values: [String: String] = [:]
        for pair in header.split(separator: ",") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true)
            guard let key = parts.first, parts.count <= 2 else { return nil }
            if parts.count == 1 {
                values[String(key)] = ""
            } else {
                guard let data = Data(base64Encoded: String(parts[1])) else { return nil }
                values[String(key)] = String(decoding: data, as: UTF8.self)
            }
        }
        return values
    }
}
