import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send what is waiting, fetch what is new, and show what still waits and why.",
        discussion: """
            Exits 0 when everything reached dispatch, 75 while changes wait for the server to answer, 1 while \
            something failed (see `vroomx-driver discard` and `vroomx-driver evidence`), 77 when the session ended.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: "Send failed and backed-off changes and files again now (they are also retried on their own).") var retry = false

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let app = session.app
            let started = Date()
            if retry {
                for change in try app.waitingWork().changes where change.entry.failure == .transient { try app.retry(change.entry.id) }
                for file in try app.waitingWork().files where file.item.status == .failed { try app.retryUpload(file.item.id) }
                // Whatever waits out a backoff goes now too: the driver asked.
                try app.database.releaseBackoff()
                await app.uploads.retryNow()
            }
            var online = await session.syncIfPossible(quiet: output.json)
            try session.requireSessionStillActive()
            if try app.database.pendingUploadCount() > 0, app.network.isOnline {
                try await session.sendUploads(quiet: output.json)
                online = await session.syncIfPossible(quiet: true)
            }
            try session.requireSessionStillActive()
            // Work another driver left on this phone goes too, in their name (and is not this driver's to count).
            await app.handOver.runNow()
            app.auth.refreshSetAsideWork()
            let waiting = try app.waitingWork()
            let lastSynced = try app.database.lastSyncedAt()
            if output.json {
                try printJSON(SyncJSON(online: app.network.isOnline, lastSyncedAt: lastSynced, waiting: waiting))
            } else {
                let render = Render(terminal: session.terminal)
                render.syncState(waiting, lastSynced: lastSynced, setAside: app.auth.setAsideWork)
                // Positions recorded offline went with this sync: what the server kept of them.
                let positions = try app.database.positionReport(settledSince: started)
                if positions.batches > 0 { render.positions(positions, label: "Positions     ") }
            }
            if waiting.hasFailures { throw CLIError(.failed, "") }
            if !waiting.isEmpty { throw CLIError(.queuedOffline, online ? "" : "") }
        }
    }

    struct SyncJSON: Encodable {
        struct Item: Encodable {
            /// `about` is the id of the row the change is about; `what` says it in words.
            let id: String; let kind: String; let about: String; let what: String; let status: String; let code: String?; let why: String
        }
        let online: Bool
        let lastSyncedAt: Date?
        let waiting: [Item]
        let failed: [Item]
        let files: [Item]

        init(online: Bool, lastSyncedAt: Date?, waiting work: WaitingWork) {
            self.online = online
            self.lastSyncedAt = lastSyncedAt
            waiting = work.changes.map {
                Item(id: $0.entry.id.rawValue, kind: $0.entry.mutation.kind.rawValue, about: $0.entry.mutation.entityID,
                     what: $0.entry.description, status: $0.entry.failure == .transient ? "failed" : "waiting", code: $0.entry.errorCode,
                     why: $0.why)
            }
            failed = work.refused.map {
                Item(id: $0.id.rawValue, kind: $0.mutation.kind.rawValue, about: $0.mutation.entityID, what: $0.description,
                     status: "refused", code: $0.errorCode, why: $0.refusal)
            }
            files = work.files.map {
                Item(id: $0.item.id, kind: $0.item.about, about: ($0.item.inspectionID?.rawValue ?? $0.item.equipmentID?.rawValue ?? $0.item.paperID) ?? "",
                     what: $0.about, status: $0.item.status.rawValue,
                     code: nil, why: $0.why)
            }
        }

        enum CodingKeys: String, CodingKey { case online, waiting, failed, files, lastSyncedAt = "last_synced_at" }
    }
}

struct Discard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Drop a failed change or file for good (asks first).",
        discussion: "Nothing is dropped without your word: changes the server failed on are retried until you discard them here.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The id (or its first characters) of a failed change or file, as `vroomx-driver sync` shows it.") var id: String
    @Flag(help: "Do not ask.") var yes = false

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let app = session.app
            let waiting = try app.waitingWork()
            let changes = waiting.discardableChanges
            let files = waiting.failedFiles
            let candidates = changes.map { ($0.id.rawValue, $0.description) }
                + files.map { ($0.id, (try? app.database.words(for: $0)) ?? "the \($0.slot) file") }
            if !candidates.contains(where: { $0.0.hasPrefix(id.lowercased()) }),
               waiting.changes.contains(where: { $0.id.rawValue.hasPrefix(id.lowercased()) }) || waiting.files.contains(where: { $0.id.hasPrefix(id.lowercased()) }) {
                throw CLIError(.refused, "\(id) is waiting to be sent, not failed: it goes on its own (vroomx-driver sync shows why it waits).")
            }
            let found = try Lookup.pick(id, candidates, id: \.0, number: nil, kind: "failed change or file")
            if !yes {
                guard Terminal.inputIsInteractive,
                      session.terminal.prompt("Drop \(found.1)? It will never reach dispatch. [y/N] ")?.lowercased() == "y" else {
                    throw CLIError(.refused, "Not dropped. (vroomx-driver discard \(id) --yes)")
                }
            }
            if let change = changes.first(where: { $0.id.rawValue == found.0 }) {
                try app.discard(change.id)
            } else {
                try await app.discardUpload(found.0)
            }
            session.terminal.line("Dropped \(found.1).")
        }
    }
}

struct Evidence: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspections the server will not take, kept on this device with their photos: list, export or discard.",
        discussion: """
            vroomx-driver evidence                          list them
            vroomx-driver evidence export <id> --to DIR      write inspection.json and every file to DIR/inspection-<id>/
            vroomx-driver evidence discard <id> --yes        drop one for good
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "list, export or discard.") var action: String = "list"
    @Argument(help: "The inspection id (or its first characters).") var id: String?
    @Option(help: "Folder to export into.") var to: String?
    @Flag(help: "Do not ask before discarding.") var yes = false

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let app = session.app
            let held = try app.evidence()
            @MainActor func pick() throws -> HeldEvidence {
                guard let id else { throw CLIError(.usage, "Give the inspection id.") }
                return try Lookup.pick(id, held, id: \.id.rawValue, number: nil, kind: "kept inspection")
            }
            switch action {
            case "list":
                if output.json { try printJSON(Items(held.map(\.inspection))); return }
                guard !held.isEmpty else { session.terminal.line("Nothing kept."); return }
                for item in held {
                    session.terminal.line("\(item.id.rawValue.prefix(8))  \(item.about), \(NumberText.count(item.files.count, "file")): \(item.reason)")
                }
            case "export":
                guard let to else { throw CLIError(.usage, "Give --to DIR.") }
                let folder = try app.exportEvidence(try pick().id, to: URL(fileURLWithPath: (to as NSString).expandingTildeInPath))
                session.terminal.line("Exported to \(folder.path).")
            case "discard":
                let item = try pick()
                if !yes {
                    guard Terminal.inputIsInteractive,
                          session.terminal.prompt("Drop this inspection and its \(NumberText.count(item.files.count, "file")) for good? [y/N] ")?.lowercased() == "y" else {
                        throw CLIError(.refused, "Not dropped. (vroomx-driver evidence discard \(item.id.rawValue.prefix(8)) --yes)")
                    }
                }
                try app.discardEvidence(item.id)
                session.terminal.line("Dropped.")
            default:
                throw CLIError(.usage, "Use list, export or discard.")
            }
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A live view: updates as dispatch changes things (Ctrl-C to stop).")
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await withSession(global, realtime: true) { session in
            try session.requireUnlocked()
            let app = session.app
            let terminal = session.terminal
            let home = HomeViewModel(app: app)
            let messages = MessagesViewModel(app: app)
            await app.sync.start()
            var seen = Set(try app.database.notifications().map(\.id))
            var lastScreen = ""
            while !Task.isCancelled {
                // New messages are announced as they arrive (urgent ones loudly).
                for notification in try app.database.notifications().reversed() where !seen.contains(notification.id) {
                    seen.insert(notification.id)
                    let tag = notification.type == .urgent ? terminal.style("URGENT ", .red, .bold) : ""
                    terminal.line("\(terminal.style(Render.timeFormatter.string(from: notification.createdAt), .dim)) \(tag)\(terminal.style(notification.title, .bold)): \(notification.body)")
                    if let hint = Self.hint(for: NotificationDestination(notification), app: app) {
                        terminal.line("    \(terminal.style("→ " + hint, .dim))")
                    }
                }
                let screen = Self.summary(home.state, unread: messages.unreadCount, status: app.status)
                if screen != lastScreen {
                    terminal.line(terminal.style(screen, .cyan))
                    lastScreen = screen
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// The command that opens what a notification is about (as tapping it would in the app).
    @MainActor
    static func hint(for destination: NotificationDestination, app: DriverApp) -> String? {
        switch destination {
        case .trip(let id): return "vroomx-driver trip \((try? app.database.trip(id))?.number ?? id.rawValue)"
        case .order(let id): return "vroomx-driver order \((try? app.database.order(id))?.number ?? id.rawValue)"
        case .messages: return "vroomx-driver messages"
        case .urgent: return nil
        }
    }

    @MainActor
    static func summary(_ home: HomeState, unread: Int, status: SyncStatus) -> String {
        var parts: [String] = []
        if let trip = home.currentTrip { parts.append("\(trip.number) \(trip.status.label)") }
        if let next = home.nextStop { parts.append("next \(next.kind.rawValue) \(next.order.number) \(next.stop.address)") }
        parts.append("\(unread) unread")
        if status.unsyncedCount > 0 { parts.append("\(status.unsyncedCount) waiting") }
        parts.append(status.isOnline ? (status.realtimeConnected ? "live" : "online") : "You're offline — showing cached data")
        return "[" + parts.joined(separator: " · ") + "]"
    }
}
