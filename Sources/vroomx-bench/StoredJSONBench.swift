import ArgumentParser
import Foundation
import VroomXModels

/// Reading the JSON the server stored (an order's vehicles, an order's
/// document) with `StoredJSON` against Foundation's `JSONDecoder`, which it
/// stands in for: time a decode, or instructions under `scripts/callgrind --marks`.
struct StoredJSONBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "json",
                                                    abstract: "Stored documents read by StoredJSON against JSONDecoder.")

    @Option(help: "Decodes of each document per round.") var decodes = 2_000
    @Option(help: "Rounds (the median is printed).") var rounds = 9
    @Option(help: "Instead of timing, count the instructions of this many decodes of each (under scripts/callgrind --marks).")
    var instructions: Int?

    func run() async throws {
        guard (1...1_000_000).contains(decodes), (1...1_000).contains(rounds) else { throw ValidationError("--decodes 1…1,000,000, --rounds 1…1,000") }
        if let instructions, !(1...100_000).contains(instructions) { throw ValidationError("--instructions takes 1 to 100,000 decodes") }
        let encoder = WireJSON.encoder()
        let decoder = WireJSON.decoder()
        let created = Date(timeIntervalSince1970: 1_790_000_000)
        let vehicles = [Vehicle(id: ID(), year: 2021, make: "Toyota", model: "Camry", vin: "4T1B11HK5KU123456", color: "Silver",
                                type: .sedan, operable: true, lotNumber: "41882913", priceCents: 45_000),
                        Vehicle(id: ID(), year: 2019, make: "Ford", model: "F-150", vin: "1FTEW1EP5KFA12345", color: "Blue",
                                type: .pickup, operable: false, priceCents: 60_000)]
        let order = Order(id: ID(), number: "ORD-10423", tripID: ID(), driverID: ID(), vehicle: vehicles[0],
                          pickup: Stop(name: "Copart Tulsa", address: "500 Main St, Tulsa, OK 74103", contactName: "Yard office",
                                       contactPhone: "+1 918 555 0100", windowStart: LocalDate("2026-11-30"), windowEnd: LocalDate("2026-12-01"),
                                       location: GeoPoint(latitude: 36.15398, longitude: -95.99277), geofenceRadiusMeters: 250),
                          delivery: Stop(name: "Dallas Auto", address: "1 Elm St, Dallas, TX 75201", contactPhone: "+1 214 555 0199"),
                          status: .assigned, actualPickupDate: nil, actualDeliveryDate: nil, pickupETA: created, deliveryETA: nil,
                          revenueCents: 105_000, paymentTerms: "COD", version: 3, createdAt: created, updatedAt: created, vehicles: vehicles)
        let documents: [(String, String, (String) throws -> Void, (Data) throws -> Void)] = [
            ("an order's 2 vehicles", String(decoding: try encoder.encode(vehicles), as: UTF8.self),
             { _ = try StoredJSON.decode([Vehicle].self, from: $0) }, { _ = try decoder.decode([Vehicle].self, from: $0) }),
            ("an order's document", String(decoding: try encoder.encode(order), as: UTF8.self),
             { _ = try StoredJSON.decode(Order.self, from: $0) }, { _ = try decoder.decode(Order.self, from: $0) }),
        ]
        if let instructions {
            guard CallgrindMarks.available else { throw ValidationError("--instructions runs under scripts/callgrind --marks") }
            for (name, text, quick, foundation) in documents {
                try await CallgrindMarks.count("\(name), StoredJSON", requests: instructions) { for _ in 0..<instructions { try quick(text) } }
                let data = Data(text.utf8)
                try await CallgrindMarks.count("\(name), JSONDecoder", requests: instructions) { for _ in 0..<instructions { try foundation(data) } }
            }
            return
        }
        print("document                   bytes   StoredJSON µs   JSONDecoder µs   ratio   (median of \(rounds) rounds of \(decodes))")
        for (name, text, quick, foundation) in documents {
            let data = Data(text.utf8)
            var quickTimes: [Double] = []
            var foundationTimes: [Double] = []
            for _ in 0..<rounds {
                // Alternating, so the machine's load falls on both alike.
                quickTimes.append(try Self.microseconds(decodes) { try quick(text) })
                foundationTimes.append(try Self.microseconds(decodes) { try foundation(data) })
            }
            let (quickMedian, foundationMedian) = (quickTimes.sorted()[rounds / 2], foundationTimes.sorted()[rounds / 2])
            print(name.padding(toLength: 25, withPad: " ", startingAt: 0), String(format: "%6d %15.2f %16.2f %7.1f×", text.utf8.count,
                                                                                 quickMedian, foundationMedian, foundationMedian / quickMedian))
        }
    }

    /// Microseconds a call, over `count` calls.
    private static func microseconds(_ count: Int, _ work: () throws -> Void) throws -> Double {
        let clock = ContinuousClock()
        let elapsed = try clock.measure { for _ in 0..<count { try work() } }
        let (seconds, attoseconds) = elapsed.components
        return (Double(seconds) * 1e6 + Double(attoseconds) / 1e12) / Double(count)
    }
}
