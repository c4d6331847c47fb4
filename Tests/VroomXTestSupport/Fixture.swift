import Foundation
import VroomXModels
import VroomXServer

/// A carrier with a dispatcher and drivers, each signed in, and some work.
public struct CarrierFixture: Sendable {
    public let tenant: Tenant
    public let dispatcher: AuthSession
    public let drivers: [AuthSession]
    /// Trips by driver index; each trip carries two orders and one expense.
    public let trips: [[Trip]]
    public let orders: [ID<Trip>: [Order]]
    public let expenses: [ID<Trip>: [Expense]]

    public var driver: AuthSession { drivers[0] }
    public func driverID(_ index: Int) -> ID<Driver> { drivers[index].driver!.id }
    public var scope: Scope { .dispatch(tenant: tenant.id) }

    /// Builds a carrier through the store, tokens through the session path.
    public static func make(_ server: TestServer, name: String, drivers driverCount: Int = 2, tripsPerDriver: Int = 2) async throws -> CarrierFixture {
        let store = server.store
        let slug = name.lowercased().filter(\.isLetter)
        let (tenant, dispatcherUser) = try await store.people.createTenant(name: name, dispatcherEmail: "dispatch@\(slug).example")
        var drivers: [Driver] = []
        for index in 0..<driverCount {
            drivers.append(try await store.people.createDriver(tenant: tenant.id, .init(
                email: "driver\(index)@\(slug).example", name: "Driver \(index) of \(name)", phone: "+1 555 01\(index)0",
                payType: .percentage, payRate: 2500)))
        }
        var trips: [[Trip]] = []
        var orders: [ID<Trip>: [Order]] = [:]
        var expenses: [ID<Trip>: [Expense]] = [:]
        let today = LocalDate(store.clock.now)
        for (driverIndex, driver) in drivers.enumerated() {
            var driverTrips: [Trip] = []
            for tripIndex in 0..<tripsPerDriver {
                let trip = try await store.trips.create(.init(
                    number: "\(slug.prefix(3).uppercased())-\(driverIndex)\(tripIndex)", driverID: driver.id,
                    startDate: today.adding(days: tripIndex), endDate: today.adding(days: tripIndex + 2),
                    origin: "Origin \(tripIndex)", destination: "Destination \(tripIndex)", revenueCents: 300_000, miles: 500),
                    tenant: tenant.id)
                var tripOrders: [Order] = []
                for orderIndex in 0..<2 {
                    tripOrders.append(try await store.orders.create(.init(
                        number: "\(trip.number)-\(orderIndex)", tripID: trip.id,
                        vehicle: Vehicle(year: 2020, make: "Make", model: "Model \(orderIndex)"),
                        pickup: Stop(address: "\(orderIndex) Pickup St"), delivery: Stop(address: "\(orderIndex) Delivery Ave"),
                        revenueCents: 150_000, paymentTerms: "COD"), tenant: tenant.id))
                }
                orders[trip.id] = tripOrders
                expenses[trip.id] = [try await store.expenses.create(
                    .init(tripID: trip.id, category: .fuel, amountCents: 12_345, date: today, notes: "fuel"),
                    .driver(tenant: tenant.id, driver: driver.id))]
                driverTrips.append(try await store.trips.trip(trip.id, .dispatch(tenant: tenant.id)))
            }
            trips.append(driverTrips)
        }
        let dispatcher = try await server.services.signIn(email: dispatcherUser.email)
        var sessions: [AuthSession] = []
        for driver in drivers { sessions.append(try await server.services.signIn(email: driver.email)) }
        return CarrierFixture(tenant: tenant, dispatcher: dispatcher, drivers: sessions, trips: trips, orders: orders, expenses: expenses)
    }
}

extension CarrierFixture {
    /// Everything that says what the carrier's data is (documents and the
    /// feed counter): replays and retries must never change it.
    public func fingerprint(_ server: TestServer) async throws -> [String] {
        let store = server.store
        var lines = try Self.lines(try await store.trips.documents(scope, page: .all))
            + Self.lines(try await store.orders.documents(scope, page: .all))
            + Self.lines(try await store.notifications.documents(scope, page: .all))
        for trip in try await store.trips.list(scope) {
            lines += try Self.lines(try await store.expenses.documents(trip: trip.id, scope, page: .all))
        }
        lines.append("counter \(try await store.changeCounter(tenant.id).counter)")
        return lines
    }

    /// One line per document of the page.
    static func lines(_ page: DocumentPage) throws -> [String] {
        guard let documents = try JSONSerialization.jsonObject(with: Data(page.array.utf8)) as? [Any] else {
            throw TestSetupError("not a JSON array: \(page.array)")
        }
        return try documents.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]), as: UTF8.self) }
    }
}
