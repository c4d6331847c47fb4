import Hummingbird
import Metrics
import NIOConcurrencyHelpers

/// Counts each request by route template, method and status, and times it
/// to its answer (the response head; a download's streaming is not in the
/// time). Outside the error middleware, so an error counts with the status
/// the client got; done when the handler returns, so a HEAD request (whose
/// body is never written) is counted and leaves the in-flight gauge too.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    private struct Key: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private final class Series: Sendable {
        private let cache = NIOLockedValueBox<[Key: (Counter, Metrics.Timer)]>([:])

        func of(_ key: Key) -> (Counter, Metrics.Timer) {
            cache.withLockedValue { cache in
                if let known = cache[key] { return known }
                let labels = [("route", key.route), ("method", key.method)]
                let made = (ServerMetrics.counter("vroomx_http_requests_total", labels + [("status", String(key.status))]),
                            ServerMetrics.timer("vroomx_http_request_duration_seconds", labels))
                cache[key] = made
                return made
            }
        }
    }

    private let series = Series()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        ServerMetrics.requestsInFlight.increment()
        defer { ServerMetrics.requestsInFlight.decrement() }
        let method = ServedRequest.method(request)
        return try await ServedRequest.answer(request, context, next) { status in
            let (counter, timer) = series.of(Key(route: ServedRequest.route(context), method: method, status: status))
            counter.increment()
            timer.record(duration: ContinuousClock.now - start)
        }
    }
}

/// What the request middlewares (metrics, tracing) say of a request, each
/// rule once: its method and route as labels, and the status it got.
enum ServedRequest {
    /// Methods named as such; any other (WebDAV's, made-up ones) is "other", so labels stay few.
    static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    static func method(_ request: Request) -> String {
        methods.contains(request.method.rawValue) ? request.method.rawValue : "other"
    }

    /// The route template that served the request; "unmatched" when none
    /// did (Hummingbird's file middleware names a miss "NotFound").
    static func route(_ context: AppRequestContext) -> String {
        guard let path = context.endpointPath, path != "NotFound" else { return "unmatched" }
        return path
    }

    /// Runs the rest of the chain and tells `finish` the status the client
    /// gets: the response's, or a thrown error's (500 when it has none).
    static func answer(_ request: Request, _ context: AppRequestContext,
                       _ next: (Request, AppRequestContext) async throws -> Response,
                       finish: (Int) -> Void) async throws -> Response {
        do {
            let response = try await next(request, context)
            finish(response.status.code)
            return response
        } catch {
            finish((error as? any HTTPResponseError)?.status.code ?? 500)
            throw error
        }
    }
}
