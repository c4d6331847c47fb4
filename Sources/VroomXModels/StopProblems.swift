import Foundation

/// What can go wrong at a stop, as a driver reports it in a tap or two.
public enum StopProblemKind: String, Codable, Sendable, CaseIterable {
    case notReady = "not_ready"
    case inoperable
    case keysMissing = "keys_missing"
    case dryRun = "dry_run"
    case damage
    case waiting

    public var label: String {
        switch self {
        case .notReady: "Vehicle not ready"
        case .inoperable: "Vehicle inoperable"
        case .keysMissing: "Keys missing"
        case .dryRun: "Dry run (nothing to load)"
        case .damage: "Damage found before loading"
        case .waiting: "Waiting at the stop"
        }
    }

    /// Where it can happen: nothing to load, a vehicle not ready and damage
    /// found before loading are the pickup's; the rest happen at either stop.
    public var stops: [StopKind] {
        switch self {
        case .dryRun, .notReady, .damage: [.pickup]
        case .inoperable, .keysMissing, .waiting: [.pickup, .delivery]
        }
    }

    /// The words a driver types for it in the terminal ("keys-missing").
    public var argument: String { rawValue.replacingOccurrences(of: "_", with: "-") }

    public init?(argument: String) {
        self.init(rawValue: argument.lowercased().replacingOccurrences(of: "-", with: "_"))
    }
}

/// A problem a driver reported at one of an order's stops. It stays on the
/// order (dispatch sees it on the order and the board), and some are
/// billed: a dry run earns the carrier's dry-run fee, and a report of
/// waiting starts the clock of detention when the truck's position did not.
public struct StopProblem: Codable, Sendable, Hashable, Identifiable {
    public var id: ID<StopProblem>
    public var stop: StopKind
    public var kind: StopProblemKind
    public var note: String
    /// When the driver reported it (the phone's clock corrected to the server's).
    public var reportedAt: Date
    /// What the driver photographed (uploaded after the report, with the
    /// upload metadata `order_id` and `problem_id`), oldest first.
    public var photos: [ReceiptPhoto]
    /// How far the truck was from the stop when the driver reported it, by
    /// its position then (the server's; nil when unknown). A report of
    /// waiting far from the stop does not start detention.
    public var truckDistanceMeters: Double?

    /// A truck this close to the stop may be waiting there (a yard's gate, a queue down the road).
    public static let nearStopMeters = 1_609.0

    /// Whether the truck's position, when known, puts it at the stop.
    public var truckWasNear: Bool { truckDistanceMeters.map { $0 <= Self.nearStopMeters } ?? true }

    public init(id: ID<StopProblem>, stop: StopKind, kind: StopProblemKind, note: String = "", reportedAt: Date, photos: [ReceiptPhoto] = [],
                truckDistanceMeters: Double? = nil) {
        self.truckDistanceMeters = truckDistanceMeters
        self.photos = photos
        self.id = id
        self.stop = stop
        self.kind = kind
        self.note = note
        self.reportedAt = reportedAt
    }

    /// At most this many on one order (a bound on what a phone can grow).
    public static let maxPerOrder = 20
    /// Photos one report keeps at most.
    public static let maxPhotos = 4

    /// "Keys missing at pickup: the dealer has them in the office".
    public var summary: String {
        "\(kind.label) at \(stop.rawValue)" + (note.isEmpty ? "" : ": \(note)")
    }

    enum CodingKeys: String, CodingKey {
        case id, stop, kind, note, photos
        case reportedAt = "reported_at"
        case truckDistanceMeters = "truck_distance_meters"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try container.decode(VroomXModels.ID<StopProblem>.self, forKey: .id), stop: try container.decode(StopKind.self, forKey: .stop),
                  kind: try container.decode(StopProblemKind.self, forKey: .kind), note: try container.decodeIfPresent(String.self, forKey: .note) ?? "",
                  reportedAt: try container.decode(Date.self, forKey: .reportedAt),
                  photos: try container.decodeIfPresent([ReceiptPhoto].self, forKey: .photos) ?? [],
                  truckDistanceMeters: try container.decodeIfPresent(Double.self, forKey: .truckDistanceMeters))
    }
}

/// `POST /v1/problems` (and the mutation `report_stop_problem`):
/// the driver reports a problem at one of the order's stops.
public struct ReportStopProblemRequest: Codable, Sendable, Hashable {
    /// Chosen by the phone: reporting it again records it once.
    public var id: ID<StopProblem>
    public var orderID: ID<Order>
    public var stop: StopKind
    public var kind: StopProblemKind
    public var note: String?
    /// When the driver reported it, by the phone's corrected clock (now when left out).
    public var reportedAt: Date?

    public init(id: ID<StopProblem> = ID(), orderID: ID<Order>, stop: StopKind, kind: StopProblemKind, note: String? = nil,
                reportedAt: Date? = nil) {
        self.id = id
        self.orderID = orderID
        self.stop = stop
        self.kind = kind
        self.note = note
        self.reportedAt = reportedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, stop, kind, note
        case orderID = "order_id"
        case reportedAt = "reported_at"
    }
}

extension Order {
    /// Whether the driver can report a problem at this stop now (the server
    /// and the phone, offline, refuse alike): at the pickup until the
    /// vehicle is picked up, at the delivery until it is delivered (a stop
    /// that is done is not waited at any more); a kind only where it can
    /// happen; nothing on a cancelled order; at most `StopProblem.maxPerOrder`.
    public func problemRefusal(_ kind: StopProblemKind, at stop: StopKind) -> Refusal? {
        if status == .cancelled { return Refusal(.invalidTransition, "Order \(number) is cancelled.", field: "order_id") }
        if stop == .pickup, !status.isWaiting {
            return Refusal(.invalidTransition, "Order \(number) is \(status.label): its pickup is done.", field: "stop")
        }
        if stop == .delivery, status != .pickedUp {
            return Refusal(.invalidTransition, status.isWaiting ? "Order \(number) is not picked up yet: report a problem at its pickup."
                           : "Order \(number) is \(status.label): its delivery is done.", field: "stop")
        }
        if kind == .dryRun, problems.contains(where: { $0.kind == .dryRun }) {
            return Refusal(.alreadyExists, "A dry run is reported for order \(number) already.", field: "kind")
        }
        if !kind.stops.contains(stop) {
            return Refusal(.validationFailed, "\(kind.label) is reported at the pickup.", field: "kind")
        }
        if problems.count >= StopProblem.maxPerOrder {
            return Refusal(.validationFailed, "Order \(number) has \(StopProblem.maxPerOrder) problems reported already; call dispatch.",
                           field: "kind")
        }
        return nil
    }

    /// When a report at a stop can say it happened: not before the order
    /// existed, a delivery's not before the pickup, never after `now`.
    public func problemTime(_ reported: Date?, at stop: StopKind, now: Date) -> Date {
        let earliest = [createdAt, stop == .delivery ? actualPickupDate : nil].compactMap { $0 }.max() ?? createdAt
        return min(max(reported ?? now, earliest), now)
    }

    /// The problems reported at a stop, oldest first.
    public func problems(at stop: StopKind) -> [StopProblem] { problems.filter { $0.stop == stop } }
}
