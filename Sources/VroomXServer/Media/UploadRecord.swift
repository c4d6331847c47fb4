import Foundation
import VroomXModels

/// What a finished upload becomes: the file of an inspection's slot, a
/// photo of a unit, a receipt of an expense, or the photo of a payment a
/// driver collected.
public enum UploadTarget: Sendable, Hashable {
    case inspection(ID<Inspection>, MediaSlot)
    case unitPhoto(ID<Equipment>)
    case receipt(ID<Expense>)
    case collectionPhoto(ID<InvoicePayment>)
    /// A photo of a problem the driver reported at a stop of the order.
    case problemPhoto(ID<StopProblem>, order: ID<Order>)
    /// A photo sent with a driver's message to dispatch.
    case messagePhoto(ID<DriverMessage>)

    /// The slot the upload fills (a unit's photos are all `unit_photo`, and so on).
    var slot: MediaSlot {
        switch self {
        case .inspection(_, let slot): slot
        case .unitPhoto: .unitPhoto
        case .receipt: .receipt
        case .collectionPhoto: .collectionPhoto
        case .problemPhoto: .problemPhoto
        case .messagePhoto: .messagePhoto
        }
    }

    /// What the photo backs, for a target that is one (not an inspection's slot or a unit's photo).
    var paper: Paper? {
        switch self {
        case .inspection, .unitPhoto: nil
        case .receipt(let expense): .expense(expense)
        case .collectionPhoto(let payment): .payment(payment)
        case .problemPhoto(let problem, let order): .problem(problem, order: order)
        case .messagePhoto(let message): .message(message)
        }
    }

    /// What the file is, in a sentence's words.
    var description: String {
        switch self {
        case .inspection(_, let slot): "The \(slot) slot"
        case .unitPhoto: "A unit photo"
        case .receipt: "A receipt"
        case .collectionPhoto: "A payment's photo"
        case .problemPhoto: "A problem's photo"
        case .messagePhoto: "A message's photo"
        }
    }
}

extension MediaSlot {
    /// Where uploads of a unit's photos go; not one of an inspection's slots.
    static let unitPhoto = MediaSlot("unit_photo")
    /// A receipt photo of an expense.
    static let receipt = MediaSlot("receipt")
    /// The photo of a check or cash receipt a driver collected.
    static let collectionPhoto = MediaSlot("payment_photo")
    /// A photo of a problem at a stop.
    static let problemPhoto = MediaSlot("problem_photo")
    /// A photo with a driver's message.
    static let messagePhoto = MediaSlot("message_photo")
}

/// An upload in progress (tus): where its bytes go and how many have
/// durably arrived.
public struct UploadRecord: Sendable, Hashable {
    /// Where a finished upload's file was put, recorded before it moved there.
    public struct StoredFile: Sendable, Hashable {
        public let key: String
        public let sha256: String
        public let contentType: String
    }

    public let id: String
    public let tenantID: ID<Tenant>
    public let target: UploadTarget
    public var slot: MediaSlot { target.slot }
    public let kind: MediaKind
    public let length: Int64
    public var received: Int64
    public let metadata: String
    public let expiresAt: Date
    public var completedAt: Date?
    public var storedFile: StoredFile?
    /// The storage's reference to the bytes in progress (an S3 multipart upload id).
    public var storageHandle: String?

    /// The upload a file key names: every key ends with its upload's id (a lowercased UUID).
    static func upload(ofFileKey key: String) -> String { String(key.suffix(36)) }

    /// Where the finished file goes: `{tenant}/{inspection}/{photos|videos|signatures}/{slot}.{upload}`,
    /// `{tenant}/equipment/{unit}/photos/{upload}`, `{tenant}/expenses/{expense}/receipts/{upload}`
    /// or `{tenant}/payments/{payment}/photos/{upload}`.
    public var fileKey: String {
        switch target {
        case .inspection(let inspection, let slot):
            let folder = switch kind {
            case .photo: "photos"
            case .video: "videos"
            case .signature: "signatures"
            }
            return "\(tenantID.rawValue)/\(inspection.rawValue)/\(folder)/\(slot.rawValue).\(id)"
        case .unitPhoto(let unit):
            return "\(tenantID.rawValue)/equipment/\(unit.rawValue)/photos/\(id)"
        case .receipt(let expense):
            return "\(tenantID.rawValue)/expenses/\(expense.rawValue)/receipts/\(id)"
        case .collectionPhoto(let payment):
            return "\(tenantID.rawValue)/payments/\(payment.rawValue)/photos/\(id)"
        case .problemPhoto(let problem, let order):
            return "\(tenantID.rawValue)/orders/\(order.rawValue)/problems/\(problem.rawValue)/\(id)"
        case .messagePhoto(let message):
            return "\(tenantID.rawValue)/messages/\(message.rawValue)/\(id)"
        }
    }

    init(row: SQLRow) throws {
        id = try row.string("id")
        tenantID = try row.id("tenant_id")
        storageHandle = try row.optionalString("storage_handle")
        if let unit = try row.optionalID("equipment_id", as: Equipment.self) {
            target = .unitPhoto(unit)
        } else if let paper = try row.optionalString("paper_id") {
            let slot = MediaSlot(try row.string("slot"))
            if slot == .receipt, let expense = ID<Expense>(paper) {
                target = .receipt(expense)
            } else if slot == .problemPhoto, let problem = ID<StopProblem>(paper),
                      let order = Tus.decodeMetadata(try row.string("metadata"))?["order_id"].flatMap(ID<Order>.init) {
                target = .problemPhoto(problem, order: order)  // the order is named in the metadata the upload began with
            } else if slot == .messagePhoto, let message = ID<DriverMessage>(paper) {
                target = .messagePhoto(message)
            } else if let payment = ID<InvoicePayment>(paper) {
                target = .collectionPhoto(payment)
            } else {
                throw AppError.notFound("Upload")
            }
        } else {
            target = .inspection(try row.id("inspection_id"), MediaSlot(try row.string("slot")))
        }
        kind = MediaKind(rawValue: try row.string("kind")) ?? .photo
        length = try row.int64("length")
        received = try row.int64("received")
        metadata = try row.string("metadata")
        expiresAt = WireTime.date(milliseconds: try row.int64("expires_at"))
        completedAt = try row.optionalInt64("completed_at").map(WireTime.date(milliseconds:))
        if let key = try row.optionalString("storage_key") {
            storedFile = StoredFile(key: key, sha256: try row.string("sha256"), contentType: try row.string("content_type"))
        }
    }

    static let columns: SQL = """
        id, tenant_id, inspection_id, equipment_id, paper_id, slot, kind, length, received, metadata, expires_at, completed_at, storage_key, sha256,
        content_type, storage_handle
        """
}

/// An upload past its expiry: its bytes in progress, and a stored file
/// that was never attached, go with it.
struct ExpiredUpload: Sendable {
    let upload: UploadRecord
    var unattachedKey: String? { upload.completedAt == nil ? upload.storedFile?.key : nil }
}
