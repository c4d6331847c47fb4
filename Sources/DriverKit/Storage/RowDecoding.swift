import GRDB

extension Row {
    /// The rows of a query, each decoded as it is stepped. A row of a cursor
    /// finds a column by name in a table the cursor builds once; a row of
    /// `fetchAll` is a copy that lowercases every column name at each lookup,
    /// which was a tenth of a sync's CPU with a thousand queued changes.
    /// A cursor's row reads its statement, so it is decoded while the cursor lives.
    static func decodeAll<Value>(_ db: Database, sql: String, arguments: StatementArguments = [],
                                 _ decode: (Row) throws -> Value) throws -> [Value] {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        return try withExtendedLifetime(rows) {
            var values: [Value] = []
            while let row = try rows.next() { values.append(try decode(row)) }
            return values
        }
    }

    /// The first row of a query, decoded as `decodeAll` does; nil when there is none.
    static func decodeFirst<Value>(_ db: Database, sql: String, arguments: StatementArguments = [],
                                   _ decode: (Row) throws -> Value) throws -> Value? {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        return try withExtendedLifetime(rows) { try rows.next().map(decode) }
    }
}
