import Foundation

/// What a driver's phone holds that has not reached dispatch, as the phone
/// reports it (`PUT /v1/device-backlog`): changes and files still on their
/// way, changes the server refused, inspections kept as evidence — each in
/// the driver's words, with its data and the reason. Dispatch sees it until
/// the work arrives; a report of nothing clears it.
public struct DeviceBacklog: Codable, Sendable, Hashable {
    public struct Item: Codable, Sendable, Hashable {
        public enum Status: String, Codable, Sendable, CaseIterable {
            /// On its way (offline, retrying, waiting for its files).
            case waiting
            /// The server refused it; only the driver can drop it.
            case refused
            /// An inspection the server will not take, kept with its photos.
            case kept
        }

        public var status: Status
        /// What it is: "your pickup ETA for O-5005", "the delivery of O-5004 and its video".
        public var what: String
        /// Its data: "pickup Nov 30, 3:00 PM UTC", "$301.17 fuel, 85.5 gal at 413,700 mi".
        public var detail: String
        /// Why it waits, or why it was refused.
        public var reason: String
        /// When the driver did it.
        public var madeAt: Date?

        public init(status: Status, what: String, detail: String = "", reason: String = "", madeAt: Date? = nil) {
            self.status = status
            self.what = what
            self.detail = detail
            self.reason = reason
            self.madeAt = madeAt
        }

        enum CodingKeys: String, CodingKey {
            case status, what, detail, reason
            case madeAt = "made_at"
        }
    }

    /// The phone the report comes from (a driver may have two).
    public var deviceID: String
    public var waitingChanges: Int
    public var waitingFiles: Int
    public var fileBytes: Int64
    /// When the oldest waiting item was made.
    public var oldestAt: Date?
    /// At most `maxItems`, waiting first.
    public var items: [Item]

    public static let maxItems = 50
    public static let maxWhat = 300
    public static let maxDetail = 500
    public static let maxReason = 500

    public init(deviceID: String, waitingChanges: Int, waitingFiles: Int, fileBytes: Int64, oldestAt: Date?, items: [Item]) {
        self.deviceID = deviceID
        self.waitingChanges = waitingChanges
        self.waitingFiles = waitingFiles
        self.fileBytes = fileBytes
        self.oldestAt = oldestAt
        self.items = items
    }

    /// Nothing waits, nothing was refused, nothing is kept.
    public var isEmpty: Bool { waitingChanges == 0 && waitingFiles == 0 && items.isEmpty }

    enum CodingKeys: String, CodingKey {
        case items
        case deviceID = "device_id"
        case waitingChanges = "waiting_changes"
        case waitingFiles = "waiting_files"
        case fileBytes = "file_bytes"
        case oldestAt = "oldest_at"
    }
}

/// A phone's backlog as dispatch sees it: the report and when it came.
public struct ReportedBacklog: Codable, Sendable, Hashable {
    public var driverID: ID<Driver>
    public var backlog: DeviceBacklog
    public var reportedAt: Date

    public init(driverID: ID<Driver>, backlog: DeviceBacklog, reportedAt: Date) {
        self.driverID = driverID
        self.backlog = backlog
        self.reportedAt = reportedAt
    }

    enum CodingKeys: String, CodingKey {
        case backlog
        case driverID = "driver_id"
        case reportedAt = "reported_at"
    }
}
