import DriverKit
import Foundation
import VroomXModels

/// One run of the terminal client: the DriverKit app on the state
/// directory, and the rules every command shares (signed in, unlocked,
/// sync when possible, the offline banner).
@MainActor
struct Session {
    let app: DriverApp
    let terminal: Terminal
    let stateDirectory: URL
    let secrets: FileSecureStore

    /// After a PIN check, commands run without it for this long (like a
    /// phone's screen lock).
    static let unlockWindow: TimeInterval = 15 * 60
    static let unlockKey = "cli_unlocked_until"

    static func open(_ options: GlobalOptions, realtime: Bool = false) throws -> Session {
        let directory = options.stateDirectory
        let secrets = try FileSecureStore(directory: directory)
        var configuration = DriverApp.Configuration(serverURL: options.serverURL, stateDirectory: directory)
        configuration.secureStore = secrets
        configuration.realtime = realtime
        configuration.transport = AsyncHTTPTransport(timeout: .seconds(try options.requestTimeout))
        configuration.logger.logLevel = .critical
        configuration.appVersion = AppVersion(VroomXDriver.version)
        let app = try DriverApp(configuration)
        let session = Session(app: app, terminal: .standard, stateDirectory: directory, secrets: secrets)
        session.resumeUnlockWindow()
        return session
    }

    private func resumeUnlockWindow() {
        guard app.auth.state == .locked,
              let data = try? secrets.data(for: Self.unlockKey),
              let until = Double(String(decoding: data, as: UTF8.self)),
              Date().timeIntervalSince1970 < until else { return }
        app.auth.resumeUnlocked()
    }

    func openUnlockWindow() {
        try? secrets.set(Data(String(Date().timeIntervalSince1970 + Self.unlockWindow).utf8), for: Self.unlockKey)
    }

    func closeUnlockWindow() {
        try? secrets.remove(Self.unlockKey)
    }

    /// Commands that show or change the driver's work need a signed-in,
    /// unlocked session.
    func requireUnlocked() throws {
        switch app.auth.state {
        case .unlocked, .needsPINSetup: return
        case .locked: throw CLIError(.authentication, "Locked. Run: vroomx-driver unlock")
        case .signedOut, .codeSent:
            throw CLIError(.authentication, app.auth.message.map { "\($0) Run: vroomx-driver login" } ?? "Not signed in. Run: vroomx-driver login")
        }
    }

    /// Pushes what is queued and pulls what is new, if the server answers;
    /// says so when it does not.
    @discardableResult
    func syncIfPossible(quiet: Bool = false) async -> Bool {
        await app.syncNow()
        let online = app.network.isOnline && app.status.lastError == nil
        if !app.network.isOnline, !quiet { terminal.note(terminal.style("You're offline — showing cached data", .yellow)) }
        if app.network.isOnline, let error = app.status.lastError, !quiet { terminal.note(terminal.style("Sync: \(error)", .red)) }
        return online
    }

    /// Where the outbox stands before a command changes anything: the
    /// command's own changes are the ones queued after it.
    func outboxMark() throws -> Int64 {
        try app.database.outbox().map(\.seq).max() ?? 0
    }

    /// After a change: sent, refused (exit 65, with the server's reason),
    /// or saved and waiting (exit 75). Only this command's own changes
    /// count; an older change's refusal is `sync`'s to report.
    /// `waiting`: what to say instead of `done` while the change waits for the network.
    func finishChange(_ done: String, waiting: String? = nil, since mark: Int64, files inspection: ID<Inspection>? = nil,
                      uploads: [String] = []) async throws {
        await syncIfPossible(quiet: true)
        try requireSessionStillActive()
        let mine = try app.database.outbox().filter { $0.seq > mark }
        if let refused = mine.first(where: { $0.failure == .rejected }) {
            // The driver sees the refusal now: it need not wait in the list of failures.
            try? app.discard(refused.id)
            throw CLIError(.refused, "\(refused.refusal) (\(refused.errorCode ?? "rejected"))")
        }
        if let inspection, let refused = try app.database.uploads(inspection: inspection).first(where: { $0.status == .failed }) {
            throw CLIError(.failed, """
                \(done) But the server refused the \(refused.slot) file: \(refused.lastError ?? "refused"). \
                Drop it (vroomx-driver discard \(refused.id.prefix(8))) and add that file again.
                """)
        }
        if let refused = try uploads.compactMap({ try app.database.upload($0) }).first(where: { $0.status == .failed }) {
            throw CLIError(.failed, """
                The server refused the \(refused.about): \(refused.lastError ?? "refused"). \
                Drop it (vroomx-driver discard \(refused.id.prefix(8))) and try another file.
                """)
        }
        let filesWaiting = try inspection.map { try app.database.uploads(inspection: $0).contains { $0.status != .completed } } ?? false
            || (try uploads.compactMap { try app.database.upload($0) }.contains { $0.status != .completed })
        if !mine.isEmpty || filesWaiting {
            if !app.network.isOnline { terminal.note(terminal.style("You're offline — showing cached data", .yellow)) }
            terminal.line("\(waiting ?? done) Saved on this device; it will reach dispatch when the server answers (vroomx-driver sync).")
            throw CLIError(.queuedOffline, "")
        }
        terminal.line(done)
    }

    /// The server ended the session during the command (revoked, expired):
    /// unsynced work stays for the same driver's next sign-in.
    func requireSessionStillActive() throws {
        if app.auth.state == .signedOut {
            throw CLIError(.authentication, "\(app.auth.message ?? "Your session has ended.") Run: vroomx-driver login")
        }
    }

    func shutdown() async {
        await app.shutdown()
    }
}

/// Resolving what a driver types: a full id, an id prefix, or a number
/// like T-1002 / O-5003.
@MainActor
enum Lookup {
    static func trip(_ text: String, in app: DriverApp) throws -> Trip {
        try pick(text, try app.database.trips(), id: \.id.rawValue, number: \.number, kind: "trip")
    }

    static func order(_ text: String, in app: DriverApp) throws -> Order {
        try pick(text, try app.database.orders(), id: \.id.rawValue, number: \.number, kind: "order")
    }

    /// One of the driver's units by unit number or id; without one, their unit of `kind`.
    static func unit(_ text: String?, kind: EquipmentKind, in app: DriverApp) throws -> Equipment {
        let units = try app.units()
        if let text { return try pick(text, units, id: \.id.rawValue, number: \.unitNumber, kind: "unit") }
        guard let unit = units.first(where: { $0.kind == kind }) else {
            throw CLIError(.refused, "No \(kind.rawValue) is assigned to you. Run `vroomx-driver sync`, or ask dispatch.")
        }
        return unit
    }

    static func message(_ text: String, in app: DriverApp) throws -> DriverNotification {
        try pick(text, try app.database.notifications(), id: \.id.rawValue, number: nil, kind: "message")
    }

    static func pick<T>(_ text: String, _ items: [T], id: KeyPath<T, String>, number: KeyPath<T, String>?, kind: String) throws -> T {
        let needle = text.lowercased()
        if let number, let exact = items.first(where: { $0[keyPath: number].lowercased() == needle }) { return exact }
        let matches = items.filter { $0[keyPath: id].hasPrefix(needle) }
        guard !needle.isEmpty, let first = matches.first else { throw CLIError(.refused, "No \(kind) \(text) on this device.") }
        guard matches.count == 1 else { throw CLIError(.usage, "\(text) matches \(matches.count) \(kind)s; give more of the id.") }
        return first
    }
}

/// Parsing what a driver types for times and money.
enum Input {
    /// "84.20" → 8420 cents.
    static func cents(_ text: String) throws -> Int {
        guard let cents = DriverInput.cents(text) else { throw CLIError(.usage, "An amount looks like 84.20.") }
        return cents
    }

    /// "120.5" → 120500 thousandths (gallons or litres, up to three decimals).
    static func milli(_ text: String, what: String) throws -> Int {
        guard let milli = DriverInput.milli(text), milli > 0 else {
            throw CLIError(.usage, "\(what) is more than 0 and looks like 120.5 (at most three decimals).")
        }
        return milli
    }

    /// Whole miles, "412350" or "412,350".
    static func miles(_ text: String) throws -> Int {
        guard let miles = DriverInput.miles(text) else { throw CLIError(.usage, DriverInput.milesRule) }
        return miles
    }

    /// ISO-8601 ("2026-11-22T15:30:00Z"), "YYYY-MM-DD HH:MM" or "HH:MM" in local
    /// time (today), or relative "+90m" / "+2h".
    static func time(_ text: String, now: Date = Date()) throws -> Date {
        if let date = WireTime.parse(text) { return date }
        if text.hasPrefix("+"), let amount = Double(text.dropFirst().dropLast()), let unit = text.last {
            switch unit {
            case "m": return now.addingTimeInterval(amount * 60)
            case "h": return now.addingTimeInterval(amount * 3600)
            case "d": return now.addingTimeInterval(amount * 86_400)
            default: break
            }
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        for format in ["yyyy-MM-dd HH:mm", "yyyy-MM-dd'T'HH:mm"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        formatter.dateFormat = "HH:mm"
        if let time = formatter.date(from: text) {
            let calendar = Calendar.current
            let parts = calendar.dateComponents([.hour, .minute], from: time)
            if let date = calendar.date(bySettingHour: parts.hour ?? 0, minute: parts.minute ?? 0, second: 0, of: now) { return date }
        }
        throw CLIError(.usage, "A time looks like 15:30, 2026-11-22 15:30, +2h or 2026-11-22T21:30:00Z.")
    }
}
