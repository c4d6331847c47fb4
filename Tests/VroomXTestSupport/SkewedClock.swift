import Foundation
import NIOConcurrencyHelpers

/// Runs a process with its wall clock moved by a fixed offset, the way a
/// phone whose clock is wrong would run the driver client.
///
/// libfaketime is preloaded directly rather than through the `faketime`
/// wrapper, with a semaphore and shared memory of this launch's own:
/// the wrapper (and libfaketime left to itself) name them after the
/// process id, so a name left behind by a killed process — in this
/// machine's `/dev/shm`, which other containers may share — makes a later
/// launch with the same id refuse to start ("sem_open: File exists").
/// Left to itself, libfaketime also `setenv`s their names, which moves the
/// environment and leaves a Swift program without its arguments. The
/// monotonic clock is not moved, so timeouts still measure real time.
public enum SkewedClock {
    /// libfaketime where Debian's `faketime` package puts it, or nil when it is not installed.
    public static let library: String? = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/local/lib/faketime/libfaketime.so.1",
    ].first { FileManager.default.fileExists(atPath: $0) }

    public static var isAvailable: Bool { library != nil }

    /// Starts `executable` with its clock moved by `offset` (libfaketime's
    /// syntax: "-3d", "+120"); without libfaketime it runs unskewed.
    public static func start(_ executable: String, _ arguments: [String], offset: String,
                             environment: [String: String] = [:]) throws -> ChildProcess {
        guard let library else { return try ChildProcess(executable, arguments, environment: environment) }
        sweep()
        let shared = try SharedObjects()
        var environment = environment
        environment["LD_PRELOAD"] = library
        environment["FAKETIME"] = offset
        environment["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        environment["FAKETIME_SHARED"] = "\(shared.semaphore) \(shared.memory)"
        do {
            let process = try ChildProcess(executable, arguments, environment: environment)
            launched.withLockedValue { $0.append((process, shared)) }
            return process
        } catch {
            shared.remove()
            throw error
        }
    }

    /// Removes the shared objects of every launch that has ended.
    private static func sweep() {
        launched.withLockedValue { launched in
            launched.removeAll { process, shared in
                guard !process.isRunning else { return false }
                shared.remove()
                return true
            }
        }
    }

    private static let launched: NIOLockedValueBox<[(ChildProcess, SharedObjects)]> = {
        atexit { SkewedClock.launched.withLockedValue { $0.forEach { $0.1.remove() } } }
        return NIOLockedValueBox([])
    }()

    /// The semaphore and memory libfaketime shares between a process and its children.
    private struct SharedObjects {
        let semaphore: String
        let memory: String

        init() throws {
            let id = UUID().uuidString.prefix(13).lowercased()
            semaphore = "/vroomx_faketime_sem_\(id)"
            memory = "/vroomx_faketime_shm_\(id)"
            guard let created = sem_open(semaphore, O_CREAT | O_EXCL, 0o600, 1), created != SEM_FAILED else {
                throw ProcessError("cannot create the semaphore \(semaphore): errno \(errno)")
            }
            sem_close(created)
            let descriptor = shm_open(memory, O_CREAT | O_EXCL | O_RDWR, 0o600)
            guard descriptor >= 0 else {
                sem_unlink(semaphore)
                throw ProcessError("cannot create the shared memory \(memory): errno \(errno)")
            }
            defer { close(descriptor) }
            // Zeroed, as libfaketime's own: no ticks counted, no start time recorded.
            guard ftruncate(descriptor, 4096) == 0 else {
                remove()
                throw ProcessError("cannot size the shared memory \(memory): errno \(errno)")
            }
        }

        func remove() {
            sem_unlink(semaphore)
            shm_unlink(memory)
        }
    }
}
