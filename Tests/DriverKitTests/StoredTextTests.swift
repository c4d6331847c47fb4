@testable import DriverKit
import Foundation
import GRDB
import Testing
import VroomXModels

/// What the phone keeps in its database: a cache from an older app carried
/// over by the migrations, and text compared as written.
@Suite("DriverKit stored text")
struct StoredTextTests {
    @Test("a cache from before trips and orders kept their numbers in a column still names them once migrated")
    func numbersCarriedOver() throws {
        let queue = try DatabaseQueue()
        try AppDatabase.migrator.migrate(queue, upTo: "v16-capture")
        let trip = ID<Trip>(), order = ID<Order>()
        try queue.write { db in
            try db.execute(sql: "INSERT INTO trips (id, created_at, doc) VALUES (?, 0, ?)",
                           arguments: [trip.rawValue, #"{"number":"T-1042","status":"planned"}"#])
            try db.execute(sql: "INSERT INTO orders (id, trip_id, created_at, doc) VALUES (?, ?, 0, ?)",
                           arguments: [order.rawValue, trip.rawValue, #"{"number":"O-5005"}"#])
        }
        _ = try AppDatabase(queue)
        let numbers = try queue.read { db in
            (try AppDatabase.tripNumber(trip, db), try AppDatabase.orderNumber(order, db), try AppDatabase.tripNumber(ID(), db))
        }
        #expect(numbers.0 == "T-1042" && numbers.1 == "O-5005" && numbers.2 == nil, "\(numbers)")
    }

    @Test("the waiting work is reported to the server once, not again while it stays the same (its report is compared as written)")
    func backlogReportedOnce() throws {
        let database = try AppDatabase.inMemory()
        let user = User(id: ID(), tenantID: ID(), email: "d@example.com", role: .driver, hasPIN: true, createdAt: Date())
        let driver = Driver(id: ID(), userID: user.id, name: "Alex Rivera", phone: "", email: user.email, payType: .perTrip,
                            payRate: 30_000, version: 1, createdAt: Date(), updatedAt: Date())
        try database.saveSignIn(user: user, driver: driver, now: Date())
        for body in ["Running late at the port", "Gate closes at 5", "Two keys for the Kia"] {
            _ = try database.enqueue(Mutation(.sendMessage(SendDriverMessageRequest(body: body))), now: Date())
        }
        let now = Date()
        let first = try #require(try database.backlogToReport(owner: user.id.rawValue, now: now))
        #expect(first.backlog.waitingChanges == 3)
        try database.backlogReported(owner: user.id.rawValue, encoded: first.encoded, empty: false)
        for _ in 0..<5 {
            #expect(try database.backlogToReport(owner: user.id.rawValue, now: now) == nil)
        }
    }
}
