import Foundation
import Testing
import VroomXModels

/// The shared rules, each on its own: the server and the app both apply them.
struct RulesTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    func order(_ status: OrderStatus) -> Order {
        Order(id: ID(), number: "O-7", tripID: nil, driverID: status == .new ? nil : ID(), vehicle: Vehicle(make: "Ford"),
              pickup: Stop(address: "Macon, GA"), delivery: Stop(address: "Tampa, FL"), status: status, actualPickupDate: nil,
              actualDeliveryDate: nil, pickupETA: nil, deliveryETA: nil, revenueCents: 0, paymentTerms: "", version: 1,
              createdAt: now.addingTimeInterval(-86_400), updatedAt: now)
    }

    @Test func anOdometerOnlyGoesUpAndNoFasterThanATruckDrives() {
        let hourAgo = now.addingTimeInterval(-3600)
        let moment = now...now
        func check(_ miles: Int, _ known: OdometerRule.Neighbours, in window: ClosedRange<Date>? = nil) -> Refusal? {
            OdometerRule.check(miles, unit: "T-1", in: window ?? moment, field: "miles", known)
        }
        #expect(check(5_000, .init()) == nil, "a first reading is any reading")
        #expect(check(5_000, .init(before: (5_000, hourAgo))) == nil, "the same as before")
        #expect(check(4_999, .init(before: (5_000, hourAgo)))?.code == .odometerDecreased)
        #expect(check(4_999, .init(before: (5_000, hourAgo)))?.message == "Unit T-1 already read 5,000 mi; a reading cannot be lower than an earlier one.")
        #expect(check(6_100, .init(before: (5_000, hourAgo))) == nil, "1,000 mi of slack plus 100 mph")
        #expect(check(6_101, .init(before: (5_000, hourAgo)))?.code == .validationFailed, "a digit too many")
        #expect(check(5_001, .init(after: 5_000))?.code == .odometerDecreased, "higher than a later reading")
        // A fill known only by its day: a reading inside the day may be before or after it.
        let day = OdometerRule.fillWindow(LocalDate(now), now: now)
        #expect(check(5_000, .init(inside: (5_500, 5_500)), in: day) == nil)
        #expect(check(90_000, .init(inside: (5_500, 5_500)), in: day)?.code == .validationFailed)
        // The phone knows one reading: where it falls against the new one's window.
        #expect(OdometerRule.Neighbours(last: 5_000, at: hourAgo, window: moment).before?.miles == 5_000)
        #expect(OdometerRule.Neighbours(last: 5_000, at: now.addingTimeInterval(60), window: moment).after == 5_000)
        #expect(OdometerRule.Neighbours(last: nil, at: nil, window: moment).before == nil)
    }

    @Test func everyOdometerHasOneLimit() {
        #expect(FieldLimits.readingMiles.range == FieldLimits.odometerMiles.range)
        #expect(FieldLimits.inspectionOdometer.range == FieldLimits.odometerMiles.range)
        #expect(SaveInspectionRequest(orderID: ID(), kind: .pickup, odometer: 10_000_000).problem?.field == "odometer")
        #expect(SaveInspectionRequest(orderID: ID(), kind: .pickup, odometer: 9_999_999).problem == nil)
    }

    @Test func fuelIsBoughtOnAFuelExpense() {
        let fuel = FuelPurchase(equipmentID: ID(), quantityMilli: 120_500, odometerMiles: 5_000)
        #expect(ExpenseRules.fuelProblem(fuel, category: .fuel) == nil)
        #expect(ExpenseRules.fuelProblem(fuel, category: .tolls)?.field == "fuel")
        #expect(ExpenseRules.fuelProblem(FuelPurchase(equipmentID: ID(), quantityMilli: 0), category: .fuel)?.field == "fuel.quantity_milli")
        #expect(ExpenseRules.fuelProblem(FuelPurchase(equipmentID: ID(), quantityMilli: 1, odometerMiles: -1), category: .fuel)?.field
                == "fuel.odometer_miles")
        #expect(ExpenseRules.amountProblem(0)?.message == "amount_cents must be between $0.01 and $100,000.00.")
        #expect(ExpenseRules.amountProblem(1) == nil && ExpenseRules.amountProblem(100_000_00) == nil)
        #expect(ExpenseRules.amountProblem(100_000_01) != nil && ExpenseRules.amountProblem(Int.min) != nil)
        // Dated no later than today where the day starts first (UTC+14): 06:00 UTC is 20:00 there, 11:00 UTC the next day.
        let morning = Date(timeIntervalSince1970: 1_795_932_000)  // 2026-11-29 06:00 UTC
        #expect(ExpenseRules.dateProblem(LocalDate(morning), now: morning) == nil)
        #expect(ExpenseRules.dateProblem(LocalDate(morning).adding(days: 1), now: morning)?.field == "date")
        #expect(ExpenseRules.dateProblem(LocalDate(morning).adding(days: 1), now: morning.addingTimeInterval(5 * 3600)) == nil)
        #expect(ExpenseRules.dateProblem(LocalDate("2030-06-01")!, now: morning) != nil)
    }

    @Test func aDriverPicksUpByCompletingTheInspection() {
        let assigned = order(.assigned)
        let refusal = InspectionRules.required(toMark: .pickedUp, order: assigned, completed: [])
        #expect(refusal?.code == .inspectionRequired)
        #expect(refusal?.message == "Complete the pickup inspection of order O-7 to mark it picked up.")
        let done = Inspection(id: ID(), orderID: assigned.id, driverID: nil, kind: .pickup, completedAt: Date(), createdAt: Date(), updatedAt: Date())
        #expect(InspectionRules.required(toMark: .pickedUp, order: assigned, completed: [done]) == nil, "one from before: the first vehicle's")
        var started = done
        started.completedAt = nil
        #expect(InspectionRules.required(toMark: .pickedUp, order: assigned, completed: [started]) != nil)
        #expect(InspectionRules.required(toMark: .cancelled, order: assigned, completed: []) == nil)
        // A load of two: each vehicle's inspection, by its id.
        var load = assigned
        load.vehicles = [Vehicle(id: ID(), make: "Honda", priceCents: 1), Vehicle(id: ID(), make: "Kia", priceCents: 1)]
        var first = done
        first.vehicleID = load.vehicles[0].id
        #expect(InspectionRules.remaining(load, .pickup, completed: [first]).map(\.make) == ["Kia"])
        #expect(InspectionRules.required(toMark: .pickedUp, order: load, completed: [])?.message
                == "Complete the pickup inspection of a vehicle of order O-7 to mark it picked up.")
        #expect(InspectionRules.required(toMark: .pickedUp, order: load, completed: [first]) == nil, "the first vehicle picks the load up")
        #expect(InspectionRules.move(load, completing: .pickup, inspections: [first]) == .pickedUp)
        // Delivered with the last vehicle.
        load.status = .pickedUp
        var dropped = first
        dropped.kind = .delivery
        #expect(InspectionRules.required(toMark: .delivered, order: load, completed: [dropped])?.message
                == "Complete the delivery inspection of every vehicle of order O-7 to mark it delivered.")
        #expect(InspectionRules.move(load, completing: .delivery, inspections: [dropped]) == nil)
        var second = dropped
        second.vehicleID = load.vehicles[1].id
        #expect(InspectionRules.move(load, completing: .delivery, inspections: [dropped, second]) == .delivered)
        #expect(InspectionRules.required(toMark: .delivered, order: load, completed: [dropped, second]) == nil)
        #expect(InspectionRules.inspectable(assigned, kind: .pickup) == nil)
        #expect(InspectionRules.inspectable(assigned, kind: .delivery)?.message
                == "Order O-7 is assigned; a delivery inspection cannot be made or completed now.")
    }

    @Test func aTripEndsWhenItsVehiclesAreDeliveredAndStartsWithADriver() {
        func trip(driver: Bool) -> Trip {
            Trip(id: ID(), number: "T-9", driverID: driver ? ID() : nil, status: .inProgress, startDate: nil, endDate: nil, origin: "A",
                 destination: "B", revenueCents: 0, driverPayCents: 0, miles: 0, version: 1, createdAt: now, updatedAt: now)
        }
        #expect(trip(driver: false).statusRefusal(to: .inProgress, .init(loaded: 0, waiting: 0)) == "Assign a driver before starting the trip.")
        #expect(trip(driver: true).statusRefusal(to: .completed, .init(loaded: 1, waiting: 1))
                == "Trip T-9 still has 2 vehicles not delivered; deliver, cancel or move them first.")
        #expect(trip(driver: true).statusRefusal(to: .cancelled, .init(loaded: 1, waiting: 0))
                == "Trip T-9 has 1 vehicle on the truck; deliver it first.")
        #expect(trip(driver: true).statusRefusal(to: .cancelled, .init(loaded: 0, waiting: 3)) == nil, "waiting vehicles go back to the board")
        #expect(trip(driver: true).statusRefusal(to: .completed, .init(loaded: 0, waiting: 0)) == nil)
    }

    @Test func statusesReadTheSameEverywhere() {
        #expect(OrderStatus.new.title == "New" && OrderStatus.pickedUp.label == "picked up" && TripStatus.inProgress.title == "In progress")
        #expect(OrderStatusRefusal.invalidTransition(from: .delivered, to: .assigned).refusal.message
                == "An order that is delivered cannot be marked assigned.")
    }

    @Test func payRatesByTerms() {
        #expect(FieldLimits.payRate(for: .percentage).range == 0...10_000, "basis points: 100 %")
        #expect(FieldLimits.payRate(for: .perMile).range == 0...10_000, "cents: $100.00 a mile")
        #expect(FieldLimits.payRate(for: .perTrip).range == FieldLimits.payRate.range, "the document states the widest")
    }

    @Test func textLimitsCountCodePointsAsTheDatabaseDoes() {
        let family = "👨‍👩‍👧‍👦"  // one character, seven code points
        #expect(TextLimit("x", max: 7).allows(family))
        #expect(!TextLimit("x", max: 6).allows(family))
        #expect(!TextLimit("x", max: 10, required: true).allows(""))
        #expect(FieldLimits.tripMiles.refusal().message == "miles must be between 0 and 10,000,000.")
    }
}
