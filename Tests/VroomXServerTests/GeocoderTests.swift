import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// Address lookup for stops without coordinates, against a local server
/// that speaks the Nominatim search API (never the public one).
@Suite("Address lookup")
struct GeocoderTests {
    /// Answers `/search?q=…&format=jsonv2&limit=1` for one address, [] for any other.
    static let stub = """
        import http.server, json, sys, urllib.parse
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                q = urllib.parse.parse_qs(url.query)
                ok = url.path == "/search" and q.get("format") == ["jsonv2"] and q.get("limit") == ["1"]
                places = [{"lat": "32.0809", "lon": "-81.0912", "display_name": "Savannah"}] if ok and q.get("q") == ["Savannah, GA"] else []
                body = json.dumps(places).encode()
                self.send_response(200 if ok else 400); self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            def log_message(self, *args): pass
        http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
        """

    @Test("a stop without coordinates gets the geocoder's point for its address; an unknown address or a geocoder that is down leaves it without",
          arguments: TestBackend.available)
    func fillsStops(_ backend: TestBackend) async throws {
        let port = try ChildProcess.freePort()
        let geocoder = try ChildProcess("/usr/bin/env", ["python3", "-c", Self.stub, String(port)])
        let server = try await TestServer.make(backend) { $0.geocoderURL = "http://127.0.0.1:\(port)" }
        let carrier = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0)
        let dispatch = carrier.dispatcher.accessToken
        try await server.run { api in
            try await Self.waitUntilListening(geocoder, port: port)
            let order = try await api.call(.dispatchCreateOrder, json: CreateOrderRequest(
                number: "GEO-2", vehicle: Vehicle(make: "Ford"), pickup: Stop(address: "Savannah, GA"),
                delivery: Stop(address: "Nowhere In Particular"), revenueCents: 100), token: dispatch).decode(Order.self)
            #expect(order.pickup.location == GeoPoint(latitude: 32.0809, longitude: -81.0912))
            #expect(order.delivery.location == nil, "an address the geocoder does not know has no point")
            // A point dispatch gave is kept as given.
            let given = GeoPoint(latitude: 32.1, longitude: -81.2)
            let kept = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                pickup: Stop(address: "Savannah, GA", location: given)), token: dispatch).decode(Order.self)
            #expect(kept.pickup.location == given)
            // A new address sent with the point it replaces (a client copying the stop): that point belonged to the
            // old address, so it goes, and the new address is looked up.
            let pinned = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                delivery: Stop(address: "Nowhere In Particular", location: given)), token: dispatch).decode(Order.self)
            #expect(pinned.delivery.location == given)
            let moved = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                delivery: Stop(address: "Savannah, GA", location: given)), token: dispatch).decode(Order.self)
            #expect(moved.delivery.location == GeoPoint(latitude: 32.0809, longitude: -81.0912))
            // The geocoder down: the edit is saved, without a point.
            await geocoder.stop()
            let saved = try await api.call(.dispatchUpdateOrder, order.id.rawValue, json: UpdateOrderRequest(
                delivery: Stop(address: "Orlando, FL")), token: dispatch)
            #expect(saved.status == 200, "\(saved.text)")
            #expect(try saved.decode(Order.self).delivery.location == nil)
        }
    }

    /// Holds the lookup of "Slow, GA" until `/release`; `/seen` counts the lookups asked.
    static let holdingStub = """
        import http.server, json, sys, threading, urllib.parse
        release = threading.Event(); seen = [0]
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                q = urllib.parse.parse_qs(url.query)
                if url.path == "/release": release.set(); body = b"{}"
                elif url.path == "/seen": body = str(seen[0]).encode()
                else:
                    if q.get("q") == ["Slow, GA"]:
                        seen[0] += 1; release.wait(60)
                        body = json.dumps([{"lat": "32.0809", "lon": "-81.0912"}]).encode()
                    else: body = b"[]"
                self.send_response(200); self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            def log_message(self, *args): pass
        http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
        """

    @Test("an order sent with an Idempotency-Key is looked up before its write: a slow geocoder holds no other carrier's write, and a replay asks it nothing",
          arguments: TestBackend.available)
    func lookupBeforeTheWrite(_ backend: TestBackend) async throws {
        let port = try ChildProcess.freePort()
        let geocoder = try ChildProcess("/usr/bin/env", ["python3", "-c", Self.holdingStub, String(port)])
        let server = try await TestServer.make(backend) { $0.geocoderURL = "http://127.0.0.1:\(port)" }
        let alpha = try await CarrierFixture.make(server, name: "Alpha", drivers: 1, tripsPerDriver: 0).dispatcher.accessToken
        let beta = try await CarrierFixture.make(server, name: "Beta", drivers: 1, tripsPerDriver: 0).dispatcher.accessToken
        try await server.run { api in
            func seen() async throws -> String? { try? await RawHTTP.request(port: port, "GET", "/seen").text }
            try await Self.waitUntilListening(geocoder, port: port, path: "/seen")
            let deadline = ContinuousClock.now + .seconds(15)
            let key = UUID().uuidString
            let request = CreateOrderRequest(number: "GEO-9", vehicle: Vehicle(make: "Ford"), pickup: Stop(address: "Slow, GA"),
                                             delivery: Stop(address: "Elsewhere"), revenueCents: 100)
            let alphaAnswered = Latch()
            let held = Task {
                defer { Task { await alphaAnswered.open() } }
                return try await api.call(.dispatchCreateOrder, json: request, token: alpha, headers: ["Idempotency-Key": key])
            }
            while try await seen() != "1" {
                guard ContinuousClock.now < deadline else { throw ProcessError("the lookup never reached the geocoder") }
                try await Task.sleep(for: .milliseconds(20))
            }
            // Alpha's order waits on the geocoder; Beta's write goes through meanwhile.
            let betaStarted = ContinuousClock.now
            let trip = try await api.call(.dispatchCreateTrip, json: CreateTripRequest(number: "B-1", origin: "Macon, GA", destination: "Tampa, FL", revenueCents: 0, miles: 0), token: beta)
            let betaTook = ContinuousClock.now - betaStarted
            #expect(trip.status == 201, "\(trip.text)")
            #expect(await !alphaAnswered.isOpen, "Beta's write waited until Alpha's lookup gave up")
            _ = try await RawHTTP.request(port: port, "GET", "/release")
            let created = try await held.value
            #expect(created.status == 201, "\(created.text)")
            // Released in time, the lookup's point is on the stop; a machine so busy that Beta's write outlasted the
            // lookup's 5 s read timeout leaves the stop without one, as a geocoder that stops answering does.
            let location = try created.decode(Order.self).pickup.location
            if betaTook < .seconds(4) {
                #expect(location == GeoPoint(latitude: 32.0809, longitude: -81.0912))
            } else {
                #expect(location == nil || location == GeoPoint(latitude: 32.0809, longitude: -81.0912))
            }
            #expect(try created.decode(Order.self).number == "GEO-9")
            // The same key again: the stored answer, with no second lookup.
            let replay = try await api.call(.dispatchCreateOrder, json: request, token: alpha, headers: ["Idempotency-Key": key])
            #expect(replay.status == 201 && replay.headers[.init("Idempotent-Replayed")!] == "true", "\(replay.text)")
            #expect(try await seen() == "1")
        }
        await geocoder.stop()
    }

    @Test("lookups are spaced a second apart for every carrier, and one whose turn is more than 3 s away is not made")
    func busyGeocoderIsSkipped() async throws {
        let port = try ChildProcess.freePort()
        let stub = try ChildProcess("/usr/bin/env", ["python3", "-c", Self.stub, String(port)])
        try await Self.waitUntilListening(stub, port: port)
        let geocoder = NominatimGeocoder(baseURL: "http://127.0.0.1:\(port)")
        // Twenty new addresses at once: the turns within 3 s are made (four, or a few more on a machine slow to start
        // the tasks), the others are skipped at once rather than queued for up to 20 s.
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<20 {
                group.addTask {
                    do {
                        _ = try await geocoder.locate("Nowhere \(index)")  // asked (the stub knows no such place)
                        return true
                    } catch {
                        return false
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        let made = outcomes.filter { $0 }.count
        #expect((4...10).contains(made), "\(made) of 20 lookups made")
        await stub.stop()
    }

    @Test("VROOMX_GEOCODER_URL must be an http(s) address")
    func configuration() throws {
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(["VROOMX_GEOCODER_URL": "nominatim.example.com"]) }
        #expect(try ServerConfiguration.fromEnvironment(["VROOMX_GEOCODER_URL": "https://nominatim.example.com"]).geocoderURL
                == "https://nominatim.example.com")
        #expect(try ServerConfiguration.fromEnvironment([:]).geocoderURL == nil)
        // The addresses an invitation gives, likewise.
        for name in ["VROOMX_DRIVER_APP_URL", "VROOMX_PUBLIC_URL"] {
            #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment([name: "vroomx.example.com"]) }
        }
        let set = try ServerConfiguration.fromEnvironment(["VROOMX_DRIVER_APP_URL": "https://apps.example.com/x", "VROOMX_PUBLIC_URL": "https://v.example.com"])
        #expect(set.driverAppURL == "https://apps.example.com/x" && set.publicURL == "https://v.example.com")
    }
}


extension GeocoderTests {
    /// The stub takes a moment to listen.
    static func waitUntilListening(_ stub: ChildProcess, port: Int, path: String = "/search?q=x&format=jsonv2&limit=1") async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while (try? await RawHTTP.request(port: port, "GET", path)) == nil {
            guard ContinuousClock.now < deadline else { throw ProcessError("the stub geocoder did not start: \(stub.text)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// Opened once something happened.
private actor Latch {
    private(set) var isOpen = false
    func open() { isOpen = true }
}
