import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

struct Messages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Messages from dispatch: Today, This Week, Earlier.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: "Only unread messages.") var unread = false
    @Option(help: "all, unread, trip-assignments or status-changes.") var filter: String?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: output.json)
            let model = MessagesViewModel(app: session.app)
            model.filter = try unread ? .unread : Self.filter(filter)
            if output.json {
                try printJSON(MessagesJSON(unread: model.state.unreadCount,
                                           sections: model.state.sections.map { .init(title: $0.title, messages: $0.rows.map(\.notification)) }))
            } else {
                Render(terminal: session.terminal).messages(model.state)
            }
        }
    }

    static func filter(_ text: String?) throws -> MessagesState.Filter {
        switch text {
        case nil, "all": return .all
        case "unread": return .unread
        case "trip-assignments": return .tripAssignments
        case "status-changes": return .statusChanges
        case let other?: throw CLIError(.usage, "Unknown filter \(other): all, unread, trip-assignments or status-changes.")
        }
    }

    struct MessagesJSON: Encodable {
        struct Section: Encodable { let title: String; let messages: [DriverNotification] }
        let unread: Int
        let sections: [Section]
    }
}

struct Read: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Open a message (marks it read).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Message id (or its first characters).") var message: String

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let found = try Lookup.message(message, in: session.app)
            let mark = try session.outboxMark()
            let destination = MessagesViewModel(app: session.app).open(found.id)
            let terminal = session.terminal
            terminal.line(terminal.style(found.title, .bold) + (found.type == .urgent ? terminal.style("  URGENT", .red) : ""))
            terminal.line(found.body)
            switch destination {
            case .order(let order, _)?:
                if let number = try session.app.database.order(order)?.number { terminal.line("→ vroomx-driver order \(number)") }
            case .trip(let trip)?:
                if let number = try session.app.database.trip(trip)?.number { terminal.line("→ vroomx-driver trip \(number)") }
            default: break
            }
            // Opening an unread message queues "read": like any change, 75 until dispatch has it.
            if try session.app.database.outbox().contains(where: { $0.seq > mark }) {
                try await session.finishChange("Marked read.", since: mark)
            } else {
                await session.syncIfPossible(quiet: true)
            }
        }
    }
}
