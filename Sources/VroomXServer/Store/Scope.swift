import VroomXModels

/// Whose data a request may touch: a driver sees their own work, a
/// dispatcher sees the whole carrier's. Every query on tenant data is built
/// from a scope, so the tenant filter cannot be forgotten.
public enum Scope: Sendable, Hashable {
    case driver(tenant: ID<Tenant>, driver: ID<Driver>)
    case dispatch(tenant: ID<Tenant>)

    public var tenant: ID<Tenant> {
        switch self {
        case .driver(let tenant, _), .dispatch(let tenant): return tenant
        }
    }

    public var driverID: ID<Driver>? {
        if case .driver(_, let driver) = self { return driver }
        return nil
    }

    var actor: Actor { driverID == nil ? .dispatcher : .driver }

    /// `tenant_id = … [AND driver_id = …]` for a table with those columns,
    /// optionally qualified by a table alias.
    func filter(_ alias: String? = nil) -> SQL {
        let prefix = alias.map { $0 + "." } ?? ""
        switch self {
        case .dispatch(let tenant):
            return "\(unsafeRaw: prefix)tenant_id = \(tenant)"
        case .driver(let tenant, let driver):
            return "\(unsafeRaw: prefix)tenant_id = \(tenant) AND \(unsafeRaw: prefix)driver_id = \(driver)"
        }
    }
}
