import NIOConcurrencyHelpers

/// Work one part of the app asks of another once something happened (files
/// may go once changes reached the server). Set while the app is built,
/// before anything runs: set through an actor from a task, it could come
/// after the first sync, which then told nobody.
final class Hook<Argument: Sendable>: Sendable {
    private let handler = NIOLockedValueBox<(@Sendable (Argument) async -> Void)?>(nil)

    func set(_ handler: @escaping @Sendable (Argument) async -> Void) {
        self.handler.withLockedValue { $0 = handler }
    }

    func callAsFunction(_ argument: Argument) async {
        await handler.withLockedValue { $0 }?(argument)
    }
}

extension Hook where Argument == Void {
    func set(_ handler: @escaping @Sendable () async -> Void) {
        self.handler.withLockedValue { $0 = { _ in await handler() } }
    }

    func callAsFunction() async {
        await self(())
    }
}
