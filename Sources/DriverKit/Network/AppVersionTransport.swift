import Foundation
import VroomXModels

/// Every request says which version of the app sends it
/// (`X-VroomX-App-Version`), and an answer that the app is too old for the
/// server (426 `app_update_required`) is reported once it arrives, whoever
/// made the request: sync, sign-in, uploads, the token refresh.
struct AppVersionTransport: HTTPTransport {
    let base: any HTTPTransport
    let version: AppVersion
    /// The oldest version the server accepts (nil when it did not say).
    let tooOld: @Sendable (AppVersion?) -> Void

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        var stated = request
        stated.headers.append((AppVersion.header, version.description))
        let response = try await base.send(stated)
        if response.status == 426, (try? APIClient.decodeError(response))?.code == .appUpdateRequired {
            tooOld(response.headers[AppVersion.minimumHeader.lowercased()].flatMap(AppVersion.init))
        }
        return response
    }
}
