import Foundation
import VroomXModels

/// The vehicles an order request gives, checked one by one and as a list:
/// each with its id (a new vehicle gets one; an id the order has keeps
/// that vehicle) and its price (`OrderVehicleRules.prices`).
enum ValidVehicles {
    /// - Parameters:
    ///   - field: how the request names the vehicle at an index (`vehicles[2]`, or `vehicle`).
    ///   - existing: the order's vehicles when it is edited; none for a new order (whose ids are all new).
    ///   - revenue: the order's revenue when the request gave one.
    static func check(_ given: [Vehicle], field: (Int) -> String, existing: [Vehicle], revenue: Int?, acceptVINWarning: Bool,
                      now: Date, _ problems: inout Problems) -> [Vehicle] {
        if let refusal = OrderVehicleRules.count(given.count) { problems.check(()) { throw AppError(refusal) } }
        let known = Dictionary(existing.compactMap { vehicle in vehicle.id.map { ($0, vehicle) } }, uniquingKeysWith: { first, _ in first })
        var seen: Set<ID<Vehicle>> = []
        var vins: [String: Int] = [:]
        var checked: [Vehicle] = []
        for (index, vehicle) in given.prefix(FieldLimits.vehiclesPerOrder).enumerated() {
            let prefix = field(index)
            var id = ID<Vehicle>()
            if let given = vehicle.id, !existing.isEmpty {
                if known[given] == nil {
                    problems.check(()) { throw AppError.validation("\(prefix).id", "This order has no vehicle \(given).") }
                } else if seen.contains(given) {
                    problems.check(()) { throw AppError.validation("\(prefix).id", "Vehicle \(given) is listed twice.") }
                } else {
                    id = given
                }
            }
            seen.insert(id)
            // A VIN already saved on this vehicle was confirmed when it was: only a new one is questioned.
            let savedVIN = known[id].map { $0.vin == vehicle.vin.trimmingCharacters(in: .whitespaces).uppercased() } ?? false
            var valid = Validate.vehicle(vehicle, prefix: prefix, acceptVINWarning: acceptVINWarning || savedVIN, now: now, &problems)
            valid.id = id
            // A saved vehicle sent without a price keeps the one it has.
            if valid.priceCents == nil, let saved = known[id] { valid.priceCents = saved.priceCents }
            // One vehicle listed twice would be loaded, inspected and paid for twice.
            if !valid.vin.isEmpty {
                if let earlier = vins[valid.vin] {
                    problems.check(()) { throw AppError.validation("\(prefix).vin", "Vehicle \(earlier + 1) of this order has this VIN too.") }
                }
                vins[valid.vin] = vins[valid.vin] ?? index
            }
            checked.append(valid)
        }
        switch OrderVehicleRules.prices(checked.map(\.priceCents), revenue: revenue) {
        case .success(let prices):
            for index in checked.indices { checked[index].priceCents = prices[index] }
        case .failure(let refusal):
            problems.check(()) { throw AppError(refusal) }
        }
        return checked
    }

    /// The order's vehicles after an edit: the whole list when the request
    /// sends `vehicles`, else yesterday's `vehicle` and `revenue_cents`
    /// applied to the first (and only) vehicle.
    /// `onTruck`: the vehicles picked up (nil: every vehicle of a picked-up or delivered order).
    static func edited(_ order: Order, by request: UpdateOrderRequest, onTruck: Set<ID<Vehicle>>? = nil, now: Date,
                       _ problems: inout Problems) -> [Vehicle] {
        let acceptVINWarning = request.acceptVINWarning == true
        if let revenue = request.revenueCents { problems.check(()) { _ = try Validate.cents(revenue, field: "revenue_cents") } }
        if let given = request.vehicles {
            let vehicles = check(given, field: { "vehicles[\($0)]" }, existing: order.vehicles, revenue: request.revenueCents,
                                 acceptVINWarning: acceptVINWarning, now: now, &problems)
            // Once the load is on the truck (or delivered) none joins it, and none on the truck leaves it: they were
            // inspected and signed for. A vehicle still waiting at the pickup (not ready, gone) may be taken off.
            if order.status == .pickedUp || order.status == .delivered {
                let (before, after) = (Set(order.vehicles.compactMap(\.id)), Set(vehicles.compactMap(\.id)))
                let loaded = onTruck ?? before
                if !after.isSubset(of: before) || !loaded.isSubset(of: after) {
                    problems.check(()) {
                        throw AppError(409, .invalidTransition,
                                       "Order \(order.number) is \(order.status.label): a vehicle on the truck was inspected and signed for, so it stays on the order, and none can join it. Edit their details, or make a new order.",
                                       field: "vehicles")
                    }
                }
            }
            return vehicles
        }
        var vehicles = order.vehicles
        if let vehicle = request.vehicle, !vehicles.isEmpty {
            vehicles[0] = firstEdited(order, to: vehicle, acceptVINWarning: acceptVINWarning, now: now, &problems)
        }
        // Yesterday's revenue is the price of a one-vehicle order; several vehicles are priced each.
        guard let revenue = request.revenueCents else { return vehicles }
        if vehicles.count == 1 {
            if let price = request.vehicle?.priceCents, price != revenue {
                problems.check(()) {
                    throw AppError.validation("revenue_cents", "revenue_cents differs from vehicle.price_cents: a one-vehicle order earns its vehicle's price.")
                }
            } else {
                vehicles[0].priceCents = revenue
            }
        } else if revenue != vehicles.reduce(0, { $0 + ($1.priceCents ?? 0) }) {
            problems.check(()) {
                throw AppError.validation("revenue_cents", "Order \(order.number) moves \(vehicles.count) vehicles: set each one's price.")
            }
        }
        return vehicles
    }

    /// Yesterday's `vehicle` in an edit: new details for the order's first
    /// vehicle, which keeps its id, type, operability, lot and price unless
    /// the request gives them.
    static func firstEdited(_ order: Order, to given: Vehicle, acceptVINWarning: Bool, now: Date, _ problems: inout Problems) -> Vehicle {
        let first = order.vehicle
        let savedVIN = given.vin.trimmingCharacters(in: .whitespaces).uppercased() == first.vin
        var valid = Validate.vehicle(given, acceptVINWarning: acceptVINWarning || savedVIN, now: now, &problems)
        valid.id = first.id
        valid.type = given.type ?? first.type
        valid.lotNumber = given.lotNumber ?? first.lotNumber
        valid.priceCents = valid.priceCents ?? first.priceCents
        // Yesterday's vehicle has no `operable` (it reads as true): only an explicit false changes it.
        valid.operable = given.operable ? first.operable : false
        return valid
    }
}
