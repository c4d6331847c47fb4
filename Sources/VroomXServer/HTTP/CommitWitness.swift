import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import VroomXModels

/// The change number an API request's writes reached, told back to the
/// client as `X-VroomX-Change` so it can ask any instance for reads at least
/// that new (`ReadCache`).
final class CommitWitness: Sendable {
    @TaskLocal static var current: CommitWitness?

    private let newest = NIOLockedValueBox<Int64?>(nil)

    /// A commit of the request reached `sequence`.
    func saw(_ sequence: Int64) {
        newest.withLockedValue { $0 = max($0 ?? sequence, sequence) }
    }

    /// Runs a request's handler and adds the header when it committed changes.
    static func answering(_ handler: () async throws -> Response) async throws -> Response {
        let witness = CommitWitness()
        var response = try await $current.withValue(witness) { try await handler() }
        if let sequence = witness.newest.withLockedValue({ $0 }) {
            response.headers[.changeNumber] = String(sequence)
        }
        return response
    }
}

extension HTTPField.Name {
    static let changeNumber = HTTPField.Name(ChangeNumber.header)!
}
