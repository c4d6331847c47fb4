import Foundation
import Testing
import VroomXModels

@Suite("Late and at-risk orders")
struct TimelinessTests {
    let today = LocalDate(year: 2026, month: 11, day: 30)!

    func order(_ status: OrderStatus, pickupBy: Int?, deliverBy: Int?, pickupETA: Int? = nil, deliveryETA: Int? = nil) -> Order {
        let day = { (offset: Int?) in offset.map { self.today.adding(days: $0) } }
        let noon = { (offset: Int?) in offset.map { self.today.adding(days: $0).startOfDay.addingTimeInterval(12 * 3600) } }
        return Order(id: ID(), number: "O-1", tripID: nil, driverID: nil, vehicle: Vehicle(make: "Kia"),
                     pickup: Stop(address: "A", windowStart: day(pickupBy)), delivery: Stop(address: "B", windowStart: day(deliverBy)),
                     status: status, actualPickupDate: nil, actualDeliveryDate: nil, pickupETA: noon(pickupETA), deliveryETA: noon(deliveryETA),
                     revenueCents: 0, paymentTerms: "", version: 1, createdAt: Date(), updatedAt: Date())
    }

    @Test("a window's last day passed without the status is late; an ETA after it is at risk; late first, pickup first")
    func marks() {
        #expect(order(.assigned, pickupBy: -1, deliverBy: 2).timeliness(today: today) == .pickupLate)
        #expect(order(.assigned, pickupBy: 0, deliverBy: 2).timeliness(today: today) == nil, "the last day itself is on time")
        #expect(order(.pickedUp, pickupBy: -3, deliverBy: -1).timeliness(today: today) == .deliveryLate, "picked up: only the delivery counts")
        #expect(order(.new, pickupBy: -3, deliverBy: -1).timeliness(today: today) == .pickupLate)
        #expect(order(.assigned, pickupBy: 1, deliverBy: 3, pickupETA: 2).timeliness(today: today) == .pickupAtRisk)
        #expect(order(.pickedUp, pickupBy: 1, deliverBy: 3, deliveryETA: 4).timeliness(today: today) == .deliveryAtRisk)
        #expect(order(.assigned, pickupBy: 1, deliverBy: 3, pickupETA: 1, deliveryETA: 3).timeliness(today: today) == nil)
        #expect(order(.delivered, pickupBy: -5, deliverBy: -3).timeliness(today: today) == nil, "done is never late")
        #expect(order(.cancelled, pickupBy: -5, deliverBy: -3).timeliness(today: today) == nil)
        #expect(order(.assigned, pickupBy: nil, deliverBy: nil, pickupETA: 9).timeliness(today: today) == nil, "no window, no promise")
        #expect(Timeliness.pickupLate.label == "Pickup late" && Timeliness.pickupLate.isLate && !Timeliness.deliveryAtRisk.isLate)
    }
}
