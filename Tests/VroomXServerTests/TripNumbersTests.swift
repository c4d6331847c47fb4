import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// An order import names its trip by number. New numbers cannot differ from
/// another trip's by capitals alone, but lookalikes saved before that rule
/// remain: the file then has to name one exactly.
struct TripNumbersTests {
    private func trip(_ number: String, status: TripStatus = .planned) -> Trip {
        Trip(id: ID(), number: number, driverID: nil, status: status, startDate: nil, endDate: nil, origin: "A", destination: "B",
             revenueCents: 1, driverPayCents: 0, miles: 1, version: 1, createdAt: Date(), updatedAt: Date())
    }

    @Test func anImportNamesItsTripExactlyOrAsTheOnlyLookalike() throws {
        let (upper, lower, single) = (trip("CI-Z"), trip("ci-z"), trip("T-100"))
        let numbers = OrderImport.TripNumbers([upper, lower, single])
        #expect(try numbers.trip("CI-Z").get().id == upper.id)
        #expect(try numbers.trip("ci-z").get().id == lower.id)
        #expect(try numbers.trip("t-100").get().id == single.id)
        guard case .failure(let refusal) = numbers.trip("Ci-Z") else { Issue.record("a lookalike of two trips was taken"); return }
        #expect(refusal.body.message.contains("2 trips are numbered like Ci-Z (CI-Z, ci-z): write the number exactly."))
        guard case .failure(let missing) = numbers.trip("T-404") else { Issue.record("a trip that does not exist was found"); return }
        #expect(missing.body.message == "No trip numbered T-404.")
        // Accents encoded two ways are different numbers: only the exact one is taken.
        let (composed, decomposed) = (trip("R\u{E9}-1"), trip("Re\u{301}-1"))
        let accented = OrderImport.TripNumbers([composed, decomposed])
        #expect(try accented.trip("R\u{E9}-1").get().id == composed.id)
        #expect(try accented.trip("Re\u{301}-1").get().id == decomposed.id)
    }

    @Test func anImportListsEveryBadLineAtOnceIncludingTripsThatTakeNoOrders() throws {
        let trips = OrderImport.TripNumbers([trip("T-OPEN"), trip("T-GONE", status: .cancelled), trip("T-DONE", status: .completed)])
        let file = """
            number,pickup_address,delivery_address,revenue,trip
            O-1,1 Harbor Rd,9 Main St,lots,T-OPEN
            O-2,1 Harbor Rd,9 Main St,900,T-NOWHERE
            O-3,1 Harbor Rd,9 Main St,900,T-GONE
            O-4,1 Harbor Rd,,900,T-OPEN
            O-5,1 Harbor Rd,9 Main St,900,t-done
            O-6,1 Harbor Rd,9 Main St,900,T-OPEN
            """
        let (orders, _, problems, _) = try OrderImport.parse(file, trips: trips, now: Date())
        #expect(orders.map(\.number) == ["O-6"], "only the good line is kept, for the database's checks")
        #expect(problems.map(\.line) == [2, 3, 4, 5, 6])
        #expect(problems.map(\.field) == ["revenue", "trip", "trip", "delivery_address", "trip"])
        #expect(problems[2].message == "Trip T-GONE is cancelled; orders go on planned trips or trips under way.")
        #expect(problems[3].message == "This is required.")
        #expect(problems[4].message.hasPrefix("Trip T-DONE is completed"))
    }

    @Test("an import reads only the trips its file names, in any letter case, and never another carrier's", arguments: TestBackend.available)
    func anImportReadsTheTripsItNames(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0)
        let store = server.store
        for index in 0..<30 {
            _ = try await store.trips.create(CreateTripRequest(number: "IMP-\(index)", origin: "A", destination: "B", miles: 1), tenant: alpha.tenant.id)
        }
        _ = try await store.trips.create(CreateTripRequest(number: "BETA-ONLY", origin: "A", destination: "B", miles: 1), tenant: beta.tenant.id)
        let found = try await store.trips.numbered(["imp-3", "IMP-12", "beta-only", "IMP-404"], tenant: alpha.tenant.id)
        #expect(Set(found.map(\.number)) == ["IMP-3", "IMP-12"])
        let file = """
            number,pickup_address,delivery_address,revenue,trip
            O-IMP-1,1 Harbor Rd,9 Main St,900,imp-7
            O-IMP-2,1 Harbor Rd,9 Main St,900,BETA-ONLY
            """
        do {
            _ = try await OrderImport.run(file, store: store, tenant: alpha.tenant.id)
            Issue.record("an import naming another carrier's trip was taken")
        } catch let problems as OrderImport.Problems {
            #expect(problems.lines.map(\.line) == [3] && problems.lines.first?.message == "No trip numbered BETA-ONLY.")
        }
        let outcome = try await OrderImport.run(String(file.split(separator: "\n").prefix(2).joined(separator: "\n")), store: store,
                                                tenant: alpha.tenant.id)
        #expect(outcome.count == 1)
        let order = try #require(try await store.orders.list(.dispatch(tenant: alpha.tenant.id)).first { $0.number == "O-IMP-1" })
        let trip = try #require(try await store.trips.list(.dispatch(tenant: alpha.tenant.id)).first { $0.number == "IMP-7" })
        #expect(order.tripID == trip.id)

        // A file naming one trip in two letter cases, among more names than one look-up takes, finds the one trip.
        let spread = ["number,pickup_address,delivery_address,revenue,trip", "O-IMP-3,1 Harbor Rd,9 Main St,900,imp-3",
                      "O-IMP-4,1 Harbor Rd,9 Main St,900,IMP-3"] + (0..<450).map { "O-IMP-X\($0),1 Harbor Rd,9 Main St,900,U-\($0)" }
        do {
            _ = try await OrderImport.run(spread.joined(separator: "\n"), store: store, tenant: alpha.tenant.id)
            Issue.record("450 unknown trips were taken")
        } catch let problems as OrderImport.Problems {
            #expect(!problems.lines.contains { $0.line <= 3 }, "\(problems.lines.prefix(3))")
        }
        // Letters beyond ASCII fold as Swift folds them, on either database: a lookalike pair is refused, not picked by chance.
        for number in ["ÉTÉ-1", "ABC-é", "abc-É"] {
            _ = try await store.trips.create(CreateTripRequest(number: number, origin: "A", destination: "B", miles: 1), tenant: alpha.tenant.id)
        }
        let accented = """
            number,pickup_address,delivery_address,revenue,trip
            O-ACC-1,1 Harbor Rd,9 Main St,900,été-1
            O-ACC-2,1 Harbor Rd,9 Main St,900,Abc-é
            """
        do {
            _ = try await OrderImport.run(accented, store: store, tenant: alpha.tenant.id)
            Issue.record("a lookalike pair was picked from")
        } catch let problems as OrderImport.Problems {
            #expect(problems.lines.map(\.line) == [3] && problems.lines.first?.message.contains("2 trips are numbered like Abc-é") == true,
                    "\(problems.lines)")
        }
    }
}
