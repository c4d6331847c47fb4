import NIOConcurrencyHelpers

/// Work one part of the app asks of another once something happened (files
/// may go once changes reached the server). Set while the app is built,
/// before anything runs: set through an actor from a task, it could come
/// after the first sync, which then told nobody.
final class Hook: Sendable {
    private let handler = NIOLockedValueBox<(@Sendable () async -> Void)?>(nil)

    func set(_ handler: @escaping @Sendable () async -> Void) {
        self.handler.withLockedValue { $0 = handler }
    }

    func callAsFunction() async {
        await handler.withLockedValue { $0 }?()
    }
}
