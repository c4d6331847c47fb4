import Foundation
import VroomXModels

/// An order still to move on a trip under way, as the dispatch map reads
/// it: its stops and where the truck stands with them, without the
/// vehicles, money and problems an `Order` carries. The map draws a fence
/// for every stop ahead of every truck, hundreds of rows a view at a large
/// carrier, and decoding each order's vehicles was a quarter of the page.
struct OrderAhead: OrderStops, Sendable, Hashable {
    let id: ID<Order>
    let number: String
    let tripID: ID<Trip>?
    let driverID: ID<Driver>?
    let status: OrderStatus
    let pickup: Stop
    let delivery: Stop
    let pickupETA: Date?
    let deliveryETA: Date?
    let arrivedAtPickup: Date?
    let arrivedAtDelivery: Date?
    let createdAt: Date
}
