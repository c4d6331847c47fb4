/// A query parameter or header an endpoint reads, declared once in the
/// route table: the server reads it through its declaration, the OpenAPI
/// document is checked against it, and the input tests send every
/// declared number its extreme values.
public struct Parameter: Hashable, Sendable, CustomStringConvertible {
    public enum Location: String, Hashable, Sendable {
        case query
        case header
    }

    public enum Kind: Hashable, Sendable {
        /// A decimal integer within the range.
        case integer(ClosedRange<Int64>)
        case boolean
        case uuid
        /// One of a fixed set of words (a status).
        case oneOf([String])
        /// A value this server handed out (a page cursor), passed back as is.
        case token
        /// `bytes=first-last`, `bytes=first-`, `bytes=-suffix` (RFC 9110).
        case byteRange
        /// A calendar day, `YYYY-MM-DD`.
        case date
        /// Words typed into a search box, at most this many characters.
        case text(maxLength: Int)
    }

    public let name: String
    public let location: Location
    public let kind: Kind

    /// A query parameter.
    public init(_ name: String, _ kind: Kind) {
        self.name = name
        self.location = .query
        self.kind = kind
    }

    public init(header name: String, _ kind: Kind) {
        self.name = name
        self.location = .header
        self.kind = kind
    }

    public var description: String { "\(location.rawValue) \(name)" }

    /// Whether the parameter carries a number a client could make extreme.
    public var isNumeric: Bool {
        switch kind {
        case .integer, .byteRange: return true
        case .boolean, .uuid, .oneOf, .token, .date, .text: return false
        }
    }

    /// The integer range, for integer parameters.
    public var range: ClosedRange<Int64>? {
        if case .integer(let range) = kind { return range }
        return nil
    }
}

extension Parameter {
    /// Rows per page of a list (`limit`), and the cursor of the next page.
    public static let pageLimit = Parameter("limit", .integer(1...Int64(Page.maxLimit)))
    public static let pageCursor = Parameter("cursor", .token)

    public static let since = Parameter("since", .integer(0...DecimalText.maxValue))
    /// The newest change number of the carrier the client has seen: a write's
    /// `X-VroomX-Change` answer, or its feed cursor. A read that sends it sees
    /// at least that change, whichever server instance answers.
    public static let changeSeen = Parameter(header: ChangeNumber.header, .integer(0...DecimalText.maxValue))
    public static let syncLimit = Parameter("limit", .integer(1...1000))
    public static let snapshotAfter = Parameter("snapshot_after", .token)
    public static let accessToken = Parameter("access_token", .token)
    public static let unreadOnly = Parameter("unread", .boolean)
    public static let orderStatus = Parameter("status", .oneOf(OrderStatus.allCases.map(\.rawValue)))
    public static let tripStatus = Parameter("status", .oneOf(TripStatus.allCases.map(\.rawValue)))
    public static let tripFilter = Parameter("trip_id", .uuid)
    public static let customerFilter = Parameter("customer_id", .uuid)
    public static let invoiceStatus = Parameter("status", .oneOf(InvoiceStatus.allCases.map(\.rawValue)))
    /// The day an aging report is figured on (today when not given).
    public static let asOfDate = Parameter("as_of", .date)
    /// Words a customer's name, contact, email or phone contains.
    public static let customerSearch = Parameter("q", .text(maxLength: FieldLimits.searchText))
    public static let equipmentKind = Parameter("kind", .oneOf(EquipmentKind.allCases.map(\.rawValue)))
    public static let equipmentStatus = Parameter("status", .oneOf(EquipmentStatus.allCases.map(\.rawValue)))
    /// Papers expiring within this many days (default 30).
    public static let withinDays = Parameter("days", .integer(0...366))
    /// A period of calendar days (`YYYY-MM-DD`), both ends included.
    /// Any day of the week a settlement covers (this week when not given).
    public static let settlementWeek = Parameter("week", .date)
    public static let fromDate = Parameter("from", .date)
    public static let toDate = Parameter("to", .date)

    // Resumable uploads (tus 1.0) and ranged downloads.
    public static let uploadLength = Parameter(header: "Upload-Length", .integer(1...DecimalText.maxValue))
    public static let uploadOffset = Parameter(header: "Upload-Offset", .integer(0...DecimalText.maxValue))
    public static let contentLength = Parameter(header: "Content-Length", .integer(0...DecimalText.maxValue))
    public static let range = Parameter(header: "Range", .byteRange)
}

/// Paging of list answers: at most `maxLimit` rows, `defaultLimit` unless
/// the client asks for fewer or more.
public enum Page {
    public static let defaultLimit = 100
    public static let maxLimit = 500
}

/// Decimal integers as clients send them in headers and query strings:
/// ASCII digits only — no sign, spaces, exponent or hex — and at most 18 of
/// them, so the value always fits an `Int64` and any sum of two of them
/// can be checked without trapping.
public enum DecimalText {
    public static let maxDigits = 18
    /// The largest value that can be written with `maxDigits` digits.
    public static let maxValue: Int64 = 999_999_999_999_999_999

    public static func int64<Text: StringProtocol>(_ text: Text) -> Int64? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maxDigits else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// The value if it is a decimal integer within `range`.
    public static func int64<Text: StringProtocol>(_ text: Text, in range: ClosedRange<Int64>) -> Int64? {
        guard let value = int64(text), range.contains(value) else { return nil }
        return value
    }
}
