import Foundation
import Testing
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// Swift traps on integer overflow, and a trap ends the process for every
/// carrier. Every number a client can send — each numeric query parameter
/// and header the route table declares, each path parameter, each integer
/// field of a JSON body — gets the values that break careless arithmetic,
/// against the real `vroomx` binary: each answer is a 4xx (or a success
/// where the value is legitimate), never a 5xx, and the process lives on.
@Suite("Extreme input values")
struct ExtremeInputTests {
    static let values = ["0", "-1", "2147483648", "9007199254740992", "9223372036854775807", "18446744073709551616",
                         "1e3", " 1", "+1", "0x10"]
    /// Not a decimal integer of at most 18 digits: always refused.
    static let malformed: Set<String> = ["-1", "9223372036854775807", "18446744073709551616", "1e3", "+1", "0x10"]

    struct Target {
        let port: Int
        let driver: String
        let dispatcher: String
        let trip: String
        let order: String
        let inspection: String
        let upload: String
        let server: ChildProcess

        func token(for endpoint: Endpoint) -> String { endpoint.access == .dispatcher ? dispatcher : driver }

        /// A path for the endpoint with existing rows where it matters.
        func path(_ endpoint: Endpoint) -> String {
            let values = endpoint.parameterNames.map { name -> String in
                switch (name, endpoint) {
                case ("slot", _): return "front"
                case ("token", _): return "device-token-0001"
                case ("id", _) where endpoint.path.hasPrefix("/v1/uploads"): return upload
                case ("id", _) where endpoint.path.hasPrefix("/v1/inspections"): return inspection
                case ("id", _) where endpoint.path.contains("/trips/"): return trip
                case ("id", _) where endpoint.path.contains("/orders/"): return order
                default: return UUID().uuidString.lowercased()
                }
            }
            return endpoint.path(values)
        }

        /// Sends one request exactly as written and checks the answer and the process.
        func send(_ method: String, _ target: String, headers: [String: String], body: String? = nil,
                  contentLength: String? = nil, context: String) async throws -> Int {
            var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            for (name, value) in headers { text += "\(name):\(value.hasPrefix(" ") ? "" : " ")\(value)\r\n" }
            let bytes = Array((body ?? "").utf8)
            if let contentLength {
                text += "Content-Length: \(contentLength)\r\n"
            } else if !bytes.isEmpty || !["GET", "HEAD"].contains(method) {
                text += "Content-Length: \(bytes.count)\r\n"
            }
            let request = Array((text + "\r\n").utf8) + bytes
            let status: Int
            do {
                status = try await RawHTTP.exchange(port: port, request).status
            } catch {
                // The server may refuse a malformed request by closing the connection; it must still be alive.
                try checkAlive(context)
                return 400
            }
            #expect(status < 500, "\(context) answered \(status)")
            try checkAlive(context)
            return status
        }

        /// Stops the test at the first request that killed the server.
        func checkAlive(_ context: String) throws {
            guard server.isRunning else {
                throw ProcessError("the server died on \(context): \(server.text.suffix(3000))")
            }
        }
    }

    static func signIn(_ client: HTTPTestClient, _ server: ChildProcess, _ email: String) async throws -> String {
        #expect(try await client.send(.sendCode, json: SendCodeRequest(email: email)).status == 202)
        var code: String?
        for _ in 0..<200 where code == nil {
            code = server.text.split(separator: "\n").last { $0.contains(email) && $0.contains("sign-in code:") }
                .flatMap { line in line.range(of: #"code: \d{6}"#, options: .regularExpression).map { String(line[$0].suffix(6)) } }
            if code == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        let verified = try await client.send(.verifyCode, json: VerifyCodeRequest(email: email, code: try #require(code)))
        return try verified.decode(AuthSession.self).accessToken
    }

    static func start() async throws -> Target {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-extreme-\(UUID().uuidString.prefix(8))")
        let (server, port) = try await VroomXBinary.serve(["serve", "--demo"], environment: ["VROOMX_DATA_DIR": data.path, "VROOMX_LOG_LEVEL": "info"])
        let client = HTTPTestClient(baseURL: "http://127.0.0.1:\(port)")
        let driver = try await signIn(client, server, DemoData.driverEmails[0])
        let dispatcher = try await signIn(client, server, DemoData.dispatcherEmail)
        let assigned = try await client.send(.orders, token: driver)
        let order = try #require(try assigned.decode(Items<Order>.self).items.first { $0.status == .assigned })
        let inspection = ID<Inspection>()
        #expect(try await client.send(.saveInspection, inspection.rawValue, json: SaveInspectionRequest(orderID: order.id, kind: .pickup),
                                      token: driver).status == 200)
        let photo = MediaSamples.jpeg(size: 4096)
        let put = try await RawHTTP.request(port: port, "PUT", Endpoint.putInspectionMedia.path(inspection.rawValue, "front"),
                                            headers: ["Authorization": "Bearer \(driver)"], body: photo)
        #expect(put.status == 200)
        let created = try await RawHTTP.request(port: port, "POST", "/v1/uploads", headers: [
            "Authorization": "Bearer \(driver)", "Tus-Resumable": Tus.version, "Upload-Length": "4096",
            "Upload-Metadata": MediaSamples.metadata(inspection, .rear),
        ])
        let upload = try #require(created.headers["location"]).split(separator: "/").last.map(String.init) ?? ""
        return Target(port: port, driver: driver, dispatcher: dispatcher, trip: try #require(order.tripID).rawValue,
                      order: order.id.rawValue, inspection: inspection.rawValue, upload: upload, server: server)
    }

    /// What the protocol needs besides the parameter under test.
    static func baseHeaders(_ endpoint: Endpoint, _ target: Target) -> [String: String] {
        var headers = ["Authorization": "Bearer \(target.token(for: endpoint))"]
        if endpoint.path.hasPrefix("/v1/uploads") { headers["Tus-Resumable"] = Tus.version }
        if endpoint == .appendUpload {
            headers["Content-Type"] = Tus.patchContentType
            headers["Upload-Offset"] = "0"
        }
        if endpoint == .createUpload {
            headers["Upload-Metadata"] = Tus.encodeMetadata(["inspection_id": target.inspection, "slot": "damage_1"])
            headers["Upload-Length"] = "100"
        }
        return headers
    }

    @Test("every numeric parameter, header and path segment of every endpoint, at its extremes")
    func parametersAndHeaders() async throws {
        let target = try await Self.start()
        defer { Task { await target.server.stop() } }
        var probes = 0
        for endpoint in Endpoint.all {
            let path = target.path(endpoint)
            for parameter in endpoint.parameters where parameter.isNumeric {
                for value in Self.values {
                    var headers = Self.baseHeaders(endpoint, target)
                    var uri = path
                    var contentLength: String?
                    switch (parameter.location, parameter.kind) {
                    case (.query, _):
                        uri += "?\(parameter.name)=\(value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value)"
                    case (.header, .byteRange):
                        for range in ["bytes=\(value)-", "bytes=0-\(value)", "bytes=-\(value)", "bytes=\(value)-\(value)"] {
                            headers[parameter.name] = range
                            _ = try await target.send(endpoint.method.rawValue, uri, headers: headers, context: "\(endpoint) Range: \(range)")
                            probes += 1
                        }
                        continue
                    case (.header, _) where parameter.name == "Content-Length":
                        contentLength = value
                    case (.header, _):
                        headers[parameter.name] = value
                    }
                    let status = try await target.send(endpoint.method.rawValue, uri, headers: headers, body: contentLength == nil ? nil : "xy",
                                                       contentLength: contentLength, context: "\(endpoint) \(parameter) = \"\(value)\"")
                    if Self.malformed.contains(value) || (parameter.location == .query && value == " 1") {
                        #expect((400..<500).contains(status), "\(endpoint) \(parameter) = \"\(value)\" answered \(status)")
                    }
                    probes += 1
                }
            }
            for (index, _) in endpoint.parameterNames.enumerated() {
                for value in Self.values {
                    var segments = endpoint.parameterNames.map { _ in UUID().uuidString.lowercased() }
                    segments[index] = value
                    let status = try await target.send(endpoint.method.rawValue, endpoint.path(segments),
                                                       headers: Self.baseHeaders(endpoint, target), context: "\(endpoint) path \"\(value)\"")
                    #expect((400..<500).contains(status), "\(endpoint) with path value \"\(value)\" answered \(status)")
                    probes += 1
                }
            }
        }
        #expect(probes > 300)
        let health = try await RawHTTP.request(port: target.port, "GET", "/healthz")
        #expect(health.status == 200)
    }

    @Test("every integer field of the JSON bodies, and times at the ends of the calendar")
    func jsonBodies() async throws {
        let target = try await Self.start()
        defer { Task { await target.server.stop() } }
        let unique = { UUID().uuidString.prefix(8) }
        // The demo driver's truck.
        let units = try await RawHTTP.request(port: target.port, "GET", Endpoint.equipment.path, headers: ["Authorization": "Bearer \(target.driver)"])
        let truck = try #require(try WireJSON.decoder().decode(Items<Equipment>.self, from: Data(units.body)).items.first { $0.kind == .truck }).id.rawValue
        // «N» marks the field under test; each template is valid with a sensible number there.
        let templates: [(Endpoint, () -> String)] = [
            (.dispatchCreateEquipment, { #"{"kind":"truck","unit_number":"X-\#(unique())","year":«N»}"# }),
            (.dispatchCreateEquipment, { #"{"kind":"trailer","unit_number":"X-\#(unique())","specs":{"capacity_cars":«N»}}"# }),
            (.dispatchCreateEquipment, { #"{"kind":"truck","unit_number":"X-\#(unique())","specs":{"gvwr_pounds":«N»}}"# }),
            (.recordOdometer, { #"{"equipment_id":"\#(truck)","miles":«N»}"# }),
            (.createExpense, { #"{"trip_id":"\#(target.trip)","category":"fuel","amount_cents":100,"date":"2026-11-22","fuel":{"equipment_id":"\#(truck)","quantity_milli":«N»,"unit":"gal"}}"# }),
            (.createExpense, { #"{"trip_id":"\#(target.trip)","category":"fuel","amount_cents":100,"date":"2026-11-22","fuel":{"equipment_id":"\#(truck)","quantity_milli":1000,"unit":"gal","odometer_miles":«N»}}"# }),
            (.dispatchAddEquipmentDocument, { #"{"kind":"permit","number":"«N»"}"# }),
            (.createExpense, { #"{"trip_id":"\#(target.trip)","category":"fuel","amount_cents":«N»,"date":"2026-11-22"}"# }),
            (.dispatchCreateDriver, { #"{"email":"x\#(unique())@example.com","name":"X","pay_type":"per_mile","pay_rate":«N»}"# }),
            (.dispatchCreateDriver, { #"{"email":"x\#(unique())@example.com","name":"X","pay_type":"percentage","pay_rate":«N»}"# }),
            (.dispatchCreateTrip, { #"{"number":"X-\#(unique())","origin":"A","destination":"B","revenue_cents":«N»,"miles":1}"# }),
            (.dispatchCreateTrip, { #"{"number":"X-\#(unique())","origin":"A","destination":"B","revenue_cents":1,"miles":«N»}"# }),
            (.dispatchCreateTrip, { #"{"number":"X-\#(unique())","origin":"A","destination":"B","revenue_cents":1,"miles":1,"driver_pay_cents":«N»}"# }),
            (.dispatchUpdateTrip, { #"{"miles":«N»}"# }),
            (.dispatchUpdateTrip, { #"{"revenue_cents":«N»}"# }),
            (.dispatchUpdateTrip, { #"{"driver_pay_cents":«N»}"# }),
            (.dispatchCreateOrder, { #"{"number":"O-\#(unique())","vehicle":{"year":«N»,"make":"Kia"},"pickup":{"address":"P"},"delivery":{"address":"D"},"revenue_cents":1}"# }),
            (.dispatchCreateOrder, { #"{"number":"O-\#(unique())","vehicle":{"make":"Kia"},"pickup":{"address":"P"},"delivery":{"address":"D"},"revenue_cents":«N»}"# }),
            (.dispatchUpdateOrder, { #"{"revenue_cents":«N»}"# }),
            (.dispatchUpdateOrder, { #"{"vehicle":{"year":«N»,"make":"Kia"}}"# }),
            (.saveInspection, { #"{"order_id":"\#(target.order)","kind":"pickup","odometer":«N»}"# }),
            (.saveInspection, { #"{"order_id":"\#(target.order)","kind":"pickup","position":{"latitude":«N»,"longitude":1,"recorded_at":"2026-11-22T10:00:00.000Z"}}"# }),
            (.saveInspection, { #"{"order_id":"\#(target.order)","kind":"pickup","position":{"latitude":1,"longitude":1,"accuracy_meters":«N»,"recorded_at":"2026-11-22T10:00:00.000Z"}}"# }),
            (.mutations, { #"{"mutations":[{"id":"\#(UUID().uuidString.lowercased())","kind":"update_order_eta","payload":{"order_id":"\#(target.order)","pickup_eta":"2030-01-01T00:00:00.000Z"},"base_version":«N»}]}"# }),
            (.mutations, { #"{"mutations":[{"id":"\#(UUID().uuidString.lowercased())","kind":"create_expense","payload":{"id":"\#(UUID().uuidString.lowercased())","trip_id":"\#(target.trip)","category":"fuel","amount_cents":«N»,"date":"2026-11-22"}}]}"# }),
        ]
        for (endpoint, template) in templates {
            for value in Self.values {
                let body = template().replacingOccurrences(of: "«N»", with: value)
                // Some of these are fine where they stand (a latitude of -1): only a 5xx or a death fails.
                _ = try await target.send(endpoint.method.rawValue, target.path(endpoint),
                                          headers: ["Authorization": "Bearer \(target.token(for: endpoint))", "Content-Type": "application/json"],
                                          body: body, context: "\(endpoint) \(body)")
            }
        }
        // Times at the ends of what the wire format can say.
        for time in ["0000-01-01T00:00:00.000Z", "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2026-02-30T00:00:00Z"] {
            for (endpoint, body) in [
                (Endpoint.updateOrderETA, #"{"pickup_eta":"\#(time)"}"#),
                (Endpoint.completeInspection, #"{"occurred_at":"\#(time)"}"#),
                (Endpoint.updateOrderStatus, #"{"status":"picked_up","occurred_at":"\#(time)"}"#),
                (Endpoint.dispatchUpdateOrder, #"{"delivery_eta":"\#(time)"}"#),
                (Endpoint.recordOdometer, #"{"equipment_id":"\#(truck)","miles":1,"recorded_at":"\#(time)"}"#),
            ] {
                let status = try await target.send(endpoint.method.rawValue, target.path(endpoint),
                                                   headers: ["Authorization": "Bearer \(target.token(for: endpoint))", "Content-Type": "application/json"],
                                                   body: body, context: "\(endpoint) \(body)")
                #expect((400..<500).contains(status), "\(endpoint) \(body): \(status)")
            }
        }
        let health = try await RawHTTP.request(port: target.port, "GET", "/healthz")
        #expect(health.status == 200)
    }
}
