import Foundation

/// Starts a program with `posix_spawn`, its standard output and error going
/// to `output` and its standard input from /dev/null, in a process group of
/// its own, inheriting no other descriptor of the test process.
///
/// Not Foundation's `Process`: on Linux its `run()` lists /proc/self/fd by
/// copying 256 bytes of each directory entry, and when an entry ends the
/// page glibc read them into, the copy faults — a test run that launched a
/// few thousand processes crashed there now and then
/// (swift-corelibs-foundation #5472). Here the child closes them itself.
enum Spawn {
    static func start(_ executable: String, _ arguments: [String], environment: [String: String], output: Int32) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        try check(posix_spawn_file_actions_init(&actions), "file actions")
        defer { posix_spawn_file_actions_destroy(&actions) }
        try check(posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0), "stdin")
        try check(posix_spawn_file_actions_adddup2(&actions, output, 1), "stdout")
        try check(posix_spawn_file_actions_adddup2(&actions, output, 2), "stderr")
        #if canImport(Glibc)
        // Every other descriptor closed in the child, at once: a list made first would miss one another
        // thread opens meanwhile (once a port probe's socket, which the child then held bound for its life).
        guard let closeFrom = closeFrom else { throw ProcessError("posix_spawn: this C library cannot close descriptors (glibc 2.34 or later)") }
        try check(closeFrom(&actions, 3), "close")
        #endif

        var attributes = posix_spawnattr_t()
        try check(posix_spawnattr_init(&attributes), "attributes")
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        try check(posix_spawnattr_setsigmask(&attributes, &noSignals), "signal mask")
        try check(posix_spawnattr_setpgroup(&attributes, 0), "process group")
        #if canImport(Darwin)
        // No /proc there: the descriptors not set up above close on exec.
        let flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_CLOEXEC_DEFAULT
        #else
        let flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK
        #endif
        try check(posix_spawnattr_setflags(&attributes, Int16(flags)), "flags")

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        try check(posix_spawn(&pid, executable, &actions, &attributes, argv, envp), "\(executable)")
        return pid
    }

    #if canImport(Glibc)
    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which its
    /// header declares only to GNU sources, so looked up by name.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
    #endif

    private static func check(_ result: Int32, _ what: String) throws {
        guard result == 0 else { throw ProcessError("posix_spawn (\(what)): \(String(cString: strerror(result)))") }
    }
}
