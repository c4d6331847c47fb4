import Foundation
import Testing
import VroomXTestSupport

/// Request traces as an operator turns them on: `vroomx serve` with the
/// standard `OTEL_EXPORTER_OTLP_ENDPOINT` sends a span per request to an
/// OTLP/HTTP receiver (`Tests/Fixtures/otlp_receiver.py`, decoding with the
/// OpenTelemetry protocol's own definitions).
@Suite("Request tracing")
struct TracingTests {
    struct Span: Decodable {
        let service: String?
        let name: String
        let kind: Int
        let traceID: String
        let parentSpanID: String
        let status: Int
        let attributes: [String: Value]

        enum CodingKeys: String, CodingKey {
            case service, name, kind, status, attributes
            case traceID = "trace_id"
            case parentSpanID = "parent_span_id"
        }
    }

    enum Value: Decodable, Equatable {
        case text(String), number(Int)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int.self) { self = .number(number) } else { self = .text(try container.decode(String.self)) }
        }
    }

    @Test("with an OTLP endpoint each request is a span named by its route, with method and status, continuing the caller's trace, and never the path's secrets")
    func spansReachTheCollector() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-tracing-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let spansFile = scratch.appendingPathComponent("spans.jsonl")
        let receiverPort = try ChildProcess.freePort()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/otlp_receiver.py").path
        let receiver = try ChildProcess("/usr/bin/env", ["python3", script, String(receiverPort), spansFile.path])
        defer { Task { await receiver.stop() } }
        try await receiver.waitFor("ready")

        let (server, port) = try await DriverCommandTests.ServerProcess.start(dataDirectory: scratch.appendingPathComponent("data"), environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiverPort)", "OTEL_BSP_SCHEDULE_DELAY": "200",
        ])
        let base = "http://127.0.0.1:\(port)"
        let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
        for arguments in [["\(base)/healthz"], ["\(base)/v1/trips"], ["-H", "traceparent: 00-\(callerTrace)-00f067aa0ba902b7-01", "\(base)/healthz"],
                          ["\(base)/track/secret-tracking-token-123?code=987654"]] {
            _ = try await ChildProcess.run("/usr/bin/env", ["curl", "-s", "-o", "/dev/null"] + arguments)
        }
        @Sendable func spans() -> [Span] {
            let text = (try? String(contentsOf: spansFile, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(Span.self, from: Data($0.utf8)) }
        }
        try await waitUntil("the four requests' spans", timeout: .seconds(30)) { spans().filter { $0.kind == 2 }.count >= 4 }
        await server.stop()
        let served = spans().filter { $0.kind == 2 }  // SPAN_KIND_SERVER
        #expect(served.allSatisfy { $0.service == "vroomx" }, "\(served.map(\.service))")
        let health = served.filter { $0.name == "GET /healthz" }
        #expect(health.count == 2 && health.allSatisfy { $0.attributes["http.response.status_code"] == .number(200) && $0.attributes["http.route"] == .text("/healthz") })
        #expect(health.contains { $0.traceID == callerTrace && $0.parentSpanID == "00f067aa0ba902b7" }, "the caller's traceparent is continued")
        #expect(health.contains { $0.traceID != callerTrace && $0.parentSpanID.isEmpty }, "a request without one starts a trace")
        let trips = try #require(served.first { $0.name == "GET /v1/trips" })
        #expect(trips.attributes["http.response.status_code"] == .number(401) && trips.attributes["http.request.method"] == .text("GET"))
        let everything = (try? String(contentsOf: spansFile, encoding: .utf8)) ?? ""
        #expect(!everything.contains("secret-tracking-token-123") && !everything.contains("987654"), "no path or query in a span")
    }

    @Test("span settings out of range stop the server at start with the setting named (a batch of 0 made it grow without end)")
    func settingsRefused() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-tracing-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: data) }
        for (name, value) in [("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "0"), ("OTEL_BSP_MAX_QUEUE_SIZE", "99999999999999999999"),
                              ("OTEL_BSP_SCHEDULE_DELAY", "-5"), ("OTEL_TRACES_SAMPLER", "bogus"), ("OTEL_TRACES_SAMPLER_ARG", "banana"),
                              ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")] {
            let run = try await VroomXBinary.run(["serve", "--demo", "--port", "0"], environment: [
                "VROOMX_DATA_DIR": data.path, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", name: value])
            #expect(run.status != 0 && run.output.contains(name), "\(name)=\(value): \(run.output.suffix(300))")
        }
    }
}
