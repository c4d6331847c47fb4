import Hummingbird
import VroomXModels

/// Sign-in, sessions, the PIN and the signed-in user's own record.
struct AuthController {
    let auth: AuthService
    let store: Store
    /// How many proxies of our own stand in front and append to
    /// X-Forwarded-For (rate limits then count the original client).
    let trustedProxyHops: Int

    func register(_ routes: Routes) {
        routes.on(.sendCode) { request, context in
            let body = try await request.decodeJSON(SendCodeRequest.self)
            let client = ClientAddress.of(request, peer: context.peerAddress, trustedHops: trustedProxyHops)
            return try JSONBody.response(try await auth.sendCode(body, clientAddress: client), status: .accepted)
        }
        routes.on(.verifyCode) { request, context in
            let body = try await request.decodeJSON(VerifyCodeRequest.self)
            let client = ClientAddress.of(request, peer: context.peerAddress, trustedHops: trustedProxyHops)
            return try JSONBody.response(try await auth.verifyCode(body, clientAddress: client))
        }
        routes.on(.refresh) { request, _ in
            try JSONBody.response(try await auth.refresh(try await request.decodeJSON(RefreshRequest.self)))
        }
        routes.on(.logout) { request, _ in
            try await auth.logout(try await request.decodeJSON(LogoutRequest.self))
            return JSONBody.noContent()
        }
        routes.on(.me) { _, context in
            let identity = try context.caller()
            let user = try await store.people.user(identity.user, tenant: identity.tenant)
            let driver = try await auth.linkedDriver(of: user)
            return try JSONBody.response(MeResponse(user: user, tenant: try await store.people.tenant(identity.tenant), driver: driver))
        }
        routes.on(.setPIN) { request, context in
            try await auth.setPIN(try await request.decodeJSON(PINRequest.self), identity: try context.caller())
            return JSONBody.noContent()
        }
        routes.on(.verifyPIN) { request, context in
            try JSONBody.response(try await auth.verifyPIN(try await request.decodeJSON(PINRequest.self), identity: try context.caller()))
        }
        routes.on(.registerDeviceToken) { request, context in
            let identity = try context.caller()
            let body = try await request.decodeJSON(RegisterDeviceTokenRequest.self)
            return try JSONBody.response(try await store.people.registerDeviceToken(body, user: identity.user, tenant: identity.tenant,
                                                                             session: identity.session), status: .created)
        }
        routes.on(.removeDeviceToken) { _, context in
            let identity = try context.caller()
            guard let token = context.parameters.get("token"),
                  try await store.people.removeDeviceToken(token, user: identity.user, tenant: identity.tenant) else {
                throw AppError.notFound("Device token")
            }
            return JSONBody.noContent()
        }
    }
}
