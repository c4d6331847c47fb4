import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

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
                let waiting = try session.app.waitingWork()
                Render(terminal: session.terminal).home(state, unread: unread,
                                                        waiting: waiting.waitingCount == 0 ? nil : Render.waitingCounts(waiting))
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
    static let configuration = CommandConfiguration(
        commandName: "trip", abstract: "One trip: its orders and expenses; or start it.",
        discussion: """
            vroomx-driver trip T-1002          show it
            vroomx-driver trip T-1002 start    start it before the first pickup (the first pickup starts it anyway);
                                               your position is shared with dispatch while a trip is under way
            """)
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "Trip number (T-1002) or id.") var trip: String
    @Argument(help: "start, or nothing to show the trip.") var action: String?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            switch action {
            case nil: try await show(session)
            case "start":
                let found = try Lookup.trip(trip, in: session.app)
                let mark = try session.outboxMark()
                guard try session.app.startTrip(found.id) != nil else {
                    session.terminal.line("Trip \(found.number) is already under way.")
                    return
                }
                try await session.finishChange("Trip \(found.number) started.", since: mark)
            case let other?:
                throw CLIError(.usage, "Unknown action \(other): use start.")
            }
        }
    }

    @MainActor private func show(_ session: Session) async throws {
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
        terminal.line("\(detail.route)  \(render.dates(detail.trip))  \(NumberText.grouped(detail.trip.miles)) mi")
        terminal.line("Pay \(render.money(detail.trip.driverPayCents))  ·  \(detail.deliveredCount)/\(detail.orders.count) delivered")
        if let note = detail.progressNote { terminal.line(terminal.style(note, .dim)) }
        terminal.line()
        render.orders(detail.orders)
        terminal.line()
        render.expenses(detail.expenses)
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
            let orders = try session.app.database.orders(status: status)
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
            vroomx-driver order O-5003 eta --pickup 15:30 --delivery +1d   (times: 15:30 today, +90m, +1d, or a date and time)
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
                    render.collections(try app.database.collections(order: found.id))
                    render.inspections(try app.database.inspections(order: found.id), of: found, uploads: try app.database.uploads())
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
                // "+90m" counts from the server-corrected clock: the phone's own may be wrong.
                let now = app.serverClock.now
                try app.submitETA(found.id, pickup: try pickup.map { try Input.time($0, now: now) },
                                  delivery: try delivery.map { try Input.time($0, now: now) })
                // An ETA after the window's last day: the driver hears that dispatch is told, as dispatch is.
                let standing = try app.database.order(found.id).flatMap { $0.timeliness(today: LocalDate(now)) }
                let atRisk = standing.map { " \($0.label): after the window's last day; dispatch is told." } ?? ""
                try await session.finishChange("ETA for order \(found.number) updated.\(atRisk)", since: mark)
            case let other?:
                throw CLIError(.usage, "Unknown action \(other): use eta.")
            }
        }
    }
}

struct ExpenseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "expense", abstract: "Record, list and delete trip expenses.",
                                                    subcommands: [Add.self, List.self, Delete.self, Receipt.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Record an expense on a trip.")
        @OptionGroup var global: GlobalOptions
        @Option(help: "Trip number or id.") var trip: String
        @Option(help: "fuel, tolls, repairs, lodging or other.") var category: ExpenseCategory
        @Option(help: "Amount in dollars, e.g. 84.20.") var amount: String
        @Option(help: "A note (station, receipt number…).") var note: String?
        @Option(help: "Date YYYY-MM-DD (default today).") var date: String?
        @Option(help: "Fuel bought, in gallons (e.g. 120.5): logs it for your truck.") var gallons: String?
        @Option(help: "Fuel bought, in litres.") var litres: String?
        @Option(help: "The truck's odometer at the pump (miles).") var odometer: String?
        @Option(help: "Unit number of the truck (default: your truck).") var unit: String?
        @Option(help: "A photo of the receipt (JPEG, PNG or HEIC); give it again for more pages.", completion: .file()) var receipt: [String] = []

        func run() async throws {
            try await withSession(global) { session in
                try session.requireUnlocked()
                let found = try Lookup.trip(trip, in: session.app)
                guard date == nil || LocalDate(date!) != nil else { throw CLIError(.usage, "A date looks like 2026-11-22.") }
                let cents = try Input.cents(amount)
                var fuel: FuelPurchase?
                if gallons != nil || litres != nil || odometer != nil || unit != nil {
                    guard category == .fuel else { throw CLIError(.usage, "--gallons, --litres, --odometer and --unit are for a fuel expense.") }
                    guard (gallons == nil) != (litres == nil) else { throw CLIError(.usage, "Give the fuel in --gallons or in --litres.") }
                    let truck = try Lookup.unit(unit, kind: .truck, in: session.app)
                    fuel = FuelPurchase(equipmentID: truck.id, quantityMilli: try Input.milli(gallons ?? litres ?? "", what: "A quantity"),
                                        unit: gallons != nil ? .gallon : .litre, odometerMiles: try odometer.map(Input.miles))
                }
                // The photos are checked before the expense is recorded: a refused photo records nothing.
                guard receipt.count <= ReceiptPhoto.maxPerItem else {
                    throw CLIError(.usage, "At most \(ReceiptPhoto.maxPerItem) photos go with one expense.")
                }
                for photo in receipt { try DriverApp.checkPhoto(URL(fileURLWithPath: photo)) }
                let mark = try session.outboxMark()
                let id = try session.app.createExpense(trip: found.id, category: category, amountCents: cents,
                                                       date: date.flatMap(LocalDate.init), notes: note, fuel: fuel)
                var queued: [String] = []
                for photo in receipt { queued.append(try await session.app.addReceipt(URL(fileURLWithPath: photo), to: id).id) }
                if !queued.isEmpty, await session.syncIfPossible(quiet: true) { try await session.sendUploads() }
                let receipts = queued.isEmpty ? "" : " with \(NumberText.count(queued.count, "receipt photo"))"
                try await session.finishChange("Recorded \(MoneyFormat.dollars(cents)) \(category.rawValue) on trip \(found.number)\(receipts) (\(id.rawValue.prefix(8))).",
                                               since: mark, uploads: queued)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Expenses of a trip, or all of yours.")
        @OptionGroup var global: GlobalOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "Trip number or id (leave out for every expense you recorded, also on trips given to another driver since).")
        var trip: String?

        func run() async throws {
            try await withSession(global) { session in
                try session.requireUnlocked()
                await session.syncIfPossible(quiet: output.json)
                let app = session.app
                guard let trip else {
                    let expenses = try app.database.expenses()
                    if output.json { return try printJSON(Items(expenses)) }
                    let numbers = Dictionary(try app.database.trips().map { ($0.id, $0.number) }) { first, _ in first }
                    return Render(terminal: session.terminal).expenses(expenses, trips: numbers)
                }
                let found = try Lookup.trip(trip, in: app)
                let expenses = try app.database.expenses(trip: found.id)
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
                let all = try session.app.database.expenses()
                let found = try Lookup.pick(expense, all, id: \.id.rawValue, number: nil, kind: "expense")
                let mark = try session.outboxMark()
                try session.app.deleteExpense(found.id)
                try await session.finishChange("Deleted the \(MoneyFormat.dollars(found.amountCents)) \(found.category.rawValue) expense.", since: mark)
            }
        }
    }

    struct Receipt: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a photo of the receipt to an expense (yours, or dispatch's on your trip).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Expense id (or its first characters).") var expense: String
        @Argument(help: "The photo (JPEG, PNG or HEIC).", completion: .file()) var file: String

        func run() async throws {
            try await withSession(global) { session in
                try session.requireUnlocked()
                let found = try Lookup.pick(expense, try session.app.database.expenses(), id: \.id.rawValue, number: nil, kind: "expense")
                let mark = try session.outboxMark()
                let queued = try await session.app.addReceipt(URL(fileURLWithPath: file), to: found.id)
                if await session.syncIfPossible(quiet: true) { try await session.sendUploads() }
                try await session.finishChange("Added a receipt to the \(MoneyFormat.dollars(found.amountCents)) \(found.category.rawValue) expense.",
                                               since: mark, uploads: [queued.id])
            }
        }
    }
}

extension PaymentMethod: ExpressibleByArgument {}

struct Collect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record money you collected for an order on delivery (COD) or at pickup (COP), with a photo of the check.",
        discussion: """
            vroomx-driver collect O-5003 --amount 1800 --method check --reference 10442 --photo check.jpg
            Dispatch sees the invoice paid, pending deposit, with the photo. Offline it waits on this device and goes once.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Order number (O-5003) or id.") var order: String
    @Option(help: "Amount in dollars, e.g. 1800.00.") var amount: String
    @Option(help: "check (or money order), cash, card or other.") var method: PaymentMethod
    @Option(help: "The check or money order number.") var reference: String?
    @Option(help: "A photo of the check or cash receipt; give it again for the back.", completion: .file()) var photo: [String] = []
    @Option(help: "The day it was collected, YYYY-MM-DD (default today).") var date: String?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let found = try Lookup.order(order, in: session.app)
            let cents = try Input.cents(amount)
            guard date == nil || LocalDate(date!) != nil else { throw CLIError(.usage, "A date looks like 2026-11-22.") }
            let mark = try session.outboxMark()
            let id = try await session.app.collectPayment(order: found.id, amountCents: cents, method: method, reference: reference,
                                                          photos: photo.map { URL(fileURLWithPath: $0) }, collectedOn: date.flatMap(LocalDate.init))
            let queued = try session.app.database.uploads().filter { $0.paymentID == id }.map(\.id)
            if !queued.isEmpty, await session.syncIfPossible(quiet: true) { try await session.sendUploads() }
            let photos = queued.isEmpty ? " (no photo: add one with --photo next time, dispatch matches it to the deposit)" : " with \(NumberText.count(queued.count, "photo"))"
            try await session.finishChange("Collected \(MoneyFormat.dollars(cents)) \(method.label.lowercased()) for order \(found.number)\(photos).",
                                           since: mark, uploads: queued)
        }
    }
}

/// A problem at the stop the driver is at: the pickup until the vehicle is
/// on the truck, the delivery after.
struct Problem: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Report a problem at an order's stop (sent once, even from a dead zone).",
        discussion: """
            Problems: \(StopProblemKind.allCases.map(\.argument).joined(separator: ", ")).
            vroomx-driver problem O-5003 keys-missing --note "Dealer closed, keys in the office"
            vroomx-driver problem O-5003 waiting        detention is counted from now if the truck's position did not say
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "Order number or id.") var order: String
    @Argument(help: "What went wrong.") var kind: String
    @Option(help: "A few words for dispatch.") var note: String = ""
    @Option(help: "A photo of it (JPEG or PNG; repeat for up to 4).") var photo: [String] = []

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            let app = session.app
            guard let problem = StopProblemKind(argument: kind) else {
                throw CLIError(.usage, "No problem “\(kind)”: one of \(StopProblemKind.allCases.map(\.argument).joined(separator: ", ")).")
            }
            let found = try Lookup.order(order, in: app)
            let mark = try session.outboxMark()
            let model = OrderDetailViewModel(app: app, order: found.id)
            guard let stop = model.problemStop else { throw CLIError(.refused, "Order \(found.number) has no stop left to report a problem at.") }
            guard await model.reportProblem(problem, note: note, photos: photo.map { URL(fileURLWithPath: $0) }) else {
                throw CLIError(.refused, model.lastError ?? "Not reported.")
            }
            try await session.finishChange("Dispatch has it: \(problem.label) at the \(stop.rawValue) of \(found.number).",
                                           waiting: "Your report of \(problem.label.lowercased()) at \(found.number) is written.", since: mark)
        }
    }
}
