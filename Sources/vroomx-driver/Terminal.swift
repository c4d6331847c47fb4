import Foundation
#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemWrite = Darwin.write
#endif

/// Output for people (tables, colour on a terminal) or scripts (plain).
struct Terminal {
    let colors: Bool

    static let standard = Terminal(colors: isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil)
    static var inputIsInteractive: Bool { isatty(STDIN_FILENO) == 1 }

    enum Style: String {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", blue = "34", cyan = "36"
    }

    func style(_ text: String, _ styles: Style...) -> String {
        guard colors, !styles.isEmpty else { return text }
        return "\u{1B}[" + styles.map(\.rawValue).joined(separator: ";") + "m" + text + "\u{1B}[0m"
    }

    /// Written at once, not buffered: into a file or pipe (`watch | tee log`) each line shows as it
    /// comes, and nothing is lost when the command is interrupted.
    func line(_ text: String = "") { Self.write(text + "\n", to: STDOUT_FILENO) }

    /// Lines on standard error: banners and errors never mix with `--json` output.
    func note(_ text: String) { Self.write(text + "\n", to: STDERR_FILENO) }

    /// Writes all of `text`. A reader that went away (`vroomx-driver units | head -3`) ends the
    /// command quietly, as other command-line tools do, instead of an error about a broken pipe.
    static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { exit(0) }
                return
            }
            bytes = bytes.dropFirst(written)
        }
    }

    /// A table with a header row; columns sized to their widest cell.
    func table(_ header: [String], _ rows: [[String]]) {
        guard !rows.isEmpty else { return }
        // Columns line up by what shows: a cell's colour codes take no room on the screen.
        let widths = header.indices.map { column in
            ([header[column]] + rows.map { $0[column] }).map(Self.visibleWidth).max() ?? 0
        }
        func render(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell + String(repeating: " ", count: max(0, widths[index] - Self.visibleWidth(cell)))
            }.joined(separator: "  ")
        }
        line(style(render(header), .bold))
        for row in rows { line(render(row)) }
    }

    /// How many characters a text takes on screen: its colour codes take none.
    static func visibleWidth(_ text: String) -> Int {
        var width = 0
        var inEscape = false
        for character in text {
            if inEscape {
                if character.isLetter { inEscape = false }
            } else if character == "\u{1B}" {
                inEscape = true
            } else {
                width += 1
            }
        }
        return width
    }

    /// Asks a question on the terminal; nil at end of input.
    func prompt(_ question: String, hidden: Bool = false) -> String? {
        Self.write(question, to: STDERR_FILENO)
        guard hidden, Terminal.inputIsInteractive else { return readLine()?.trimmingCharacters(in: .whitespaces) }
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &quiet)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            Self.write("\n", to: STDERR_FILENO)
        }
        return readLine()?.trimmingCharacters(in: .whitespaces)
    }
}

/// How the command ended, for scripts: distinct exit codes.
enum Outcome: Int32 {
    case success = 0
    case failed = 1
    /// Bad arguments (as ArgumentParser's own usage errors).
    case usage = 64
    /// Refused: the state machine, validation, or the server said no.
    case refused = 65
    /// Saved on the device, not yet on the server (offline).
    case queuedOffline = 75
    /// Not signed in, locked, or the sign-in failed.
    case authentication = 77
}

/// An error that ends the command with a message and an exit code.
struct CLIError: Error, CustomStringConvertible {
    let outcome: Outcome
    let description: String

    init(_ outcome: Outcome, _ description: String) {
        self.outcome = outcome
        self.description = description
    }
}
