import Hummingbird
import HTTPTypes
import VroomXModels

/// Refuses the API to a driver app older than the server accepts, before
/// anything else is read: 426 `app_update_required` naming the version to
/// update to, so the app shows "Update the app" and keeps its queued work.
/// A request that states no version (the console, a script) is served.
struct AppVersionMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let minimum: AppVersion
    private static let header = HTTPField.Name(AppVersion.header)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if Self.applies(to: request.uri.path) { try Self.check(request.headers, minimum: minimum) }
        return try await next(request, context)
    }

    /// The rule, for the API and the realtime socket's upgrade alike: a
    /// stated version must be readable and no older than `minimum`.
    static func check(_ headers: HTTPFields, minimum: AppVersion) throws {
        guard let header, let stated = headers[header] else { return }
        guard let version = AppVersion(String(stated.prefix(64))) else {
            throw AppError(400, .invalidParameter, "\(AppVersion.header) must be a version such as 1.4.2.", field: AppVersion.header)
        }
        guard version >= minimum else { throw tooOld(version, minimum: minimum) }
    }

    /// The API's paths: the console's pages and the service endpoints are served whatever a client states.
    static func applies(to path: String) -> Bool { path.hasPrefix("/v1/") }

    static func tooOld(_ version: AppVersion, minimum: AppVersion) -> AppError {
        var error = AppError(426, .appUpdateRequired,
                             "This version of the app (\(version)) is too old for this server: update to \(minimum) or later. "
                                 + "Nothing waiting on the phone is lost.")
        error.headers[AppVersion.minimumHeader] = minimum.description
        return error
    }
}
