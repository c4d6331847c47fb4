import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Drivers' positions through the API: breadcrumbs stored once, geofenced
/// arrivals (dwell, pass-by, jitter at the fence, late offline batches),
/// tracks, last positions and the computed ETA, each carrier's alone.
@Suite("Location")
struct LocationTests {
    /// A pickup yard in Joliet, IL.
    static let yard = GeoPoint(latitude: 41.52519, longitude: -88.08340)

    /// A point `metres` north of the yard.
    static func north(_ metres: Double) -> GeoPoint {
        GeoPoint(latitude: yard.latitude + metres / 111_195, longitude: yard.longitude)
    }

    /// Fixes every `every` seconds from `start`, at the given distances north of the yard.
    static func fixes(_ distances: [Double], from start: Date, every: TimeInterval = 30, accuracy: Double = 8) -> [GeoPosition] {
        distances.enumerated().map { index, metres in
            let point = north(metres)
            return GeoPosition(latitude: point.latitude, longitude: point.longitude, accuracyMeters: accuracy,
                               recordedAt: start.addingTimeInterval(Double(index) * every), speedMetersPerSecond: nil)
        }
    }

    /// Instants as the wire carries them (milliseconds), so they compare equal after a round trip.
    static func wholeSeconds(_ date: Date) -> Date { Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)) }

    /// The carrier's first order with its pickup at the yard (fence `radius`).
    /// Positions count on a trip under way, and from when the order exists:
    /// the trip is started and the clock moved on 40 minutes (tokens last an hour).
    static func fencedOrder(_ api: TestAPI, _ carrier: CarrierFixture, _ server: TestServer, radius: Int? = nil) async throws -> Order {
        let order = carrier.orders[carrier.trips[0][0].id]![0]
        var pickup = order.pickup
        pickup.location = yard
        pickup.geofenceRadiusMeters = radius
        let updated = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(pickup: pickup),
                                         token: carrier.dispatcher.accessToken)
        #expect(updated.status == 200, "\(updated.text)")
        // Positions count on a trip under way.
        let started = try await api.call(.dispatchUpdateTrip, carrier.trips[0][0].id.rawValue, json: UpdateTripRequest(status: .inProgress),
                                         token: carrier.dispatcher.accessToken)
        #expect(started.status == 200, "\(started.text)")
        server.clock.advance(by: 2400)
        return try updated.decode(Order.self)
    }

    static func record(_ api: TestAPI, _ fixes: [GeoPosition], token: String) async throws -> RecordLocationsResult {
        let answer = try await api.call(.recordLocations, json: RecordLocationsRequest(fixes: fixes), token: token)
        #expect(answer.status == 200, "\(answer.text)")
        return try answer.decode(RecordLocationsResult.self)
    }

    @Test("two minutes inside the fence is an arrival, stamped when the truck came in, in the feed once; driving through is not",
          arguments: TestBackend.available)
    func dwellAndPassBy(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let driver = carrier.driver.accessToken, dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            let order = try await Self.fencedOrder(api, carrier, server)
            #expect(order.pickup.location == Self.yard && order.arrivedAtPickup == nil)
            let start = Self.wholeSeconds(server.clock.now).addingTimeInterval(-2300)
            // Driving through at highway speed: 60 s inside the 150 m fence, then gone.
            let passBy = try await Self.record(api, Self.fixes([2000, 1000, 400, 120, 20, 100, 140, 600, 1500], from: start), token: driver)
            #expect(passBy.stored == 9 && passBy.arrivals.isEmpty)
            let cursor = try await api.call(.sync, query: "since=0", token: dispatch).decode(SyncPage.self).cursor
            // Back later and parked in the yard for three minutes.
            let parked = Self.fixes([900, 300, 140, 60, 40, 45, 50, 42, 38], from: start.addingTimeInterval(1200))
            let result = try await Self.record(api, parked, token: driver)
            #expect(result.arrivals == [StopArrival(orderID: order.id, stop: .pickup, arrivedAt: parked[2].recordedAt)])
            let arrived = try await api.call(.dispatchOrder, order.id.rawValue, token: dispatch).decode(Order.self)
            #expect(arrived.arrivedAtPickup == parked[2].recordedAt && arrived.version == order.version + 1)
            let feed = try await api.call(.sync, query: "since=\(cursor)", token: dispatch).decode(SyncPage.self).changes
            #expect(feed.filter { $0.id == order.id.rawValue }.count == 1)
            // The driver's phone hears of it too.
            let mine = try await api.call(.order, order.id.rawValue, token: driver).decode(Order.self)
            #expect(mine.arrivedAtPickup == parked[2].recordedAt)
            // Staying longer changes nothing more: dispatch is told once.
            let more = try await Self.record(api, Self.fixes([30, 35, 30], from: start.addingTimeInterval(1600)), token: driver)
            #expect(more.arrivals.isEmpty)
            #expect(try await api.call(.dispatchOrder, order.id.rawValue, token: dispatch).decode(Order.self).version == arrived.version)
            // The other driver parked at the same yard arrives nowhere: it is not their order.
            let other = try await Self.record(api, Self.fixes([40, 40, 40, 40, 40, 40, 40], from: start), token: carrier.drivers[1].accessToken)
            #expect(other.arrivals.isEmpty)
        }
    }

    @Test("a driver with 400 vehicles waiting at one yard arrives at every one of them (not only the first 200 looked at)",
          arguments: TestBackend.available)
    func manyOrdersAtOneYard(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        try await server.run { api in
            let first = try await Self.fencedOrder(api, carrier, server)
            let trip = carrier.trips[0][0].id
            // Elsewhere on the trip too: orders whose stops are far away are never looked at.
            let far = Stop(name: "Far lot", address: "1 Far Rd", location: GeoPoint(latitude: 33.7, longitude: -84.4))
            let orders = (0..<400).map { index in
                CreateOrderRequest(number: "Y-\(index)", tripID: trip, vehicle: Vehicle(year: 2021, make: "Ford", model: "F-150", vin: ""),
                                   pickup: first.pickup, delivery: index.isMultiple(of: 2) ? far : first.delivery, revenueCents: 50_000)
            } + (0..<300).map { index in
                CreateOrderRequest(number: "F-\(index)", tripID: trip, vehicle: Vehicle(year: 2021, make: "Ford", model: "F-150", vin: ""),
                                   pickup: far, delivery: far, revenueCents: 50_000)
            }
            #expect(try await server.store.orders.createMany(orders, tenant: carrier.tenant.id) == 700)
            let start = Self.wholeSeconds(server.clock.now).addingTimeInterval(-600)
            let parked = try await Self.record(api, Self.fixes([300, 120, 40, 45, 50, 42, 38, 40], from: start), token: carrier.driver.accessToken)
            let arrived = Set(parked.arrivals.filter { $0.stop == .pickup }.map(\.orderID))
            #expect(arrived.count == 401, "the first order and the 400 at the yard: \(arrived.count)")
            // One more vehicle at another yard 10 km on, among the 701 open orders: its arrival is seen too.
            var second = first.pickup
            second.location = Self.north(10_000)
            #expect(try await server.store.orders.createMany([CreateOrderRequest(
                number: "Z-1", tripID: trip, vehicle: Vehicle(year: 2021, make: "Ford", model: "F-150", vin: ""), pickup: second,
                delivery: far, revenueCents: 50_000)], tenant: carrier.tenant.id) == 1)
            let there = try await Self.record(api, Self.fixes([10_300, 10_120, 10_040, 10_045, 10_050, 10_042, 10_038, 10_040],
                                                              from: start.addingTimeInterval(300)), token: carrier.driver.accessToken)
            #expect(there.arrivals.count == 1 && there.arrivals.first?.stop == .pickup, "\(there.arrivals)")
        }
        // Found from the driver's trip under way, not by reading the carrier's orders or the driver's every trip.
        if backend == .sqlite {
            let driver = carrier.driverID(0)
            let queries = [LocationRepository.arrivalCandidatesQuery(driver: driver, tenant: carrier.tenant.id, near: Self.fixes([40], from: server.clock.now)),
                           LocationRepository.tripUnderWayQuery(of: driver, tenant: carrier.tenant.id)]
            var plans: [String] = []
            for query in queries {
                plans.append(try await server.services.database.read { db in
                    try await db.query("EXPLAIN QUERY PLAN " + query).map { try $0.string("detail") }.joined(separator: "\n")
                })
            }
            #expect(plans[0].contains("trips_under_way") && plans[0].contains("orders_by_trip"), "\(plans[0])")
            #expect(plans[1].contains("trips_under_way"), "\(plans[1])")
        }
    }

    @Test("jitter across the fence does not reset the stay; leaving beyond radius + max(10 %, 20 m) does", arguments: TestBackend.available)
    func hysteresis(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let driver = carrier.driver.accessToken
        try await server.run { api in
            let order = try await Self.fencedOrder(api, carrier, server)  // 150 m: leaving counts beyond 170 m
            let start = Self.wholeSeconds(server.clock.now).addingTimeInterval(-2300)
            // In and out past 170 m every minute: never two minutes in a row.
            let flapping = try await Self.record(api, Self.fixes([140, 150, 200, 145, 148, 190, 140, 146, 400], from: start), token: driver)
            #expect(flapping.arrivals.isEmpty)
            // Jitter between 140 m and 165 m (outside the radius, inside the exit radius) for three minutes: arrived.
            let jitter = Self.fixes([300, 140, 165, 150, 162, 149, 165, 160], from: start.addingTimeInterval(1800))
            let result = try await Self.record(api, jitter, token: driver)
            #expect(result.arrivals.map(\.arrivedAt) == [jitter[1].recordedAt])
            #expect(try await api.call(.dispatchOrder, order.id.rawValue, token: carrier.dispatcher.accessToken)
                .decode(Order.self).arrivedAtPickup == jitter[1].recordedAt)
        }
    }

    @Test("a late batch from an offline phone is judged in the order the fixes were recorded; the same batch twice is stored once",
          arguments: TestBackend.available)
    func lateBatches(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let driver = carrier.driver.accessToken
        try await server.run { api in
            let order = try await Self.fencedOrder(api, carrier, server, radius: 300)
            let start = Self.wholeSeconds(server.clock.now).addingTimeInterval(-2300)
            let stay = Self.fixes([250, 100, 80, 90, 70, 85, 1000], from: start)
            // The end of the stay arrives first (the phone sent what it had when it got signal)…
            let later = try await Self.record(api, Array(stay[3...]), token: driver)
            #expect(later.arrivals.isEmpty, "90 s inside is not yet a stay")
            // …then the start, recorded earlier: together they are three minutes inside, from the first fix in.
            let earlier = try await Self.record(api, Array(stay[..<3]), token: driver)
            #expect(earlier.arrivals == [StopArrival(orderID: order.id, stop: .pickup, arrivedAt: stay[0].recordedAt)])
            // Sent again (the answer was lost): nothing new.
            let again = try await Self.record(api, stay, token: driver)
            #expect(again.stored == 0 && again.duplicates == stay.count && again.arrivals.isEmpty)
            // Through the outbox path, as a mutation, the same.
            let mutation = Mutation(.recordLocations(RecordLocationsRequest(fixes: stay)))
            let batch = try await api.call(.mutations, json: MutationBatch([mutation]), token: driver).decode(MutationBatchResult.self)
            #expect(batch.results.map(\.outcome) == [.applied])
        }
    }

    @Test("in one offline batch, a pickup completed and then positions at the delivery make the delivery arrival", arguments: TestBackend.available)
    func deliveryArrivalAfterPickupInOneBatch(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let driver = carrier.driver.accessToken
        try await server.run { api in
            var order = try await Self.fencedOrder(api, carrier, server)
            var delivery = order.delivery
            delivery.location = GeoPoint(latitude: 41.0, longitude: -87.0)
            order = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(delivery: delivery),
                                       token: carrier.dispatcher.accessToken).decode(Order.self)
            let now = Self.wholeSeconds(server.clock.now)
            let pickup = try await api.readyInspection(of: order.id, .pickup, token: driver)
            let atDelivery = (0..<7).map { index in
                GeoPosition(latitude: 41.0, longitude: -87.0, accuracyMeters: 5, recordedAt: now.addingTimeInterval(Double(-600 + index * 30)))
            }
            // Both waited on the phone; the positions count only because the pickup before them in the batch happened.
            let batch = MutationBatch([
                Mutation(.completeInspection(.init(inspectionID: pickup, occurredAt: now.addingTimeInterval(-1200)))),
                Mutation(.recordLocations(RecordLocationsRequest(fixes: atDelivery))),
            ])
            let results = try await api.call(.mutations, json: batch, token: driver).decode(MutationBatchResult.self).results
            #expect(results.map(\.outcome) == [.applied, .applied], "\(results)")
            let after = try await server.store.orders.order(order.id, carrier.scope)
            #expect(after.status == .pickedUp)
            #expect(after.arrivedAtDelivery == atDelivery[0].recordedAt)
        }
    }

    @Test("arrivals count on trips under way, from when the order exists, pickup before delivery; a late batch moves one earlier; a moved stop starts over",
          arguments: TestBackend.available)
    func arrivalRules(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 1)
        let driver = carrier.driver.accessToken, dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            var order = try await Self.fencedOrder(api, carrier, server)
            let now = Self.wholeSeconds(server.clock.now)
            // Parked in the yard long before the order existed: not an arrival at it.
            let before = try await Self.record(api, Self.fixes([30, 30, 30, 30, 30, 30, 30],
                                                               from: order.createdAt.addingTimeInterval(-LocationRules.arrivalLeadTime - 900)), token: driver)
            #expect(before.stored == 7 && before.arrivals.isEmpty, "\(before)")
            // At the delivery while the vehicle is not yet on the truck: not a delivery arrival.
            var delivery = order.delivery
            delivery.location = GeoPoint(latitude: 41.0, longitude: -87.0)
            order = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(delivery: delivery), token: dispatch)
                .decode(Order.self)
            let atDelivery = (0..<7).map { index in
                GeoPosition(latitude: 41.0, longitude: -87.0, accuracyMeters: 5, recordedAt: now.addingTimeInterval(Double(-2000 + index * 30)))
            }
            #expect(try await Self.record(api, atDelivery, token: driver).arrivals.isEmpty)
            // Parked in the yard; then a late batch shows the stay began earlier: the arrival moves back to it.
            let later = Self.fixes([40, 40, 40, 40, 40, 40, 40], from: now.addingTimeInterval(-900))
            #expect(try await Self.record(api, later, token: driver).arrivals.map(\.arrivedAt) == [later[0].recordedAt])
            let earlier = Self.fixes([45, 45, 45, 45, 45, 45], from: now.addingTimeInterval(-1100))
            #expect(try await Self.record(api, earlier, token: driver).arrivals.map(\.arrivedAt) == [earlier[0].recordedAt])
            // Dispatch moves the pickup: the arrival at the old place no longer stands.
            var pickup = order.pickup
            pickup.location = Self.north(5000)
            let moved = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(pickup: pickup), token: dispatch)
                .decode(Order.self)
            #expect(moved.arrivedAtPickup == nil)
            // One batch spans at most 6 hours (the newest kept, older fixes left out, never the batch refused);
            // fixes older than the retention, or stamped by a clock reset to 1970, are left out; off a trip, nothing is kept.
            let wide = [GeoPosition(latitude: 41, longitude: -87, accuracyMeters: 5, recordedAt: now.addingTimeInterval(-7 * 3600)),
                        GeoPosition(latitude: 41, longitude: -87, accuracyMeters: 5, recordedAt: Date(timeIntervalSince1970: 0)),
                        GeoPosition(latitude: 41, longitude: -87, accuracyMeters: 5, recordedAt: now)]
            let kept = try await Self.record(api, wide, token: driver)
            #expect(kept.stored == 1 && kept.dropped == 2, "\(kept)")
            let ancient = try await Self.record(api, [GeoPosition(latitude: 41, longitude: -87, accuracyMeters: 5,
                                                                  recordedAt: now.addingTimeInterval(-91 * 86_400))], token: driver)
            #expect(ancient.stored == 0 && ancient.dropped == 1)
            let offDuty = try await Self.record(api, Self.fixes([10, 20], from: now.addingTimeInterval(-60)), token: carrier.drivers[1].accessToken)
            #expect(offDuty.stored == 0 && offDuty.dropped == 2)
            #expect(try await api.call(.dispatchPositions, token: dispatch).decode(Items<DriverPosition>.self).items.map(\.driverID)
                    == [carrier.drivers[0].driver!.id])
            // Two fixes in the same second are one.
            let twice = [GeoPosition(latitude: 41.1, longitude: -87, accuracyMeters: 5, recordedAt: now.addingTimeInterval(-10.2)),
                         GeoPosition(latitude: 41.2, longitude: -87, accuracyMeters: 5, recordedAt: now.addingTimeInterval(-10.7))]
            let same = try await Self.record(api, twice, token: driver)
            #expect(same.stored == 1 && same.duplicates == 1, "\(same)")
        }
    }

    @Test("bad positions are refused with the field named, inaccurate ones dropped, and a batch is bounded", arguments: TestBackend.available)
    func badInput(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let driver = carrier.driver.accessToken
        try await server.run { api in
            #expect(try await api.call(.dispatchUpdateTrip, carrier.trips[0][0].id.rawValue, json: UpdateTripRequest(status: .inProgress),
                                        token: carrier.dispatcher.accessToken).status == 200)
            let now = Self.wholeSeconds(server.clock.now)
            let good = GeoPosition(latitude: 41.5, longitude: -88.1, accuracyMeters: 10, recordedAt: now.addingTimeInterval(-60))
            func with(_ change: (inout GeoPosition) -> Void) -> GeoPosition { var fix = good; change(&fix); return fix }
            for (fix, field) in [
                (with { $0.latitude = 91 }, "fixes[0]"),
                (with { $0.longitude = -180.5 }, "fixes[0]"),
                (with { $0.accuracyMeters = -1 }, "fixes[0].accuracy_meters"),
                (with { $0.accuracyMeters = nil }, "fixes[0].accuracy_meters"),
                (with { $0.speedMetersPerSecond = 500 }, "fixes[0].speed_meters_per_second"),
                (with { $0.heading = 720 }, "fixes[0].heading"),
            ] {
                let refused = try await api.call(.recordLocations, json: RecordLocationsRequest(fixes: [fix]), token: driver)
                #expect(refused.status == 422 && refused.error?.field == field, "\(field): \(refused.text)")
            }
            let empty = try await api.call(.recordLocations, json: RecordLocationsRequest(fixes: []), token: driver)
            #expect(empty.status == 422 && empty.error?.field == "fixes")
            let tooMany = (0...LocationRules.maxFixesPerBatch).map { index in with { $0.recordedAt = now.addingTimeInterval(-Double(index)) } }
            let refused = try await api.call(.recordLocations, json: RecordLocationsRequest(fixes: tooMany), token: driver)
            #expect(refused.status == 422 && refused.error?.field == "fixes")
            let mixed = try await Self.record(api, [good, with { $0.accuracyMeters = 400; $0.recordedAt = now }], token: driver)
            #expect(mixed.stored == 1 && mixed.dropped == 1)
            // A phone whose clock runs ahead: its fixes "in the future" are left out and counted, the good ones of the batch kept.
            let ahead = try await Self.record(api, [with { $0.recordedAt = now.addingTimeInterval(-30) },
                                                    with { $0.recordedAt = now.addingTimeInterval(600) },
                                                    with { $0.recordedAt = now.addingTimeInterval(3600) }], token: driver)
            #expect(ahead.stored == 1 && ahead.future == 2 && ahead.leftOut == 2, "\(ahead)")
            // Dispatch does not record positions; a stop's point must be on the globe.
            #expect(try await api.call(.recordLocations, json: RecordLocationsRequest(fixes: [good]), token: carrier.dispatcher.accessToken).status == 403)
            let order = carrier.orders[carrier.trips[0][0].id]![0]
            var pickup = order.pickup
            pickup.location = GeoPoint(latitude: 100, longitude: 0)
            let badStop = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(pickup: pickup),
                                             token: carrier.dispatcher.accessToken)
            #expect(badStop.status == 422 && badStop.error?.field == "pickup.location")
            pickup.location = Self.yard
            pickup.geofenceRadiusMeters = 10
            let badRadius = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(pickup: pickup),
                                               token: carrier.dispatcher.accessToken)
            #expect(badRadius.status == 422 && badRadius.error?.field == "pickup.geofence_radius_meters")
        }
    }

    @Test("dispatch sees last positions, a trip's track as GeoJSON and a computed ETA; another carrier sees none of it; old breadcrumbs go",
          arguments: TestBackend.available)
    func positionsTracksAndRetention(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let driver = alpha.driver.accessToken, dispatch = alpha.dispatcher.accessToken
        try await server.run { api in
            let trip = alpha.trips[0][0]
            let order = try await Self.fencedOrder(api, alpha, server)
            // Heading for the yard at 25 m/s, 30 s apart: 15 km to go at the last fix.
            let start = Self.wholeSeconds(server.clock.now).addingTimeInterval(-600)
            let approach = Self.fixes(stride(from: 30_000.0, through: 15_000, by: -750).map { $0 }, from: start)
            _ = try await Self.record(api, approach, token: driver)

            let positions = try await api.call(.dispatchPositions, token: dispatch).decode(Items<DriverPosition>.self).items
            #expect(positions.count == 1 && positions[0].fix == approach.last && positions[0].tripID == trip.id)
            #expect(try await api.call(.dispatchPositions, token: beta.dispatcher.accessToken).decode(Items<DriverPosition>.self).items.isEmpty)

            let track = try await api.call(.dispatchTripTrack, trip.id.rawValue, token: dispatch)
            #expect(track.status == 200 && track.headers[.contentType]?.hasPrefix("application/geo+json") == true)
            let line = try track.decode(TripTrack.self)
            #expect(line.geometry.type == "LineString" && line.geometry.coordinates.count == approach.count)
            #expect(line.geometry.coordinates.first == [approach[0].longitude, approach[0].latitude], "GeoJSON is longitude first")
            #expect(try await api.call(.dispatchTripTrack, trip.id.rawValue, token: beta.dispatcher.accessToken).status == 404)
            #expect(try await api.call(.dispatchTripTrack, trip.id.rawValue, token: driver).status == 403)

            let progress = try await api.call(.dispatchOrderProgress, order.id.rawValue, token: dispatch).decode(OrderProgress.self)
            #expect(progress.nextStop == .pickup && progress.position == approach.last)
            let metres = try #require(progress.distanceMeters)
            #expect(abs(metres - 15_000) < 10)
            // 15 km × 1.25 road factor at 25 m/s: 750 s after the last fix (or now, if later).
            let eta = try #require(progress.computedETA)
            let expected = max(server.clock.now, approach.last!.recordedAt).addingTimeInterval(750)
            #expect(abs(eta.timeIntervalSince(expected)) < 5, "\(eta) vs \(expected)")
            #expect(try await api.call(.dispatchOrderProgress, order.id.rawValue, token: beta.dispatcher.accessToken).status == 404)

            // 91 days on, the breadcrumbs are gone; the last position stays.
            server.clock.advance(by: 91 * 86_400)
            try await server.store.location.pruneFixes(olderThan: TimeInterval(LocationRules.defaultRetentionDays) * 86_400)
            #expect(try await server.store.location.track(of: trip.id, tenant: alpha.tenant.id).geometry.coordinates.isEmpty)
            #expect(try await server.store.location.positions(tenant: alpha.tenant.id).count == 1)
        }
    }

    @Test("breadcrumbs past the retention go for every driver of every carrier, in slices; newer ones stay; found by age, not by reading every fix",
          arguments: TestBackend.available)
    func pruning(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 2, tripsPerDriver: 0)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0)
        let now = server.clock.now
        let retention: TimeInterval = 90 * 86_400
        let drivers = [(alpha.tenant.id, alpha.driverID(0)), (alpha.tenant.id, alpha.driverID(1)), (beta.tenant.id, beta.driverID(0))]
        // 3,400 old fixes a driver (10,200: two slices of up to 10,000), then 5 within the retention, one right at its edge.
        try await server.services.database.write { db in
            for (tenant, driver) in drivers {
                for first in stride(from: 0, to: 3_405, by: 500) {
                    let rows = SQL.joined((first..<min(first + 500, 3_405)).map { index in
                        let age = index < 3_400 ? retention + 60 + Double(index) : retention - 1 - Double(index - 3_400) * 60
                        return "(\(tenant), \(driver), \(now.addingTimeInterval(-age)), 41.5, -88.1, 5, \(now))"
                    }, separator: ", ")
                    try await db.execute("""
                        INSERT INTO location_fixes (tenant_id, driver_id, recorded_at, latitude, longitude, accuracy_m, received_at) VALUES \(rows)
                        """)
                }
            }
        }
        try await server.store.location.pruneFixes(olderThan: retention)
        for (tenant, driver) in drivers {
            let left = try await server.services.database.read { db in
                try await db.query("SELECT recorded_at FROM location_fixes WHERE tenant_id = \(tenant) AND driver_id = \(driver)").map { try $0.date("recorded_at") }
            }
            #expect(left.count == 5 && left.allSatisfy { now.timeIntervalSince($0) < retention }, "\(driver): \(left.count) left")
        }
        if backend == .sqlite {
            let plan = try await server.services.database.read { db in
                try await db.query("EXPLAIN QUERY PLAN " + LocationRepository.prunable(before: now)).map { try $0.string("detail") }
            }
            #expect(plan.contains { $0.contains("location_fixes_by_age") && $0.contains("recorded_at<?") }, "\(plan)")
        }
    }
}
