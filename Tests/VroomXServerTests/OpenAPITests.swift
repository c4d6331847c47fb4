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
        let document = try #require(try JSONSerialization.jsonObject(with: Data(APIDocument.data)) as? [String: Any])
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
        let document = try #require(try JSONSerialization.jsonObject(with: Data(APIDocument.data)) as? [String: Any])
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
        // Whole and decimal ranges alike: the document states each as minimum and maximum.
        let ranges = FieldLimits.numbers.map { ($0.field, $0.documentedIn, Double($0.range.lowerBound), Double($0.range.upperBound)) }
            + FieldLimits.decimals.map { ($0.field, $0.documentedIn, $0.range.lowerBound, $0.range.upperBound) }
        for (field, documentedIn, low, high) in ranges {
            for schema in documentedIn {
                guard let stated = property(schema, field) else {
                    Issue.record("\(schema).\(field) is not in the document")
                    continue
                }
                #expect((stated["minimum"] as? Double) == low && (stated["maximum"] as? Double) == high,
                        "\(schema).\(field): \(stated["minimum"] ?? "none")...\(stated["maximum"] ?? "none"), the rule \(low)...\(high)")
                checked += 1
            }
        }
        #expect(checked >= 53, "the table documents \(checked) fields")
    }

    @Test("the document is written from the code without a gap: every type read, every reference resolved, one account per endpoint")
    func writtenWithoutGaps() throws {
        let (document, problems) = APIDocument.write()
        #expect(problems.isEmpty, "\(problems)")
        #expect(Data(APIDocument.data) == Data(document.bytes), "the served bytes are the written document")
        let described = APIOperation.all.map(\.endpoint)
        #expect(described.count == Set(described).count, "an endpoint described twice: \(described.filter { e in described.filter { $0 == e }.count > 1 })")
        #expect(Set(described) == Set(Endpoint.all))
        let text = String(decoding: document.bytes, as: UTF8.self)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let schemas = try #require((parsed["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let responses = try #require((parsed["components"] as? [String: Any])?["responses"] as? [String: Any])
        let references = try NSRegularExpression(pattern: ##""\$ref" : "#/components/(schemas|responses)/([A-Za-z]+)""##)
        var count = 0
        for match in references.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            let kind = String(text[Range(match.range(at: 1), in: text)!])
            let name = String(text[Range(match.range(at: 2), in: text)!])
            #expect((kind == "schemas" ? schemas[name] : responses[name]) != nil, "a reference to \(kind)/\(name), which is not written")
            count += 1
        }
        #expect(count > 500, "references found: \(count)")
        let ids = APIOperation.all.map { APIDocument.operationID($0.endpoint) }
        #expect(ids.count == Set(ids).count, "operation ids repeat")
    }

    /// One schema of the written document, as a dictionary.
    static func schema(_ name: String) throws -> [String: Any] {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(APIDocument.data)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        return try #require(schemas[name] as? [String: Any], "no schema \(name)")
    }

    static func property(_ schema: [String: Any], _ key: String) -> [String: Any] {
        (schema["properties"] as? [String: Any])?[key] as? [String: Any] ?? [:]
    }

    /// The members of a field's `oneOf` (or `anyOf`), as `$ref` names or type names.
    static func choices(_ property: [String: Any]) -> [String] {
        (property["oneOf"] as? [[String: Any]] ?? property["anyOf"] as? [[String: Any]] ?? []).map { member in
            (member["$ref"] as? String).map { String($0.split(separator: "/").last ?? "") } ?? (member["type"] as? String ?? "?")
        }
    }

    @Test("schemas say what the types read: required keys, optional ones as nullable, ids, instants and days, enumerations, limits")
    func schemasFollowTheTypes() throws {
        let trip = try Self.schema("Trip")
        #expect(Set(trip["required"] as? [String] ?? []) == ["id", "number", "status", "origin", "destination", "revenue_cents",
                                                               "driver_pay_cents", "miles", "version", "created_at", "updated_at"])
        let driverID = Self.property(trip, "driver_id")
        #expect(Self.choices(driverID) == ["string", "null"])
        #expect((driverID["oneOf"] as? [[String: Any]])?.first?["format"] as? String == "uuid")
        #expect(Self.property(trip, "status")["$ref"] as? String == "#/components/schemas/TripStatus")
        #expect(Self.property(trip, "created_at")["format"] as? String == "date-time")
        #expect(Self.choices(Self.property(trip, "start_date")) == ["string", "null"])
        #expect(try Self.schema("TripStatus")["enum"] as? [String] == TripStatus.allCases.map(\.rawValue))

        let create = try Self.schema("CreateTripRequest")
        #expect(Set(create["required"] as? [String] ?? []) == ["number", "origin", "destination", "miles"], "revenue is optional: without it the trip follows its orders")
        #expect(Self.property(create, "number")["maxLength"] as? Int == FieldLimits.tripNumber.max)
        #expect(Self.property(create, "number")["minLength"] as? Int == 1)

        // Null unassigns, and the key must be there.
        let assign = try Self.schema("AssignTripRequest")
        #expect(assign["required"] as? [String] == ["driver_id"])
        #expect(Self.choices(Self.property(assign, "driver_id")) == ["string", "null"])

        // Read only when present (`contains` first): optional even though read with `decode`.
        let expected = try Self.schema("ETAExpectation")
        #expect((expected["required"] as? [String] ?? []).isEmpty, "\(expected)")
    }

    @Test("a field read by another field's value offers every variant: a change's row by entity, a mutation's payload by kind")
    func variantsFollowTheirKind() throws {
        let row = Self.property(try Self.schema("Change"), "row")
        #expect(Set(Self.choices(row)) == ["Driver", "Trip", "Order", "Expense", "DriverNotification", "Inspection", "Equipment", "Customer",
                                           "DriverMessage", "null"])
        let change = try Self.schema("Change")
        #expect(!(change["required"] as? [String] ?? []).contains("row"), "a delete carries no row")
        let payload = Self.property(try Self.schema("Mutation"), "payload")
        // mark_notification_read and acknowledge_notification both carry a NotificationReference.
        #expect(Self.choices(payload).count == MutationKind.allCases.count - 1, "\(Self.choices(payload))")
        #expect(Self.choices(payload).contains("SendDriverMessageRequest") && Self.choices(payload).contains("TripReference"))
        #expect(Self.choices(payload).contains("CreateExpenseRequest") && Self.choices(payload).contains("RecordLocationsRequest"))
        let result = try Self.schema("MutationResult")
        #expect(!(result["required"] as? [String] ?? []).contains("row"))
    }

    @Test("documents exactly the query parameters each endpoint declares, and each declared header, with the declared ranges")
    func parametersMatchDeclarations() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(APIDocument.data)) as? [String: Any])
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
