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
}
