import Foundation

/// A UUID tagged with the entity it identifies, so a trip id can never be
/// passed where an order id is expected. On the wire and in the database it
/// is the lowercase canonical UUID string.
public struct ID<Entity>: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let uuid: UUID

    public init(_ uuid: UUID = UUID()) { self.uuid = uuid }

    /// Accepts any letter case; returns nil for anything that is not a UUID.
    public init?(_ string: String) {
        guard let uuid = UUID(uuidString: string) else { return nil }
        self.uuid = uuid
    }

    public var rawValue: String { uuid.uuidString.lowercased() }
    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension ID: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let id = ID(string) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Expected a UUID, got \"\(string)\"")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
