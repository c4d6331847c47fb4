import Foundation
import Testing
@testable import VroomXModels

/// `WireJSON.encode` must write the bytes `WireJSON.encoder()` writes, or
/// throw what it throws, for every value; and must write the wire's own
/// values itself rather than hand them all to the encoder.
@Suite struct WireJSONWriterTests {
    static func authority<T: Encodable>(_ value: T) -> [UInt8]? { (try? WireJSON.encoder().encode(value)).map(Array.init) }

    static func text(_ bytes: [UInt8]?) -> String { bytes.map { String(decoding: $0, as: UTF8.self) } ?? "(threw)" }

    @Test func randomValuesAreWrittenAsTheWireEncoderWritesThem() throws {
        /// Keys of plain ASCII, without a quote or backslash: the quick path sorts those, and leaves the rest to the encoder.
        func plainKeys(_ sample: StoredJSONTests.Sample) -> Bool {
            sample.scores.keys.allSatisfy { $0.utf8.allSatisfy { (0x20..<0x7F).contains($0) && $0 != 0x22 && $0 != 0x5C } }
                && sample.nested.allSatisfy(plainKeys)
        }
        var (quick, plain) = (0, 0)
        for seed in 0..<600 {
            let value = StoredJSONTests.sample(seed)
            let written = try? WireJSON.encode(value)
            #expect(written == Self.authority(value), "seed \(seed): \(Self.text(written)) against \(Self.text(Self.authority(value)))")
            if WireJSON.quickly(value) != nil { quick += 1 }
            if plainKeys(value) { plain += 1 }
        }
        // The samples' texts have no control character but line feeds and tabs: each with plain keys is written quickly.
        #expect(quick == plain && plain > 50, "\(quick) of 600 written by the quick path, \(plain) with plain keys")
    }

    @Test func theWiresOwnValuesAreWrittenWithoutTheEncoder() throws {
        let order = Order(id: ID(), number: "O-1", tripID: ID(), driverID: nil,
                          vehicle: Vehicle(year: 2021, make: "Toyota", model: "Camry", vin: "1HGCM82633A004352", color: "Crème / Blue"),
                          pickup: Stop(name: "Yard", address: "1 Main St\nTulsa, OK", windowStart: LocalDate("2026-12-01"),
                                       location: GeoPoint(latitude: 36.15398, longitude: -95.99277), geofenceRadiusMeters: 250),
                          delivery: Stop(address: "2 \"B\" St, Dallas, TX"), status: .assigned, actualPickupDate: nil, actualDeliveryDate: nil,
                          pickupETA: Date(timeIntervalSince1970: 1_790_000_000.25), deliveryETA: nil, revenueCents: 45_000,
                          paymentTerms: "COD", version: 3, createdAt: Date(timeIntervalSince1970: 1_789_000_000),
                          updatedAt: Date(timeIntervalSince1970: 1_789_000_100))
        let mutation = Mutation(.createExpense(CreateExpenseRequest(id: ID(), tripID: ID(), category: .fuel, amountCents: 12_345,
                                                                   date: try #require(LocalDate("2026-11-30")), notes: "Diesel, 80 gal")),
                                baseVersion: 2, dependsOn: [ID(), ID()])
        let values: [any Encodable] = [order, [order, order], mutation, ["b": 1, "a": 2, "a_b": 3, "ab": 4, "A": 5, "a1": 6, "a10": 7, "a9": 8],
                                       [3: "three", 10: "ten", -1: "minus one"], [[1, 2], [], [Int.min, Int.max]], [UInt64.max, 0],
                                       "top", 42, true, Optional<Int>.none, [Optional("x"), nil], [Date(timeIntervalSince1970: 0)]]
        func check<T: Encodable>(_ value: T) {
            let quick = WireJSON.quickly(value)
            #expect(quick != nil && quick == Self.authority(value), "\(Self.text(quick)) against \(Self.text(Self.authority(value)))")
        }
        for value in values { check(value) }
    }

    /// Numbers as the encoder writes them: integers of every width, doubles without a trailing `.0` (and with an exponent
    /// where it writes one), and those that are not finite an error either way.
    @Test func numbersMatchTheWireEncoder() {
        var random = SeededRandom(11)
        var doubles: [Double] = [0, -0.0, 1, -1, 0.1, 0.5, 1e15, 1e16, 1e20, 1e-5, 1e-7, 123456789.125, 5e-324, .greatestFiniteMagnitude,
                                 .infinity, -.infinity, .nan, 36.15398, -95.99277, 4503599627370496.5]
        for _ in 0..<2_000 {
            doubles.append(Double(bitPattern: random.next()))
            doubles.append(Double(Int64(bitPattern: random.next()) % 10_000_000) / Double([1, 10, 100, 1000, 1e6][Int(random.next() % 5)]))
        }
        for double in doubles {
            #expect((try? WireJSON.encode([double])) == Self.authority([double]), "\(double)")
        }
        for float in [Float(0.1), 3.5, -0, 1e10, .nan, Float(bitPattern: 0x7F7F_FFFF)] {
            #expect((try? WireJSON.encode([float])) == Self.authority([float]), "\(float)")
        }
        let integers: [any Encodable] = [[Int8.min, Int8.max], [Int16.min], [Int32.max], [Int64.min, Int64.max], [UInt8.max], [UInt16.max],
                                         [UInt32.max], [UInt.max], [0, -10, 10, 999_999_999_999]]
        func check<T: Encodable>(_ value: T) { #expect((try? WireJSON.encode(value)) == Self.authority(value), "\(value)") }
        for value in integers { check(value) }
    }

    @Test(arguments: ["", "plain", "quote \" and back\\slash", "slash / kept", "line\nfeed, return\r, tab\t", "bell \u{7}", "nul \u{0}",
                      "escape \u{1b}", "\u{7f} delete", "Crème brûlée", "e\u{301}", "🚚 TR-7", "\u{2028} separator", "日本語", "\u{1f}"])
    func textMatchesTheWireEncoder(text: String) {
        #expect((try? WireJSON.encode([text])) == Self.authority([text]))
        #expect((try? WireJSON.encode([text: 1])) == Self.authority([text: 1]), "as a key")
    }

    /// What the quick path leaves to the encoder, and types that write themselves oddly: the outcome is the encoder's.
    @Test func unusualValuesGetTheEncodersOutcome() throws {
        struct Stamped: Encodable { var data: Data; var link: URL; var amount: Decimal }
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        struct Twice: Encodable {
            enum Key: String, CodingKey { case a }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(1, forKey: .a)
                try container.encode(2, forKey: .a)
            }
        }
        struct Nested: Encodable {
            enum Key: String, CodingKey { case inner, list, z }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(1, forKey: .z)
                var inner = container.nestedContainer(keyedBy: Key.self, forKey: .inner)
                try inner.encode("x", forKey: .z)
                var list = container.nestedUnkeyedContainer(forKey: .list)
                try list.encode(3)
            }
        }
        struct Inherits: Encodable {
            enum Key: String, CodingKey { case b, a }
            func encode(to encoder: any Encoder) throws {
                var first = encoder.container(keyedBy: Key.self)
                try first.encode("b", forKey: .b)
                var again = encoder.container(keyedBy: Key.self)
                try again.encode("a", forKey: .a)
                var third = encoder.container(keyedBy: Key.self)
                try Vehicle(make: "Kia").encode(to: third.superEncoder())
            }
        }
        struct Refuses: Encodable {
            func encode(to encoder: any Encoder) throws { throw EncodingError.invalidValue(1, .init(codingPath: [], debugDescription: "no")) }
        }
        struct CatchesAndGoesOn: Encodable {
            enum Key: String, CodingKey { case bad, good }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                try? container.encode(Double.nan, forKey: .bad)
                try container.encode(1, forKey: .good)
            }
        }
        /// Asks for a single value container and writes nothing through it (`{}` nested to `JSONEncoder`, an error on top).
        struct Blank: Encodable { func encode(to encoder: any Encoder) throws { _ = encoder.singleValueContainer() } }
        struct Boom: Encodable { func encode(to encoder: any Encoder) throws { throw CancellationError() } }
        /// Catches a member's error and goes on: the key written before it must not stay.
        struct Tolerant: Encodable {
            enum Key: String, CodingKey { case a, b }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                try? container.encode(Boom(), forKey: .a)
                try container.encode(1, forKey: .b)
                var list = encoder.container(keyedBy: Key.self)
                try list.encode([1], forKey: .a)
            }
        }
        struct TolerantList: Encodable {
            func encode(to encoder: any Encoder) throws {
                var list = encoder.unkeyedContainer()
                try list.encode(1)
                try? list.encode(Boom())
                try list.encode(2)
            }
        }
        indirect enum Tree: Encodable {
            case node([Tree])
            func encode(to encoder: any Encoder) throws {
                var children = encoder.unkeyedContainer()
                if case .node(let nodes) = self { for node in nodes { try children.encode(node) } }
            }
        }
        var deep = Tree.node([])
        for _ in 0..<600 { deep = .node([deep]) }
        /// A container kept past its value's end, and written to while another value is encoded.
        final class Stash: @unchecked Sendable { var list: (any UnkeyedEncodingContainer)? }
        struct Leak: Encodable {
            let stash: Stash
            func encode(to encoder: any Encoder) throws { stash.list = encoder.unkeyedContainer() }
        }
        struct Later: Encodable {
            enum Key: String, CodingKey { case a }
            let stash: Stash
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                try stash.list?.encode(5)
                try container.encode(1, forKey: .a)
            }
        }
        struct Pair: Encodable {
            enum Key: String, CodingKey { case x, y }
            let stash = Stash()
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(Leak(stash: stash), forKey: .x)
                try container.encode(Later(stash: stash), forKey: .y)
            }
        }
        /// Writes itself differently at the top: the path is not kept, so reading it leaves the value to the encoder.
        struct PathAware: Encodable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(encoder.codingPath.isEmpty ? "top" : "nested")
            }
        }
        let stamped = Stamped(data: Data([1, 2, 3]), link: try #require(URL(string: "https://example.com/a b")), amount: Decimal(string: "12.50")!)
        let values: [any Encodable] = [stamped, Nothing(), [Nothing()], Twice(), Nested(), Inherits(), Refuses(), [Refuses()], CatchesAndGoesOn(),
                                       ["k\u{e9}y": 1, "key": 2], ["a\"b": 1], ["a": Blank()], Blank(), Tolerant(), TolerantList(), deep,
                                       Pair(), [PathAware()], PathAware()]
        func check<T: Encodable>(_ value: T) {
            let written = try? WireJSON.encode(value)
            #expect(written == Self.authority(value), "\(value): \(Self.text(written))")
            #expect(WireJSON.quickly(value) == nil, "\(value) is left to the encoder")
        }
        for value in values { check(value) }
    }
}
