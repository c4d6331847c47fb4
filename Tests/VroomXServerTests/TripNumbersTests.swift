import Foundation
import Testing
import VroomXModels
@testable import VroomXServer

/// An order import names its trip by number. New numbers cannot differ from
/// another trip's by capitals alone, but lookalikes saved before that rule
/// remain: the file then has to name one exactly.
struct TripNumbersTests {
    private func trip(_ number: String) -> Trip {
        Trip(id: ID(), number: number, driverID: nil, status: .planned, startDate: nil, endDate: nil, origin: "A", destination: "B",
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
}
