import Foundation
import Testing
@testable import DriverKit

@Suite("the terminal's secure store")
struct SecureStoreTests {
    /// Two processes (a background sync saving refreshed tokens, a command
    /// opening the unlock window) write the one file at once; neither write
    /// may undo the other. Two store instances stand in for the two
    /// processes (each has only its own in-process lock); every write adds
    /// a key, so a lost write leaves a key missing at the end.
    @Test("two writers at once never lose each other's writes")
    func concurrentWritersKeepEveryKey() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secure-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = [try FileSecureStore(directory: directory), try FileSecureStore(directory: directory)]
        let rounds = 300
        let writers = stores.enumerated().map { index, store in
            Task.detached {
                for round in 0..<rounds { try store.set(Data([UInt8(index)]), for: "writer\(index)-\(round)") }
            }
        }
        for writer in writers { try await writer.value }
        let fresh = try FileSecureStore(directory: directory)
        let missing = (0..<2).flatMap { index in (0..<rounds).map { "writer\(index)-\($0)" } }.filter { (try? fresh.data(for: $0)) == nil }
        #expect(missing.isEmpty, "\(missing.count) of \(2 * rounds) writes lost")
    }
}
