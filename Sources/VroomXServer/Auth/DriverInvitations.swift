import VroomXModels

/// Dispatch adds a driver (console or API) and the driver is told by email
/// which carrier added them and how to sign in: without it, nothing reaches
/// them until dispatch tells them some other way.
struct DriverInvitations: Sendable {
    let store: Store
    let mail: AccountMail
    let perHour: Int

    func invite(_ request: CreateDriverRequest, tenant: ID<Tenant>) async throws -> Driver {
        if let wait = try await store.hit(bucket: "invitations", key: tenant.rawValue, limit: perHour, window: 3600) {
            throw AppError(429, .rateLimited, "This carrier has added \(perHour) drivers within the hour; add more in \((wait + 59) / 60) min.",
                           retryAfter: wait)
        }
        let driver = try await store.createDriver(tenant: tenant, request)
        mail.sendInvitation(to: driver, carrier: try await store.tenant(tenant).name)
        return driver
    }
}
