@testable import DriverKit
import Foundation
import GRDB
import Testing
import VroomXModels

/// A phone updated from an older app keeps its cache: the new migrations
/// carry what it holds over.
@Suite("DriverKit cache migrations")
struct CacheMigrationTests {
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
}
