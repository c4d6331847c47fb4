import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// A customer's tracking link: made and revoked by dispatch, read with no
/// sign-in, showing one order's progress and nothing else; a forged,
/// guessed, revoked, replaced or expired token shows nothing.
@Suite("Tracking links")
struct TrackingTests {
    @Test("the customer sees a city and state, never a street, a phone number or a line of an address")
    func cities() {
        #expect(TrackingRules.city(of: "1 Harbor Rd, Savannah, GA 31401") == "Savannah, GA")
        #expect(TrackingRules.city(of: "Chicago, IL") == "Chicago, IL")
        #expect(TrackingRules.city(of: "1200 Main St, Tulsa, OK, 74103-1234") == "Tulsa, OK")
        #expect(ConsoleFormat.city("1200 Main St, Tulsa, OK 74103") == "Tulsa, OK")
        #expect(ConsoleFormat.city("Dock 4, Gate 12, Savannah") == "Gate 12, Savannah", "the console falls back to the address's last parts")
        #expect(TrackingRules.city(of: "1234 Secret Lane\nSpringfield, IL") == "Springfield, IL")
        #expect(TrackingRules.city(of: "1234 Secret Lane\r\n  Springfield ,\tIL  60601 \r\n") == "Springfield, IL")
        for address in ["1 Auction Way Matteson IL", "Chicago, IL — call 555-867-5309 first", "1234 Secret Lane", "Unit 4, 12 Dock St",
                        "Dock 4, Gate 12, Savannah", ""] {
            #expect(TrackingRules.city(of: address) == "", "\(address)")
        }
        #expect(TrackingRules.roughMiles(3_000) == 10 && TrackingRules.roughMiles(160_934) == 100 && TrackingRules.roughMiles(.nan) == 10)
    }

    @Test("a link shows its order's progress and ETAs and nothing else; forged, guessed, revoked, replaced and expired tokens show nothing",
          arguments: TestBackend.available)
    func links(_ backend: TestBackend) async throws {
        let server = try await TestServer.make(backend)
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 1)
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 1)
        let (dispatch, driver) = (alpha.dispatcher.accessToken, alpha.driver.accessToken)
        let trip = alpha.trips[0][0]
        let savannah = GeoPoint(latitude: 32.0809, longitude: -81.0912), orlando = GeoPoint(latitude: 28.5384, longitude: -81.3789)
        try await server.run { api in
            let order = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "TR-1", tripID: trip.id, vehicle: Vehicle(year: 2021, make: "Toyota", model: "Camry", vin: "4T1B11HK4MU123456",
                                                                 color: "Silver"),
                pickup: Stop(name: "Harbor Lot", address: "1 Harbor Rd, Savannah, GA 31401", contactName: "Pat Gate", contactPhone: "912-555-0101",
                             location: savannah),
                delivery: Stop(address: "9 Main St, Orlando, FL 32801", location: orlando), revenueCents: 90_000), token: dispatch)
                .decode(Order.self)
            let sibling = alpha.orders[trip.id]![0]
            #expect(try await api.call(.dispatchTrackingLink, order.id.rawValue, token: dispatch).status == 404, "none made yet")
            let made = try await api.call(.dispatchCreateTrackingLink, order.id.rawValue, token: dispatch)
            #expect(made.status == 201, "\(made.text)")
            let link = try made.decode(TrackingLink.self)
            #expect(link.url.hasSuffix("/track/" + link.token) && link.token.count == TrackingToken.length && link.expiresAt == nil)
            #expect(try await api.call(.dispatchTrackingLink, order.id.rawValue, token: dispatch).decode(TrackingLink.self).token == link.token)

            // Anyone with the token sees the order's progress: no sign-in, no address, driver, VIN or contact.
            let shown = try await api.call(.trackingStatus, link.token)
            #expect(shown.status == 200, "\(shown.text)")
            let status = try shown.decode(TrackingStatus.self)
            #expect(status.carrier == "Alpha" && status.orderNumber == "TR-1" && status.status == .assigned && status.vehicle == "2021 Toyota Camry, Silver")
            #expect(status.pickupCity == "Savannah, GA" && status.deliveryCity == "Orlando, FL" && status.nextStop == .pickup && status.computedETA == nil)
            for secret in ["1 Harbor Rd", "Pat Gate", "912-555", "4T1B11HK4MU123456", alpha.driver.driver!.name, alpha.driver.driver!.id.rawValue,
                           order.id.rawValue, trip.id.rawValue, alpha.tenant.id.rawValue, "revenue"] {
                #expect(!shown.text.contains(secret), "\(secret) in \(shown.text)")
            }

            // The truck's recent positions (its trip under way) give the computed ETA and miles; a stale one (sharing paused) gives neither.
            _ = try await server.store.trips.update(trip.id, UpdateTripRequest(status: .inProgress), tenant: alpha.tenant.id)
            let now = server.clock.now
            _ = try await server.store.location.record(RecordLocationsRequest(fixes: (0..<10).map { minute in
                GeoPosition(latitude: 32.40 + Double(minute) * 0.01, longitude: -81.60, accuracyMeters: 8,
                            recordedAt: now.addingTimeInterval(Double(minute - 10) * 60), speedMetersPerSecond: 25)
            }), .driver(tenant: alpha.tenant.id, driver: alpha.driverID(0)))
            let moving = try await api.call(.trackingStatus, link.token).decode(TrackingStatus.self)
            // Rough on purpose: links to several orders on one truck must not place it.
            #expect(moving.computedETA != nil && (moving.milesToGo ?? 0) > 10 && (moving.milesToGo ?? 0) % 10 == 0, "\(moving)")
            #expect(moving.computedETA.map { Int($0.timeIntervalSince1970) % 900 == 0 } == true)
            server.clock.advance(by: TrackingRules.livePositionAge + 60)
            let paused = try await api.call(.trackingStatus, link.token).decode(TrackingStatus.self)
            #expect(paused.computedETA == nil && paused.milesToGo == nil)

            // The driver picks up: the page says so.
            try await api.completeInspection(of: order.id, .pickup, token: driver)
            let picked = try await api.call(.trackingStatus, link.token).decode(TrackingStatus.self)
            #expect(picked.status == .pickedUp && picked.pickedUpAt != nil && picked.nextStop == .delivery)
            // The page shows the condition at pickup, its photos served to the link's holder alone.
            let page = try await api.raw(.get, "/track/\(link.token)")
            #expect(page.status == 200 && page.text.contains("Condition at pickup") && page.text.contains("Nobody was there to sign."))
            let inspections = try await server.store.read { try await InspectionRepository.of(order.id, tenant: alpha.tenant.id, $0) }
            let inspectionID = try #require(inspections.first).id.rawValue
            let photoPath = "/media/\(inspectionID)/front"
            #expect(page.text.contains("/track/\(link.token)" + photoPath))
            let photo = try await api.raw(.get, "/track/\(link.token)" + photoPath)
            #expect(photo.status == 200 && photo.headers[.contentType] == "image/jpeg", "\(photo.status)")
            let siblingToken = try await api.call(.dispatchCreateTrackingLink, sibling.id.rawValue, token: dispatch).decode(TrackingLink.self).token
            #expect(try await api.raw(.get, "/track/\(siblingToken)" + photoPath).status == 404, "another order's link reaches no photo of this one")
            #expect(try await api.raw(.get, "/track/\(link.token)/media/\(inspectionID)/walkthrough").status == 404)

            // Tokens that are not this one's: another order's id signed by nobody, a guess, a bit flipped, a prefix.
            let siblingLink = try await api.call(.dispatchCreateTrackingLink, sibling.id.rawValue, token: dispatch).decode(TrackingLink.self)
            let forged = String(siblingLink.token.prefix(32)) + String(link.token.dropFirst(32))
            let flipped = String(link.token.dropLast()) + (link.token.last == "A" ? "B" : "A")
            for token in [forged, flipped, String(repeating: "0", count: TrackingToken.length), String(link.token.prefix(53)),
                          link.token + "x", "..%2F..%2Fetc", String(repeating: "a", count: 5000)] {
                let refused = try await api.call(.trackingStatus, token)
                #expect(refused.status == 404 && refused.errorCode == "not_found", "\(token.prefix(60)): \(refused.status) \(refused.text)")
            }

            // Another carrier's dispatcher, and the driver, can do nothing with the order's link.
            for token in [beta.dispatcher.accessToken, driver] {
                #expect(try await api.call(.dispatchCreateTrackingLink, order.id.rawValue, token: token).status != 201)
                #expect(try await api.call(.dispatchRevokeTrackingLink, order.id.rawValue, token: token).status != 204)
            }
            #expect(try await api.call(.trackingStatus, link.token).status == 200)

            // A new link replaces the old; a revoked one ends.
            let second = try await api.call(.dispatchCreateTrackingLink, order.id.rawValue, token: dispatch).decode(TrackingLink.self)
            #expect(second.token != link.token)
            #expect(try await api.call(.trackingStatus, link.token).status == 404)
            #expect(try await api.call(.trackingStatus, second.token).status == 200)
            #expect(try await api.call(.dispatchRevokeTrackingLink, order.id.rawValue, token: dispatch).status == 204)
            #expect(try await api.call(.trackingStatus, second.token).status == 404)
            #expect(try await api.call(.dispatchTrackingLink, order.id.rawValue, token: dispatch).status == 404)

            // Delivered: the link works a week more, then shows nothing; no new one is made for an order long done.
            let third = try await api.call(.dispatchCreateTrackingLink, order.id.rawValue, token: dispatch).decode(TrackingLink.self)
            try await api.completeInspection(of: order.id, .delivery, token: driver)
            let delivered = try await api.call(.trackingStatus, third.token).decode(TrackingStatus.self)
            #expect(delivered.status == .delivered && delivered.nextStop == nil && delivered.driverETA == nil)
            let expiry = try #require(try await api.call(.dispatchTrackingLink, order.id.rawValue, token: dispatch).decode(TrackingLink.self).expiresAt)
            #expect(abs(expiry.timeIntervalSince(server.clock.now) - TrackingRules.keptAfterDone) < 60)
            server.clock.advance(by: TrackingRules.keptAfterDone + 60)
            #expect(try await api.call(.trackingStatus, third.token).status == 404)
            let fresh = try await server.services.signIn(email: alpha.dispatcher.user.email).accessToken  // the week outlived the session
            let late = try await api.call(.dispatchCreateTrackingLink, order.id.rawValue, token: fresh)
            #expect(late.status == 409, "\(late.text)")
            #expect(try await api.call(.dispatchTrackingLink, order.id.rawValue, token: fresh).status == 404, "an expired link is none")

            // A cancelled order's link ends a week after the cancellation, whatever is edited since.
            let cancelled = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "TR-2", vehicle: Vehicle(), pickup: Stop(address: "A, Savannah, GA"), delivery: Stop(address: "B, Orlando, FL"),
                revenueCents: 1), token: fresh).decode(Order.self)
            let doomed = try await api.call(.dispatchCreateTrackingLink, cancelled.id.rawValue, token: fresh).decode(TrackingLink.self)
            _ = try await api.call(.dispatchUpdateOrder, cancelled.id.rawValue, json: UpdateOrderRequest(status: .cancelled), token: fresh)
            server.clock.advance(by: TrackingRules.keptAfterDone + 60)
            let refreshed = try await server.services.signIn(email: alpha.dispatcher.user.email).accessToken
            _ = try await api.call(.dispatchUpdateOrder, cancelled.id.rawValue, json: UpdateOrderRequest(externalLoadID: "LATE-EDIT"), token: refreshed)
            #expect(try await api.call(.trackingStatus, doomed.token).status == 404)
            #expect(try await api.call(.dispatchCreateTrackingLink, cancelled.id.rawValue, token: refreshed).status == 409)
        }
    }
}
