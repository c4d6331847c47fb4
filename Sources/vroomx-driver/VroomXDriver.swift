import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

@main
struct VroomXDriver: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vroomx-driver",
        abstract: "The VroomX driver app in the terminal.",
        discussion: """
            The server is --server or VROOMX_SERVER (default http://127.0.0.1:8080); state (the local database and \
            secrets) lives in VROOMX_DRIVER_HOME (default ~/.vroomx-driver). Every command works offline against the \
            device's copy; changes queue and reach dispatch on the next sync.
            Exit codes: 0 done, 1 something failed, 64 usage, 65 refused, 75 saved offline (not yet synced), \
            77 sign-in needed or failed.
            """,
        subcommands: [Login.self, Unlock.self, Logout.self, Home.self, Trips.self, TripCommand.self, Orders.self,
                      OrderCommand.self, ExpenseCommand.self, Messages.self, Read.self, Earnings.self, Profile.self,
                      Inspect.self, Sync.self, Discard.self, Evidence.self, Watch.self]
    )

    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as CLIError {
            if !error.description.isEmpty { Terminal.standard.note(error.description) }
            Foundation.exit(error.outcome.rawValue)
        } catch let error as APIError {
            Terminal.standard.note(error.code.map { "\(error.description) (\($0))" } ?? error.description)
            Foundation.exit(error.endsSession ? Outcome.authentication.rawValue : Outcome.failed.rawValue)
        } catch let error as AuthError {
            Terminal.standard.note(error.description)
            Foundation.exit(Outcome.authentication.rawValue)
        } catch let error as LocalRejection {
            Terminal.standard.note("\(error.message) (\(error.code))")
            Foundation.exit(Outcome.refused.rawValue)
        } catch {
            exit(withError: error)
        }
    }
}

struct GlobalOptions: ParsableArguments {
    @Option(help: "The VroomX server (default: VROOMX_SERVER or http://127.0.0.1:8080).") var server: String?

    var serverURL: String { server ?? ProcessInfo.processInfo.environment["VROOMX_SERVER"] ?? "http://127.0.0.1:8080" }

    var stateDirectory: URL {
        if let home = ProcessInfo.processInfo.environment["VROOMX_DRIVER_HOME"], !home.isEmpty { return URL(fileURLWithPath: home) }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".vroomx-driver")
    }
}

struct OutputOptions: ParsableArguments {
    @Flag(help: "JSON for scripts instead of text.") var json = false
}

/// Runs a command body on the main actor with an open session, then shuts it down.
@MainActor
func withSession(_ options: GlobalOptions, realtime: Bool = false, _ body: @MainActor (Session) async throws -> Void) async throws {
    let session = try Session.open(options, realtime: realtime)
    do {
        try await body(session)
    } catch {
        await session.shutdown()
        throw error
    }
    await session.shutdown()
}

@MainActor
func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = WireJSON.encoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

// MARK: Sign-in

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sign in with the code emailed to you, then set a PIN.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Your email (asked if missing).") var email: String?
    @Option(help: "The 6-digit code from the email (asked if missing).") var code: String?
    @Option(help: "A 4-digit PIN for quick unlock (asked if missing).") var pin: String?

    func run() async throws {
        try await withSession(global) { session in
            let auth = session.app.auth
            let terminal = session.terminal
            guard let email = email ?? terminal.prompt("Email: "), !email.isEmpty else { throw CLIError(.usage, "An email is needed.") }
            var code = self.code
            if code == nil {
                try await auth.sendCode(to: email)
                terminal.line("A sign-in code was sent to \(email.lowercased()).")
                guard Terminal.inputIsInteractive else {
                    terminal.line("Then run: vroomx-driver login --email \(email.lowercased()) --code <code>")
                    return
                }
                code = terminal.prompt("Code: ")
            }
            try await auth.verify(email: email, code: code ?? "")
            if auth.state == .needsPINSetup {
                let first = pin ?? terminal.prompt("Choose a 4-digit PIN: ", hidden: true) ?? ""
                if pin == nil, terminal.prompt("Repeat the PIN: ", hidden: true) != first {
                    throw CLIError(.usage, "The PINs differ. Run login again to set one.")
                }
                try await auth.setUpPIN(first)
            }
            session.openUnlockWindow()
            await session.syncIfPossible()
            let name = try session.app.database.account()?.driver?.name ?? email
            terminal.line("Signed in as \(name). \(try session.app.database.trips().count) trips on this device.")
            for other in auth.setAsideWork { terminal.note(terminal.style(other.notice, .yellow)) }
        }
    }
}

struct Unlock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Unlock with your PIN (works offline).")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Your PIN (asked if missing).") var pin: String?

    func run() async throws {
        try await withSession(global) { session in
            guard session.app.auth.state == .locked else {
                try session.requireUnlocked()
                session.terminal.line("Already unlocked.")
                return
            }
            let entered = pin ?? session.terminal.prompt("PIN: ", hidden: true) ?? ""
            do {
                try await session.app.auth.unlock(pin: entered)
            } catch AuthError.pinFormat {
                throw CLIError(.usage, AuthError.pinFormat.description)
            }
            session.openUnlockWindow()
            session.terminal.line("Unlocked.")
        }
    }
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sign out and clear this device (refuses while changes are unsynced).")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Sign out even though unsynced changes would be lost.") var force = false

    func run() async throws {
        try await withSession(global) { session in
            await session.syncIfPossible(quiet: true)
            do {
                try await session.app.auth.logout(force: force)
            } catch AuthError.unsyncedChanges(let count) {
                let warning = AuthError.unsyncedChanges(count: count).description
                guard Terminal.inputIsInteractive, session.terminal.prompt("\(warning)\nLog out anyway and lose them? [y/N] ")?.lowercased() == "y" else {
                    throw CLIError(.refused, warning + " (vroomx-driver logout --force)")
                }
                try await session.app.auth.logout(force: true)
            }
            session.closeUnlockWindow()
            session.terminal.line("Signed out; this device's copy is cleared.")
        }
    }
}

// MARK: Work

struct Home: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your current trip and next stop.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: output.json)
            let state = HomeViewModel(app: session.app).state
            let unread = try session.app.database.unreadCount()
            if output.json {
                try printJSON(HomeJSON(currentTrip: state.currentTrip, nextStop: state.nextStop.map { .init(kind: $0.kind.rawValue, order: $0.order) },
                                       upcomingTrips: state.upcomingTrips, unreadMessages: unread,
                                       unsyncedChanges: try session.app.database.unsyncedCount()))
            } else {
                Render(terminal: session.terminal).home(state, unread: unread, pending: try session.app.database.unsyncedCount())
            }
        }
    }

    struct HomeJSON: Encodable {
        struct Next: Encodable { let kind: String; let order: Order }
        let currentTrip: Trip?
        let nextStop: Next?
        let upcomingTrips: [Trip]
        let unreadMessages: Int
        let unsyncedChanges: Int
        enum CodingKeys: String, CodingKey {
            case currentTrip = "current_trip", nextStop = "next_stop", upcomingTrips = "upcoming_trips"
            case unreadMessages = "unread_messages", unsyncedChanges = "unsynced_changes"
        }
    }
}

struct Trips: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your trips, newest first.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: output.json)
            let trips = try session.app.database.trips()
            if output.json { try printJSON(Items(trips)) } else { Render(terminal: session.terminal).trips(trips) }
        }
    }
}

struct TripCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "trip", abstract: "One trip: its orders and expenses.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Trip number (T-1002) or id.") var trip: String

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: output.json)
            let found = try Lookup.trip(trip, in: session.app)
            guard let detail = TripDetailViewModel(app: session.app, trip: found.id).state else { throw CLIError(.refused, "No trip \(trip).") }
            if output.json {
                try printJSON(TripJSON(trip: detail.trip, orders: detail.orders, expenses: detail.expenses))
                return
            }
            let render = Render(terminal: session.terminal)
            let terminal = session.terminal
            terminal.line(terminal.style("Trip \(detail.trip.number)", .bold) + "  " + render.status(detail.trip.status) + "  " + terminal.style(detail.trip.id.rawValue, .dim))
            terminal.line("\(detail.route)  \(render.dates(detail.trip))  \(detail.trip.miles) mi")
            terminal.line("Pay \(render.money(detail.trip.driverPayCents))  ·  \(detail.deliveredCount)/\(detail.orders.count) delivered")
            terminal.line()
            render.orders(detail.orders)
            terminal.line()
            render.expenses(detail.expenses)
        }
    }

    struct TripJSON: Encodable { let trip: Trip; let orders: [Order]; let expenses: [Expense] }
}

struct Orders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your orders, newest first.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "Only orders with this status.") var status: OrderStatus?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: output.json)
            let orders = try session.app.database.orders().filter { status == nil || $0.status == status }
            if output.json { try printJSON(Items(orders)) } else { Render(terminal: session.terminal).orders(orders) }
        }
    }
}

extension OrderStatus: ExpressibleByArgument {}
extension ExpenseCategory: ExpressibleByArgument {}

struct OrderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "order", abstract: "Show an order, or change it.",
        discussion: """
            vroomx-driver order O-5003                         show it, with its inspections
            vroomx-driver order O-5003 eta --pickup 15:30 --delivery "2026-11-24 09:00"
            A vehicle is picked up or delivered by completing its inspection: `vroomx-driver inspect O-5003 --pickup …`.
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Order number (O-5003) or id.") var order: String
    @Argument(help: "eta, or nothing to show the order.") var action: String?
    @Option(help: "Pickup ETA.") var pickup: String?
    @Option(help: "Delivery ETA.") var delivery: String?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let app = session.app
            switch action {
            case nil:
                await session.syncIfPossible(quiet: output.json)
                let found = try Lookup.order(order, in: app)
                if output.json {
                    try printJSON(found)
                } else {
                    let render = Render(terminal: session.terminal)
                    render.order(found)
                    render.inspections(try app.database.inspections(order: found.id), uploads: try app.database.uploads())
                }
            case "status":
                throw CLIError(.usage, """
                    A vehicle is picked up or delivered by completing its inspection: \
                    vroomx-driver inspect \(order) --pickup (or --delivery) with its photos.
                    """)
            case "eta":
                guard pickup != nil || delivery != nil else { throw CLIError(.usage, "Give --pickup, --delivery or both.") }
                let found = try Lookup.order(order, in: app)
                let mark = try session.outboxMark()
                try app.submitETA(found.id, pickup: try pickup.map { try Input.time($0) }, delivery: try delivery.map { try Input.time($0) })
                try await session.finishChange("ETA for order \(found.number) updated.", since: mark)
            case let other?:
                throw CLIError(.usage, "Unknown action \(other): use eta.")
            }
        }
    }
}

struct ExpenseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "expense", abstract: "Record, list and delete trip expenses.",
                                                    subcommands: [Add.self, List.self, Delete.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Record an expense on a trip.")
        @OptionGroup var global: GlobalOptions
        @Option(help: "Trip number or id.") var trip: String
        @Option(help: "fuel, tolls, repairs, lodging or other.") var category: ExpenseCategory
        @Option(help: "Amount in dollars, e.g. 84.20.") var amount: String
        @Option(help: "A note (station, receipt number…).") var note: String?
        @Option(help: "Date YYYY-MM-DD (default today).") var date: String?

        func run() async throws {
            try await withSession(global) { session in
                try session.requireUnlocked()
                let found = try Lookup.trip(trip, in: session.app)
                guard date == nil || LocalDate(date!) != nil else { throw CLIError(.usage, "A date looks like 2026-11-22.") }
                let cents = try Input.cents(amount)
                let mark = try session.outboxMark()
                let id = try session.app.createExpense(trip: found.id, category: category, amountCents: cents,
                                                       date: date.flatMap(LocalDate.init), notes: note)
                try await session.finishChange("Recorded \(MoneyFormat.dollars(cents)) \(category.rawValue) on trip \(found.number) (\(id.rawValue.prefix(8))).",
                                               since: mark)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Expenses of a trip.")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "Trip number or id.") var trip: String

        func run() async throws {
            try await withSession(global) { session in
                try session.requireUnlocked()
                await session.syncIfPossible(quiet: output.json)
                let found = try Lookup.trip(trip, in: session.app)
                let expenses = try session.app.database.expenses(trip: found.id)
                if output.json { try printJSON(Items(expenses)) } else { Render(terminal: session.terminal).expenses(expenses) }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an expense you recorded.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Expense id (or its first characters).") var expense: String

        func run() async throws {
            try await withSession(global) { session in
                try session.requireUnlocked()
                var all: [Expense] = []
                for trip in try session.app.database.trips() { all += try session.app.database.expenses(trip: trip.id) }
                let found = try Lookup.pick(expense, all, id: \.id.rawValue, number: nil, kind: "expense")
                let mark = try session.outboxMark()
                try session.app.deleteExpense(found.id)
                try await session.finishChange("Deleted the \(MoneyFormat.dollars(found.amountCents)) \(found.category.rawValue) expense.", since: mark)
            }
        }
    }
}

// MARK: Messages

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
            await session.syncIfPossible(quiet: true)
        }
    }
}

struct Earnings: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Your pay per trip, week and month.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            await session.syncIfPossible(quiet: output.json)
            let state = EarningsViewModel(app: session.app).state
            if output.json {
                try printJSON(EarningsJSON(totalCents: state.totalCents, upcomingCents: state.upcomingPayCents,
                                           weeks: state.weeks.map { .init(title: $0.title, start: $0.start, payCents: $0.payCents, trips: $0.trips) },
                                           months: state.months.map { .init(title: $0.title, start: $0.start, payCents: $0.payCents, trips: $0.trips) }))
            } else {
                Render(terminal: session.terminal).earnings(state)
            }
        }
    }

    struct EarningsJSON: Encodable {
        struct Period: Encodable {
            let title: String; let start: LocalDate; let payCents: Int; let trips: Int
            enum CodingKeys: String, CodingKey { case title, start, trips, payCents = "pay_cents" }
        }
        let totalCents: Int; let upcomingCents: Int; let weeks: [Period]; let months: [Period]
        enum CodingKeys: String, CodingKey { case weeks, months, totalCents = "total_cents", upcomingCents = "upcoming_cents" }
    }
}

struct Profile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Who is signed in on this device.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let state = ProfileViewModel(app: session.app).state
            if output.json {
                try printJSON(state.driver)
                return
            }
            let terminal = session.terminal
            terminal.line(terminal.style(state.driver?.name ?? "Driver", .bold))
            terminal.line("Email     \(state.email ?? "—")")
            terminal.line("Phone     \(state.driver?.phone ?? "—")")
            terminal.line("Pay       \(state.payTerms ?? "—")")
            terminal.line("Server    \(session.app.api.baseURL)")
            if let warning = state.signOutWarning { terminal.line(terminal.style(warning, .yellow)) }
        }
    }
}

// MARK: Sync

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
                try await session.sendUploads()
                online = await session.syncIfPossible(quiet: true)
            }
            try session.requireSessionStillActive()
            let waiting = try app.waitingWork()
            let lastSynced = try app.database.lastSyncedAt()
            if output.json {
                try printJSON(SyncJSON(online: app.network.isOnline, lastSyncedAt: lastSynced, waiting: waiting))
            } else {
                Render(terminal: session.terminal).syncState(waiting, lastSynced: lastSynced, setAside: app.auth.setAsideWork)
            }
            if waiting.hasFailures { throw CLIError(.failed, "") }
            if !waiting.isEmpty { throw CLIError(.queuedOffline, online ? "" : "") }
        }
    }

    struct SyncJSON: Encodable {
        struct Item: Encodable {
            let id: String; let kind: String; let about: String; let status: String; let code: String?; let why: String
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
                     status: $0.entry.failure == .transient ? "failed" : "waiting", code: $0.entry.errorCode, why: $0.why)
            }
            failed = work.refused.map {
                Item(id: $0.id.rawValue, kind: $0.mutation.kind.rawValue, about: $0.mutation.entityID, status: "refused",
                     code: $0.errorCode, why: $0.errorMessage ?? "")
            }
            files = work.files.map {
                Item(id: $0.item.id, kind: $0.item.slot.rawValue, about: $0.item.inspectionID.rawValue, status: $0.item.status.rawValue,
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
            let changes = waiting.changes.filter { $0.entry.failure == .transient }.map(\.entry) + waiting.refused
            let files = waiting.files.filter { $0.item.status == .failed }.map(\.item)
            let candidates = changes.map { ($0.id.rawValue, "the \($0.mutation.kind.rawValue) change of \($0.mutation.entityID.prefix(8))") }
                + files.map { ($0.id, "the \($0.slot) file") }
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
            vroomx-driver evidence export <id> --to DIR      write inspection.json and every file to DIR
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
                    session.terminal.line("\(item.id.rawValue.prefix(8))  \(item.inspection.kind.rawValue) inspection, \(item.files.count) files: \(item.reason)")
                }
            case "export":
                guard let to else { throw CLIError(.usage, "Give --to DIR.") }
                let folder = try app.exportEvidence(try pick().id, to: URL(fileURLWithPath: (to as NSString).expandingTildeInPath))
                session.terminal.line("Exported to \(folder.path).")
            case "discard":
                let item = try pick()
                if !yes {
                    guard Terminal.inputIsInteractive,
                          session.terminal.prompt("Drop this inspection and its \(item.files.count) files for good? [y/N] ")?.lowercased() == "y" else {
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
        if let trip = home.currentTrip { parts.append("\(trip.number) \(trip.status.rawValue)") }
        if let next = home.nextStop { parts.append("next \(next.kind.rawValue) \(next.order.number) \(next.stop.address)") }
        parts.append("\(unread) unread")
        if status.unsyncedCount > 0 { parts.append("\(status.unsyncedCount) waiting") }
        parts.append(status.isOnline ? (status.realtimeConnected ? "live" : "online") : "You're offline — showing cached data")
        return "[" + parts.joined(separator: " · ") + "]"
    }
}
