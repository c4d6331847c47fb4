import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

struct Earnings: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Your pay per trip, week and month, and the settlements dispatch approved and paid.",
        discussion: "With --statement WEEK (any day of it) --out FILE, saves that week's settlement statement (PDF).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "A day of the settled week whose statement to save (YYYY-MM-DD).") var statement: String?
    @Option(help: "Where to save the statement (default: settlement-WEEK.pdf here).", completion: .file()) var out: String?

    func run() async throws {
        try await withSession(global) { session in
            try session.requireUnlocked()
            if let statement { return try await save(statement, session) }
            await session.syncIfPossible(quiet: output.json)
            let state = EarningsViewModel(app: session.app).state
            let settled = try? await session.app.refreshEarnings()
            if output.json {
                try printJSON(EarningsJSON(totalCents: state.totalCents, upcomingCents: state.upcomingPayCents,
                                           weeks: state.weeks.map { .init(title: $0.title, start: $0.start, payCents: $0.payCents, trips: $0.trips) },
                                           months: state.months.map { .init(title: $0.title, start: $0.start, payCents: $0.payCents, trips: $0.trips) },
                                           settlements: settled?.earnings))
            } else {
                let render = Render(terminal: session.terminal)
                render.earnings(state)
                if let settled { render.settlements(settled) }
            }
        }
    }

    private func save(_ day: String, _ session: Session) async throws {
        guard let date = LocalDate(day) else { throw ValidationError("--statement is a day of the week, YYYY-MM-DD.") }
        let week = SettlementRules.week(of: date)
        let out = self.out ?? "settlement-\(week.start).pdf"
        let settled = try await session.app.refreshEarnings()
        guard let found = ([settled.earnings.current] + settled.earnings.settlements).first(where: { $0.periodStart == week.start }),
              let id = found.id else {
            throw CLIError(.refused, "The week of \(DayFormat.day(week.start)) is not settled yet: dispatch approves it first.")
        }
        try await session.app.statement(id).write(to: URL(fileURLWithPath: out))
        session.terminal.line("Saved the statement for \(DayFormat.span(week.start, week.end) ?? "") to \(out).")
    }

    struct EarningsJSON: Encodable {
        struct Period: Encodable {
            let title: String; let start: LocalDate; let payCents: Int; let trips: Int
            enum CodingKeys: String, CodingKey { case title, start, trips, payCents = "pay_cents" }
        }
        let totalCents: Int; let upcomingCents: Int; let weeks: [Period]; let months: [Period]
        /// As the server figured them; nil when it was never reached.
        let settlements: VroomXModels.Earnings?
        enum CodingKeys: String, CodingKey { case weeks, months, settlements, totalCents = "total_cents", upcomingCents = "upcoming_cents" }
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
