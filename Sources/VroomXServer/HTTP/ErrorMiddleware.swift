import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import VroomXModels

/// The outermost middleware: turns every error into the one JSON error shape
/// with its status, and logs each request once with its outcome. Input that
/// slips past validation and trips a database constraint still answers 4xx;
/// a database that cannot serve right now answers 503 (507 when its storage
/// is full) with `Retry-After`, so clients retry.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    /// A page for a browser that asked for an address no route serves
    /// (nil: answer as for any client).
    var routeMissPage: @Sendable (Request) async -> Response? = { _ in nil }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        var response: Response
        var unavailable: DatabaseUnavailable?
        do {
            response = try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            response = try await routeMissPage(request) ?? Self.reply(for: Self.routeMiss(request)).response
        } catch {
            let appError = Self.appError(for: error)
            unavailable = error as? DatabaseUnavailable
            if let unavailable { ServerMetrics.databaseUnavailable(unavailable.cause).increment() }
            if appError.status >= 500, unavailable == nil {
                context.logger.error("request failed", metadata: [
                    "method": "\(request.method)", "path": "\(request.uri.path)", "error": "\(String(reflecting: error))",
                ])
            }
            response = try Self.reply(for: appError).response
        }
        if context.logger.logLevel <= .debug || response.status.code >= 500 {
            let elapsed = ContinuousClock.now - start
            var metadata: Logger.Metadata = [
                "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
                "ms": "\(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)",
            ]
            // An expected, retryable failure: one line, with its cause.
            if let unavailable { metadata["database"] = "\(unavailable)" }
            context.logger.log(level: response.status.code >= 500 ? .warning : .debug, "request", metadata: metadata)
        }
        return response
    }

    static func reply(for error: AppError) throws -> Reply {
        var reply = try JSONBody.response(APIErrorResponse(error.body), status: .init(code: error.status))
        for (name, value) in error.headers {
            if let field = HTTPField.Name(name) { reply.headers[field] = value }
        }
        return reply
    }

    /// Any error as the answer it gives: its own for an `AppError`, 4xx for
    /// input the database refused, 500 for what should not happen.
    static func appError(for error: any Error) -> AppError {
        switch error {
        case let error as AppError:
            return error
        case is NIOTooManyBytesError:
            return JSONBody.tooLarge
        case let error as HTTPParserError:
            // The body broke off or stopped being HTTP while a handler read it.
            return MalformedRequestResponder.refusal(parsing: error)
        case let error as DecodingError:
            return JSONBody.describe(error)
        case DatabaseConstraintError.unique:
            return AppError(409, .alreadyExists, "That already exists.")
        case DatabaseConstraintError.check, DatabaseConstraintError.notNull, DatabaseConstraintError.foreignKey:
            return AppError(422, .validationFailed, "The request breaks a data rule.")
        case let error as DatabaseUnavailable where error.cause == .storageFull:
            return AppError(507, .insufficientStorage, "The server's storage is full. Try again later.", retryAfter: error.retryAfter)
        case let error as DatabaseUnavailable:
            return AppError(503, .unavailable, "The service is briefly unavailable. Try again in \(error.retryAfter) s.",
                            retryAfter: error.retryAfter)
        case is WriteConflict:
            // Others kept changing the same row through every retry: busy, not broken.
            return AppError(503, .unavailable, "This record is changing fast; try again in a moment.", retryAfter: 1)
        case let error as PostgresServerError where error.isRetryable:
            return AppError(503, .unavailable, "The database is busy; try again in a moment.", retryAfter: 1)
        case let error as HTTPError where error.status == .contentTooLarge:
            return JSONBody.tooLarge
        case let error as HTTPError where error.status.code < 500:
            return AppError(error.status.code, .init(error.status.reasonPhrase.lowercased().replacingOccurrences(of: " ", with: "_")),
                            error.body ?? error.status.reasonPhrase)
        default:
            return AppError(500, .internalError, "Something went wrong on our side. Try again.")
        }
    }

    /// No handler matched: 405 with `Allow` when the path exists for other
    /// methods, else 404.
    static func routeMiss(_ request: Request) -> AppError {
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: true)
        let matching = Endpoint.all.filter { endpoint in
            let template = endpoint.path.split(separator: "/")
            return template.count == segments.count && zip(template, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }
        // As the router does, a fixed segment wins over a placeholder: `/orders/import` is not `/orders/{id}`.
        func fixed(_ endpoint: Endpoint) -> [Bool] { endpoint.path.split(separator: "/").map { !$0.hasPrefix("{") } }
        let mostFixed = matching.map(fixed).max { $0.lexicographicallyPrecedes($1) { !$0 && $1 } }
        let methods = matching.filter { fixed($0) == mostFixed }.map(\.method.rawValue)
        if methods.isEmpty {
            return AppError(404, .routeNotFound, "No such endpoint: \(request.method) \(request.uri.path).")
        }
        var error = AppError(405, .methodNotAllowed, "\(request.method) is not allowed here; use \(methods.joined(separator: ", ")).")
        error.headers["Allow"] = methods.joined(separator: ", ")
        return error
    }
}
