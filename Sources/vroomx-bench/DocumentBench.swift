import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import VroomXModels
import VroomXServer

/// The bill of lading PDF: how long the server takes to make it and how
/// large it is, for an order whose pickup and delivery each have 16 phone
/// photos and a signature, fetched through the API over loopback.
struct DocumentBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "documents", abstract: "Time and size of a bill of lading PDF with 2 × 16 photos.")

    @Option(help: "Size of each photo in KB (a phone's JPEG is 1,500–4,000).") var photoKB = 2_500
    @Option(help: "Photos per inspection.") var photos = 16
    @Option(help: "Runs (the median is reported).") var runs = 9

    func run() async throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Fixtures")
        let photo = Self.padded(Array(try Data(contentsOf: fixtures.appendingPathComponent("vehicle-photo.jpg"))), to: photoKB << 10)
        let signature = Array(try Data(contentsOf: fixtures.appendingPathComponent("signature.png")))
        let configuration = try await BenchScratch.configuration(postgres: nil)
        let services = try await ServerServices.make(configuration)
        let (tenant, dispatcher) = try await services.store.people.createTenant(name: "Document Bench", dispatcherEmail: "dispatch@documents.bench.example")
        let driver = try await services.store.people.createDriver(tenant: tenant.id, .init(
            email: "driver@documents.bench.example", name: "Bench Driver", payType: .perTrip, payRate: 1))
        let trip = try await services.store.trips.create(.init(number: "T-1", driverID: driver.id, origin: "a", destination: "b",
                                                             revenueCents: 1, miles: 1), tenant: tenant.id)
        let order = try await services.store.orders.create(.init(
            number: "O-1", tripID: trip.id, vehicle: Vehicle(year: 2021, make: "Toyota", model: "Camry", vin: "4T1B11HK4MU123456"),
            pickup: Stop(address: "1 Harbor Rd, Savannah, GA"), delivery: Stop(address: "9 Main St, Orlando, FL"), revenueCents: 90_000),
            tenant: tenant.id)
        let driverToken = try await services.signIn(email: driver.email).accessToken
        let dispatchToken = try await services.signIn(email: dispatcher.email).accessToken
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(services) { continuation.yield($0) }
        let server = Task { try await app.runService(gracefulShutdownSignals: []) }
        defer { server.cancel() }
        var port = 0
        for await bound in ports { port = bound; break }
        let base = "http://127.0.0.1:\(port)"
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = client.shutdown() }

        func send(_ method: HTTPMethod, _ path: String, token: String, body: [UInt8]? = nil, json: Bool = false) async throws -> (Int, ByteBuffer) {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            if let body {
                request.headers.add(name: "Content-Type", value: json ? "application/json" : "application/octet-stream")
                request.body = .bytes(ByteBuffer(bytes: body))
            }
            let response = try await client.execute(request, timeout: .seconds(120))
            return (Int(response.status.code), try await response.body.collect(upTo: 512 << 20))
        }
        let slots = Array((MediaSlot.requiredPhotos + MediaSlot.optionalPhotos + MediaSlot.damagePhotos).prefix(photos))
        for kind in [Inspection.Kind.pickup, .delivery] {
            let id = ID<Inspection>()
            let save = try JSONEncoder().encode(SaveInspectionRequest(orderID: order.id, kind: kind, odometer: 41_250,
                                                                      damages: [Damage(location: "rear_bumper", type: .scratch, severity: .minor)],
                                                                      customerUnavailable: false, signerName: "Pat Gate"))
            guard try await send(.PUT, "/v1/inspections/\(id)", token: driverToken, body: Array(save), json: true).0 == 200 else {
                throw ValidationError("the inspection was refused")
            }
            for slot in slots { _ = try await send(.PUT, "/v1/inspections/\(id)/media/\(slot.rawValue)", token: driverToken, body: photo) }
            _ = try await send(.PUT, "/v1/inspections/\(id)/media/signature", token: driverToken, body: signature)
            guard try await send(.POST, "/v1/inspections/\(id)/complete", token: driverToken, body: Array("{}".utf8), json: true).0 == 200 else {
                throw ValidationError("the \(kind) inspection did not complete")
            }
        }
        print("bill of lading PDF: 1 vehicle, pickup and delivery with \(slots.count) photos of \(photoKB) KB each and a signature; SQLite, media on local disk")
        var times: [Double] = []
        var size = 0
        for _ in 0..<runs {
            let start = ContinuousClock.now
            let (status, body) = try await send(.GET, "/v1/dispatch/orders/\(order.id)/bill-of-lading.pdf", token: dispatchToken)
            guard status == 200 else { throw ValidationError("the PDF answered \(status)") }
            times.append(Double((ContinuousClock.now - start).components.attoseconds) / 1e15 + Double((ContinuousClock.now - start).components.seconds) * 1000)
            size = body.readableBytes
        }
        times.sort()
        let photosBytes = Double(slots.count * 2 * photo.count)
        print(String(format: "made and fetched in %.0f ms (median of %d; fastest %.0f ms), %.1f MB, %.3f × the photos' bytes",
                     times[times.count / 2], runs, times[0], Double(size) / 1_048_576, Double(size) / photosBytes))
    }

    /// A JPEG made `bytes` long with comment segments after its start marker (still a valid JPEG, as a phone's is large).
    static func padded(_ jpeg: [UInt8], to bytes: Int) -> [UInt8] {
        var padding: [UInt8] = []
        while jpeg.count + padding.count < bytes {
            let length = min(65_533, bytes - jpeg.count - padding.count)
            padding += [0xFF, 0xFE, UInt8((length + 2) >> 8), UInt8((length + 2) & 0xFF)] + [UInt8](repeating: 0x20, count: length)
        }
        return Array(jpeg.prefix(2)) + padding + jpeg.dropFirst(2)
    }
}
