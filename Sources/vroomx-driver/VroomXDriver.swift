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
        version: VroomXDriver.version,
        subcommands: [Login.self, Unlock.self, Logout.self, Home.self, Trips.self, TripCommand.self, Orders.self,
                      OrderCommand.self, Collect.self, ExpenseCommand.self, Messages.self, Read.self, Send.self, Problem.self, Earnings.self, Profile.self,
                      Inspect.self, Units.self, Odometer.self, UnitPhoto.self, LocationSharing.self, Drive.self, Sync.self, Discard.self, Evidence.self, Watch.self]
    )

    /// Stated with every request: a server that accepts only newer apps says to update.
    static let version = "1.0.0"

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

    /// How long to wait for the server's answer (`VROOMX_REQUEST_TIMEOUT`,
    /// whole seconds, 1 to 300; 20 by default). Past it, the server counts
    /// as slow, not gone: the change is sent again later.
    var requestTimeout: Int64 {
        get throws {
            guard let text = ProcessInfo.processInfo.environment["VROOMX_REQUEST_TIMEOUT"], !text.isEmpty else { return 20 }
            guard text.utf8.count <= 3, let seconds = Int64(text), (1...300).contains(seconds) else {
                throw CLIError(.usage, "VROOMX_REQUEST_TIMEOUT is whole seconds, 1 to 300.")
            }
            return seconds
        }
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
    Terminal.write(String(decoding: try encoder.encode(value), as: UTF8.self) + "\n", to: STDOUT_FILENO)
}
