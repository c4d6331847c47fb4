import Foundation
import VroomXModels
import VroomXServer

/// A seeded, randomized day of a driver's work under every fault we know:
/// the terminal driver client (`vroomx-driver`, a real process on a real
/// state folder) records expenses, deletes them, edits ETAs, inspects and
/// picks up and delivers vehicles with photos, and reads messages, while a
/// controller stops, restarts and crashes the `vroomx` server, passes the
/// client's traffic through a `FaultProxy` (refused, cut, lost answers,
/// delays, duplicates, 503, 413), SIGKILLs syncs mid-drain, runs two
/// client processes at once, skews the device clock (libfaketime) and, as
/// dispatch, edits and reassigns the same orders. Then one final sync, and
/// the accounting: every change the driver made is on the server exactly
/// once or was refused with a reason the driver was shown; the device's
/// cache equals the server's view for that driver; nothing is left waiting.
///
/// The schedule (operations, faults, their order) follows from the seed;
/// the timing of processes does not, so a replay meets the same faults at
/// nearly the same moments.
public final class DriverFaultSchedule {
    public struct Options: Sendable {
        public var seed: UInt64
        public var operations: Int
        /// Progress lines (every 100 operations) and the report.
        public var log: @Sendable (String) -> Void

        /// Where the server keeps its data: its SQLite file, or a fresh PostgreSQL database.
        public var backend: TestBackend

        public init(seed: UInt64, operations: Int, backend: TestBackend = .sqlite, log: @escaping @Sendable (String) -> Void = { _ in }) {
            self.seed = seed
            self.operations = operations
            self.backend = backend
            self.log = log
        }
    }

    public struct Report: Sendable, CustomStringConvertible {
        public var seed: UInt64 = 0
        public var backend = TestBackend.sqlite
        public var seconds: Double = 0
        /// Driver operations by kind and outcome ("expense_add sent").
        public var operations: [String: Int] = [:]
        /// Faults injected, by kind.
        public var faults: [String: Int] = [:]
        /// Seconds each driver command took (for medians).
        public var commandSeconds: [Double] = []
        public var finalSyncRounds = 0
        public var finalSyncSeconds: Double = 0
        /// What the accounting found wrong; empty when the run passed.
        public var problems: [String] = []
        /// When something was wrong: what the driver's `sync` says and the end of the server's log.
        public var diagnostics = ""

        public var description: String {
            let sorted = commandSeconds.sorted()
            let median = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
            let p95 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 95 / 100)]
            var lines = ["seed \(seed) on \(backend): \(operations.values.reduce(0, +)) driver commands in \(String(format: "%.1f", seconds)) s "
                         + "(median \(Int(median * 1000)) ms, p95 \(Int(p95 * 1000)) ms); final sync: \(finalSyncRounds) round(s), "
                         + String(format: "%.2f s", finalSyncSeconds)]
            lines.append("operations: " + operations.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            lines.append("faults: " + faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            lines.append(problems.isEmpty ? "accounting: every change once or refused with a reason shown; cache equals the server"
                                          : "PROBLEMS (\(problems.count)):\n  " + problems.joined(separator: "\n  "))
            return lines.joined(separator: "\n")
        }
    }

    // MARK: State

    private let options: Options
    private var random: SplitMix64
    private var report = Report()
    private let data: URL
    private let home: URL
    private let files: URL
    private let serverPort: Int
    private var server: ChildProcess?
    private var serverBackAtStep: Int?
    /// A crash due during the current driver command: the old server still
    /// holds the port until it has run, so no new server may start before.
    private var pendingCrash: Task<Void, Never>?
    private var proxy: FaultProxy!
    private var background: ChildProcess?
    private var dispatch: APISession!
    private var ids = DemoIDs()
    private var ledger = Ledger()
    private let etaBase: Date
    /// How long the driver's client waits for an answer; `late` answers come a second after.
    static let clientDeadline: Double = 3
    /// When each email was last sent a sign-in code (the server sends one a minute at most).
    private var lastCode: [String: ContinuousClock.Instant] = [:]
    /// Times a second driver signed in on the phone.
    private var switches = 0

    struct DemoIDs {
        var alex = ID<Driver>()
        var sam = ID<Driver>()
        var alexTrips: [String: ID<Trip>] = [:]
        var samTrip = ID<Trip>()
    }

    /// What the driver did and what dispatch did, to account for at the end.
    struct Ledger {
        struct ExpenseOp { let step: Int; let cents: Int; var prefix: String?; var outcome: String; var deletedAt: Int? }
        struct OrderState {
            let number: String
            var trip: ID<Trip>?
            var onAlexTrip: Bool
            var pickupMade: Int?
            var deliveryMade: Int?
            var driverETAs: [(step: Int, field: String, value: Date)] = []
            var dispatchETAs: [(step: Int, field: String, value: Date)] = []
            var reassignedAt: [Int] = []
            /// What `inspect` printed, by step (explains a problem found at the end).
            var inspectOutput: [Int: String] = [:]
            var refusedAt: [Int] = []
            var cancelledAt: Int?
        }
        var expenses: [ExpenseOp] = []
        var orders: [ID<Order>: OrderState] = [:]
        enum Message { case unread, readBefore, readAt(Int) }
        var messages: [ID<DriverNotification>: Message] = [:]
        var nextOrderNumber = 9001
        /// Trips dispatch gave to Sam while Alex may have had work on them queued.
        var tripsAway: Set<ID<Trip>> = []
    }

    public init(_ options: Options) throws {
        self.options = options
        random = SplitMix64(seed: options.seed)
        report.seed = options.seed
        report.backend = options.backend
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("vroomx-faults-\(options.seed)-\(UUID().uuidString.prefix(6))")
        data = root.appendingPathComponent("server")
        home = root.appendingPathComponent("driver")
        files = root.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        serverPort = try ChildProcess.freePort()
        let day = 86_400.0
        etaBase = Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 / day).rounded(.down) + 3) * day)
    }

    /// Runs the schedule and the accounting; the report says what was wrong.
    public func run() async throws -> Report {
        let started = ContinuousClock.now
        let root = data.deletingLastPathComponent()
        // A failed run keeps the server's data and the device's state folder to look into.
        defer { if report.problems.isEmpty { try? FileManager.default.removeItem(at: root) } }
        try await startServer()
        proxy = try FaultProxy(upstreamPort: serverPort)
        proxy.lateSeconds = Self.clientDeadline + 1
        defer { proxy.stop() }
        try await setUp()
        for step in 0..<options.operations {
            try await self.step(step)
            if step % 100 == 99 { options.log("step \(step + 1)/\(options.operations): \(proxyCondition.rawValue), server \(server == nil ? "down" : "up")") }
            // Everything after a lost session would fail the same way; the first failure is the finding.
            if signedOutAt != nil { break }
        }
        if signedOutAt == nil { try await finish() }
        report.faults.merge(proxy.counts) { $0 + $1 }
        if !report.problems.isEmpty {
            let sync = try await runToEnd(["sync"], skew: nil)
            let lines = (server?.text ?? "").split(separator: "\n")
            let log = lines.suffix(40).joined(separator: "\n")
            let sessions = lines.filter { $0.contains("refresh") || $0.contains("session") || $0.contains("/v1/auth") }.suffix(30).joined(separator: "\n")
            report.diagnostics = "kept: \(root.path)\nvroomx-driver sync (exit \(sync.status)):\n\(sync.output)\nserver log (last 40 lines):\n\(log)"
                + "\nserver log, sessions (last 30):\n\(sessions)"
        }
        report.seconds = (ContinuousClock.now - started).seconds
        await server?.stop()
        return report
    }

    // MARK: The schedule

    private var proxyCondition = FaultProxy.Condition.normal
    /// The step at which a command first found the driver signed out.
    private var signedOutAt: Int?

    /// Notes a command that found the driver signed out (the schedule then stops).
    private func noteSignedOut(_ output: String, _ step: Int) {
        guard signedOutAt == nil, output.contains("Not signed in") else { return }
        signedOutAt = step
        report.problems.insert("step \(step): the driver was signed out (every later command would fail): \(output.suffix(400))", at: 0)
    }

    private func roll() -> Double { random.unit() }
    private func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int(random.next() % UInt64(items.count))] }
    private func fault(_ name: String) { report.faults[name, default: 0] += 1 }

    private func step(_ step: Int) async throws {
        if let back = serverBackAtStep, step >= back {
            try await startServer()
            serverBackAtStep = nil
        }
        if roll() < 0.12 {
            let weighted: [(FaultProxy.Condition, Int)] = [(.normal, 45), (.offline, 12), (.lossy, 12), (.slow, 9), (.duplicating, 10),
                                                           (.failing, 7), (.tight, 5), (.late, 4)]
            var ticket = Int(random.next() % UInt64(weighted.map(\.1).reduce(0, +)))
            let condition = weighted.first { ticket -= $0.1; return ticket < 0 }?.0 ?? .normal
            try proxy.set(condition, seed: random.next())
            proxyCondition = condition
            fault("network_\(condition.rawValue)")
        }
        var crashDuringCommand = false
        if server != nil, roll() < 0.035 {
            switch random.next() % 4 {
            case 0: fault("server_restart"); await server?.stop(); server = nil; try await startServer()
            case 1: fault("server_crash"); await server?.kill9(); server = nil; try await startServer()
            case 2: fault("server_outage"); await server?.stop(); server = nil; serverBackAtStep = step + 1 + Int(random.next() % 5)
            default: crashDuringCommand = true
            }
        }
        if server != nil, roll() < 0.10 { try await dispatchEvent(step) }
        try await driverOperation(step, crashServerDuring: crashDuringCommand)
    }

    // MARK: Dispatch

    private func dispatchEvent(_ step: Int) async throws {
        let alexOrders = ledger.orders.filter { $0.value.onAlexTrip && $0.value.deliveryMade == nil }.map(\.key).sorted { $0.rawValue < $1.rawValue }
        let samOrders = ledger.orders.filter { !$0.value.onAlexTrip }.map(\.key).sorted { $0.rawValue < $1.rawValue }
        let pickable = alexOrders.filter { ledger.orders[$0]?.pickupMade == nil }
        if pickable.count < 2 {
            try await createOrder(step)
            return
        }
        switch random.next() % 8 {
        case 0, 1:
            guard let order = pick(alexOrders) else { return }
            if random.next() % 3 == 0 {
                // An edit of the order's details while the driver's work on it waits.
                let current = try await dispatch.get(.dispatchOrder, Order.self, order.rawValue)
                var pickup = current.pickup
                pickup.contactPhone = "555-01\(String(format: "%02d", step % 100))"
                if try await dispatch.call(.dispatchUpdateOrder, order.rawValue, json: UpdateOrderRequest(pickup: pickup)).status == 200 {
                    fault("dispatch_edit_details")
                }
                return
            }
            let field = random.next() % 2 == 0 ? "pickup" : "delivery"
            let value = etaBase.addingTimeInterval(86_400 + Double(step) * 60)
            let body = field == "pickup" ? UpdateOrderRequest(pickupETA: value) : UpdateOrderRequest(deliveryETA: value)
            if try await dispatch.call(.dispatchUpdateOrder, order.rawValue, json: body).status == 200 {
                ledger.orders[order]?.dispatchETAs.append((step, field, value))
                fault("dispatch_edit_eta")
            }
        case 5:
            try await reassignTrip(step)
        case 6:
            // Dispatch cancels a vehicle not yet picked up (the driver may have its pickup queued).
            guard pickable.count >= 3, let order = pick(pickable) else { return }
            if try await dispatch.call(.dispatchUpdateOrder, order.rawValue, json: UpdateOrderRequest(status: .cancelled)).status == 200 {
                ledger.orders[order]?.cancelledAt = step
                ledger.orders[order]?.onAlexTrip = false
                fault("dispatch_cancel_order")
            }
        case 2:
            guard let order = pick(alexOrders) else { return }
            if try await dispatch.call(.dispatchAssignOrder, order.rawValue, json: AssignOrderRequest(tripID: ids.samTrip)).status == 200 {
                ledger.orders[order]?.onAlexTrip = false
                ledger.orders[order]?.reassignedAt.append(step)
                // Only a vehicle not yet picked up moves: a pickup the phone had queued never reached the server,
                // so should the order come back, its next inspection is a pickup again, not a delivery.
                ledger.orders[order]?.pickupMade = nil
                fault("dispatch_reassign_away")
            }
        case 3:
            guard let order = pick(samOrders), let trip = ids.alexTrips["T-1002"] else { return }
            if try await dispatch.call(.dispatchAssignOrder, order.rawValue, json: AssignOrderRequest(tripID: trip)).status == 200 {
                ledger.orders[order]?.onAlexTrip = true
                ledger.orders[order]?.reassignedAt.append(step)
                fault("dispatch_reassign_back")
            }
        default:
            let message = SendMessageRequest(driverID: ids.alex, type: random.next() % 4 == 0 ? .urgent : .dispatchMessage,
                                             title: "Note \(step)", body: "Message sent at step \(step).")
            let answer = try await dispatch.call(.dispatchSendMessage, json: message)
            if answer.status == 201, let sent = try? answer.decode(DriverNotification.self) {
                ledger.messages[sent.id] = .unread
                fault("dispatch_message")
            }
        }
    }

    /// Dispatch gives T-1003 to Sam (its vehicles not yet picked up go with it), or back to Alex.
    private func reassignTrip(_ step: Int) async throws {
        guard let trip = ids.alexTrips["T-1003"] else { return }
        let away = ledger.tripsAway.contains(trip)
        let answer = try await dispatch.call(.dispatchAssignTrip, trip.rawValue, json: AssignTripRequest(driverID: away ? ids.alex : ids.sam))
        guard answer.status == 200 else { return }  // refused while a vehicle of it is on Alex's truck
        if away { ledger.tripsAway.remove(trip) } else { ledger.tripsAway.insert(trip) }
        // Only vehicles not picked up on the server move, which the phone cannot know: a pickup (even a delivery) it
        // still had queued never landed. So the server says which moved; their queued inspections stay on the phone.
        let newDriver = away ? ids.alex : ids.sam
        for (id, state) in ledger.orders where state.trip == trip && state.cancelledAt == nil && state.onAlexTrip != away {
            guard try await dispatch.get(.dispatchOrder, Order.self, id.rawValue).driverID == newDriver else { continue }
            ledger.orders[id]?.onAlexTrip = away
            ledger.orders[id]?.reassignedAt.append(step)
            ledger.orders[id]?.pickupMade = nil
            ledger.orders[id]?.deliveryMade = nil
        }
        fault(away ? "dispatch_trip_back" : "dispatch_trip_away")
    }

    private func createOrder(_ step: Int) async throws {
        guard let trip = ids.alexTrips["T-1002"] else { return }
        let number = "O-\(ledger.nextOrderNumber)"
        let request = CreateOrderRequest(number: number, tripID: trip,
                                         vehicle: Vehicle(year: 2020, make: "Kia", model: "Soul", vin: "KNDJP3A5\(String(format: "%09d", ledger.nextOrderNumber))"),
                                         pickup: Stop(name: "Lot \(step)", address: "1 Harbor Rd, Savannah, GA"),
                                         delivery: Stop(name: "Dealer \(step)", address: "9 Main St, Orlando, FL"), revenueCents: 65_000)
        let answer = try await dispatch.call(.dispatchCreateOrder, json: request)
        guard answer.status == 201, let order = try? answer.decode(Order.self) else {
            report.problems.append("step \(step): dispatch could not create \(number): \(answer.status) \(answer.text)")
            return
        }
        ledger.nextOrderNumber += 1
        ledger.orders[order.id] = .init(number: number, trip: trip, onAlexTrip: true)
        fault("dispatch_new_order")
    }

    // MARK: The driver

    private enum Operation: CaseIterable {
        case expenseAdd, expenseDelete, eta, inspect, read, messages, killedSync, concurrentSync, sync, secondDriver
    }

    private func driverOperation(_ step: Int, crashServerDuring: Bool) async throws {
        let weighted: [(Operation, Int)] = [(.expenseAdd, 26), (.expenseDelete, 7), (.eta, 14), (.inspect, 12), (.read, 9),
                                             (.messages, 5), (.killedSync, 10), (.concurrentSync, 6), (.sync, 11), (.secondDriver, 2)]
        var ticket = Int(random.next() % UInt64(weighted.map(\.1).reduce(0, +)))
        let operation = weighted.first { ticket -= $0.1; return ticket < 0 }?.0 ?? .sync
        let skew: Int? = roll() < 0.15 ? pickSkew() : nil
        if skew != nil { fault(SkewedClock.isAvailable ? "clock_skew" : "clock_skew_unavailable") }
        if operation != .concurrentSync, let running = background {
            // A second process may still be draining; most of the time wait, sometimes kill it.
            if roll() < 0.3 { fault("client_sigkill"); await running.kill9() } else { _ = await finishBackground(running) }
            background = nil
        }
        if crashServerDuring, let running = server {
            fault("server_crash_mid_command")
            let delay = 20 + Int(random.next() % 400)
            server = nil
            pendingCrash = Task { try? await Task.sleep(for: .milliseconds(delay)); await running.kill9() }
        }
        try await perform(operation, step, skew)
        // Whatever the command did (some return early), the crashed server comes back.
        if await crashHappened() { try await startServer() }
    }

    /// Waits for a pending crash to have happened; whether there was one.
    private func crashHappened() async -> Bool {
        guard let crash = pendingCrash else { return false }
        await crash.value
        pendingCrash = nil
        return true
    }

    private func perform(_ operation: Operation, _ step: Int, _ skew: Int?) async throws {
        switch operation {
        case .expenseAdd:
            let cents = 10_000 + step
            let trip = random.next() % 3 == 0 ? "T-1003" : "T-1002"
            let result = try await command(["expense", "add", "--trip", trip, "--category", "fuel",
                                            "--amount", String(format: "%d.%02d", cents / 100, cents % 100)], skew: skew, step: step)
            let prefix = result.output.range(of: #"\(([0-9a-f]{8})\)\."#, options: .regularExpression).map { String(result.output[$0].dropFirst().prefix(8)) }
            let outcome = outcome(result, "expense_add", step)
            if outcome != "not_made" { ledger.expenses.append(.init(step: step, cents: cents, prefix: prefix, outcome: outcome, deletedAt: nil)) }
            if outcome == "sent" || outcome == "queued", prefix == nil { report.problems.append("step \(step): expense add said no id: \(result.output)") }
        case .expenseDelete:
            let candidates = ledger.expenses.indices.filter { ledger.expenses[$0].deletedAt == nil && ledger.expenses[$0].prefix != nil
                && ledger.expenses[$0].outcome != "refused" }
            guard let index = pick(candidates), let prefix = ledger.expenses[index].prefix else { return try await plainSync(step, skew) }
            let result = try await command(["expense", "delete", prefix], skew: skew, step: step)
            let outcome = outcome(result, "expense_delete", step)
            if outcome == "sent" || outcome == "queued" { ledger.expenses[index].deletedAt = step }
        case .eta:
            let orders = ledger.orders.filter { $0.value.onAlexTrip && $0.value.deliveryMade == nil }.map(\.key).sorted { $0.rawValue < $1.rawValue }
            guard let order = pick(orders), let number = ledger.orders[order]?.number else { return try await plainSync(step, skew) }
            let field = random.next() % 2 == 0 ? "pickup" : "delivery"
            let value = etaBase.addingTimeInterval(Double(step) * 60)
            let result = try await command(["order", number, "eta", "--\(field)", WireTime.string(from: value)], skew: skew, step: step)
            switch outcome(result, "eta", step) {
            case "sent", "queued": ledger.orders[order]?.driverETAs.append((step, field, value))
            case "refused": ledger.orders[order]?.refusedAt.append(step)
            default: break
            }
        case .inspect:
            let orders = ledger.orders.filter { $0.value.onAlexTrip && $0.value.deliveryMade == nil }.map(\.key).sorted { $0.rawValue < $1.rawValue }
            guard let order = pick(orders), let state = ledger.orders[order] else { return try await plainSync(step, skew) }
            let kind = state.pickupMade == nil ? "--pickup" : "--delivery"
            var arguments = ["inspect", state.number, kind, "--customer-unavailable", "--odometer", String(40_000 + step)]
            for slot in MediaSlot.requiredPhotos {
                let path = files.appendingPathComponent("\(step)-\(slot).jpg")
                try Data(MediaSamples.jpeg(size: 3_000 + Int(random.next() % 20_000))).write(to: path)
                arguments += ["--photo", "\(slot)=\(path.path)"]
            }
            let result = try await command(arguments, skew: skew, step: step)
            switch outcome(result, kind == "--pickup" ? "pickup" : "delivery", step) {
            case "sent", "queued":
                if kind == "--pickup" { ledger.orders[order]?.pickupMade = step } else { ledger.orders[order]?.deliveryMade = step }
                ledger.orders[order]?.inspectOutput[step] = String(result.output.suffix(300))
            case "refused": ledger.orders[order]?.refusedAt.append(step)
            default: break
            }
        case .read:
            let unread = ledger.messages.filter { if case .unread = $0.value { true } else { false } }.map(\.key).sorted { $0.rawValue < $1.rawValue }
            guard let message = pick(unread) else { return try await plainSync(step, skew) }
            let result = try await command(["read", String(message.rawValue.prefix(12))], skew: skew, step: step)
            if ["sent", "queued"].contains(outcome(result, "read", step)) { ledger.messages[message] = .readAt(step) }
        case .messages:
            _ = outcome(try await command(["messages", "--json"], skew: skew, step: step), "messages", step)
        case .killedSync:
            let process = try start(["sync"], skew: skew)
            try await Task.sleep(for: .milliseconds(30 + Int(random.next() % 500)))
            fault("client_sigkill")
            await process.kill9()
            report.operations["sync killed", default: 0] += 1
        case .concurrentSync:
            if let running = background { _ = await finishBackground(running) }
            background = try start(["sync"], skew: skew)
            report.operations["sync beside the next command", default: 0] += 1
        case .sync:
            try await plainSync(step, skew)
        case .secondDriver:
            try await secondDriver(step)
        }
    }

    /// Sam signs in on Alex's phone (which may still hold Alex's work), syncs,
    /// and Alex signs in again. Sign-in itself is not what is tested: the
    /// network is clean and the server up while it happens. A driver is sent
    /// one code a minute: too soon after the last, this is a plain sync.
    private func secondDriver(_ step: Int) async throws {
        let (alex, sam) = (DemoData.driverEmails[0], DemoData.driverEmails[1])
        let now = ContinuousClock.now
        // The server sends one address ten codes in a quarter hour: three switches (six codes) a run, a minute apart.
        guard switches < 3, [alex, sam].allSatisfy({ lastCode[$0].map { now - $0 > .seconds(62) } ?? true }) else {
            return try await plainSync(step, nil)
        }
        switches += 1
        if let running = background { _ = await finishBackground(running); background = nil }
        let condition = proxyCondition
        try proxy.set(.normal, seed: 0)
        // Signing in needs a server: a crash due during this command happens first (it holds the port until then).
        _ = await crashHappened()
        if server == nil { try await startServer(); serverBackAtStep = nil }
        defer { try? proxy.set(condition, seed: random.next()) }
        let waitingBefore = try await runToEnd(["sync", "--json"], skew: nil)
        try await signIn(sam, pin: "1357", step: step)
        let asSam = try await runToEnd(["sync"], skew: nil)
        report.operations["sync as a second driver exited \(asSam.status)", default: 0] += 1
        // Sam's own work is all sent; Alex's is not his to count (the phone sends it in Alex's name).
        if asSam.status != 0 { report.problems.append("step \(step): Sam's sync on Alex's phone exited \(asSam.status): \(asSam.output.suffix(600))") }
        // What Alex left is sent in his name, never left "untouched" for him to come back to.
        if let before = Self.decodeJSON(SyncState.self, waitingBefore.output), !(before.waiting.isEmpty && before.files.isEmpty),
           asSam.output.contains("untouched") {
            report.problems.append("step \(step): Alex's work was not handed over: \(asSam.output.suffix(600))")
        }
        try await signIn(alex, pin: "2468", step: step)
        fault("second_driver_on_the_phone")
    }

    private func signIn(_ email: String, pin: String, step: Int) async throws {
        let before = codesSoFar(email)
        let requested = try await runToEnd(["login", "--email", email], skew: nil)
        lastCode[email] = ContinuousClock.now
        guard requested.status == 0 else { throw ProcessError("step \(step): login \(email): \(requested.output)") }
        let login = try await runToEnd(["login", "--email", email, "--code", try await code(for: email, after: before), "--pin", pin], skew: nil)
        guard login.status == 0 else { throw ProcessError("step \(step): login \(email): \(login.output)") }
    }

    /// A phone clock that is wrong: ten minutes fast, three hours off either
    /// way, or anything up to an hour and a half.
    private func pickSkew() -> Int {
        switch random.next() % 4 {
        case 0: return 600
        case 1: return (random.next() % 2 == 0 ? 1 : -1) * 10_800
        default: return (random.next() % 2 == 0 ? 1 : -1) * (120 + Int(random.next() % 5400))
        }
    }

    private func plainSync(_ step: Int, _ skew: Int?) async throws {
        let result = try await command(["sync"], skew: skew, step: step)
        _ = outcome(result, "sync", step)
    }

    /// Classifies a command's exit: the change was sent (0), saved to be
    /// sent (75; 1 for sync with failures still retrying), refused with a
    /// reason shown (65), or not made (its subject is not on the device yet).
    private func outcome(_ result: (status: Int32, output: String), _ kind: String, _ step: Int) -> String {
        let outcome: String
        switch result.status {
        case 0: outcome = "sent"
        case 75, 1: outcome = "queued"
        case 65 where result.output.contains("Refused: ") || result.output.contains("Not sent: "):
            outcome = "refused"
            if !result.output.contains("(") { report.problems.append("step \(step): \(kind) refused without a reason: \(result.output)") }
        case 65:
            outcome = "not_made"  // refused on the device before anything was queued
        default:
            outcome = "broken"
            noteSignedOut(result.output, step)
            report.problems.append("step \(step): \(kind) exited \(result.status): \(result.output.suffix(600))")
        }
        report.operations["\(kind) \(outcome)", default: 0] += 1
        return outcome
    }

    // MARK: Processes

    private var environment: [String: String] {
        ["VROOMX_SERVER": "http://127.0.0.1:\(proxy.port)", "VROOMX_DRIVER_HOME": home.path, "NO_COLOR": "1",
         "VROOMX_REQUEST_TIMEOUT": String(Int(Self.clientDeadline))]
    }

    private func start(_ arguments: [String], skew: Int?) throws -> ChildProcess {
        let driver = VroomXBinary.path("vroomx-driver")
        if let skew {
            return try SkewedClock.start(driver, arguments, offset: skew > 0 ? "+\(skew)" : "\(skew)", environment: environment)
        }
        return try ChildProcess(driver, arguments, environment: environment)
    }

    /// Runs a driver command to its end; a command found locked is run
    /// again after unlocking with the PIN (the device locks when idle).
    private func command(_ arguments: [String], skew: Int?, step: Int) async throws -> (status: Int32, output: String) {
        var result = try await runToEnd(arguments, skew: skew)
        if result.status == 77, result.output.contains("Locked") {
            fault("unlock")
            let unlock = try await runToEnd(["unlock", "--pin", "2468"], skew: skew)
            if unlock.status != 0 { report.problems.append("step \(step): unlock exited \(unlock.status): \(unlock.output)") }
            result = try await runToEnd(arguments, skew: skew)
        }
        return result
    }

    private func runToEnd(_ arguments: [String], skew: Int?) async throws -> (status: Int32, output: String) {
        let started = ContinuousClock.now
        let process = try start(arguments, skew: skew)
        let deadline = started + .seconds(180)
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                await process.kill9()
                report.problems.append("vroomx-driver \(arguments.joined(separator: " ")) did not finish in 180 s: \(process.text.suffix(600))")
                return (-1, process.text)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        report.commandSeconds.append((ContinuousClock.now - started).seconds)
        return (process.exitStatus ?? -1, process.text)
    }

    private func finishBackground(_ process: ChildProcess) async -> Int32 {
        let deadline = ContinuousClock.now + .seconds(180)
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        if process.isRunning {
            await process.kill9()
            report.problems.append("a background sync did not finish in 180 s: \(process.text.suffix(600))")
        }
        let status = process.exitStatus ?? -1
        let locked = status == 77 && process.text.contains("Locked")
        if ![0, 1, 75].contains(status), !locked {
            noteSignedOut(process.text, -1)
            report.problems.append("a background sync exited \(status): \(process.text.suffix(600))")
        }
        return status
    }

    /// The run's PostgreSQL database, made at the first start (nil on SQLite).
    private var databaseURL: String?

    private func startServer() async throws {
        var environment = ["VROOMX_DATA_DIR": data.path, "VROOMX_LOG_LEVEL": "info"]
        if options.backend == .postgres {
            if databaseURL == nil { databaseURL = try await TestBackend.createDatabase() }
            environment["VROOMX_DATABASE_URL"] = databaseURL
        }
        let process = try VroomXBinary.start(["serve", "--demo", "--port", String(serverPort)], environment: environment)
        try await process.waitFor("listening on 127.0.0.1:\(serverPort)", timeout: .seconds(60))
        server = process
    }

    /// A sign-in code from the running server's log (the development mailbox).
    private func code(for email: String, after count: Int) async throws -> String {
        for _ in 0..<500 {
            let codes = (server?.text ?? "").split(separator: "\n").filter { $0.contains(email) && $0.contains("sign-in code:") }
            if codes.count > count, let line = codes.last, let range = line.range(of: #"code: \d{6}"#, options: .regularExpression) {
                return String(line[range].suffix(6))
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw ProcessError("no sign-in code for \(email) in the server log")
    }

    private func codesSoFar(_ email: String) -> Int {
        (server?.text ?? "").split(separator: "\n").filter { $0.contains(email) && $0.contains("sign-in code:") }.count
    }

    /// The driver's own view of the server, through the device's current
    /// access token (read from the terminal client's secret file; never
    /// its refresh token, which would rotate the device's session). A
    /// second sign-in would wait out the per-email code interval.
    private func deviceSession() throws -> APISession {
        APISession(client: HTTPTestClient(baseURL: "http://127.0.0.1:\(serverPort)"), accessToken: try DriverDevice.accessToken(home: home),
                   refreshToken: nil)
    }

    private func apiSession(_ email: String) async throws -> APISession {
        let client = HTTPTestClient(baseURL: "http://127.0.0.1:\(serverPort)")
        let before = codesSoFar(email)
        _ = try await client.send(.sendCode, json: SendCodeRequest(email: email))
        let code = try await code(for: email, after: before)
        let answer = try await client.send(.verifyCode, json: VerifyCodeRequest(email: email, code: code))
        guard answer.status == 200 else { throw ProcessError("sign-in of \(email): \(answer.status) \(answer.text)") }
        let auth = try answer.decode(AuthSession.self)
        return APISession(client: client, accessToken: auth.accessToken, refreshToken: auth.refreshToken)
    }

    // MARK: Setting up

    private func setUp() async throws {
        dispatch = try await apiSession(DemoData.dispatcherEmail)
        let drivers = try await dispatch.list(.dispatchDrivers, Driver.self)
        guard let alex = drivers.first(where: { $0.email == DemoData.driverEmails[0] }),
              let sam = drivers.first(where: { $0.email == DemoData.driverEmails[1] }) else { throw ProcessError("the demo drivers are missing") }
        ids.alex = alex.id
        ids.sam = sam.id
        for trip in try await dispatch.list(.dispatchTrips, Trip.self) where trip.driverID == ids.alex { ids.alexTrips[trip.number] = trip.id }
        let samTrip = try await dispatch.call(.dispatchCreateTrip, json: CreateTripRequest(
            number: "T-9001", driverID: ids.sam, origin: "Tampa, FL", destination: "Atlanta, GA", revenueCents: 300_000, miles: 460))
        ids.samTrip = try samTrip.decode(Trip.self).id
        for order in try await dispatch.list(.dispatchOrders, Order.self) where order.driverID == ids.alex && order.status != .delivered {
            var state = Ledger.OrderState(number: order.number, trip: order.tripID, onAlexTrip: true)
            if order.status == .pickedUp { state.pickupMade = -1 }
            ledger.orders[order.id] = state
        }
        let email = DemoData.driverEmails[0]
        let before = codesSoFar(email)
        let requested = try await runToEnd(["login", "--email", email], skew: nil)
        lastCode[email] = ContinuousClock.now
        guard requested.status == 0 else { throw ProcessError("login: \(requested.output)") }
        let login = try await runToEnd(["login", "--email", email, "--code", try await code(for: email, after: before), "--pin", "2468"], skew: nil)
        guard login.status == 0 else { throw ProcessError("login: \(login.output)") }
        for notification in try await deviceSession().list(.notifications, DriverNotification.self) {
            ledger.messages[notification.id] = notification.readAt == nil ? .unread : .readBefore
        }
        report.commandSeconds = []
    }

    // MARK: The end: one final sync, then the accounting

    private func finish() async throws {
        try proxy.set(.normal, seed: 0)
        proxyCondition = .normal
        if let running = background { _ = await finishBackground(running); background = nil }
        _ = await crashHappened()
        if server == nil { try await startServer() }
        let started = ContinuousClock.now
        var final: SyncState?
        for round in 1...30 {
            let result = try await command(["sync", "--retry", "--json"], skew: nil, step: options.operations)
            report.finalSyncRounds = round
            guard [0, 1, 75].contains(result.status), let state = Self.decodeJSON(SyncState.self, result.output) else {
                report.problems.append("final sync exited \(result.status), its JSON unread: \(result.output.prefix(600))"
                                       + (result.output.count > 600 ? " … \(result.output.suffix(400))" : ""))
                return
            }
            final = state
            if state.waiting.isEmpty && state.files.isEmpty { break }
            try await Task.sleep(for: .seconds(1))
        }
        report.finalSyncSeconds = (ContinuousClock.now - started).seconds
        guard let final else { return }
        for item in final.waiting + final.files {
            report.problems.append("left waiting after the final sync: \(item.kind) \(item.about) (\(item.status)): \(item.why)")
        }
        let refused = final.failed
        for item in refused where item.why.isEmpty { report.problems.append("refused without a reason: \(item.kind) \(item.about)") }
        let evidence = try await driverJSON(["evidence", "--json"], Items<Inspection>.self)?.items ?? []
        try await account(refused: refused, evidence: evidence)
        try await compareCache()
    }

    /// The JSON a command printed: from the first line that opens it (notes
    /// on standard error may come first, and may hold braces themselves).
    static func decodeJSON<T: Decodable>(_ type: T.Type, _ output: String) -> T? {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(where: { $0.hasPrefix("{") || $0.hasPrefix("[") }) else { return nil }
        return try? WireJSON.decoder().decode(type, from: Data(lines[first...].joined(separator: "\n").utf8))
    }

    struct SyncState: Decodable {
        struct Item: Decodable {
            let id: String; let kind: String; let about: String; let what: String; let status: String; let code: String?; let why: String
        }
        let online: Bool
        let waiting: [Item]
        let failed: [Item]
        let files: [Item]
    }

    private func driverJSON<T: Decodable>(_ arguments: [String], _ type: T.Type) async throws -> T? {
        let result = try await command(arguments, skew: nil, step: options.operations)
        guard result.status == 0, let value = Self.decodeJSON(type, result.output) else {
            report.problems.append("vroomx-driver \(arguments.joined(separator: " ")) exited \(result.status): \(result.output.suffix(600))")
            return nil
        }
        return value
    }

    private func account(refused: [SyncState.Item], evidence: [Inspection]) async throws {
        let alex = try deviceSession()
        // Expenses: each exactly once on the server, in Alex's name (also on a trip dispatch gave to Sam
        // meanwhile), unless deleted (then gone) or refused with a reason.
        var onServer: [Int: [Expense]] = [:]
        for (_, trip) in ids.alexTrips {
            for expense in try await dispatch.list(.dispatchTripExpenses, Expense.self, trip.rawValue) where expense.driverID == ids.alex {
                onServer[expense.amountCents, default: []].append(expense)
            }
        }
        for op in ledger.expenses {
            let found = onServer[op.cents] ?? []
            let refusedNow = op.prefix.map { prefix in refused.contains { $0.about.hasPrefix(prefix) } } ?? false
            switch (op.outcome, op.deletedAt) {
            case ("refused", _):
                if !found.isEmpty { report.problems.append("expense of step \(op.step) was refused yet is on the server \(found.count)×") }
            case (_, nil) where found.count == 1:
                break
            case (_, nil) where found.isEmpty && refusedNow:
                break
            case (_, nil):
                report.problems.append("expense of step \(op.step) (\(op.cents) cents, \(op.outcome)) is on the server \(found.count)×")
            case (_, let deleted?):
                if !found.isEmpty && !refusedNow {
                    report.problems.append("expense of step \(op.step) deleted at step \(deleted) is still on the server \(found.count)×")
                }
            }
        }
        // Inspections: completed once with every required photo, or kept on the device, or refused with a reason.
        for (order, state) in ledger.orders {
            let inspections = try await dispatch.list(.dispatchOrderInspections, Inspection.self, order.rawValue)
            for (kind, made) in [(Inspection.Kind.pickup, state.pickupMade), (.delivery, state.deliveryMade)] {
                guard let made, made >= 0 else { continue }
                let mine = inspections.filter { $0.kind == kind }
                let kept = evidence.contains { $0.orderID == order && $0.kind == kind }
                let refusedNow = refused.contains { $0.about == order.rawValue || mine.map(\.id.rawValue).contains($0.about) }
                if mine.count > 1 { report.problems.append("\(state.number): \(mine.count) \(kind) inspections on the server") }
                if let inspection = mine.first, inspection.completedAt != nil {
                    if !inspection.missingSlots.isEmpty { report.problems.append("\(state.number): \(kind) completed without \(inspection.missingSlots)") }
                } else if !kept && !refusedNow && !state.reassignedAt.contains(where: { $0 >= made }) && !(state.cancelledAt.map { $0 >= made } ?? false) {
                    let server = mine.first.map { "started on the server, missing \($0.missingSlots.map(\.rawValue))" } ?? "not on the server"
                    report.problems.append("\(state.number): \(kind) inspection of step \(made) is neither complete on the server, nor kept, nor refused"
                                           + " (\(server); order \((try? await dispatch.get(.dispatchOrder, Order.self, order.rawValue))?.status.rawValue ?? "?")"
                                           + "; reassigned at \(state.reassignedAt), refused at \(state.refusedAt); the command said: \(state.inspectOutput[made] ?? "?"))")
                }
            }
            // ETAs: the driver's last edit stands, unless dispatch edited the field later or the edit was refused.
            let current = try await dispatch.get(.dispatchOrder, Order.self, order.rawValue)
            for field in ["pickup", "delivery"] {
                guard let last = state.driverETAs.last(where: { $0.field == field }) else { continue }
                let value = field == "pickup" ? current.pickupETA : current.deliveryETA
                let laterByDispatch = state.dispatchETAs.filter { $0.field == field && $0.step >= last.step }.map(\.value)
                // A reassignment clears the previous driver's ETAs; a cancelled order takes none.
                let refusedHere = refused.contains { $0.about == order.rawValue } || state.refusedAt.contains { $0 > last.step }
                    || state.reassignedAt.contains { $0 >= last.step } || (state.cancelledAt.map { $0 >= last.step } ?? false)
                if value == last.value || laterByDispatch.contains(where: { $0 == value }) || refusedHere { continue }
                let earlierByDispatch = state.dispatchETAs.contains { $0.field == field && $0.value == value }
                report.problems.append("\(state.number): \(field) ETA of step \(last.step) lost (server has \(value.map(WireTime.string(from:)) ?? "none")"
                                       + (earlierByDispatch ? ", dispatch's earlier edit, and no refusal was shown)" : ")"))
            }
        }
        // Messages read on the device are read on the server.
        let notifications = try await alex.list(.notifications, DriverNotification.self)
        for (id, read) in ledger.messages {
            guard case .readAt(let step) = read else { continue }
            if notifications.first(where: { $0.id == id })?.readAt == nil { report.problems.append("message read at step \(step) is unread on the server") }
        }
        // What stays on the phone (refused, kept as evidence) is visible to dispatch with its reason;
        // once everything else arrived, dispatch is not told anything still waits on it.
        let reports = try await dispatch.get(.dispatchDeviceBacklogs, Items<ReportedBacklog>.self).items.filter { $0.driverID == ids.alex }
        let shown = reports.flatMap(\.backlog.items)
        for item in refused where item.code != ErrorCode.dependencyFailed.rawValue {
            if !shown.contains(where: { $0.status == .refused && $0.what == item.what && !$0.reason.isEmpty }) {
                report.problems.append("refused \(item.what) is not visible to dispatch (its phone reported \(shown.map(\.what)))")
            }
        }
        if !evidence.isEmpty && !shown.contains(where: { $0.status == .kept }) {
            report.problems.append("\(evidence.count) kept inspections are not visible to dispatch")
        }
        for waiting in reports where waiting.backlog.waitingChanges + waiting.backlog.waitingFiles > 0 {
            report.problems.append("dispatch is told \(waiting.backlog.waitingChanges) changes and \(waiting.backlog.waitingFiles) files wait on a phone after all arrived")
        }
    }

    /// The device's cache (as the terminal shows it) equals what the server
    /// gives this driver.
    private func compareCache() async throws {
        let alex = try deviceSession()
        func differences<T>(_ what: String, device: [T], server: [T], key: (T) -> String) {
            let deviceKeys = Set(device.map(key)), serverKeys = Set(server.map(key))
            for missing in serverKeys.subtracting(deviceKeys).sorted() { report.problems.append("\(what) on the server, not on the device: \(missing)") }
            for extra in deviceKeys.subtracting(serverKeys).sorted() { report.problems.append("\(what) on the device, not on the server: \(extra)") }
        }
        if let trips = try await driverJSON(["trips", "--json"], Items<Trip>.self)?.items {
            let server = try await alex.list(.trips, Trip.self)
            differences("trip", device: trips, server: server) { "\($0.number) \($0.status.rawValue) v\($0.version)" }
            for trip in server {
                guard let detail = try await driverJSON(["trip", trip.number, "--json"], TripDetail.self) else { continue }
                let expenses = try await alex.list(.tripExpenses, Expense.self, trip.id.rawValue)
                differences("expense on \(trip.number)", device: detail.expenses, server: expenses) { "\($0.id.rawValue.prefix(8)) \($0.amountCents)" }
            }
        }
        if let orders = try await driverJSON(["orders", "--json"], Items<Order>.self)?.items {
            let server = try await alex.list(.orders, Order.self)
            differences("order", device: orders, server: server) {
                "\($0.number) \($0.status.rawValue) v\($0.version) eta \($0.pickupETA.map(WireTime.string(from:)) ?? "-")/\($0.deliveryETA.map(WireTime.string(from:)) ?? "-")"
            }
        }
        if let messages = try await driverJSON(["messages", "--json"], MessagesList.self) {
            let server = try await alex.list(.notifications, DriverNotification.self)
            differences("message", device: messages.sections.flatMap(\.messages), server: server) {
                "\($0.id.rawValue.prefix(8)) \($0.readAt == nil ? "unread" : "read")"
            }
        }
    }

    struct TripDetail: Decodable { let expenses: [Expense] }
    struct MessagesList: Decodable {
        struct Section: Decodable { let messages: [DriverNotification] }
        let sections: [Section]
    }
}

/// A signed-in API caller (dispatch, or a driver's second session) that
/// refreshes its token when the server says it has expired.
/// The terminal client's state folder, as tests read it.
public enum DriverDevice {
    /// The device's current access token, from its secret file.
    public static func accessToken(home: URL) throws -> String {
        let file = try Data(contentsOf: home.appendingPathComponent("secrets.json"))
        guard let secrets = try JSONSerialization.jsonObject(with: file) as? [String: String],
              let encoded = secrets["session"].flatMap({ Data(base64Encoded: $0) }),
              let session = try JSONSerialization.jsonObject(with: encoded) as? [String: Any],
              let token = session["access_token"] as? String else { throw ProcessError("no session in the driver's secret file") }
        return token
    }
}

/// A signed-in API client that refreshes its token once when it expires.
public final class APISession {
    public let client: HTTPTestClient
    private var accessToken: String
    private var refreshToken: String?

    public init(client: HTTPTestClient, accessToken: String, refreshToken: String?) {
        self.client = client
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }

    public func call(_ endpoint: Endpoint, _ parameters: String..., json: (any Encodable & Sendable)? = nil) async throws -> APIResponse {
        try await send(endpoint, parameters, query: nil, json: json)
    }

    public func get<T: Decodable>(_ endpoint: Endpoint, _ type: T.Type, _ parameters: String...) async throws -> T {
        let answer = try await send(endpoint, parameters, query: nil, json: nil)
        guard answer.status == 200 else { throw ProcessError("\(endpoint.path): \(answer.status) \(answer.text)") }
        return try answer.decode(type)
    }

    /// Every item of a paged list.
    public func list<T: Decodable & Sendable>(_ endpoint: Endpoint, _ type: T.Type, _ parameters: String...) async throws -> [T] {
        var items: [T] = []
        var cursor: String?
        repeat {
            let query = "limit=500" + (cursor.map { "&cursor=\($0)" } ?? "")
            let answer = try await send(endpoint, parameters, query: query, json: nil)
            guard answer.status == 200 else { throw ProcessError("\(endpoint.path): \(answer.status) \(answer.text)") }
            let page = try answer.decode(ListPage<T>.self)
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    /// One call; an expired access token is refreshed once.
    private func send(_ endpoint: Endpoint, _ parameters: [String], query: String?, json: (any Encodable & Sendable)?) async throws -> APIResponse {
        let answer = try await client.send(endpoint, parameters, query: query, json: json, token: accessToken)
        guard answer.status == 401, let refreshToken else { return answer }
        let refreshed = try await client.send(.refresh, [], json: RefreshRequest(refreshToken: refreshToken))
        guard refreshed.status == 200 else { return answer }
        let auth = try refreshed.decode(AuthSession.self)
        (accessToken, self.refreshToken) = (auth.accessToken, auth.refreshToken)
        return try await client.send(endpoint, parameters, query: query, json: json, token: accessToken)
    }

    struct ListPage<T: Decodable>: Decodable {
        let items: [T]
        let nextCursor: String?
        enum CodingKeys: String, CodingKey { case items, nextCursor = "next_cursor" }
    }
}
