import Foundation

// Where drivers are: positions a phone records while a trip is under way,
// the fences around pickup and delivery stops, and the rules that turn
// positions into arrivals and an estimated time of arrival. Server and
// phone apply the same rules, so they are written once here.

/// A point on the earth, in degrees (WGS 84).
public struct GeoPoint: Codable, Sendable, Hashable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Finite and on the globe.
    public var isValid: Bool {
        FieldLimits.latitude.allows(latitude) && FieldLimits.longitude.allows(longitude)
    }

    /// "41.87811, -87.62980" or "41.87811 -87.62980": what a dispatcher
    /// pastes from a map. Nil when it is not a valid point.
    public init?(text: String) {
        let parts = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == ";" })
        guard parts.count == 2, let latitude = Double(parts[0]), let longitude = Double(parts[1]) else { return nil }
        self.init(latitude: latitude, longitude: longitude)
        guard isValid else { return nil }
    }

    public var text: String { String(format: "%.5f, %.5f", latitude, longitude) }

    /// Great-circle distance in metres (haversine; within 0.5 % of the
    /// ellipsoid, far closer than a phone's fix).
    public func distance(to other: GeoPoint) -> Double {
        let radians = Double.pi / 180
        let dLat = (other.latitude - latitude) * radians, dLon = (other.longitude - longitude) * radians
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(latitude * radians) * cos(other.latitude * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * 6_371_008.8 * asin(min(1, a.squareRoot()))
    }
}

/// A batch of fixes a phone uploads (through the outbox, exactly once: the
/// same fix twice is stored once).
public struct RecordLocationsRequest: Codable, Sendable, Hashable {
    public var id: ID<RecordLocationsRequest>?
    public var fixes: [GeoPosition]

    public init(id: ID<RecordLocationsRequest>? = ID(), fixes: [GeoPosition]) {
        self.id = id
        self.fixes = fixes
    }
}

public struct RecordLocationsResult: Codable, Sendable, Hashable {
    /// Fixes stored now.
    public var stored: Int
    /// Fixes the server already had (a batch sent again).
    public var duplicates: Int
    /// Fixes too inaccurate to keep, too old, or recorded after the trip they would belong to ended.
    public var dropped: Int
    /// Fixes stamped later than the server's clock allows (a phone whose
    /// clock runs ahead): left out, the rest of the batch kept.
    public var future: Int
    /// Stops this batch marked as arrived.
    public var arrivals: [StopArrival]

    public init(stored: Int, duplicates: Int, dropped: Int, future: Int = 0, arrivals: [StopArrival]) {
        self.stored = stored
        self.duplicates = duplicates
        self.dropped = dropped
        self.future = future
        self.arrivals = arrivals
    }

    /// Fixes sent that dispatch will never see.
    public var leftOut: Int { dropped + future }

    enum CodingKeys: String, CodingKey { case stored, duplicates, dropped, future, arrivals }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        stored = try container.decode(Int.self, forKey: .stored)
        duplicates = try container.decode(Int.self, forKey: .duplicates)
        dropped = try container.decode(Int.self, forKey: .dropped)
        // Servers before the future count refused such a batch whole.
        future = try container.decodeIfPresent(Int.self, forKey: .future) ?? 0
        arrivals = try container.decode([StopArrival].self, forKey: .arrivals)
    }
}

public enum StopKind: String, Codable, Sendable, CaseIterable {
    case pickup
    case delivery
}

public struct StopArrival: Codable, Sendable, Hashable {
    public var orderID: ID<Order>
    public var stop: StopKind
    public var arrivedAt: Date

    public init(orderID: ID<Order>, stop: StopKind, arrivedAt: Date) {
        self.orderID = orderID
        self.stop = stop
        self.arrivedAt = arrivedAt
    }

    enum CodingKeys: String, CodingKey {
        case stop
        case orderID = "order_id"
        case arrivedAt = "arrived_at"
    }
}

/// A driver's last known position, for dispatch.
public struct DriverPosition: Codable, Sendable, Hashable {
    public var driverID: ID<Driver>
    public var driverName: String
    public var tripID: ID<Trip>?
    public var fix: GeoPosition

    public init(driverID: ID<Driver>, driverName: String, tripID: ID<Trip>?, fix: GeoPosition) {
        self.driverID = driverID
        self.driverName = driverName
        self.tripID = tripID
        self.fix = fix
    }

    enum CodingKeys: String, CodingKey {
        case fix
        case driverID = "driver_id"
        case driverName = "driver_name"
        case tripID = "trip_id"
    }
}

/// Where an order's driver is against its next stop, for dispatch: the
/// computed arrival beside the one the driver gave.
public struct OrderProgress: Codable, Sendable, Hashable {
    public var orderID: ID<Order>
    /// The stop still to reach (nil once delivered or before assignment).
    public var nextStop: StopKind?
    public var position: GeoPosition?
    /// Straight-line distance to the next stop, metres.
    public var distanceMeters: Double?
    public var computedETA: Date?
    public var driverETA: Date?
    public var arrivedAtPickup: Date?
    public var arrivedAtDelivery: Date?

    public init(orderID: ID<Order>, nextStop: StopKind?, position: GeoPosition?, distanceMeters: Double?, computedETA: Date?,
                driverETA: Date?, arrivedAtPickup: Date?, arrivedAtDelivery: Date?) {
        self.orderID = orderID
        self.nextStop = nextStop
        self.position = position
        self.distanceMeters = distanceMeters
        self.computedETA = computedETA
        self.driverETA = driverETA
        self.arrivedAtPickup = arrivedAtPickup
        self.arrivedAtDelivery = arrivedAtDelivery
    }

    enum CodingKeys: String, CodingKey {
        case position
        case orderID = "order_id"
        case nextStop = "next_stop"
        case distanceMeters = "distance_meters"
        case computedETA = "computed_eta"
        case driverETA = "driver_eta"
        case arrivedAtPickup = "arrived_at_pickup"
        case arrivedAtDelivery = "arrived_at_delivery"
    }
}

/// A trip's track as GeoJSON (RFC 7946): a Feature whose LineString runs
/// through the fixes in time order, coordinates longitude first.
public struct TripTrack: Codable, Sendable, Hashable {
    public struct Geometry: Codable, Sendable, Hashable {
        public var type = "LineString"
        public var coordinates: [[Double]]
    }

    public struct Properties: Codable, Sendable, Hashable {
        public var tripID: ID<Trip>
        public var driverID: ID<Driver>?
        /// When each coordinate was recorded, in the same order.
        public var times: [Date]
        /// True when the track had more than `LocationRules.maxTrackPoints`
        /// fixes and was thinned evenly over its time to that many.
        public var truncated: Bool

        enum CodingKeys: String, CodingKey {
            case times, truncated
            case tripID = "trip_id"
            case driverID = "driver_id"
        }
    }

    public var type = "Feature"
    public var geometry: Geometry
    public var properties: Properties

    public init(tripID: ID<Trip>, driverID: ID<Driver>?, fixes: [GeoPosition], truncated: Bool) {
        geometry = Geometry(coordinates: fixes.map { [$0.longitude, $0.latitude] })
        properties = Properties(tripID: tripID, driverID: driverID, times: fixes.map(\.recordedAt), truncated: truncated)
    }
}

public enum LocationRules {
    /// Fixes less accurate than this say little about where the truck is: not kept.
    public static let maxAccuracyMeters = 100.0
    public static let maxFixesPerBatch = 500
    /// The positions of one batch lie within this many seconds of each other.
    public static let maxBatchSpan: TimeInterval = 6 * 3600
    /// The longest route a replay drives (a week).
    public static let maxTrackDuration: TimeInterval = 7 * 86_400
    /// A phone's clock may run this far ahead of the server's.
    public static let futureSkew: TimeInterval = 300
    public static let defaultRetentionDays = 90
    public static let maxTrackPoints = 20_000
    /// Positions this long before an order was made still count towards
    /// arriving at it (the truck was waiting at the yard); older ones do not.
    public static let arrivalLeadTime: TimeInterval = 12 * 3600
    /// How long a truck stays inside a stop's fence before it counts as arrived.
    public static let dwell: TimeInterval = 120
    public static let defaultRadiusMeters = 150
    public static let radiusRange = 25...5_000

    /// Leaving counts only this far out, so GPS jitter at the fence does
    /// not flap: the radius plus 10 % of it, at least 20 m more.
    public static func exitRadius(_ radius: Double) -> Double { radius + max(radius * 0.1, 20) }

    /// Positions are kept one per second: the instant a fix is filed under.
    public static func second(of date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }

    /// A distance in metres as a US driver or dispatcher reads it, in the
    /// miles trips are measured in: "130 ft" (to 10 ft) under a tenth of a
    /// mile, then "0.4 mi", "12.4 mi", "318 mi", "2,140 mi".
    public static func distanceText(_ metres: Double) -> String {
        // Beyond twice round the Earth is no distance on it (and would not fit an Int).
        guard metres.isFinite, abs(metres) < 1e8 else { return "—" }
        let miles = abs(metres) / metresPerMile
        if miles < 0.1 { return "\(Int((abs(metres) / metresPerFoot / 10).rounded()) * 10) ft" }
        if miles < 100 { return String(format: "%.1f mi", miles) }
        return NumberText.grouped(Int(miles.rounded())) + " mi"
    }

    public static let metresPerMile = 1609.344
    public static let metresPerFoot = 0.3048

    /// A fence's radius as the console shows it: feet, to the nearest 5
    /// (the API keeps whole metres). A multiple of 5 typed in comes back as
    /// typed; a saved radius shown so is not exact, so a form left as shown
    /// keeps the saved metres.
    public static func feet(fromMetres metres: Int) -> Int { Int((Double(metres) / metresPerFoot / 5).rounded()) * 5 }
    /// Whole metres, kept inside `radiusRange` (80 ft, how 25 m shows, is 24.4 m).
    public static func metres(fromFeet feet: Int) -> Int {
        min(max(Int((Double(feet) * metresPerFoot).rounded()), radiusRange.lowerBound), radiusRange.upperBound)
    }
    /// The feet a fence may be given: 80 to 16,405, what the ends of `radiusRange` show as.
    public static let radiusRangeFeet = feet(fromMetres: radiusRange.lowerBound)...feet(fromMetres: radiusRange.upperBound)

    /// Whether a phone should keep a fix at all.
    public static func isUsable(_ fix: GeoPosition) -> Bool {
        guard let accuracy = fix.accuracyMeters else { return false }
        return fix.point.isValid && accuracy.isFinite && accuracy >= 0 && accuracy <= maxAccuracyMeters
    }
}

/// The fence around a stop with coordinates.
public struct Geofence: Sendable, Hashable {
    public var center: GeoPoint
    public var radiusMeters: Double

    public init(center: GeoPoint, radiusMeters: Double) {
        self.center = center
        self.radiusMeters = radiusMeters
    }

    public init?(_ stop: Stop) {
        guard let point = stop.location else { return nil }
        self.init(center: point, radiusMeters: Double(stop.geofenceRadiusMeters ?? LocationRules.defaultRadiusMeters))
    }

    public var exitRadiusMeters: Double { LocationRules.exitRadius(radiusMeters) }

    /// When the truck arrived, judged from fixes in any order: the first
    /// entry into the radius after which every fix stayed within the exit
    /// radius for at least `LocationRules.dwell`. Nil when it only passed by.
    public func arrival(in fixes: [GeoPosition]) -> Date? {
        var enteredAt: Date?
        for fix in fixes.sorted(by: { $0.recordedAt < $1.recordedAt }) {
            let distance = center.distance(to: fix.point)
            if let entered = enteredAt {
                if distance > exitRadiusMeters {
                    enteredAt = nil
                } else if fix.recordedAt.timeIntervalSince(entered) >= LocationRules.dwell {
                    return entered
                }
            } else if distance <= radiusMeters {
                enteredAt = fix.recordedAt
            }
        }
        return nil
    }

    /// When the truck left after arriving at `arrivedAt`, judged like an
    /// arrival in reverse: the first fix beyond the exit radius after which
    /// every fix stayed beyond it for at least `LocationRules.dwell`. Nil
    /// while it is there (or a fix outside was only a jump of the GPS).
    public func departure(after arrivedAt: Date, in fixes: [GeoPosition]) -> Date? {
        var leftAt: Date?
        for fix in fixes.sorted(by: { $0.recordedAt < $1.recordedAt }) where fix.recordedAt > arrivedAt {
            if center.distance(to: fix.point) <= exitRadiusMeters {
                leftAt = nil
            } else if let left = leftAt {
                if fix.recordedAt.timeIntervalSince(left) >= LocationRules.dwell { return left }
            } else {
                leftAt = fix.recordedAt
            }
        }
        return nil
    }

    /// Whether any of these fixes is beyond the exit radius (a batch with
    /// none cannot make a departure).
    public func leftBy(_ fixes: [GeoPosition]) -> Bool {
        fixes.contains { center.distance(to: $0.point) > exitRadiusMeters }
    }

    /// Whether any of these fixes could start or extend a stay (a batch
    /// with none cannot make an arrival).
    public func touches(_ fixes: [GeoPosition]) -> Bool {
        fixes.contains { center.distance(to: $0.point) <= exitRadiusMeters }
    }
}

/// An arrival estimate from where the truck is and how fast it has been
/// going: straight-line distance over recent speed. Straight-line distance
/// undercounts roads, so it is stretched by the usual detour factor.
public enum ComputedETA {
    public static let roadFactor = 1.25
    /// Below this (stopped in traffic, at a fuel stop) recent speed says
    /// nothing about the rest of the way: highway speed is assumed.
    public static let minimumSpeed = 5.0
    public static let assumedSpeed = 24.6  // 55 mph in m/s
    /// Above this (about 100 mph) "speed" is a jump between fixes (a bad
    /// fix, a phone that was elsewhere): highway speed is assumed instead.
    public static let maximumSpeed = 45.0

    /// Average speed over the fixes (distance between consecutive ones over
    /// the time they span), metres per second; nil with fewer than two.
    public static func recentSpeed(_ fixes: [GeoPosition]) -> Double? {
        let sorted = fixes.sorted { $0.recordedAt < $1.recordedAt }
        guard let first = sorted.first, let last = sorted.last else { return nil }
        let seconds = last.recordedAt.timeIntervalSince(first.recordedAt)
        guard seconds >= 60 else { return nil }
        var metres = 0.0
        for (a, b) in zip(sorted, sorted.dropFirst()) { metres += a.point.distance(to: b.point) }
        return metres / seconds
    }

    public static func estimate(from fix: GeoPosition, to target: GeoPoint, recentSpeed: Double?, now: Date) -> Date {
        let metres = fix.point.distance(to: target) * roadFactor
        let speed = recentSpeed.flatMap { (minimumSpeed...maximumSpeed).contains($0) ? $0 : nil } ?? assumedSpeed
        return max(now, fix.recordedAt).addingTimeInterval(metres / speed)
    }
}

extension OrderStops {
    /// The stop the truck works next: the pickup until the vehicle is on
    /// it, then the delivery; none before assignment or once it is done.
    public var nextStop: StopKind? {
        switch status {
        case .assigned: return .pickup
        case .pickedUp: return .delivery
        default: return nil
        }
    }

    /// The driver's ETA at one of the stops.
    public func eta(at kind: StopKind) -> Date? { kind == .pickup ? pickupETA : deliveryETA }
}

extension Order {
    /// Of a trip's orders, the stop its driver works next on the road: the
    /// one due first — on the day of its ETA, else the day its window opens
    /// (today without either); within a day, the one the driver expects
    /// soonest, and a vehicle on the truck before one still to pick up, then
    /// by number. A delivery due today comes before a pickup due tomorrow, and
    /// a pickup due today before a delivery due next week. One rule for the
    /// driver's app and dispatch's map, so both name the same stop.
    public static func nextStop<Candidate: OrderStops>(among orders: [Candidate], today: LocalDate) -> (order: Candidate, kind: StopKind)? {
        let candidates = orders.compactMap { order in order.nextStop.map { (order: order, kind: $0) } }
        func key(_ candidate: (order: Candidate, kind: StopKind)) -> (LocalDate, Date, Int, String) {
            let eta = candidate.order.eta(at: candidate.kind)
            let day = eta.map { LocalDate($0) } ?? candidate.order.stop(candidate.kind).windowStart ?? today
            return (max(day, today), eta ?? .distantFuture, candidate.kind == .delivery ? 0 : 1, candidate.order.number)
        }
        return candidates.min { key($0) < key($1) }
    }
}
