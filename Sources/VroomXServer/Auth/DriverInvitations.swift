import VroomXModels

/// Dispatch adds a driver (console or API) and the driver is told by email
/// which carrier added them and how to sign in: without it, nothing reaches
/// them until dispatch tells them some other way.
struct DriverInvitations: Sendable {
    let store: Store
    let mail: AccountMail
    let perHour: Int

    func invite(_ request: CreateDriverRequest, tenant: ID<Tenant>) async throws -> Driver {
        // A bad form is a bad form (422), whatever the hour's count.
        _ = try Problems.first { PeopleService.validDriver(request, &$0) }
        // Counted before the driver is made, so parallel invitations cannot pass the limit together;
        // given back when the driver is not made (an email already taken is no invitation sent).
        if let wait = try await store.hit(bucket: "invitations", key: tenant.rawValue, limit: perHour, window: 3600) {
            try await store.unhit(bucket: "invitations", key: tenant.rawValue)
            throw AppError(429, .rateLimited, "This carrier has added \(perHour) drivers within the hour; add more in \((wait + 59) / 60) min.",
                           retryAfter: wait)
        }
        let driver: Driver
        do {
            driver = try await store.people.createDriver(tenant: tenant, request)
        } catch {
            try? await store.unhit(bucket: "invitations", key: tenant.rawValue)
            throw error
        }
        mail.sendInvitation(to: driver, carrier: try await store.people.tenant(tenant).name)
        return driver
    }
}
