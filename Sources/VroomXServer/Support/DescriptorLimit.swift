#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open descriptors: every connection and open file
/// takes one, so it bounds how many sockets the server may hold.
enum DescriptorLimit {
    /// Raises the soft limit to the hard limit (as far as an unprivileged
    /// process may) and returns the limit now in force.
    @discardableResult
    static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            // Refused where the hard limit is "unlimited" but the kernel caps descriptors lower (macOS); keep the soft one.
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// Realtime sockets the limit leaves room for, keeping a quarter of it
    /// (at least 256) for HTTP connections, the database and files.
    static func socketBudget(_ limit: Int) -> Int {
        max(0, limit - max(256, limit / 4))
    }

    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
