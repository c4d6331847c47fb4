import Hummingbird
import HTTPTypes
import Tracing

/// Makes each request a server span for the process's tracer (OTLP when
/// `vroomx serve` bootstrapped one), continuing a caller's W3C
/// `traceparent`. The span is named by route template and carries method,
/// route and status only: never the path or query, which can hold a
/// tracking link's token or a sign-in code.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: FieldsExtractor())
        let method = ServedRequest.method(request)
        return try await withSpan("\(method) unmatched", context: parent, ofKind: .server) { span in
            span.attributes["http.request.method"] = method
            return try await ServedRequest.answer(request, context, next) { status in
                let route = ServedRequest.route(context)
                span.operationName = "\(method) \(route)"
                span.attributes["http.route"] = route
                span.attributes["http.response.status_code"] = status
                if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
            }
        }
    }

    private struct FieldsExtractor: Extractor {
        func extract(key: String, from fields: HTTPFields) -> String? {
            HTTPField.Name(key).flatMap { fields[$0] }
        }
    }
}
