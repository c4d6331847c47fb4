import Foundation
import Testing
import VroomXModels

/// Distances read in the units trips are measured in (miles), and fences in
/// feet, while the API keeps metres.
struct DistanceTests {
    @Test func distancesReadInMilesAndFeet() {
        #expect(LocationRules.distanceText(0) == "0 ft")
        #expect(LocationRules.distanceText(40) == "130 ft")        // 131 ft
        #expect(LocationRules.distanceText(160) == "520 ft")       // just under a tenth of a mile
        #expect(LocationRules.distanceText(161) == "0.1 mi")
        #expect(LocationRules.distanceText(4_900) == "3.0 mi")
        #expect(LocationRules.distanceText(42_800) == "26.6 mi")
        #expect(LocationRules.distanceText(511_000) == "318 mi")
        #expect(LocationRules.distanceText(-40) == "130 ft")
        #expect(LocationRules.distanceText(.infinity) == "—")
        #expect(LocationRules.distanceText(.nan) == "—")
        #expect(LocationRules.distanceText(3_444_000) == "2,140 mi")
        #expect(LocationRules.distanceText(.greatestFiniteMagnitude) == "—")
    }

    @Test func fencesReadInFeetAndKeepTheirMetres() {
        #expect(LocationRules.feet(fromMetres: 150) == 490)
        #expect(LocationRules.feet(fromMetres: 305) == 1000)
        // A multiple of 5 feet typed in comes back as typed.
        for feet in stride(from: LocationRules.radiusRangeFeet.lowerBound, through: LocationRules.radiusRangeFeet.upperBound, by: 5) {
            #expect(LocationRules.feet(fromMetres: LocationRules.metres(fromFeet: feet)) == feet)
        }
        // Every foot the console takes is a radius the API takes.
        #expect(LocationRules.radiusRangeFeet == 80...16_405)
        // The ends of the API's range show as the ends of the console's, and come back as they were.
        #expect(LocationRules.metres(fromFeet: LocationRules.feet(fromMetres: 25)) == 25)
        #expect(LocationRules.metres(fromFeet: LocationRules.feet(fromMetres: 5000)) == 5000)
        #expect(LocationRules.radiusRange.contains(LocationRules.metres(fromFeet: LocationRules.radiusRangeFeet.lowerBound)))
        #expect(LocationRules.radiusRange.contains(LocationRules.metres(fromFeet: LocationRules.radiusRangeFeet.upperBound)))
    }

    @Test("a computed ETA never trusts a speed no truck drives (one fix far away makes a jump, not a speed)")
    func etaIgnoresImpossibleSpeed() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let here = GeoPosition(latitude: 41.0, longitude: -87.0, accuracyMeters: 10, recordedAt: now)
        let stop = GeoPoint(latitude: 30.0, longitude: -95.0)
        let jumped = GeoPosition(latitude: 1.0, longitude: 1.0, accuracyMeters: 10, recordedAt: now.addingTimeInterval(-120))
        let speed = ComputedETA.recentSpeed([jumped, here])
        #expect((speed ?? 0) > 1_000, "the jump reads as \(speed ?? 0) m/s")
        let eta = ComputedETA.estimate(from: here, to: stop, recentSpeed: speed, now: now)
        let atHighwaySpeed = ComputedETA.estimate(from: here, to: stop, recentSpeed: nil, now: now)
        #expect(eta == atHighwaySpeed, "an impossible speed is ignored, as no speed is")
        // A plausible one is used.
        let driving = ComputedETA.estimate(from: here, to: stop, recentSpeed: 30, now: now)
        #expect(driving < atHighwaySpeed)
    }
}
