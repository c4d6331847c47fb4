import Foundation

/// Starts a program with `posix_spawn`, its standard output and error going
/// to `output` and its standard input from /dev/null, in a process group of
/// its own, inheriting no other descriptor of the test process.
///
/// Not Foundation's `Process`: on Linux its `run()` lists /proc/self/fd by
/// copying 256 bytes of each directory entry, and when an entry ends the
/// page glibc read them into, the copy faults — a test run that launched a
/// few thousand processes crashed there now and then
/// (swift-corelibs-foundation #5472). Here that list is read by name.
enum Spawn {
    static func start(_ executable: String, _ arguments: [String], environment: [String: String], output: Int32) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        try check(posix_spawn_file_actions_init(&actions), "file actions")
        defer { posix_spawn_file_actions_destroy(&actions) }
        try check(posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0), "stdin")
        try check(posix_spawn_file_actions_adddup2(&actions, output, 1), "stdout")
        try check(posix_spawn_file_actions_adddup2(&actions, output, 2), "stderr")
        for descriptor in openDescriptors() where descriptor > 2 {
            try check(posix_spawn_file_actions_addclose(&actions, descriptor), "close")
        }

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

    /// The descriptors open in this process, read from /proc/self/fd: each
    /// entry's name is read up to its end, never as a fixed-size copy.
    /// (One opened by another thread meanwhile may still be inherited.)
    static func openDescriptors() -> [Int32] {
        guard let directory = opendir("/proc/self/fd") else { return [] }
        let listing = dirfd(directory)
        defer { closedir(directory) }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        var descriptors: [Int32] = []
        while let entry = readdir(directory) {
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if let descriptor = Int32(name), descriptor != listing { descriptors.append(descriptor) }
        }
        return descriptors
    }

    private static func check(_ result: Int32, _ what: String) throws {
        guard result == 0 else { throw ProcessError("posix_spawn (\(what)): \(String(cString: strerror(result)))") }
    }
}
