import Foundation
import VroomXModels

/// How big uploads may be and how much one driver or carrier may hold.
public struct UploadLimits: Sendable, Hashable {
    /// Largest file accepted per kind of media, in bytes.
    public var maxPhotoBytes: Int64 = 25 << 20
    public var maxVideoBytes: Int64 = 500 << 20
    public var maxSignatureBytes: Int64 = 2 << 20
    /// How long an unfinished upload may be resumed before it is cleaned up.
    public var lifetime: TimeInterval = 24 * 3600
    /// Uploads a user may have open (begun, not finished, not expired):
    /// more than one inspection's worth of slots.
    public var openUploadsPerUser = 60
    /// Bytes a user's open uploads may announce together.
    public var openBytesPerUser: Int64 = 2 << 30
    /// Bytes a carrier may store (finished files plus open uploads).
    public var storedBytesPerCarrier: Int64 = 200 << 30
    /// How long a request may write without renewing its lease: a request
    /// of a server that died frees the upload after this long. Longer than
    /// any one storage call may take (S3: 30 s) plus `leaseRenewal`.
    public var leaseDuration: TimeInterval = 60
    /// A long request renews its lease at least this often.
    public var leaseRenewal: TimeInterval = 15

    public init() {}

    public func maxBytes(_ kind: MediaKind) -> Int64 {
        switch kind {
        case .photo: return maxPhotoBytes
        case .video: return maxVideoBytes
        case .signature: return maxSignatureBytes
        }
    }
}
