import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing
import VroomXServer

/// Request traces sent over OTLP/HTTP to a collector (Jaeger, Tempo, an
/// OpenTelemetry Collector, …) when one is configured with the standard
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`);
/// off otherwise. Every other `OTEL_*` variable (service name, sampler,
/// headers, batch delay) works as the OpenTelemetry specification says.
enum RequestTracing {
    /// Bootstraps the process's tracer; the service that sends the spans (nil when tracing is off).
    static func start(_ environment: [String: String]) throws -> (any Service)? {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 } }
        guard value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") ?? value("OTEL_EXPORTER_OTLP_ENDPOINT") != nil,
              value("OTEL_SDK_DISABLED")?.lowercased() != "true", value("OTEL_TRACES_EXPORTER")?.lowercased() != "none" else { return nil }
        if let chosen = value("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? value("OTEL_EXPORTER_OTLP_PROTOCOL"),
           !["http/protobuf", "http/json"].contains(chosen.lowercased()) {
            throw ConfigurationError("OTEL_EXPORTER_OTLP_PROTOCOL: VroomX sends traces over http/protobuf (the default) or http/json, not \(chosen).")
        }
        try checkSettings(value)
        var configuration = OTel.Configuration.default
        configuration.serviceName = "vroomx"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false  // Prometheus's /metrics has the numbers
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.diagnosticLogger = .custom(Logger(label: "vroomx.tracing"))
        configuration.diagnosticLogLevel = .warning  // OTEL_LOG_LEVEL=info shows how the environment set it up
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        return service
    }

    static let samplers = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"]

    /// The span processor's and sampler's settings, refused at start when out
    /// of range: swift-otel takes them as they are, and a batch size of 0
    /// made it loop, growing without end and deaf to SIGTERM.
    static func checkSettings(_ value: (String) -> String?) throws {
        func number(_ name: String, _ range: ClosedRange<Int>, _ fallback: Int) throws -> Int {
            guard let text = value(name) else { return fallback }
            guard let number = Int(text), range.contains(number) else {
                throw ConfigurationError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound).")
            }
            return number
        }
        let queue = try number("OTEL_BSP_MAX_QUEUE_SIZE", 1...1_000_000, 2048)
        let batch = try number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1...100_000, 512)
        guard batch <= queue else { throw ConfigurationError("OTEL_BSP_MAX_EXPORT_BATCH_SIZE (\(batch)) must not exceed OTEL_BSP_MAX_QUEUE_SIZE (\(queue)).") }
        for name in ["OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"] {
            _ = try number(name, 1...600_000, 1)  // milliseconds
        }
        if let sampler = value("OTEL_TRACES_SAMPLER"), !samplers.contains(sampler.lowercased()) {
            throw ConfigurationError("OTEL_TRACES_SAMPLER must be one of \(samplers.joined(separator: ", ")).")
        }
        if let argument = value("OTEL_TRACES_SAMPLER_ARG"), !(Double(argument).map { (0...1).contains($0) } ?? false) {
            throw ConfigurationError("OTEL_TRACES_SAMPLER_ARG is the share of traces kept, from 0 to 1 (e.g. 0.1).")
        }
    }
}
