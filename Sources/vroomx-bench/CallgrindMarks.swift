#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Marks around work whose instructions `scripts/callgrind --marks` counts:
/// the script preloads a shim with these two functions, which switch
/// callgrind's counting on and write out what was counted under a label.
/// They are looked up at run time, so a bench run without the script just
/// has no marks to set.
enum CallgrindMarks {
    private typealias Begin = @convention(c) () -> Void
    private typealias End = @convention(c) (UnsafePointer<CChar>) -> Void

    /// Every loaded object's symbols (Darwin's handle is not null, as glibc's is).
    #if canImport(Darwin)
    private static var everywhere: UnsafeMutableRawPointer? { RTLD_DEFAULT }
    #else
    private static var everywhere: UnsafeMutableRawPointer? { nil }
    #endif

    /// Whether this process runs under `scripts/callgrind --marks`.
    static var available: Bool { dlsym(everywhere, "vroomx_callgrind_begin") != nil }

    /// Counts the instructions every thread of the process executes during
    /// `work` (which makes `requests` requests), written under `label`.
    static func count<T>(_ label: String, requests: Int, _ work: () async throws -> T) async throws -> T {
        guard requests > 0 else { throw BenchError("no requests to count instructions over") }
        guard let begin = dlsym(everywhere, "vroomx_callgrind_begin"), let end = dlsym(everywhere, "vroomx_callgrind_end") else {
            throw BenchError("instruction counts need the program to run under scripts/callgrind --marks")
        }
        unsafeBitCast(begin, to: Begin.self)()
        let result = try await work()
        // The script divides by the count that leads the label.
        "\(requests) \(label)".withCString { unsafeBitCast(end, to: End.self)($0) }
        return result
    }
}
