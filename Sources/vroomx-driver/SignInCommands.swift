import ArgumentParser
import DriverKit
import Foundation
import VroomXModels

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sign in with the code emailed to you, then set a PIN.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Your email (asked if missing).") var email: String?
    @Option(help: "The 6-digit code from the email (asked if missing).") var code: String?
    @Option(help: "A 4-digit PIN for quick unlock (asked if missing).") var pin: String?
    @Option(help: "The carrier to work for, by name, when you drive for several (asked if missing).") var carrier: String?

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
                    terminal.line("Then run: vroomx-driver login --email \(email.lowercased()) --code <code> --pin <4 digits>")
                    return
                }
                code = terminal.prompt("Code: ")
            }
            // Without a terminal to ask on, say so before the code is spent.
            guard pin != nil || Terminal.inputIsInteractive else {
                throw CLIError(.usage, "Add --pin <4 digits> (the PIN that unlocks this device): there is no terminal to ask on.")
            }
            do {
                do {
                    try await auth.verify(email: email, code: code ?? "")
                } catch AuthError.carrierRequired {
                    try await auth.chooseCarrier(chosenCarrier(among: auth.carrierChoices, terminal))
                }
            } catch let error as APIError where (400..<500).contains(error.status ?? 0) {
                // A wrong or spent code is a failed sign-in (77); a server or network failure stays a failure (1).
                throw CLIError(.authentication, error.code.map { "\(error.description) (\($0))" } ?? error.description)
            }
            if auth.state == .needsPINSetup {
                let first = pin ?? terminal.prompt("Choose a 4-digit PIN: ", hidden: true) ?? ""
                if pin == nil, terminal.prompt("Repeat the PIN: ", hidden: true) != first {
                    throw CLIError(.usage, "The PINs differ. Run login again to set one.")
                }
                try await auth.setUpPIN(first)
            }
            session.openUnlockWindow()
            // What another driver left on this phone goes now, in their name; the notice says what is still left.
            let leftBefore = auth.setAsideWork
            await session.syncIfPossible()
            await session.app.handOver.runNow()
            auth.refreshSetAsideWork()
            let name = try session.app.database.account()?.driver?.name ?? email
            terminal.line("Signed in as \(name). \(NumberText.count(try session.app.database.trips().count, "trip")) on this device.")
            for other in leftBefore where !auth.setAsideWork.contains(where: { $0.email == other.email }) {
                terminal.note("What \(other.email) left on this phone reached dispatch in their name.")
            }
            for other in auth.setAsideWork { terminal.note(terminal.style(other.notice, .yellow)) }
        }
    }
}

extension Login {
    /// The carrier named by `--carrier` (its name, any case, or its id), or
    /// asked for by number; the code stays good meanwhile.
    func chosenCarrier(among choices: [CarrierChoice], _ terminal: Terminal) throws -> ID<Tenant> {
        if let carrier {
            let wanted = carrier.trimmingCharacters(in: .whitespaces)
            if let match = choices.first(where: { $0.name.caseInsensitiveCompare(wanted) == .orderedSame || $0.id.rawValue == wanted.lowercased() }) {
                return match.id
            }
            throw CLIError(.usage, "You do not drive for \"\(wanted)\". You drive for: \(choices.map(\.name).joined(separator: ", ")).")
        }
        let names = choices.enumerated().map { "  \($0.offset + 1). \($0.element.name)" }.joined(separator: "\n")
        guard Terminal.inputIsInteractive else {
            throw CLIError(.usage, "You drive for more than one carrier:\n\(names)\nRun login again with the same code and --carrier \"<name>\".")
        }
        terminal.line("You drive for more than one carrier:\n\(names)")
        let answer = terminal.prompt("Which one are you working for now? (1–\(choices.count)): ") ?? ""
        guard let number = Int(answer.trimmingCharacters(in: .whitespaces)), choices.indices.contains(number - 1) else {
            throw CLIError(.usage, "Choose a number from 1 to \(choices.count). Run login again with the same code.")
        }
        return choices[number - 1].id
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
            } catch let error as AuthError {
                guard case .unsyncedChanges = error else { throw error }
                let warning = error.description
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
