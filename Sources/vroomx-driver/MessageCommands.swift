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
    @Flag(help: "Your conversation with dispatch, both ways, oldest first.") var conversation = false

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: output.json)
            let model = MessagesViewModel(app: session.app)
            if conversation {
                if output.json { try printJSON(Items(model.conversation)) } else { try Self.render(model.conversation, session) }
                return
            }
            model.filter = try unread ? .unread : Self.filter(filter)
            if output.json {
                try printJSON(MessagesJSON(unread: model.state.unreadCount,
                                           sections: model.state.sections.map { .init(title: $0.title, messages: $0.rows.map(\.notification)) }))
            } else {
                Render(terminal: session.terminal).messages(model.state)
            }
        }
    }

    /// "dispatch  Nov 30 10:42  Road closed: I-80 closed at exit 12   read 10:45"; "you  …  (not sent yet)".
    @MainActor
    static func render(_ lines: [ConversationLine], _ session: Session) throws {
        let terminal = session.terminal
        guard !lines.isEmpty else {
            terminal.line(terminal.style("No messages yet. Write to dispatch: vroomx-driver send \"…\"", .dim))
            return
        }
        let waiting = Set(try session.app.database.outbox().filter { $0.mutation.kind == .sendMessage && $0.isUnsynced }.map(\.mutation.entityID))
        for line in lines {
            let who = line.from == .dispatch ? terminal.style("dispatch", .bold) : terminal.style("you     ", .bold)
            let about = try subject(of: line, session.app)
            var text = line.title.isEmpty ? line.body : "\(line.title): \(line.body)"
            if line.urgent { text = terminal.style("URGENT ", .red) + text }
            var state: String
            switch (line.from, line.readAt, line.acknowledgedAt) {
            case (.dispatch, _, let acknowledged?): state = "got it \(Render.timeFormatter.string(from: acknowledged))"
            case (.dispatch, let read?, nil): state = "read \(Render.timeFormatter.string(from: read))"
            case (.dispatch, nil, nil): state = "unread"
            case (.driver, _, _) where waiting.contains(line.id): state = "not sent yet"
            case (.driver, let read?, _): state = "read by dispatch \(Render.timeFormatter.string(from: read))"
            case (.driver, nil, _): state = "sent"
            }
            terminal.line("\(who)  \(Render.timeFormatter.string(from: line.at))\(about.map { "  [\($0)]" } ?? "")  \(text)  " + terminal.style(state, .dim)
                          + (line.from == .dispatch && line.urgent && line.acknowledgedAt == nil ? terminal.style("  (vroomx-driver read \(line.id.prefix(8)) --got-it)", .dim) : ""))
        }
    }

    /// The order or trip a line is about, by number.
    @MainActor
    static func subject(of line: ConversationLine, _ app: DriverApp) throws -> String? {
        if let order = line.orderID, let number = try app.database.order(order)?.number { return number }
        if let trip = line.tripID, let number = try app.database.trip(trip)?.number { return number }
        return nil
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
    static let configuration = CommandConfiguration(abstract: "Open a message (marks it read); --got-it answers an urgent one.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Message id (or its first characters).") var message: String
    @Flag(name: .customLong("got-it"), help: "Tell dispatch you got this urgent message.") var gotIt = false

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let found = try Lookup.message(message, in: session.app)
            let mark = try session.outboxMark()
            let model = MessagesViewModel(app: session.app)
            let destination = model.open(found.id)
            if gotIt {
                guard model.canAcknowledge(found) || found.acknowledgedAt != nil else {
                    throw CLIError(.refused, "Only an urgent message is answered “Got it”.")
                }
                if let answered = found.acknowledgedAt {
                    session.terminal.line("You answered it “Got it” already (\(Render.timeFormatter.string(from: answered))).")
                } else {
                    model.acknowledge(found.id)
                    if let error = model.lastError { throw CLIError(.refused, error) }
                }
            }
            let terminal = session.terminal
            terminal.line(terminal.style(found.title, .bold) + (found.type == .urgent ? terminal.style("  URGENT", .red) : ""))
            terminal.line(found.body)
            switch destination {
            case .order(let order, _)?:
                if let number = try session.app.database.order(order)?.number { terminal.line("→ vroomx-driver order \(number)") }
            case .trip(let trip)?:
                if let number = try session.app.database.trip(trip)?.number { terminal.line("→ vroomx-driver trip \(number)") }
            default:
                // A message from dispatch opens in place; what it is about is one command away.
                if let order = found.data.orderID, let number = try session.app.database.order(order)?.number {
                    terminal.line("About order \(number) → vroomx-driver order \(number)")
                } else if let trip = found.data.tripID, let number = try session.app.database.trip(trip)?.number {
                    terminal.line("About trip \(number) → vroomx-driver trip \(number)")
                }
            }
            // Opening an unread message queues "read": like any change, 75 until dispatch has it.
            if try session.app.database.outbox().contains(where: { $0.seq > mark }) {
                try await session.finishChange(gotIt ? "Dispatch will see you got it." : "Marked read.", since: mark)
            } else {
                await session.syncIfPossible(quiet: true)
            }
        }
    }
}

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write to dispatch, in general or about a trip or an order (sent once, even from a dead zone).",
        discussion: """
            vroomx-driver send "Running 30 min late to the pickup" --order O-5003
            vroomx-driver messages --conversation      what you and dispatch wrote, and who read it
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "What to tell dispatch.") var text: String
    @Option(help: "About this trip (number or id).") var trip: String?
    @Option(help: "About this order (number or id).") var order: String?
    @Option(help: "A photo to send with it (JPEG or PNG; repeat for up to 4).") var photo: [String] = []

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let app = session.app
            let aboutOrder = try order.map { try Lookup.order($0, in: app) }
            let aboutTrip = try trip.map { try Lookup.trip($0, in: app) }
            let mark = try session.outboxMark()
            let model = MessagesViewModel(app: app)
            guard await model.send(text, trip: aboutTrip?.id ?? aboutOrder?.tripID, order: aboutOrder?.id,
                                   photos: photo.map { URL(fileURLWithPath: $0) }) else {
                throw CLIError(.refused, model.lastError ?? "Not sent.")
            }
            try await session.finishChange("Sent to dispatch.", waiting: "Your message to dispatch is written.", since: mark)
        }
    }
}
