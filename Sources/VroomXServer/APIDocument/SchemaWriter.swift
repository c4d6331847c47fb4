import Foundation
import VroomXModels

/// Writes the JSON Schema of the types the API reads and writes, from the
/// types themselves (`TypeProbe`), the shared `FieldLimits` and the words in
/// `SchemaNotes`. Every struct and enumeration met becomes a named component.
struct SchemaWriter {
    private(set) var components: [String: JSONValue] = [:]
    /// Types whose component is written or being written (a type can hold itself).
    private var named: [ObjectIdentifier: String] = [:]
    /// What went wrong, for the test that holds the document to the code.
    private(set) var problems: [String] = []

    /// The schema of a value of this type: a plain type inline, anything else a `$ref`.
    mutating func schema(of type: Any.Type) -> JSONValue {
        if let plain = Self.plain(type) { return plain }
        if let optional = type as? any OptionalType.Type { return Self.nullable(schema(of: optional.wrappedType)) }
        if let array = type as? any ArrayType.Type { return ["type": "array", "items": schema(of: array.elementType)] }
        if let dictionary = type as? any DictionaryType.Type { return ["type": "object", "additionalProperties": schema(of: dictionary.valueType)] }
        guard let decodable = type as? any Decodable.Type else {
            problems.append("\(type) is not Decodable")
            return [:]
        }
        return reference(decodable)
    }

    /// `{"$ref": …}` to the type's component, writing it the first time.
    mutating func reference(_ type: any Decodable.Type, named name: String? = nil) -> JSONValue {
        let id = ObjectIdentifier(type)
        if let existing = named[id] { return ["$ref": .string("#/components/schemas/\(existing)")] }
        let name = name ?? SchemaNotes.name(of: type)
        named[id] = name
        components[name] = component(type, name: name)
        return ["$ref": .string("#/components/schemas/\(name)")]
    }

    /// A list answer: `{"items": […]}`, with `next_cursor` when it is paged.
    mutating func list(of type: any Decodable.Type, paged: Bool) -> JSONValue {
        let element = reference(type)
        let name = SchemaNotes.name(of: type) + "List"
        var properties: [String: JSONValue] = ["items": ["type": "array", "items": element]]
        if paged || components[name]?["properties"]?["next_cursor"] != nil {
            properties["next_cursor"] = ["type": "string", "description": "Where the next page starts; absent on the last page."]
        }
        components[name] = ["type": "object", "required": ["items"], "properties": .object(properties)]
        return ["$ref": .string("#/components/schemas/\(name)")]
    }

    private mutating func component(_ type: any Decodable.Type, name: String) -> JSONValue {
        let notes = SchemaNotes.all[name]
        var schema: JSONValue
        if let values = Self.enumerationValues(type) {
            schema = ["type": "string", "enum": .array(values.map { .string($0) })]
        } else {
            do {
                schema = try object(type, name: name)
            } catch {
                problems.append("\(name): the probe could not read \(type): \(error)")
                schema = ["type": "object"]
            }
        }
        if let description = notes?.description { schema["description"] = .string(description) }
        return schema
    }

    private mutating func object(_ type: any Decodable.Type, name: String) throws -> JSONValue {
        switch try TypeProbe.shape(of: type) {
        case .single(let plain):
            return schema(of: plain)
        case .object(let keys, let fields):
            var properties: [String: JSONValue] = [:]
            var required: [JSONValue] = []
            for key in keys {
                guard let field = fields[key] else { continue }
                properties[key] = property(field, key: key, in: name)
                if field.required { required.append(.string(key)) }
            }
            var schema: JSONValue = ["type": "object", "properties": .object(properties)]
            if !required.isEmpty { schema["required"] = .array(required) }
            return schema
        }
    }

    private mutating func property(_ field: TypeProbe.Field, key: String, in schemaName: String) -> JSONValue {
        let notes = SchemaNotes.all[schemaName]
        let members = field.types.map { type -> JSONValue in
            // A field read as an optional states the optional's member; null is said once below.
            var value = schema(of: (type as? any OptionalType.Type)?.wrappedType ?? type)
            value = Self.limited(value, key: key, in: schemaName)
            if key.hasSuffix("_cents"), value["type"] == "integer" { value["description"] = "Money in cents (integer minor units)" }
            return value
        }
        // Variants of a field read by kind may overlap in shape (a change of status and of ETAs both carry an order id):
        // the kind says which, so the document says "any of", not "exactly one of".
        var value: JSONValue = members.count == 1 ? members[0] : ["anyOf": .array(members)]
        if let extra = notes?.fields[key] { value = value.merging(extra) }
        let nullable = field.nullable || field.types.contains { $0 is any OptionalType.Type }
        return nullable ? Self.nullable(value) : value
    }

    /// The field's limits from the shared table, where the table says this schema carries them.
    private static func limited(_ schema: JSONValue, key: String, in schemaName: String) -> JSONValue {
        var schema = schema
        if let text = FieldLimits.texts.first(where: { $0.field == key && $0.documentedIn.contains(schemaName) }) {
            schema["maxLength"] = .integer(Int64(text.max))
            if text.required { schema["minLength"] = 1 }
        }
        if let number = FieldLimits.numbers.first(where: { $0.field == key && $0.documentedIn.contains(schemaName) }) {
            schema["minimum"] = .integer(Int64(number.range.lowerBound))
            schema["maximum"] = .integer(Int64(number.range.upperBound))
        }
        if let decimal = FieldLimits.decimals.first(where: { $0.field == key && $0.documentedIn.contains(schemaName) }) {
            schema["minimum"] = .number(decimal.range.lowerBound)
            schema["maximum"] = .number(decimal.range.upperBound)
        }
        return schema
    }

    static func nullable(_ schema: JSONValue) -> JSONValue {
        // Words about the field stay beside the choice, not inside one member.
        var inner = schema
        let description = inner["description"]
        inner["description"] = nil
        var value: JSONValue = ["oneOf": [inner, ["type": "null"]]]
        if case .array(let members)? = inner["anyOf"], inner.objectCount == 1 { value = ["anyOf": .array(members + [["type": "null"]])] }
        if let description { value["description"] = description }
        return value
    }

    /// The schema of a plain JSON value, or nil for a type of its own.
    static func plain(_ type: Any.Type) -> JSONValue? {
        switch type {
        case is String.Type: return ["type": "string"]
        case is Bool.Type: return ["type": "boolean"]
        case is Int32.Type: return ["type": "integer", "format": "int32"]
        case is Int.Type, is Int64.Type: return ["type": "integer", "format": "int64"]
        case is Double.Type, is Float.Type: return ["type": "number"]
        case is UUID.Type, is any IdentifierType.Type: return ["type": "string", "format": "uuid"]
        case is Date.Type: return ["type": "string", "format": "date-time",
                                   "description": "UTC ISO-8601 with milliseconds, e.g. 2026-11-22T14:05:09.120Z"]
        case is LocalDate.Type: return ["type": "string", "format": "date", "description": "Calendar date YYYY-MM-DD"]
        case let raw as any RawRepresentable.Type where enumerationValues(raw) == nil:
            func rawType<R: RawRepresentable>(_ type: R.Type) -> Any.Type { R.RawValue.self }
            return plain(rawType(raw))
        default: return nil
        }
    }

    /// The values of a fixed set of words (a status), or nil.
    static func enumerationValues(_ type: Any.Type) -> [String]? {
        func values<C: CaseIterable & RawRepresentable>(_ type: C.Type) -> [String] { type.allCases.compactMap { $0.rawValue as? String } }
        guard let cases = type as? any (CaseIterable & RawRepresentable).Type else { return nil }
        let words = values(cases)
        return words.isEmpty ? nil : words
    }
}

/// Types the writer looks through: optionals, lists, maps and ids.
protocol OptionalType { static var wrappedType: Any.Type { get } }
extension Optional: OptionalType { static var wrappedType: Any.Type { Wrapped.self } }
protocol ArrayType { static var elementType: Any.Type { get } }
extension Array: ArrayType { static var elementType: Any.Type { Element.self } }
protocol DictionaryType { static var valueType: Any.Type { get } }
extension Dictionary: DictionaryType { static var valueType: Any.Type { Value.self } }
protocol IdentifierType {}
extension ID: IdentifierType {}
