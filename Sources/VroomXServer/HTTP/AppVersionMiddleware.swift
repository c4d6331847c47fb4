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
        guard Self.applies(to: request.uri.path), let header = Self.header, let stated = request.headers[header] else {
            return try await next(request, context)
        }
        guard let version = AppVersion(String(stated.prefix(64))) else {
            throw AppError(400, .invalidParameter, "\(AppVersion.header) must be a version such as 1.4.2.", field: AppVersion.header)
        }
        guard version >= minimum else { throw Self.tooOld(version, minimum: minimum) }
        return try await next(request, context)
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
