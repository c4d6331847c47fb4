import Foundation
import GRDB
import VroomXModels

/// The driver's settlements as the server figured them (this week so far,
/// and the weeks dispatch approved and paid), fetched when there is signal
/// and kept for reading without it.
public struct EarningsRecord: Sendable, Hashable {
    public let earnings: Earnings
    /// When the server sent it: the figures are as of then.
    public let fetchedAt: Date
    /// The server could not be asked just now: this is the copy kept.
    public var isKeptCopy = false
}

extension AppDatabase {
    /// The signed-in driver's settlements as last fetched, if ever.
    public func savedEarnings() throws -> EarningsRecord? {
        try reader.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT doc, fetched_at FROM earnings WHERE owner IS ?", arguments: [try Self.ownerID(db)]) else {
                return nil
            }
            return EarningsRecord(earnings: try CacheJSON.decode(Earnings.self, row["doc"]),
                                  fetchedAt: Date(timeIntervalSince1970: row["fetched_at"]))
        }
    }

    func saveStatement(_ pdf: Data, of id: ID<Settlement>) throws {
        try writer.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO statements (settlement_id, owner, pdf) VALUES (?, ?, ?)",
                           arguments: [id.rawValue, try Self.ownerID(db), pdf])
        }
    }

    func savedStatement(_ id: ID<Settlement>) throws -> Data? {
        try reader.read { db in
            try Data.fetchOne(db, sql: "SELECT pdf FROM statements WHERE settlement_id = ? AND owner IS ?", arguments: [id.rawValue, try Self.ownerID(db)])
        }
    }

    func saveEarnings(_ earnings: Earnings, at now: Date) throws {
        try writer.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO earnings (owner, doc, fetched_at) VALUES (?, ?, ?)",
                           arguments: [try Self.ownerID(db), try CacheJSON.encode(earnings), now.timeIntervalSince1970])
        }
    }
}

extension DriverApp {
    /// The driver's settlements from the server, kept on the phone; without
    /// signal (or when the server does not answer), the copy last kept.
    public func refreshEarnings() async throws -> EarningsRecord {
        do {
            let earnings = try await api.send(.earnings, as: Earnings.self)
            try database.saveEarnings(earnings, at: Date())
        } catch {
            guard var saved = try database.savedEarnings() else { throw error }
            saved.isKeptCopy = true
            return saved
        }
        guard let saved = try database.savedEarnings() else { throw APIError.unreadable("The settlements were not kept.") }
        return saved
    }

    /// A settlement's statement PDF, kept once fetched: without signal, the copy kept.
    public func statement(_ id: ID<Settlement>) async throws -> Data {
        do {
            let pdf = try await api.download(.settlementStatement, id.rawValue)
            try database.saveStatement(pdf, of: id)
            return pdf
        } catch {
            guard let kept = try database.savedStatement(id) else { throw error }
            return kept
        }
    }
}
