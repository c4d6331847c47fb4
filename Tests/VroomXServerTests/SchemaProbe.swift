import Foundation
import VroomXModels

/// The keys a `Decodable` type reads, and which of them it requires, found
/// by decoding the type from a probe that answers every question: the code's
/// own account of its wire shape, to hold the API document to.
enum SchemaProbe {
    struct Shape: Equatable {
        var keys: Set<String> = []
        var required: Set<String> = []
        /// Each key's JSON kind: string, integer, number, boolean, array or object.
        var kinds: [String: String] = [:]
    }

    /// The JSON kind a Swift type is written as.
    static func kind(_ type: Any.Type) -> String {
        func rawKind<R: RawRepresentable>(_ type: R.Type) -> String { kind(R.RawValue.self) }
        switch type {
        case is String.Type, is Date.Type, is LocalDate.Type, is any ProbeString.Type: return "string"
        case is Int.Type, is Int64.Type, is Int32.Type: return "integer"
        case is Double.Type, is Float.Type: return "number"
        case is Bool.Type: return "boolean"
        case is any ProbeArray.Type: return "array"
        case let optional as any ProbeOptional.Type: return kind(optional.wrapped)
        case let raw as any RawRepresentable.Type: return rawKind(raw)
        default: return "object"
        }
    }

    static func shape<T: Decodable>(of type: T.Type) throws -> Shape {
        let recorder = Recorder()
        _ = try T(from: ProbeDecoder(recorder: recorder))
        return recorder.shape
    }

    final class Recorder {
        var shape = Shape()
        func read(_ key: any CodingKey, required: Bool, as type: Any.Type) {
            shape.keys.insert(key.stringValue)
            if required { shape.required.insert(key.stringValue) }
            shape.kinds[key.stringValue] = SchemaProbe.kind(type)
        }
    }

    /// Literals a leaf value may be read from (an id, a day, an instant, …), tried in turn.
    static let samples = ["\"00000000-0000-4000-8000-000000000000\"", "\"2026-01-01\"", "\"2026-01-01T00:00:00.000Z\"", "0", "true",
                          "\"x\"", "{}", "[]"]

    /// A value of any type: its first case, one decoded from the probe, or one from a sample literal.
    static func value<T: Decodable>(_ type: T.Type) throws -> T {
        func firstCase<C: CaseIterable>(_ type: C.Type) -> Any? { type.allCases.first }
        if let cases = T.self as? any CaseIterable.Type, let first = firstCase(cases) as? T { return first }
        if let value = try? T(from: ProbeDecoder(recorder: Recorder())) { return value }
        for sample in samples {
            if let value = try? WireJSON.decoder().decode(T.self, from: Data(sample.utf8)) { return value }
        }
        throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "no probe value for \(T.self)"))
    }

    struct ProbeDecoder: Decoder {
        let recorder: Recorder
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Keyed<Key>(recorder: recorder))
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { Single() }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey] = []
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            recorder.read(key, required: true, as: T.self)
            return try SchemaProbe.value(T.self)
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            recorder.read(key, required: false, as: T.self)
            return try SchemaProbe.value(T.self)
        }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { recorder.read(key, required: true, as: Bool.self); return false }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { recorder.read(key, required: true, as: String.self); return "x" }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { recorder.read(key, required: true, as: Double.self); return 0 }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { recorder.read(key, required: true, as: Int.self); return 0 }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { recorder.read(key, required: true, as: Int64.self); return 0 }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { recorder.read(key, required: false, as: Bool.self); return false }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { recorder.read(key, required: false, as: String.self); return "x" }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { recorder.read(key, required: false, as: Double.self); return 0 }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { recorder.read(key, required: false, as: Int.self); return 0 }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { recorder.read(key, required: false, as: Int64.self); return 0 }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            recorder.read(key, required: true, as: [String: String].self)
            return KeyedDecodingContainer(Keyed<NestedKey>(recorder: Recorder()))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            recorder.read(key, required: true, as: [String].self)
            return Unkeyed()
        }
        func superDecoder() throws -> any Decoder { ProbeDecoder(recorder: Recorder()) }
        func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(recorder: Recorder()) }
    }

    /// An empty list.
    struct Unkeyed: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey] = []
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }
        func decodeNil() throws -> Bool { true }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { throw DecodingError.valueNotFound(T.self, .init(codingPath: [], debugDescription: "empty")) }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            KeyedDecodingContainer(Keyed<NestedKey>(recorder: Recorder()))
        }
        func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }
        func superDecoder() throws -> any Decoder { ProbeDecoder(recorder: Recorder()) }
    }

    /// A leaf: strings, numbers and booleans of a plain kind (ids, days and
    /// instants are answered from `samples` when these fail).
    struct Single: SingleValueDecodingContainer {
        var codingPath: [any CodingKey] = []
        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { false }
        func decode(_ type: String.Type) throws -> String { "x" }
        func decode(_ type: Double.Type) throws -> Double { 0 }
        func decode(_ type: Int.Type) throws -> Int { 0 }
        func decode(_ type: Int64.Type) throws -> Int64 { 0 }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try SchemaProbe.value(T.self) }
    }
}

/// Types the probe reads as JSON strings, lists and optionals.
protocol ProbeString {}
extension ID: ProbeString {}
protocol ProbeArray {}
extension Array: ProbeArray {}
protocol ProbeOptional { static var wrapped: Any.Type { get } }
extension Optional: ProbeOptional { static var wrapped: Any.Type { Wrapped.self } }
