#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import VroomXModels
import VroomXServer

/// Upload throughput of a walkthrough video over loopback: tus (one PATCH,
/// and 8 MiB chunks as a phone would send them) beside a plain HTTP PUT of
/// the same bytes to the same server; then an upload cut halfway and
/// resumed, counting the bytes that had to be sent again. The same, in the
/// same run, with the media in an S3-compatible bucket.
struct UploadBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uploads", abstract: "MB/s of a large video over loopback: tus vs plain PUT, and bytes re-sent on resume.")

    @Option(help: "File size in MB.") var megabytes = 200
    @Option(help: "Runs (the median is reported).") var runs = 3
    @Option(help: "An S3-compatible endpoint to also measure (default: starts `python3 -m moto.server` if moto is installed; 'none' skips S3).")
    var s3Endpoint: String?

    /// One server over loopback with its media in a folder or a bucket.
    struct Target {
        let name: String
        let services: ServerServices
        let base: String
        let token: String
        let trip: ID<Trip>
        let tenant: ID<Tenant>
        let scope: Scope
        let task: Task<Void, any Error>
    }

    func run() async throws {
        var file = ByteBuffer(bytes: [0x00, 0x00, 0x00, 0x18] + Array("ftypisom".utf8) + [0, 0, 2, 0])
        var generator = SystemRandomNumberGenerator()
        while file.readableBytes < megabytes << 20 { file.writeInteger(generator.next() as UInt64) }
        let size = file.readableBytes
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var moto: Process?
        // SIGKILL: a child inherits this process's signal mask, where SIGTERM may be blocked.
        defer { if let moto { kill(moto.processIdentifier, SIGKILL) } }
        var targets = [try await start("folder", s3: nil)]
        if s3Endpoint != "none" {
            var endpoint = s3Endpoint
            if endpoint == nil, let started = try await Self.startMoto(client) { moto = started.process; endpoint = started.endpoint }
            if let endpoint, let url = URL(string: endpoint) {
                let bucket = "vroomx-bench-\(UUID().uuidString.prefix(8).lowercased())"
                var create = HTTPClientRequest(url: "\(endpoint)/\(bucket)")
                create.method = .PUT
                _ = try await client.execute(create, timeout: .seconds(30))
                targets.append(try await start("S3 (moto)", s3: S3Configuration(
                    endpoint: url, bucket: bucket, region: "us-east-1", accessKeyID: "bench", secretAccessKey: "bench-secret", pathStyle: true)))
            } else {
                print("(no S3-compatible server: pip install 'moto[server]', or pass --s3-endpoint)")
            }
        }
        print("uploads over loopback: \(megabytes) MB video, \(runs) runs, SQLite; media in a folder on local disk"
              + (targets.count > 1 ? " and in an S3-compatible bucket (moto, same machine)" : ""))

        let kinds = ["tus, one PATCH", "tus, 8 MiB PATCHes", "plain PUT"]
        var results: [String: [Double]] = [:]
        for run in 1...runs {
            for target in targets {
                var order = try await target.services.store.orders.create(.init(
                    number: "O-\(run)", tripID: target.trip, vehicle: Vehicle(make: "Bench"), pickup: Stop(address: "p"),
                    delivery: Stop(address: "d"), revenueCents: 1), tenant: target.tenant)
                order = try await target.services.store.orders.order(order.id, target.scope)
                let inspection = try await target.services.store.inspections.save(ID(), .init(orderID: order.id, kind: .pickup), target.scope)
                let (base, token) = (target.base, target.token)
                for (name, send) in zip(kinds, [
                    { try await self.tus(client, base, token, inspection.id, file, chunk: size) },
                    { try await self.tus(client, base, token, inspection.id, file, chunk: 8 << 20) },
                    { try await self.put(client, base, token, inspection.id, file) },
                ] as [() async throws -> Void]) {
                    let started = ContinuousClock.now
                    try await send()
                    let rate = Double(size) / 1_048_576 / seconds(ContinuousClock.now - started)
                    results["\(target.name): \(name)", default: []].append(rate)
                    print("run \(run)  \(target.name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(name.padding(toLength: 20, withPad: " ", startingAt: 0)) "
                          + String(format: "%7.1f MB/s", rate))
                }
                let resent = try await cutAndResume(client, base, token, inspection.id, file)
                results["\(target.name): re-sent KB", default: []].append(Double(resent.resent) / 1024)
                print(String(format: "run %d  %@ cut after %.1f MB sent: the server kept %.1f MB; %.1f KB that were in flight sent again",
                             run, target.name, Double(resent.handedOver) / 1_048_576, Double(resent.offset) / 1_048_576,
                             Double(resent.resent) / 1024))
            }
        }
        func median(_ key: String) -> Double { let values = results[key]!.sorted(); return values[values.count / 2] }
        for target in targets {
            for name in kinds {
                print("median \(target.name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(name.padding(toLength: 20, withPad: " ", startingAt: 0)) "
                      + String(format: "%7.1f MB/s", median("\(target.name): \(name)")))
            }
            print(String(format: "%@: tus / PUT %.2f; median bytes sent again after a cut: %.1f KB", target.name,
                         median("\(target.name): tus, one PATCH") / median("\(target.name): plain PUT"), median("\(target.name): re-sent KB")))
        }
        if targets.count > 1 {
            for name in kinds {
                print(String(format: "S3 / folder, %@: %.2f", name, median("\(targets[1].name): \(name)") / median("\(targets[0].name): \(name)")))
            }
        }
        try await client.shutdown()
        for target in targets {
            target.task.cancel()
            _ = await target.task.result
        }
    }

    func start(_ name: String, s3: S3Configuration?) async throws -> Target {
        var configuration = try await BenchScratch.configuration(postgres: nil)
        configuration.uploads.maxVideoBytes = Int64(max(megabytes, 1) + 1) << 20
        configuration.s3 = s3
        let services = try await ServerServices.make(configuration)
        let (tenant, _) = try await services.store.people.createTenant(name: "Upload Bench", dispatcherEmail: "dispatch@upload.bench.example")
        let driver = try await services.store.people.createDriver(tenant: tenant.id, .init(
            email: "driver@upload.bench.example", name: "Bench Driver", payType: .perTrip, payRate: 1))
        let trip = try await services.store.trips.create(.init(number: "T-1", driverID: driver.id, origin: "a", destination: "b",
                                                             revenueCents: 1, miles: 1), tenant: tenant.id)
        let token = try await services.signIn(email: driver.email).accessToken
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(services) { continuation.yield($0) }
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var port = 0
        for await bound in ports { port = bound; break }
        return Target(name: name, services: services, base: "http://127.0.0.1:\(port)", token: token, trip: trip.id, tenant: tenant.id,
                      scope: .driver(tenant: tenant.id, driver: driver.id), task: task)
    }

    /// moto's S3 server on a free port, if Python has it.
    static func startMoto(_ client: HTTPClient) async throws -> (process: Process, endpoint: String)? {
        let port = Int.random(in: 20_000...60_000)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let endpoint = "http://127.0.0.1:\(port)"
        for _ in 0..<100 {
            if (try? await client.execute(HTTPClientRequest(url: endpoint + "/"), timeout: .seconds(2))) != nil { return (process, endpoint) }
            guard process.isRunning else { return nil }
            try await Task.sleep(for: .milliseconds(200))
        }
        kill(process.processIdentifier, SIGKILL)
        return nil
    }

    func tus(_ client: HTTPClient, _ base: String, _ token: String, _ inspection: ID<Inspection>, _ file: ByteBuffer,
             chunk: Int) async throws {
        let location = try await create(client, base, token, inspection, length: file.readableBytes)
        var offset = 0
        while offset < file.readableBytes {
            let length = min(chunk, file.readableBytes - offset)
            var request = HTTPClientRequest(url: base + location)
            request.method = .PATCH
            request.headers.add(contentsOf: [("Authorization", "Bearer \(token)"), ("Tus-Resumable", Tus.version),
                                             ("Upload-Offset", String(offset)), ("Content-Type", Tus.patchContentType)])
            request.body = .bytes(file.getSlice(at: offset, length: length)!)
            let response = try await client.execute(request, timeout: .minutes(10))
            guard response.status.code == 204 else { throw BenchError("PATCH answered \(response.status)") }
            offset += length
        }
    }

    func put(_ client: HTTPClient, _ base: String, _ token: String, _ inspection: ID<Inspection>, _ file: ByteBuffer) async throws {
        var request = HTTPClientRequest(url: base + Endpoint.putInspectionMedia.path(inspection.rawValue, "walkthrough"))
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.body = .bytes(file)
        let response = try await client.execute(request, timeout: .minutes(10))
        guard response.status.code == 200 else { throw BenchError("PUT answered \(response.status)") }
        _ = try await response.body.collect(upTo: 1 << 20)
    }

    func create(_ client: HTTPClient, _ base: String, _ token: String, _ inspection: ID<Inspection>, length: Int) async throws -> String {
        var request = HTTPClientRequest(url: base + Endpoint.createUpload.path())
        request.method = .POST
        request.headers.add(contentsOf: [("Authorization", "Bearer \(token)"), ("Tus-Resumable", Tus.version), ("Upload-Length", String(length)),
                                         ("Upload-Metadata", Tus.encodeMetadata(["inspection_id": inspection.rawValue, "slot": "walkthrough"]))])
        let response = try await client.execute(request, timeout: .seconds(30))
        guard response.status.code == 201, let location = response.headers.first(name: "Location") else {
            throw BenchError("create answered \(response.status)")
        }
        return location
    }

    /// Streams the file, drops the connection halfway, asks the server for
    /// its offset and sends the rest.
    func cutAndResume(_ client: HTTPClient, _ base: String, _ token: String, _ inspection: ID<Inspection>,
                      _ file: ByteBuffer) async throws -> (handedOver: Int, offset: Int, resent: Int) {
        let location = try await create(client, base, token, inspection, length: file.readableBytes)
        let cut = file.readableBytes / 2
        let pulled = NIOLockedValueBox(0)
        var request = HTTPClientRequest(url: base + location)
        request.method = .PATCH
        request.headers.add(contentsOf: [("Authorization", "Bearer \(token)"), ("Tus-Resumable", Tus.version),
                                         ("Upload-Offset", "0"), ("Content-Type", Tus.patchContentType)])
        request.body = .stream(PulledChunks(file: file, stopAt: cut, pulled: pulled), length: .known(Int64(file.readableBytes)))
        let sending = Task { try await client.execute(request, timeout: .minutes(10)) }
        while pulled.withLockedValue({ $0 }) < cut { try await Task.sleep(for: .milliseconds(1)) }
        try await Task.sleep(for: .milliseconds(20))
        sending.cancel()  // the connection drops with bytes still in flight
        _ = await sending.result

        // As a tus client does: ask for the offset, send the rest; while the
        // server is still finishing the dropped request it answers 423.
        var offset = 0
        for attempt in 0... {
            var head = HTTPClientRequest(url: base + location)
            head.method = .HEAD
            head.headers.add(contentsOf: [("Authorization", "Bearer \(token)"), ("Tus-Resumable", Tus.version)])
            offset = Int(try await client.execute(head, timeout: .seconds(30)).headers.first(name: "Upload-Offset") ?? "") ?? 0
            var rest = HTTPClientRequest(url: base + location)
            rest.method = .PATCH
            rest.headers.add(contentsOf: [("Authorization", "Bearer \(token)"), ("Tus-Resumable", Tus.version),
                                          ("Upload-Offset", String(offset)), ("Content-Type", Tus.patchContentType)])
            rest.body = .bytes(file.getSlice(at: offset, length: file.readableBytes - offset)!)
            let finished = try await client.execute(rest, timeout: .minutes(10))
            if finished.status.code == 204 { break }
            guard [409, 423].contains(finished.status.code), attempt < 100 else { throw BenchError("resume answered \(finished.status)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        let sent = pulled.withLockedValue { $0 }
        return (sent, offset, max(0, sent - offset))
    }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// The file in 256 KiB chunks, handed over only as the HTTP client asks for
/// them (so `pulled` counts what went to the socket); after `stopAt` bytes it
/// waits until the request is cancelled — the connection drops mid-file.
struct PulledChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let file: ByteBuffer
    let stopAt: Int
    let pulled: NIOLockedValueBox<Int>

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: PulledChunks
        var position = 0

        mutating func next() async throws -> ByteBuffer? {
            guard position < chunks.stopAt else {
                try await Task.sleep(for: .seconds(3600))
                return nil
            }
            let length = Swift.min(256 << 10, chunks.stopAt - position)
            let chunk = chunks.file.getSlice(at: position, length: length)!
            position += length
            chunks.pulled.withLockedValue { $0 = position }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self) }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
