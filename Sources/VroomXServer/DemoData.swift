import Foundation
import Logging
import VroomXModels

/// A demo carrier to try VroomX with: a dispatcher, three drivers, their
/// trips, orders, expenses and messages. Seeded once; a second start with
/// `--demo` finds it and leaves it alone.
public enum DemoData {
    public static let dispatcherEmail = "dispatch@demo-carrier.example"
    public static let driverEmails = ["alex@demo-carrier.example", "sam@demo-carrier.example", "jordan@demo-carrier.example"]

    /// Where the demo's stops are (city centres), so arrivals, the map and
    /// computed ETAs have something to work with.
    public static let places: [String: GeoPoint] = [
        "Houston, TX": GeoPoint(latitude: 29.7604, longitude: -95.3698), "Atlanta, GA": GeoPoint(latitude: 33.7490, longitude: -84.3880),
        "Marietta, GA": GeoPoint(latitude: 33.9526, longitude: -84.5499), "Miami, FL": GeoPoint(latitude: 25.7617, longitude: -80.1918),
        "Savannah, GA": GeoPoint(latitude: 32.0809, longitude: -81.0912), "Orlando, FL": GeoPoint(latitude: 28.5384, longitude: -81.3789),
        "Jacksonville, FL": GeoPoint(latitude: 30.3322, longitude: -81.6557), "Dallas, TX": GeoPoint(latitude: 32.7767, longitude: -96.7970),
        "Tampa, FL": GeoPoint(latitude: 27.9506, longitude: -82.4572), "Chicago, IL": GeoPoint(latitude: 41.8781, longitude: -87.6298),
        "Denver, CO": GeoPoint(latitude: 39.7392, longitude: -104.9903), "Naperville, IL": GeoPoint(latitude: 41.7508, longitude: -88.1535),
        "Boulder, CO": GeoPoint(latitude: 40.0150, longitude: -105.2705), "Seattle, WA": GeoPoint(latitude: 47.6062, longitude: -122.3321),
        "Los Angeles, CA": GeoPoint(latitude: 34.0522, longitude: -118.2437), "Portland, OR": GeoPoint(latitude: 45.5152, longitude: -122.6784),
        "Reno, NV": GeoPoint(latitude: 39.5296, longitude: -119.8138),
    ]

    /// Returns true when it seeded, false when the demo carrier already existed.
    @discardableResult
    public static func seedIfNeeded(_ store: Store, logger: Logger) async throws -> Bool {
        if try await !store.people.accounts(email: dispatcherEmail).isEmpty {
            logger.info("demo carrier already present")
            return false
        }
        let (tenant, _) = try await store.people.createTenant(name: "Demo Auto Transport", dispatcherEmail: dispatcherEmail)
        let t = tenant.id
        let alex = try await store.people.createDriver(tenant: t, .init(email: driverEmails[0], name: "Alex Rivera", phone: "+1 555 0101",
                                                                 payType: .percentage, payRate: 2500))
        let sam = try await store.people.createDriver(tenant: t, .init(email: driverEmails[1], name: "Sam Chen", phone: "+1 555 0102",
                                                                payType: .perMile, payRate: 65))
        let jordan = try await store.people.createDriver(tenant: t, .init(email: driverEmails[2], name: "Jordan Blake", phone: "+1 555 0103",
                                                                   payType: .perTrip, payRate: 90000))
        let today = LocalDate(store.clock.now)
        // Who the loads are for: a broker, a dealer group and an auction.
        let broker = try await store.customers.create(.init(
            name: "Midwest Auto Brokers", kind: .broker, billingContact: "Dana Reyes", email: "billing@midwestauto.example",
            phone: "+1 312 555 0100", address: "200 W Adams St, Chicago, IL 60606", paymentTerms: "Net 30"), tenant: t)
        let dealer = try await store.customers.create(.init(
            name: "Sunshine Motor Group", kind: .dealer, billingContact: "Luis Ortega", email: "ap@sunshinemotors.example",
            phone: "+1 305 555 0140", address: "1200 Biscayne Blvd, Miami, FL 33132", paymentTerms: "Net 15"), tenant: t)
        let auction = try await store.customers.create(.init(
            name: "Lakeshore Auto Auction", kind: .auction, billingContact: "Priya Shah", email: "titles@lakeshoreauction.example",
            phone: "+1 773 555 0177", paymentTerms: "Quick pay"), tenant: t)

        // Alex: a finished run, one on the road, one coming up.
        let done = try await trip(store, t, "T-1001", alex, today.adding(days: -9), today.adding(days: -6),
                                  "Houston, TX", "Atlanta, GA", 640000, 790)
        let rolling = try await trip(store, t, "T-1002", alex, today.adding(days: -1), today.adding(days: 2),
                                     "Atlanta, GA", "Miami, FL", 520000, 660)
        let next = try await trip(store, t, "T-1003", alex, today.adding(days: 4), today.adding(days: 7),
                                  "Miami, FL", "Dallas, TX", 710000, 1310)
        try await orders(store, t, done, [
            ("O-5001", Vehicle(year: 2021, make: "Toyota", model: "Camry", vin: "4T1B11HK4MU123456", color: "Silver"), "Houston, TX", "Atlanta, GA"),
            ("O-5002", Vehicle(year: 2019, make: "Honda", model: "Accord", vin: "1HGCV1F39KA012345", color: "Black"), "Houston, TX", "Marietta, GA"),
        ], driver: alex, deliver: true, customer: broker)
        _ = try await store.trips.update(done.id, .init(status: .inProgress), tenant: t)
        _ = try await store.trips.update(done.id, .init(status: .completed), tenant: t)
        // Getting paid: each delivery prepared a draft. O-5001's went out on delivery day and half of it came in by check;
        // O-5002's waits in the drafts for a dispatcher to check and send.
        if let draft = try await store.invoices.page(status: .draft, customer: broker.id, offset: 0, limit: 10, tenant: t)
            .first(where: { $0.orders.first?.number == "O-5001" }) {
            _ = try await store.invoices.update(draft.id, .init(issuedOn: today.adding(days: -6)), tenant: t)
            _ = try await store.invoices.send(draft.id, email: false, tenant: t)
            _ = try await store.invoices.recordPayment(draft.id, .init(amountCents: 150_000, method: .check, reference: "20417",
                                                                       receivedOn: today.adding(days: -1)), tenant: t)
        }
        let rollingOrders = try await orders(store, t, rolling, [
            ("O-5003", Vehicle(year: 2022, make: "Ford", model: "F-150", vin: "1FTFW1E51NFA00001", color: "Blue"), "Atlanta, GA", "Miami, FL"),
            ("O-5004", Vehicle(year: 2020, make: "Tesla", model: "Model 3", vin: "5YJ3E1EA9LF000123", color: "White"), "Savannah, GA", "Orlando, FL"),
            ("O-5005", Vehicle(year: 2018, make: "BMW", model: "X5", vin: "5UXKR0C50J0X00042", color: "Gray"), "Jacksonville, FL", "Miami, FL"),
        ], driver: alex, deliver: false, customer: dealer)
        _ = try await store.trips.update(rolling.id, .init(status: .inProgress), tenant: t)
        let onTruck = rollingOrders.first { $0.number == "O-5003" }!
        let savannah = rollingOrders.first { $0.number == "O-5004" }!
        _ = try await store.orders.updateStatus(onTruck.id, to: .pickedUp, occurredAt: nil, .driver(tenant: t, driver: alex.id),
                                              asHistory: true)
        try await orders(store, t, next, [
            ("O-5006", Vehicle(year: 2023, make: "Chevrolet", model: "Tahoe", vin: "1GNSKBKD1PR000777", color: "Red"), "Miami, FL", "Dallas, TX"),
            ("O-5007", Vehicle(year: 2017, make: "Nissan", model: "Altima", vin: "1N4AL3AP6HC000321", color: "Black"), "Tampa, FL", "Houston, TX"),
        ], driver: alex, deliver: false, customer: broker)

        // Sam and Jordan.
        let samTrip = try await trip(store, t, "T-2001", sam, today, today.adding(days: 3), "Chicago, IL", "Denver, CO", 450000, 1000)
        try await orders(store, t, samTrip, [
            ("O-6001", Vehicle(year: 2021, make: "Subaru", model: "Outback", vin: "4S4BTANC6M3000111", color: "Green"), "Chicago, IL", "Denver, CO"),
            ("O-6002", Vehicle(year: 2016, make: "Jeep", model: "Wrangler", vin: "1C4BJWDG4GL000222", color: "Yellow"), "Naperville, IL", "Boulder, CO"),
        ], driver: sam, deliver: false, customer: auction)
        let jordanTrip = try await trip(store, t, "T-3001", jordan, today.adding(days: 2), today.adding(days: 5),
                                        "Seattle, WA", "Los Angeles, CA", 380000, 1135)
        try await orders(store, t, jordanTrip, [
            ("O-7001", Vehicle(year: 2024, make: "Rivian", model: "R1S", vin: "7PDSGABA1RN000999", color: "Blue"), "Seattle, WA", "Los Angeles, CA"),
        ], driver: jordan, deliver: false, customer: broker)
        _ = try await store.orders.create(.init(number: "O-8001", vehicle: Vehicle(year: 2015, make: "Mazda", model: "CX-5"),
                                              pickup: Stop(address: "Portland, OR", location: places["Portland, OR"]),
                                              delivery: Stop(address: "Reno, NV", location: places["Reno, NV"]),
                                              revenueCents: 90000, paymentTerms: "COD", customerID: dealer.id), tenant: t)
        // An auction load for the dealer group: three vehicles released against their lot numbers, one that does not run.
        _ = try await store.orders.create(.init(number: "O-8002", vehicles: [
            Vehicle(year: 2020, make: "Honda", model: "Accord", vin: "1HGCV1F36LA000123", color: "White", type: .sedan, lotNumber: "2231",
                    priceCents: 38_000),
            Vehicle(year: 2018, make: "Chevrolet", model: "Silverado", color: "Black", type: .pickup, operable: false, lotNumber: "2232",
                    priceCents: 52_500),
            Vehicle(year: 2022, make: "Kia", model: "Sportage", color: "Gray", type: .suv, lotNumber: "2240", priceCents: 38_000),
        ], pickup: Stop(name: "Lakeshore Auto Auction", address: "Matteson, IL"),
           delivery: Stop(name: "Sunshine Motor Group", address: "Indianapolis, IN"), paymentTerms: "Net 15", customerID: auction.id), tenant: t)

        let alexTruck = try await fleet(store, t, today, alex: alex.id, sam: sam.id, jordan: jordan.id)

        // Alex on I-16 towards the Savannah pickup until an hour ago, a fix a minute.
        let road = (from: GeoPoint(latitude: 32.6000, longitude: -82.3000), to: GeoPoint(latitude: 32.2500, longitude: -81.5000))
        let fixes = (0...120).map { minute in
            let share = Double(minute) / 120
            return GeoPosition(latitude: road.from.latitude + (road.to.latitude - road.from.latitude) * share,
                               longitude: road.from.longitude + (road.to.longitude - road.from.longitude) * share, accuracyMeters: 6,
                               recordedAt: store.clock.now.addingTimeInterval(Double(minute - 180) * 60), speedMetersPerSecond: 11.6)
        }
        _ = try await store.location.record(RecordLocationsRequest(fixes: fixes), .driver(tenant: t, driver: alex.id))

        // Expenses Alex recorded (fuel with the truck, gallons and odometer: the fuel log).
        let alexScope = Scope.driver(tenant: t, driver: alex.id)
        for (trip, category, cents, daysAgo, note, fuel) in [
            (done.id, ExpenseCategory.fuel, 48_250, 8, "Love's, Lake Charles",
             FuelPurchase(equipmentID: alexTruck, quantityMilli: 120_500, odometerMiles: 412_350) as FuelPurchase?),
            (done.id, .tolls, 1_875, 7, "", nil), (done.id, .lodging, 8_900, 7, "Motel 6, Meridian", nil),
            (rolling.id, .fuel, 52_010, 1, "Pilot, Macon", FuelPurchase(equipmentID: alexTruck, quantityMilli: 131_200, odometerMiles: 413_200)),
        ] {
            _ = try await store.expenses.create(.init(tripID: trip, category: category, amountCents: cents,
                                                    date: today.adding(days: -daysAgo), notes: note, fuel: fuel), alexScope)
        }

        // Messages from dispatch.
        _ = try await store.notifications.send(.init(driverID: alex.id, type: .dispatchMessage, title: "Gate code for Savannah pickup",
                                              body: "Gate code is 4471. Ask for Maria at the front office.",
                                              tripID: rolling.id, orderID: savannah.id), tenant: t)
        _ = try await store.notifications.send(.init(driverID: alex.id, type: .urgent, title: "Hurricane detour",
                                              body: "I-95 closed south of Jacksonville. Take I-75 and call dispatch.",
                                              tripID: rolling.id), tenant: t)
        _ = try await store.notifications.send(.init(driverID: sam.id, type: .dispatchMessage, title: "Welcome to VroomX",
                                              body: "Your first trip is ready. Call dispatch with any questions."), tenant: t)
        // And Sam's answer, which dispatch has read: the Messages page shows the conversation.
        _ = try await store.conversations.send(.init(body: "Thanks! Picking up in Chicago at 8 tomorrow.", tripID: samTrip.id),
                                               .driver(tenant: t, driver: sam.id))
        try await store.conversations.markRead(driver: sam.id, tenant: t)
        logger.info("seeded demo carrier", metadata: ["tenant": "\(t)"])
        return true
    }

    /// Trucks and trailers: one of each for Alex and Sam, a truck for
    /// Jordan, one in the shop; papers (one running out soon, one already
    /// out) and Alex's odometer readings. Returns Alex's truck.
    private static func fleet(_ store: Store, _ t: ID<Tenant>, _ today: LocalDate, alex: ID<Driver>, sam: ID<Driver>,
                              jordan: ID<Driver>) async throws -> ID<Equipment> {
        let units: [(EquipmentFields, ID<Driver>?)] = [
            (EquipmentFields(kind: .truck, unitNumber: "T-12", make: "Peterbilt", model: "389", year: 2019, vin: "1XPBDP9X9KD123456",
                             plate: "4KH 221", plateState: "TX", specs: EquipmentSpecs(gvwrPounds: 80_000, fuelType: .diesel)), alex),
            (EquipmentFields(kind: .trailer, unitNumber: "TR-7", make: "Cottrell", model: "CX-09LS", year: 2021, vin: "5JYAH1024KM000777",
                             plate: "9TR 107", plateState: "TX", specs: EquipmentSpecs(trailerType: .open, capacityCars: 9)), alex),
            (EquipmentFields(kind: .truck, unitNumber: "T-14", make: "Freightliner", model: "Cascadia", year: 2020, vin: "1FUJHHDR0LL654321",
                             plate: "22 8841", plateState: "IL", specs: EquipmentSpecs(gvwrPounds: 80_000, fuelType: .diesel)), sam),
            (EquipmentFields(kind: .trailer, unitNumber: "TR-9", make: "Sun Country", model: "Enclosed 53", year: 2022, vin: "4ZEAH1821NT000888",
                             plate: "91 5510", plateState: "IL", specs: EquipmentSpecs(trailerType: .enclosed, capacityCars: 6)), sam),
            (EquipmentFields(kind: .truck, unitNumber: "T-15", make: "Kenworth", model: "W900", year: 2022, vin: "1XKYD49X5NJ112233",
                             plate: "C81 022", plateState: "WA", specs: EquipmentSpecs(gvwrPounds: 80_000, fuelType: .diesel)), jordan),
            (EquipmentFields(kind: .truck, unitNumber: "T-20", make: "Freightliner", model: "Cascadia", year: 2022, vin: "3AKJHHDR9NS999001",
                             status: .inShop, notes: "Clutch replacement at Rush Truck Center"), nil),
        ]
        var ids: [String: ID<Equipment>] = [:]
        for (fields, driver) in units {
            let unit = try await store.fleet.create(fields, tenant: t)
            if let driver { _ = try await store.fleet.assign(unit.id, to: driver, tenant: t) }
            ids[unit.unitNumber] = unit.id
            _ = try await store.fleet.addPaper(unit.id, .init(kind: .insurance, number: "POL-88231", expiresOn: today.adding(days: 200)), tenant: t)
        }
        _ = try await store.fleet.addPaper(ids["T-12"]!, .init(kind: .registration, number: "TX-REG-4KH221", expiresOn: today.adding(days: 18)), tenant: t)
        _ = try await store.fleet.addPaper(ids["TR-9"]!, .init(kind: .annualInspection, expiresOn: today.adding(days: -5),
                                                                    notes: "Book at the Joliet yard"), tenant: t)
        let truck = ids["T-12"]!
        for (miles, daysAgo) in [(412_300, 9), (412_980, 6), (413_250, 1)] {
            _ = try await store.fleet.recordOdometer(.init(equipmentID: truck, miles: miles, recordedAt: store.clock.now.addingTimeInterval(-Double(daysAgo) * 86_400)),
                                               .driver(tenant: t, driver: alex))
        }
        return truck
    }

    /// A trip planned for a driver; it is assigned once its orders are on it.
    private static func trip(_ store: Store, _ tenant: ID<Tenant>, _ number: String, _ driver: Driver, _ start: LocalDate,
                             _ end: LocalDate, _ origin: String, _ destination: String, _ revenue: Int, _ miles: Int) async throws -> Trip {
        // Revenue follows the orders; pay is what the driver's terms give for the whole. The trip handed back
        // carries the revenue its orders will add up to, for `orders` to share out among them.
        var planned = try await store.trips.create(.init(number: number, startDate: start, endDate: end, origin: origin,
                                                         destination: destination,
                                                         driverPayCents: driver.payType.driverPay(rate: driver.payRate, revenueCents: revenue,
                                                                                                  miles: miles, vehicles: 0),
                                                         miles: miles), tenant: tenant)
        planned.revenueCents = revenue
        return planned
    }

    @discardableResult
    private static func orders(_ store: Store, _ tenant: ID<Tenant>, _ trip: Trip, _ specs: [(String, Vehicle, String, String)],
                               driver: Driver, deliver: Bool, customer: Customer) async throws -> [Order] {
        var created: [Order] = []
        // The trip's revenue shared out in whole dollars, what is left to the first order, so the orders add up to it.
        let share = trip.revenueCents / max(specs.count, 1) / 100 * 100, odd = trip.revenueCents - share * specs.count
        for (index, (number, vehicle, from, to)) in specs.enumerated() {
            let order = try await store.orders.create(.init(
                number: number, tripID: trip.id, vehicle: vehicle,
                pickup: Stop(name: "\(from) dealer", address: from, contactName: "Front desk", contactPhone: "+1 555 0199",
                             windowStart: trip.startDate, windowEnd: trip.startDate?.adding(days: 1), location: places[from]),
                delivery: Stop(name: "\(to) customer", address: to, contactName: "Customer", contactPhone: "+1 555 0188",
                               windowStart: trip.endDate, windowEnd: trip.endDate?.adding(days: 1), location: places[to]),
                revenueCents: share + (index == 0 ? odd : 0), customerID: customer.id,
                // A load board's reference, as brokers post them.
                externalLoadID: customer.kind == .broker ? "CD-" + number.filter(\.isNumber) : nil), tenant: tenant)
            created.append(order)
        }
        _ = try await store.trips.assign(trip.id, to: driver.id, tenant: tenant)
        guard deliver else { return try await store.orders.list(.dispatch(tenant: tenant), trip: trip.id) }
        let scope = Scope.driver(tenant: tenant, driver: driver.id)
        for order in created {
            let pickedUp = trip.startDate?.startOfDay.addingTimeInterval(10 * 3600)
            let delivered = trip.endDate?.startOfDay.addingTimeInterval(15 * 3600)
            _ = try await store.orders.updateStatus(order.id, to: .pickedUp, occurredAt: pickedUp, scope, asHistory: true)
            _ = try await store.orders.updateStatus(order.id, to: .delivered, occurredAt: delivered, scope, asHistory: true)
        }
        return try await store.orders.list(.dispatch(tenant: tenant), trip: trip.id)
    }
}
