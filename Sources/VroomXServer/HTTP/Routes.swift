import HTTPTypes
import Hummingbird
import VroomXModels

typealias Handler = @Sendable (Request, AppRequestContext) async throws -> Reply

/// Registers handlers by `Endpoint`, the shared route table. The wrapper
/// enforces the endpoint's declared access before the handler runs: the
/// token is verified, the identity is put in the context, and the role is
/// checked, so no handler can forget to.
struct Routes {
    let router: Router<AppRequestContext>
    let authenticator: Authenticator
    let store: Store

    func on(_ endpoint: Endpoint, _ handler: @escaping Handler) {
        let access = endpoint.access
        let authenticator = self.authenticator
        router.on(RouterPath(endpoint.routerPath), method: HTTPRequest.Method(rawValue: endpoint.method.rawValue)!) { request, context in
            guard access != .anyone else { return try await handler(request, context).response }
            var context = context
            let identity = try await authenticator.authenticate(request)
            switch access {
            case .driver:
                guard identity.role == .driver else {
                    throw AppError(403, .forbidden, "This endpoint is for drivers.")
                }
                guard identity.driver != nil else {
                    throw AppError(403, .driverNotFound, "Driver account not found. Contact your dispatcher.")
                }
            case .dispatcher:
                guard identity.role == .dispatcher else {
                    throw AppError(403, .forbidden, "This endpoint is for dispatchers.")
                }
            case .signedIn, .anyone:
                break
            }
            context.identity = identity
            return try await handler(request, context).response
        }
    }
}

extension Endpoint {
    /// The path in the router's syntax: `{id}` becomes `:id`.
    var routerPath: String {
        "/" + path.split(separator: "/").map { segment in
            segment.hasPrefix("{") ? ":" + segment.dropFirst().dropLast() : String(segment)
        }.joined(separator: "/")
    }
}
