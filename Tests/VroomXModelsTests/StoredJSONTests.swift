import Foundation
import Testing
@testable import VroomXModels

/// `StoredJSON` must give what `WireJSON.decoder()` gives, value or error, for
/// every text; and must read the plain text the wire encoder writes itself.
@Suite struct StoredJSONTests {
    /// Everything the reader reads its own way: nesting, optionals, dates,
    /// doubles, integers of each width, dictionaries, enums, ids.
    struct Sample: Codable, Equatable {
        enum Size: String, Codable { case small, large }
        var name: String
        var note: String?
        var count: Int
        var small: Int8
        var wide: UInt64
        var ratio: Double
        var flag: Bool
        var at: Date
        var size: Size
        var tags: [String]
        var scores: [String: Int]
        var nested: [Sample]
        var vehicle: Vehicle?
        var point: GeoPoint?
    }

    static let texts = ["", "Camry", "Crème brûlée", "e\u{301}", "🚚 TR-7", "quote \" inside", "back\\slash", "tab\tline\nfeed",
                        "slash / kept", "\u{7f}", "日本語"]

    static func sample(_ seed: Int, depth: Int = 0) -> Sample {
        var random = SeededRandom(seed)
        let text = { texts[Int(random.next() % UInt64(texts.count))] }
        return Sample(
            name: text(), note: random.next() % 2 == 0 ? nil : text(), count: Int(bitPattern: UInt(random.next())) >> Int(random.next() % 64),
            small: Int8(truncatingIfNeeded: random.next()), wide: random.next(),
            ratio: Double(Int64(bitPattern: random.next())) / Double(1 << (random.next() % 60)), flag: random.next() % 2 == 0,
            at: Date(timeIntervalSince1970: Double(random.next() % 4_000_000_000)), size: random.next() % 2 == 0 ? .small : .large,
            tags: (0..<Int(random.next() % 4)).map { _ in text() }, scores: [text(): Int(random.next() % 1000)],
            nested: depth < 2 ? (0..<Int(random.next() % 3)).map { sample(seed &* 31 &+ $0, depth: depth + 1) } : [],
            vehicle: random.next() % 3 == 0 ? nil : Vehicle(id: ID(), year: random.next() % 2 == 0 ? nil : 2021, make: text(), model: text(),
                                                           vin: "1HGCM82633A004352", color: text(), type: .suv, operable: random.next() % 2 == 0,
                                                           lotNumber: random.next() % 2 == 0 ? nil : text(), priceCents: Int(random.next() % 1_000_000)),
            point: random.next() % 2 == 0 ? nil : GeoPoint(latitude: 36.15398, longitude: -95.99277))
    }

    /// The wire decoder's outcome: the value, or that it threw.
    static func authority<T: Decodable>(_ type: T.Type, _ text: String) -> T? {
        try? WireJSON.decoder().decode(type, from: Data(text.utf8))
    }

    @Test func encodedValuesReadBackAsTheWireDecoderReadsThem() throws {
        let encoder = WireJSON.encoder()
        for seed in 0..<400 {
            let value = Self.sample(seed)
            let text = String(decoding: try encoder.encode(value), as: UTF8.self)
            let quick = try StoredJSON.decode(Sample.self, from: text)
            #expect(quick == Self.authority(Sample.self, text), "seed \(seed): \(text)")
            #expect(quick == value)
        }
    }

    @Test func theWireEncodersPlainTextIsReadWithoutTheDecoder() throws {
        let vehicles = [Vehicle(id: ID(), year: 2021, make: "Toyota", model: "Camry", vin: "1HGCM82633A004352", color: "Blue Crème",
                                type: .sedan, operable: false, lotNumber: "L-12", priceCents: 45_000),
                        Vehicle(make: "Ford", model: "F-150")]
        let text = String(decoding: try WireJSON.encoder().encode(vehicles), as: UTF8.self)
        #expect(StoredJSON.quickly([Vehicle].self, from: text) == vehicles)
        let sample = Self.sample(7)
        let sampleText = String(decoding: try WireJSON.encoder().encode(sample), as: UTF8.self)
        if !sampleText.contains("\\") { #expect(StoredJSON.quickly(Sample.self, from: sampleText) == sample) }
        // Yesterday's vehicle, without the newer members, takes their defaults through the type's own rule.
        let old = #"[{"color":"Red","make":"Honda","model":"Civic","vin":"X","year":2010}]"#
        #expect(StoredJSON.quickly([Vehicle].self, from: old) == [Vehicle(year: 2010, make: "Honda", model: "Civic", vin: "X", color: "Red")])
    }

    /// Text the quick path leaves alone, or that is wrong: the outcome is still the wire decoder's.
    @Test(arguments: [
        #"[{"make":"A\"B","model":"C","vin":"","color":""}]"#,          // an escape
        #"[{"make":"A","make":"B"}]"#,                                  // a key given twice
        #"[{"make":"A","year":2021.0}]"#,                               // an integer written with a fraction
        #"[{"make":"A","year":2e3}]"#,                                  // an integer written with an exponent
        #"[{"make":"A","year":99999999999999999999}]"#,                 // too large for Int
        #"[{"make":"A","year":-9223372036854775808}]"#,                 // Int.min
        #"[{"make":"A","year":"2021"}]"#,                               // a string where a number belongs
        #"[{"make":"A","operable":1}]"#,                                // a number where a Bool belongs
        #"[{"make":"A","type":"spaceship"}]"#,                          // an unknown case
        #"[{"make":"A","id":"not-a-uuid"}]"#,                           // an id that is not one
        #"[{"make":"A","year":null,"lot_number":null}]"#,               // nulls for optionals
        #"[{"make":null}]"#,                                            // null where a String belongs (its default applies)
        #"[{"make":"A"},]"#, #"[{"make":"A"}"#, #"[{"make":"A"}] x"#,   // not JSON
        #"[{"make":"A","year":01}]"#, #"[{"make":"A","year":-}]"#, #"[{"make":"A","year":1.}]"#,
        #"[{"make":"A","extra":{"deep":[1,2,{"x":null}]}}]"#,          // unknown members are skipped
        #"  [ { "make" : "A" , "vin" : "B" } ]  "#,                     // whitespace
        #"[{"mak\u0065":"A"}]"#, "[{\"make\":\"tab\tinside\"}]",          // an escaped key; a raw control character
        "[]", "[null]", "{}", "null", "",
        String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
    ])
    func outcomesMatchTheWireDecoder(text: String) {
        let quick = try? StoredJSON.decode([Vehicle].self, from: text)
        #expect(quick == Self.authority([Vehicle].self, text))
    }

    @Test func datesAndOtherSpecialTypesFollowTheWireDecoder() throws {
        struct Stamped: Codable, Equatable { var at: Date; var link: URL?; var amount: Decimal? }
        for text in [#"{"at":"2026-11-22T14:05:09Z"}"#, #"{"at":"2026-11-22T14:05:09.250Z"}"#, #"{"at":"yesterday"}"#,
                     #"{"at":784000000}"#, #"{"at":"2026-11-22T14:05:09Z","link":"https://example.com/a"}"#,
                     #"{"at":"2026-11-22T14:05:09Z","amount":12.5}"#] {
            #expect((try? StoredJSON.decode(Stamped.self, from: text)) == Self.authority(Stamped.self, text), "\(text)")
        }
    }

    /// A number that is not zero but rounds to it: `JSONDecoder` refuses it, so must this.
    @Test func aNumberTooSmallForADoubleIsRefused() {
        for number in ["1e-400", "-1e-400", "2.4703282292062327e-324", "0.\(String(repeating: "0", count: 400))1", "0.0", "-0e-400", "5e-324"] {
            let text = #"[{"id":"8d1f4a0e-5b7c-4f7e-9c1d-2a3b4c5d6e7f","stop":"pickup","kind":"waiting","note":"","reported_at":"2026-11-22T14:05:09Z","photos":[],"truck_distance_meters":"# + number + "}]"
            let quick = try? StoredJSON.decode([StopProblem].self, from: text)
            #expect(quick == Self.authority([StopProblem].self, text), "\(number)")
        }
    }

    /// Types that catch errors and go on: what they make must be what `JSONDecoder` leads them to.
    @Test func typesThatCatchErrorsGetTheWireDecodersAnswer() {
        struct Lenient: Decodable, Equatable {
            var number: Int
            enum CodingKeys: String, CodingKey { case number }
            init(from decoder: any Decoder) throws {
                number = (try? decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .number)) ?? -1
            }
        }
        /// Keeps the elements it can read, skipping the others.
        struct Lossy: Decodable, Equatable {
            var numbers: [Int] = []
            struct Skip: Decodable {}
            init(from decoder: any Decoder) throws {
                var elements = try decoder.unkeyedContainer()
                while !elements.isAtEnd {
                    if let number = try? elements.decode(Int.self) { numbers.append(number) } else { _ = try? elements.decode(Skip.self) }
                }
            }
        }
        for text in [#"{"number":1.0}"#, #"{"number":2e3}"#, #"{"number":1,"number":2}"#, #"{"number":7}"#] {
            #expect((try? StoredJSON.decode(Lenient.self, from: text)) == Self.authority(Lenient.self, text), "\(text)")
        }
        for text in [#"["x", 1, 2]"#, #"[1, 2, 3]"#, #"[1, {}, 2]"#] {
            #expect((try? StoredJSON.decode(Lossy.self, from: text)) == Self.authority(Lossy.self, text), "\(text)")
        }
    }

    @Test func anOrderAsStoredReadsBackWhole() throws {
        let created = Date(timeIntervalSince1970: 1_790_000_000)
        let order = Order(id: ID(), number: "ORD-1", tripID: ID(), driverID: nil,
                          vehicle: Vehicle(year: 2020, make: "Kia", model: "Soul", vin: "KNDJP3A5XL7012345", color: "White"),
                          pickup: Stop(name: "Copart Tulsa", address: "500 Main St, Tulsa, OK 74103", windowStart: LocalDate("2026-11-30"),
                                       location: GeoPoint(latitude: 36.15, longitude: -95.99), geofenceRadiusMeters: 250),
                          delivery: Stop(address: "1 Elm, Dallas, TX"), status: .assigned, actualPickupDate: nil, actualDeliveryDate: nil,
                          pickupETA: created, deliveryETA: nil, revenueCents: 45_000, paymentTerms: "COD", version: 3,
                          createdAt: created, updatedAt: created)
        let text = String(decoding: try WireJSON.encoder().encode(order), as: UTF8.self)
        #expect(StoredJSON.quickly(Order.self, from: text) == order)
    }
}

/// The same numbers on every run, so a failure names a seed that repeats it.
struct SeededRandom {
    private var state: UInt64
    init(_ seed: Int) { state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
