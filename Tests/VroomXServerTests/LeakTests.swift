import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// What a caller could learn or keep that is not theirs: whether an id is
/// used at another carrier, a session that should have ended; and imports
/// that name every bad line, the stored data's refusals included.
@Suite("No leaks, every line named")
struct LeakTests {
    @Test("a client-chosen id used at another carrier is answered as any id the caller cannot use, telling nothing more",
          arguments: TestBackend.available)
    func foreignIDsTellNothing(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let bravo = try await CarrierFixture.make(server, name: "Bravo", drivers: 1, tripsPerDriver: 1)
        let today = LocalDate(server.clock.now)
        try await server.run { api in
            func expense(_ id: ID<Expense>, _ carrier: CarrierFixture, cents: Int) async throws -> APIResponse {
                try await api.call(.createExpense, json: CreateExpenseRequest(id: id, tripID: carrier.trips[0][0].id, category: .tolls,
                                                                              amountCents: cents, date: today), token: carrier.driver.accessToken)
            }
            let theirs = ID<Expense>(), mine = ID<Expense>()
            #expect(try await expense(theirs, bravo, cents: 500).status == 201)
            #expect(try await expense(mine, alpha, cents: 500).status == 201)
            // The same answer, word for word, for an id of another carrier and for one of the caller's own used otherwise.
            let foreign = try await expense(theirs, alpha, cents: 700)
            let own = try await expense(mine, alpha, cents: 700)
            #expect(foreign.status == 409 && own.status == 409)
            #expect(foreign.text == own.text, "\(foreign.text) vs \(own.text)")
            #expect(!foreign.text.contains("Bravo") && !foreign.text.lowercased().contains("carrier"))
        }
    }

    @Test("a signed-out or deactivated session is refused at once, on this instance and (told through PostgreSQL) on every other")
    func endedSessionsEverywhere() async throws {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 0)
        try await server.run { api in
            let session = try await api.signIn(carrier.drivers[1].user.email, server: server)
            #expect(try await api.call(.trips, token: session.accessToken).status == 200)  // cached as active now
            #expect(try await api.call(.logout, json: LogoutRequest(refreshToken: session.refreshToken)).status < 300)
            #expect(try await api.call(.trips, token: session.accessToken).status == 401)
        }
        // Another instance hears of it from the notification each ending transaction sends on PostgreSQL.
        let elsewhere = ID<Session>()
        #expect(!server.store.endedSessions.contains(elsewhere))
        PostgresChangeListener.deliver(EndedSessions.notificationPrefix + elsewhere.rawValue, to: server.services.hub)
        #expect(server.store.endedSessions.contains(elsewhere))
        #expect(try await !server.services.authenticator.sessionIsActive(elsewhere))
    }

    @Test("an order import names every line the stored data refuses (numbers taken, closed trips) beside the lines wrong in themselves",
          arguments: TestBackend.available)
    func ordersImportNamesEveryLine(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let dispatch = carrier.dispatcher.accessToken
        let csv = ["Content-Type": "text/csv"]
        try await server.run { api in
            let lines = (0..<200).map { "I-\($0),1 Harbor Rd,9 Main St,100" }
            let file = "number,pickup_address,delivery_address,revenue\n" + lines.joined(separator: "\n")
            let first = file + "\nX-1,1 Harbor Rd,9 Main St,100"
            #expect(try await api.call(.dispatchImportOrders, bytes: Array(first.utf8), token: dispatch, headers: csv).status == 200)
            // The same 200 again, a line wrong in itself, and a taken number in other capitals.
            let again = file + "\nI-BAD,1 Harbor Rd,,100\nx-1,1 Harbor Rd,9 Main St,100"
            let refused = try await api.call(.dispatchImportOrders, bytes: Array(again.utf8), token: dispatch, headers: csv)
            #expect(refused.status == 422 && refused.errorCode == "import_failed", "\(refused.text.prefix(300))")
            let problems = refused.error?.problems ?? []
            #expect(problems.count == 202, "every line named: \(problems.count)")
            #expect(problems.map(\.line) == Array(2...203))
            #expect(problems[0].field == "number" && problems[0].message.contains("I-0 already exists"), "\(problems[0])")
            #expect(problems[200].field == "delivery_address")
            #expect(problems[201].message.contains("ignore capital letters"), "\(problems[201])")
        }
    }

    @Test("a unit import names a new unit without its kind beside the lines wrong in themselves", arguments: TestBackend.available)
    func unitsImportNamesEveryLine(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let dispatch = carrier.dispatcher.accessToken
        let csv = ["Content-Type": "text/csv"]
        try await server.run { api in
            #expect(try await api.call(.dispatchImportEquipment, bytes: Array("unit_number,kind\nT-1,truck\n".utf8), token: dispatch,
                                       headers: csv).status == 200)
            let file = "unit_number,kind,year\nT-2,,\nT-3,truck,1850\nT-1,trailer,\nT-4,truck,2020\n"
            let refused = try await api.call(.dispatchImportEquipment, bytes: Array(file.utf8), token: dispatch, headers: csv)
            let problems = refused.error?.problems ?? []
            #expect(problems.map(\.line) == [2, 3, 4], "\(refused.text)")
            #expect(problems.map(\.field) == ["kind", "year", "kind"], "\(refused.text)")
        }
    }
}
