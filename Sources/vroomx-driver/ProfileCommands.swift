import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

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
