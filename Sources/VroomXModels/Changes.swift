/// The kinds of rows the change feed carries.
public enum ChangeEntity: String, Codable, Sendable, CaseIterable {
    case driver
    case trip
    case order
    case expense
    case notification
}

public enum ChangeOperation: String, Codable, Sendable {
    /// Store this row (insert or replace).
    case upsert
    /// Remove this row: it was deleted, or the caller may no longer see it.
    case delete
}
