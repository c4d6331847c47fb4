import Foundation
import Testing
import VroomXModels
@testable import VroomXServer

/// The trip page's heads-up: the driver's other trips on the same days, and
/// their units' standing until the trip ends.
struct TripHeadsUpTests {
    let today = LocalDate(year: 2026, month: 11, day: 28)!
    let driver = Driver(id: ID(), userID: ID(), name: "Alex Rivera", phone: "", email: "alex@example.com", payType: .perTrip,
                        payRate: 1, version: 1, createdAt: Date(), updatedAt: Date())

    func trip(_ number: String, _ start: Int?, _ end: Int?, status: TripStatus = .planned, driver: ID<Driver>? = nil) -> Trip {
        Trip(id: ID(), number: number, driverID: driver ?? self.driver.id, status: status, startDate: start.map { today.adding(days: $0) },
             endDate: end.map { today.adding(days: $0) }, origin: "A", destination: "B", revenueCents: 1, driverPayCents: 0, miles: 1,
             version: 1, createdAt: Date(), updatedAt: Date())
    }

    func unit(_ number: String, _ kind: EquipmentKind = .truck, status: EquipmentStatus = .active, papers: [(EquipmentDocumentKind, Int?)]) -> Equipment {
        Equipment(id: ID(), kind: kind, unitNumber: number, status: status, driverID: driver.id, documents: papers.map { kind, days in
            EquipmentDocument(id: ID(), kind: kind, number: "", expiresOn: days.map { today.adding(days: $0) }, notes: "", expiryNoticeAt: nil,
                              createdAt: Date())
        }, createdAt: Date(), updatedAt: Date())
    }

    @Test func tripsShareADayWhenTheirDaysMeet() {
        #expect(trip("A", 0, 2).overlaps(trip("B", 2, 5)))
        #expect(!trip("A", 0, 2).overlaps(trip("B", 3, 5)))
        #expect(trip("A", 1, nil).overlaps(trip("B", 0, 3)), "a trip with one date runs that day")
        #expect(trip("A", nil, 1).overlaps(trip("B", 1, 1)))
        #expect(!trip("A", nil, nil).overlaps(trip("B", 0, 3)), "a trip without dates overlaps nothing")
        #expect(trip("A", 0, 2).days == today...today.adding(days: 2))
    }

    @Test func theDriversOtherOpenTripsOnTheSameDaysAreNamed() {
        let this = trip("T-1", 0, 3)
        let others = [this, trip("T-2", 3, 4), trip("T-3", 4, 6), trip("T-4", 1, 2, status: .completed), trip("T-5", 1, 2, status: .cancelled),
                      trip("T-6", -3, 0, status: .inProgress), trip("T-7", 1, 1, driver: ID())]
        let lines = TripHeadsUp.lines(for: this, driver: driver, otherTrips: others, units: [], today: today)
        #expect(lines == ["Alex Rivera also has trip T-2 on Dec 1 – 2, 2026.", "Alex Rivera also has trip T-6 on Nov 25 – 28, 2026."])
    }

    @Test func unitsOutOfServiceAndPapersThatRunOutBeforeTheTripEnds() {
        let this = trip("T-1", 2, 10)
        let units = [
            unit("T-12", papers: [(.registration, 5), (.insurance, 10), (.permit, nil), (.iftaDecal, 11)]),
            unit("TR-9", .trailer, status: .inShop, papers: [(.annualInspection, -1)]),
            unit("T-OLD", status: .retired, papers: [(.insurance, -100)]),
        ]
        let lines = TripHeadsUp.lines(for: this, driver: driver, otherTrips: [], units: units, today: today)
        #expect(lines == [
            "Truck T-12's registration runs out Dec 3, 2026, before this trip ends.",
            "Trailer TR-9 is in shop.",
            "Trailer TR-9's annual DOT inspection expired Nov 27, 2026.",
        ])
        // A trip without dates is judged by today; a closed trip says nothing.
        #expect(TripHeadsUp.lines(for: trip("T-2", nil, nil), driver: driver, otherTrips: [], units: units, today: today).count == 2)
        #expect(TripHeadsUp.lines(for: trip("T-3", 2, 10, status: .completed), driver: driver, otherTrips: [], units: units, today: today).isEmpty)
    }
}
