import Foundation
import Testing
import VroomXModels
@testable import VroomXServer

/// The batch reader must read exactly what the decoder reads, or leave the
/// body to it (nil): never a different batch.
@Suite("Location batch reader")
struct LocationBatchReaderTests {
    static func read(_ text: String) -> RecordLocationsRequest? {
        Array(text.utf8).withUnsafeBytes { LocationBatchReader.read($0) }
    }

    static func decoded(_ text: String) -> RecordLocationsRequest? {
        try? WireJSON.decoder().decode(RecordLocationsRequest.self, from: Data(text.utf8))
    }

    @Test("batches as phones send them are read, and read as the decoder reads them")
    func readsWhatPhonesSend() throws {
        var generator = SystemRandomNumberGenerator()
        let encoder = WireJSON.encoder()
        for round in 0..<500 {
            let fixes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                GeoPosition(latitude: Double.random(in: -90...90, using: &generator), longitude: Double.random(in: -180...180, using: &generator),
                            accuracyMeters: Bool.random(using: &generator) ? Double.random(in: 0...500, using: &generator) : nil,
                            recordedAt: WireTime.date(milliseconds: Int64.random(in: 1_600_000_000_000...1_900_000_000_000, using: &generator)),
                            speedMetersPerSecond: Bool.random(using: &generator) ? Double.random(in: 0...60, using: &generator) : nil,
                            heading: Bool.random(using: &generator) ? Double(Int.random(in: 0...359, using: &generator)) : nil)
            }
            let batch = RecordLocationsRequest(id: round.isMultiple(of: 3) ? nil : ID(), fixes: fixes)
            let text = String(decoding: try encoder.encode(batch), as: UTF8.self)
            let read = try #require(Self.read(text), "not read: \(text)")
            #expect(read == Self.decoded(text) && read == batch, "\(text)")
        }
        // Spacing, key order, nulls, exponents, an upper-case id and a time with an offset: read, and read the same.
        for text in [
            #" { "fixes" : [ { "recorded_at" : "2026-11-22T14:05:09Z" , "longitude" : -95.5 , "latitude" : 3e1 } ] , "id" : null } "#,
            #"{"id":"6F9619FF-8B86-D011-B42D-00C04FC964FF","fixes":[{"latitude":-0.0,"longitude":1E-7,"heading":null,"#
                + #""accuracy_meters":12.5e0,"speed_meters_per_second":null,"recorded_at":"2026-11-22T16:05:09.5+02:00"}]}"#,
            "{\"fixes\":[]}", "{\"fixes\":[\n\t{\"latitude\":0,\"longitude\":0,\"recorded_at\":\"2026-01-01T00:00:00.000Z\"}\r\n]}",
        ] {
            let read = try #require(Self.read(text), "not read: \(text)")
            #expect(read == Self.decoded(text), "\(text)")
        }
    }

    @Test("anything outside the usual shape is left to the decoder, whatever the decoder then makes of it")
    func leavesTheRestToTheDecoder() {
        let fix = #""latitude":30,"longitude":-95,"recorded_at":"2026-11-22T14:05:09Z""#
        for text in [
            "", "null", "[]", "{}", "{\"fixes\":null}", "{\"fixes\":{}}", "{\"fixes\":[{}]}",
            "{\"fixes\":[{\(fix)}]} x", "{\"fixes\":[{\(fix)}]", "{\"fixes\":[{\(fix)},]}", "{\"fixes\":[{\(fix),}]}",
            // Keys the reader does not know, or twice (the decoder ignores or chooses).
            "{\"fixes\":[{\(fix)}],\"note\":1}", "{\"fixes\":[{\(fix),\"altitude\":3}]}", "{\"fixes\":[],\"fixes\":[{\(fix)}]}",
            "{\"fixes\":[{\(fix),\"latitude\":31}]}",
            // Escapes and control characters in strings.
            #"{"fi\u0078es":[]}"#, "{\"fixes\":[{\"latitude\":30,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09\\u005A\"}]}",
            "{\"fixes\":[{\"latitude\":30,\"longitude\":-95,\"recorded_at\":\"2026-11-22\t14:05:09Z\"}]}",
            // Numbers JSON does not allow, or a double cannot hold; strings and nulls where numbers go.
            "{\"fixes\":[{\"latitude\":01,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":1.,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":.5,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":+1,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":-,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":1e,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":1e999,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":NaN,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            // Zeros the decoder may refuse: a number too small for a double, a zero with an exponent.
            "{\"fixes\":[{\"latitude\":1e-400,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":0e1,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":0.00e2,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":\"30\",\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":null,\"longitude\":-95,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\(fix),\"heading\":true}]}", "{\"fixes\":[{\(fix),\"heading\":nul}]}",
            // Missing or unreadable fields.
            "{\"fixes\":[{\"latitude\":30,\"recorded_at\":\"2026-11-22T14:05:09Z\"}]}",
            "{\"fixes\":[{\"latitude\":30,\"longitude\":-95}]}",
            "{\"fixes\":[{\"latitude\":30,\"longitude\":-95,\"recorded_at\":\"yesterday\"}]}",
            "{\"id\":\"not-an-id\",\"fixes\":[]}", "{\"id\":7,\"fixes\":[]}",
        ] {
            #expect(Self.read(text) == nil, "read: \(text)")
        }
    }
}
