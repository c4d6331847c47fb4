import Foundation
import VroomXModels

/// What a `Decodable` type reads, found by decoding it from a probe that
/// answers every question and records what it was asked: the code's own
/// account of its wire shape, which the API document is written from.
///
/// A type that reads a field by another field's value (a change's row by its
/// entity, a mutation's payload by its kind) is decoded once per combination
/// of the enumerations it reads, so every variant is seen.
enum TypeProbe {
    /// One field as the type reads it.
    struct Field {
        /// The types read under the key, in the order first seen (several for a field read by kind).
        var types: [Any.Type] = []
        /// Read in every variant without first asking whether it is there.
        var required = true
        /// Null is accepted (asked `decodeNil`, or read as an optional).
        var nullable = false
    }

    /// How a type is written: an object with fields, or a single value of a plain type.
    enum Shape {
        case object(keys: [String], fields: [String: Field])
        case single(Any.Type)
    }

    /// At most this many decodings per type (the product of its enumerations' cases).
    static let maxVariants = 256

    static func shape(of type: any Decodable.Type) throws -> Shape {
        let first = Recorder(choices: [:])
        try decode(type, first)
        if let single = first.single { return .single(single) }
        // Every combination of the cases of the enumerations read at the top level.
        var combinations: [[ObjectIdentifier: Int]] = [[:]]
        for (enumeration, count) in first.enumerations {
            let next = combinations.flatMap { choice in (0..<count).map { choice.merging([enumeration: $0]) { _, new in new } } }
            guard next.count <= maxVariants else { break }
            combinations = next
        }
        var keys: [String] = []
        var fields: [String: Field] = [:]
        for choice in combinations {
            let recorder = Recorder(choices: choice)
            try decode(type, recorder)
            for key in keys where recorder.fields[key] == nil { fields[key]?.required = false }
            for key in recorder.keys {
                let seen = recorder.fields[key] ?? Field()
                guard var field = fields[key] else {
                    keys.append(key)
                    fields[key] = seen
                    // A key first met in a later variant is absent from the earlier ones.
                    if choice != combinations[0] { fields[key]?.required = false }
                    continue
                }
                for type in seen.types where !field.types.contains(where: { $0 == type }) { field.types.append(type) }
                field.required = field.required && seen.required
                field.nullable = field.nullable || seen.nullable
                fields[key] = field
            }
        }
        return .object(keys: keys, fields: fields)
    }

    private static func decode(_ type: any Decodable.Type, _ recorder: Recorder) throws {
        _ = try type.init(from: ProbeDecoder(recorder: recorder))
    }

    final class Recorder {
        /// The case index to answer for each enumeration read at the top level.
        let choices: [ObjectIdentifier: Int]
        var keys: [String] = []
        var fields: [String: Field] = [:]
        var present: Set<String> = []
        var enumerations: [(ObjectIdentifier, Int)] = []
        /// Set when the type reads itself from a single value of this type.
        var single: Any.Type?

        init(choices: [ObjectIdentifier: Int]) { self.choices = choices }

        func read(_ key: String, as type: Any.Type, required: Bool) {
            if fields[key] == nil { keys.append(key) }
            var field = fields[key] ?? Field()
            if !field.types.contains(where: { $0 == type }) { field.types.append(type) }
            field.required = field.required && required && !present.contains(key)
            fields[key] = field
        }

        func readNull(_ key: String) {
            if fields[key] == nil { keys.append(key); fields[key] = Field(types: [], required: !present.contains(key)) }
            fields[key]?.nullable = true
        }

        /// A value of any type: a chosen case, one decoded from a fresh probe, or one from a sample literal.
        func value<T: Decodable>(_ type: T.Type, topLevel: Bool) throws -> T {
            func cases<C: CaseIterable>(_ type: C.Type) -> [Any] { Array(type.allCases) }
            if let enumeration = T.self as? any CaseIterable.Type {
                let all = cases(enumeration)
                let id = ObjectIdentifier(T.self)
                if topLevel, !enumerations.contains(where: { $0.0 == id }) { enumerations.append((id, all.count)) }
                let index = topLevel ? (choices[id] ?? 0) : 0
                if let value = all[index % max(all.count, 1)] as? T { return value }
            }
            if let value = try? T(from: ProbeDecoder(recorder: Recorder(choices: [:]))) { return value }
            for sample in TypeProbe.samples {
                if let value = try? WireJSON.decoder().decode(T.self, from: Data(sample.utf8)) { return value }
            }
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "no probe value for \(T.self)"))
        }
    }

    /// Literals a leaf value may be read from (an id, a day, an instant, …), tried in turn.
    static let samples = ["\"00000000-0000-4000-8000-000000000000\"", "\"2026-01-01\"", "\"2026-01-01T00:00:00.000Z\"", "0", "true",
                          "\"x\"", "{}", "[]"]

    struct ProbeDecoder: Decoder {
        let recorder: Recorder
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Keyed<Key>(recorder: recorder))
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(recorder: recorder) }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey] = []
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool {
            recorder.present.insert(key.stringValue)
            return true
        }
        func decodeNil(forKey key: Key) throws -> Bool {
            recorder.readNull(key.stringValue)
            return false
        }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            recorder.read(key.stringValue, as: T.self, required: true)
            return try recorder.value(T.self, topLevel: true)
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            recorder.read(key.stringValue, as: T.self, required: false)
            recorder.readNull(key.stringValue)
            return try recorder.value(T.self, topLevel: true)
        }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { plain(key, false, required: true) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { plain(key, "x", required: true) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { plain(key, 0.0, required: true) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { plain(key, 0, required: true) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { plain(key, Int64(0), required: true) }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { plain(key, false, required: false) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { plain(key, "x", required: false) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { plain(key, 0.0, required: false) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { plain(key, 0, required: false) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { plain(key, Int64(0), required: false) }

        private func plain<Value>(_ key: Key, _ value: Value, required: Bool) -> Value {
            recorder.read(key.stringValue, as: Value.self, required: required)
            if !required { recorder.readNull(key.stringValue) }
            return value
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            recorder.read(key.stringValue, as: [String: String].self, required: true)
            return KeyedDecodingContainer(Keyed<NestedKey>(recorder: Recorder(choices: [:])))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            recorder.read(key.stringValue, as: [String].self, required: true)
            return Unkeyed()
        }
        func superDecoder() throws -> any Decoder { ProbeDecoder(recorder: Recorder(choices: [:])) }
        func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(recorder: Recorder(choices: [:])) }
    }

    /// An empty list.
    struct Unkeyed: UnkeyedDecodingContainer {
        var codingPath: [any CodingKey] = []
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }
        func decodeNil() throws -> Bool { true }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: [], debugDescription: "empty"))
        }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            KeyedDecodingContainer(Keyed<NestedKey>(recorder: Recorder(choices: [:])))
        }
        func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed() }
        func superDecoder() throws -> any Decoder { ProbeDecoder(recorder: Recorder(choices: [:])) }
    }

    /// A single value: records the plain type a type reads itself from.
    struct Single: SingleValueDecodingContainer {
        let recorder: Recorder
        var codingPath: [any CodingKey] = []
        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { recorder.single = recorder.single ?? Bool.self; return false }
        func decode(_ type: String.Type) throws -> String { recorder.single = recorder.single ?? String.self; return "x" }
        func decode(_ type: Double.Type) throws -> Double { recorder.single = recorder.single ?? Double.self; return 0 }
        func decode(_ type: Int.Type) throws -> Int { recorder.single = recorder.single ?? Int.self; return 0 }
        func decode(_ type: Int64.Type) throws -> Int64 { recorder.single = recorder.single ?? Int64.self; return 0 }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            recorder.single = recorder.single ?? T.self
            return try recorder.value(T.self, topLevel: false)
        }
    }
}
