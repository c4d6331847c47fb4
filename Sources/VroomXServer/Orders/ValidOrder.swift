import Foundation
import VroomXModels

/// An order request checked field by field (before any write).
struct ValidOrder: Sendable {
    let number: String
    let tripID: ID<Trip>?
    let vehicles: [Vehicle]
    let pickup: Stop
    let delivery: Stop
    let revenue: Int
    let terms: String
    var customerID: ID<Customer>?
    let externalLoadID: String?

    init(_ request: CreateOrderRequest, now: Date) throws {
        self = try Problems.first { ValidOrder(request, now: now, &$0) }
    }

    /// Every rule for a new order, each refusal kept in `problems`.
    init(_ request: CreateOrderRequest, now: Date, _ problems: inout Problems) {
        number = problems.check(request.number) { try Validate.name(request.number, FieldLimits.orderNumber) }
        tripID = request.tripID
        if let revenue = request.revenueCents { problems.check(()) { _ = try Validate.cents(revenue, field: "revenue_cents") } }
        vehicles = ValidVehicles.check(request.vehicles, field: { request.listsVehicles ? "vehicles[\($0)]" : "vehicle" }, existing: [],
                                       revenue: request.revenueCents, acceptVINWarning: request.acceptVINWarning ?? false, now: now,
                                       &problems)
        let (pickup, delivery) = (Validate.stop(request.pickup, field: "pickup", &problems),
                                  Validate.stop(request.delivery, field: "delivery", &problems))
        (self.pickup, self.delivery) = (pickup, delivery)
        problems.check(()) { try Validate.stops(pickup: pickup, delivery: delivery) }
        revenue = vehicles.reduce(0) { $0 + ($1.priceCents ?? 0) }
        terms = problems.check(request.paymentTerms ?? "") {
            try Validate.text(request.paymentTerms ?? "", FieldLimits.paymentTerms)
        }
        customerID = request.customerID
        externalLoadID = problems.check(nil) { try Validate.externalLoadID(request.externalLoadID) }
    }
}

/// A batch of orders refused for one of them (the first, by its index).
struct BatchRefusal: Error {
    let index: Int
    let error: AppError
}
