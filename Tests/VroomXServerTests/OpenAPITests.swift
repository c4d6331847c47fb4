import Foundation
import Testing
import VroomXModels
@testable import VroomXServer
import VroomXTestSupport

/// The OpenAPI document, the shared route table and the router agree.
@Suite("OpenAPI document")
struct OpenAPITests {
    @Test("documents exactly the endpoints of the route table, with their access")
    func documentMatchesRouteTable() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.data)) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented: Set<String> = []
        for (path, operations) in paths {
            for (method, operation) in operations {
                let key = "\(method.uppercased()) \(path)"
                documented.insert(key)
                guard let endpoint = Endpoint.all.first(where: { "\($0.method.rawValue) \($0.path)" == key }),
                      let operation = operation as? [String: Any] else { continue }
                let secured = operation["security"] != nil
                #expect(secured == (endpoint.access != .anyone), "\(key): security does not match its access")
                let responses = operation["responses"] as? [String: Any] ?? [:]
                #expect(responses.keys.contains { $0.hasPrefix("2") || $0 == "101" }, "\(key) documents no success response")
                if operation["requestBody"] != nil {
                    #expect(responses["422"] != nil, "\(key) takes a body but documents no 422")
                }
            }
        }
        let routed = Set(Endpoint.all.map { "\($0.method.rawValue) \($0.path)" })
        #expect(documented.subtracting(routed).isEmpty, "documented but not routed: \(documented.subtracting(routed))")
        #expect(routed.subtracting(documented).isEmpty, "routed but not documented: \(routed.subtracting(documented))")
    }

    @Test("every field limit of the shared table is the one the document states, in each schema that carries the field")
    func fieldLimitsMatchTheTable() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.data)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        func property(_ schema: String, _ field: String) -> [String: Any]? {
            // A nullable field states its limits on its non-null member.
            let stated = (schemas[schema]?["properties"] as? [String: Any])?[field] as? [String: Any]
            return (stated?["oneOf"] as? [[String: Any]])?.first { $0["type"] as? String != "null" } ?? stated
        }
        var checked = 0
        for limit in FieldLimits.texts {
            for schema in limit.documentedIn {
                guard let stated = property(schema, limit.field) else {
                    Issue.record("\(schema).\(limit.field) is not in the document")
                    continue
                }
                #expect((stated["maxLength"] as? Int) == limit.max, "\(schema).\(limit.field): maxLength \(stated["maxLength"] ?? "none"), the rule \(limit.max)")
                #expect((stated["minLength"] as? Int ?? 0) == (limit.required ? 1 : 0), "\(schema).\(limit.field): minLength, required \(limit.required)")
                checked += 1
            }
        }
        for limit in FieldLimits.numbers {
            for schema in limit.documentedIn {
                guard let stated = property(schema, limit.field) else {
                    Issue.record("\(schema).\(limit.field) is not in the document")
                    continue
                }
                #expect((stated["minimum"] as? Int) == limit.range.lowerBound && (stated["maximum"] as? Int) == limit.range.upperBound,
                        "\(schema).\(limit.field): \(stated["minimum"] ?? "none")...\(stated["maximum"] ?? "none"), the rule \(limit.range)")
                checked += 1
            }
        }
        #expect(checked >= 46, "the table documents \(checked) fields")
    }

    /// The document's schemas and the types the code reads and writes.
    static let wireTypes: [String: any Decodable.Type] = [
        "Tenant": Tenant.self, "User": User.self, "Driver": Driver.self, "TripStatus": TripStatus.self, "Trip": Trip.self, "Vehicle": Vehicle.self, "Stop": Stop.self, "OrderStatus": OrderStatus.self, "Order": Order.self, "ExpenseCategory": ExpenseCategory.self, "Expense": Expense.self, "NotificationType": NotificationType.self, "DriverNotification": DriverNotification.self, "DeviceToken": DeviceToken.self, "AuthSession": AuthSession.self, "SendCodeRequest": SendCodeRequest.self, "SendCodeResponse": SendCodeResponse.self, "VerifyCodeRequest": VerifyCodeRequest.self, "RefreshRequest": RefreshRequest.self, "MeResponse": MeResponse.self, "PINRequest": PINRequest.self, "PINVerifyResponse": PINVerifyResponse.self, "RegisterDeviceTokenRequest": RegisterDeviceTokenRequest.self, "HealthResponse": HealthResponse.self, "UpdateOrderStatusRequest": UpdateOrderStatusRequest.self, "UpdateETARequest": UpdateETARequest.self, "CreateExpenseRequest": CreateExpenseRequest.self, "CreateDriverRequest": CreateDriverRequest.self, "CreateTripRequest": CreateTripRequest.self, "UpdateTripRequest": UpdateTripRequest.self, "AssignTripRequest": AssignTripRequest.self, "CreateOrderRequest": CreateOrderRequest.self, "UpdateOrderRequest": UpdateOrderRequest.self, "AssignOrderRequest": AssignOrderRequest.self, "SendMessageRequest": SendMessageRequest.self, "Change": Change.self, "SyncPage": SyncPage.self, "Mutation": Mutation.self, "MutationBatch": MutationBatch.self, "MutationResult": MutationResult.self, "MutationBatchResult": MutationBatchResult.self, "RealtimeMessage": RealtimeMessage.self, "GeoPosition": GeoPosition.self, "Damage": Damage.self, "InspectionMedia": InspectionMedia.self, "Inspection": Inspection.self, "SaveInspectionRequest": SaveInspectionRequest.self, "CompleteInspectionRequest": CompleteInspectionRequest.self, "ReadinessResponse": ReadinessResponse.self, "EquipmentKind": EquipmentKind.self, "EquipmentStatus": EquipmentStatus.self, "EquipmentSpecs": EquipmentSpecs.self, "EquipmentDocument": EquipmentDocument.self, "Equipment": Equipment.self, "EquipmentFields": EquipmentFields.self, "AssignEquipmentRequest": AssignEquipmentRequest.self, "EquipmentStatusChange": EquipmentStatusChange.self, "AddEquipmentDocumentRequest": AddEquipmentDocumentRequest.self, "ExpiringDocument": ExpiringDocument.self, "OdometerReading": OdometerReading.self, "RecordOdometerRequest": RecordOdometerRequest.self, "FuelPurchase": FuelPurchase.self, "FuelReport": FuelReport.self, "ImportResult": ImportResult.self, "VINDecoding": VINDecoding.self, "GeoPoint": GeoPoint.self, "RecordLocationsRequest": RecordLocationsRequest.self, "StopArrival": StopArrival.self, "RecordLocationsResult": RecordLocationsResult.self, "DriverPosition": DriverPosition.self, "TripTrack": TripTrack.self, "OrderProgress": OrderProgress.self, "EquipmentPhoto": EquipmentPhoto.self, "UpdateDriverRequest": UpdateDriverRequest.self, "DeviceBacklog": DeviceBacklog.self, "ReportedBacklog": ReportedBacklog.self, "CarrierChoice": CarrierChoice.self, "DeviceBacklogItem": DeviceBacklog.Item.self
    ]

    @Test("every schema of the document has exactly the fields its type in the code reads, the same ones required in requests, the same values in enumerations")
    func schemasMatchTheCode() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.data)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        var compared = 0
        var kindsCompared = 0
        for (name, schema) in schemas.sorted(by: { $0.key < $1.key }) {
            guard let type = Self.wireTypes[name] else { continue }
            if let values = schema["enum"] as? [String], let cases = type as? any (CaseIterable & RawRepresentable).Type {
                func rawValues<C: CaseIterable & RawRepresentable>(_ type: C.Type) -> Set<String> {
                    Set(type.allCases.compactMap { $0.rawValue as? String })
                }
                let raw = rawValues(cases)
                #expect(Set(values) == raw, "\(name): the document's values \(Set(values).subtracting(raw).sorted()), the code's \(raw.subtracting(values).sorted())")
                compared += 1
                continue
            }
            let shape: SchemaProbe.Shape
            do {
                shape = try SchemaProbe.shape(of: type)
            } catch {
                Issue.record("\(name): the probe could not read \(type): \(error)")
                continue
            }
            let documented = Set((schema["properties"] as? [String: Any] ?? [:]).keys)
            #expect(documented == shape.keys, "\(name): only in the document \(documented.subtracting(shape.keys).sorted()), only in the code \(shape.keys.subtracting(documented).sorted())")
            // Each field's kind (string, integer, number, boolean, array, object) as the code reads it.
            for (key, property) in schema["properties"] as? [String: [String: Any]] ?? [:] {
                guard let stated = Self.kind(of: property, in: schemas), let read = shape.kinds[key] else { continue }
                #expect(stated == read, "\(name).\(key): the document says \(stated), the code reads \(read)")
                kindsCompared += 1
            }
            if name.hasSuffix("Request") {
                let required = Set(schema["required"] as? [String] ?? [])
                #expect(required == shape.required, "\(name): required in the document \(required.sorted()), by the code \(shape.required.sorted())")
            }
            compared += 1
        }
        #expect(compared == Self.wireTypes.count, "every listed type has its schema")
        #expect(kindsCompared >= 350, "fields whose kind was compared: \(kindsCompared)")
    }

    /// A document property's JSON kind, through `$ref` and nullable forms; nil where it may be several.
    static func kind(of property: [String: Any], in schemas: [String: [String: Any]]) -> String? {
        if let ref = property["$ref"] as? String, let target = schemas[String(ref.split(separator: "/").last ?? "")] {
            return target["enum"] != nil ? "string" : kind(of: target, in: schemas)
        }
        if let options = property["oneOf"] as? [[String: Any]] {
            let real = options.filter { $0["type"] as? String != "null" }
            return real.count == 1 ? kind(of: real[0], in: schemas) : nil
        }
        if let types = property["type"] as? [String] { return types.filter { $0 != "null" }.first }
        return property["type"] as? String
    }

    @Test("documents exactly the query parameters each endpoint declares, and each declared header, with the declared ranges")
    func parametersMatchDeclarations() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.data)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        for endpoint in Endpoint.all {
            let operation = try #require(paths[endpoint.path]?[endpoint.method.rawValue.lowercased()] as? [String: Any], "\(endpoint)")
            let parameters = operation["parameters"] as? [[String: Any]] ?? []
            func documented(_ declared: Parameter) -> [String: Any]? {
                parameters.first { ($0["name"] as? String) == declared.name && ($0["in"] as? String) == declared.location.rawValue }
            }
            for declared in endpoint.parameters {
                guard let entry = documented(declared) else {
                    Issue.record("\(endpoint) declares \(declared) but does not document it")
                    continue
                }
                if let range = declared.range {
                    let schema = entry["schema"] as? [String: Any] ?? [:]
                    #expect((schema["minimum"] as? NSNumber)?.int64Value == range.lowerBound, "\(endpoint) \(declared) minimum")
                    #expect((schema["maximum"] as? NSNumber)?.int64Value == range.upperBound, "\(endpoint) \(declared) maximum")
                }
            }
            let documentedQueries = Set(parameters.filter { ($0["in"] as? String) == "query" }.compactMap { $0["name"] as? String })
            let declaredQueries = Set(endpoint.parameters.filter { $0.location == .query }.map(\.name))
            #expect(documentedQueries == declaredQueries, "\(endpoint): documented \(documentedQueries), declared \(declaredQueries)")
        }
    }

    @Test("every endpoint of the route table has a handler in the router")
    func everyEndpointIsRouted() async throws {
        let server = try await TestServer.make(.sqlite)
        try await server.run { api in
            for endpoint in Endpoint.all {
                let parameters = endpoint.parameterNames.map { _ in UUID().uuidString.lowercased() }
                let response = try await api.call(endpoint, parameters: parameters)
                #expect(response.errorCode != "route_not_found" && response.errorCode != "method_not_allowed",
                        "\(endpoint) has no handler: \(response.text)")
            }
        }
    }
}
