import Foundation
import VroomXModels

/// What of the signed-in driver's work has not reached the server, and
/// why — for a sync screen, and for the driver to retry or discard.
public struct WaitingWork: Sendable {
    public struct Change: Sendable, Identifiable {
        public let entry: OutboxEntry
        public let why: String
        public var id: ID<Mutation> { entry.id }
    }

    public struct File: Sendable, Identifiable {
        public let item: UploadItem
        /// What the file is, in the driver's words ("the video of the O-5004 delivery inspection").
        public let about: String
        public let why: String
        public var id: String { item.id }
    }

    /// A change the server refused, with the later changes to the same row
    /// that were not sent because of it (one line for the driver, not a
    /// chain of "dependency failed").
    public struct Refusal: Sendable, Identifiable {
        public let entry: OutboxEntry
        public let followers: [OutboxEntry]
        public var id: ID<Mutation> { entry.id }
        /// In the driver's words, with how many later changes went with it.
        public var text: String {
            entry.refusal + (followers.isEmpty ? "" : " \(NumberText.count(followers.count, "later change")) to it went with it.")
        }
    }

    /// Changes still to be sent, including those the server failed on (they retry on their own).
    public let changes: [Change]
    /// Changes the server refused, until the driver has seen them.
    public let refused: [OutboxEntry]
    /// The same, one per refused thing: later changes refused because of an
    /// earlier one are folded into it.
    public var refusals: [Refusal] {
        var roots: [Refusal] = []
        var followers: [String: [OutboxEntry]] = [:]
        for entry in refused {
            if entry.errorCode == ErrorCode.dependencyFailed.rawValue,
               roots.contains(where: { $0.entry.mutation.entityID == entry.mutation.entityID }) {
                followers[entry.mutation.entityID, default: []].append(entry)
            } else {
                roots.append(Refusal(entry: entry, followers: []))
            }
        }
        return roots.map { Refusal(entry: $0.entry, followers: followers[$0.entry.mutation.entityID] ?? []) }
    }
    /// Files still to be sent, or failed.
    public let files: [File]
    /// Inspections the server will never take, kept with their files.
    public let evidence: [HeldEvidence]

    /// What the driver may drop: changes the server refused or keeps
    /// failing on (never one that simply waits), and failed files.
    public var discardableChanges: [OutboxEntry] { changes.filter { $0.entry.failure == .transient }.map(\.entry) + refused }
    public var failedFiles: [UploadItem] { files.filter { $0.item.status == .failed }.map(\.item) }

    public var isEmpty: Bool { changes.isEmpty && refused.isEmpty && files.isEmpty && evidence.isEmpty }
    /// Changes and files still on their way: the same number the Home and
    /// Profile screens count as not yet synced.
    public var waitingCount: Int { changes.count + files.count }
    /// What is at stake on this phone, in the driver's words, for a warning
    /// before signing out: "the delivery of O-5004 and its video, your
    /// pickup ETA for O-5007".
    public var atStake: String {
        Self.atStake(changes: changes.map(\.entry), files: files.map { ($0.item, $0.about) },
                     kept: refusals.map { "\($0.entry.description) (refused)" } + evidence.map { "\($0.about) kept on this phone" })
    }

    /// The one rule for naming what unsynced work would be lost: "the $12.50
    /// tolls expense on T-1002; the delivery of O-5003 and its 7 files".
    static func atStake(changes: [OutboxEntry], files: [(item: UploadItem, about: String)], kept: [String] = []) -> String {
        var named: Set<String> = []
        var items: [String] = changes.map { entry in
            guard case .completeInspection(let reference) = entry.mutation.payload else { return entry.description }
            // A completion's files are named with it: "the delivery of O-5004 and its video".
            let mine = files.filter { $0.item.inspectionID == reference.inspectionID }
            named.formUnion(mine.map(\.item.id))
            switch mine.count {
            case 0: return entry.description
            case 1: return entry.description + " and its \(mine[0].item.kind.rawValue)"
            default: return entry.description + " and its \(mine.count) files"
            }
        }
        items += files.filter { !named.contains($0.item.id) }.map(\.about) + kept
        let shown = Array(items.prefix(4))
        let more = items.count - shown.count
        return shown.joined(separator: "; ") + (more > 0 ? "; and \(NumberText.count(more, "more"))" : "")
    }
    /// Something failed: the server refused or keeps failing a change, or a file failed.
    public var hasFailures: Bool {
        !refused.isEmpty || !evidence.isEmpty || changes.contains { $0.entry.failure == .transient } || files.contains { $0.item.status == .failed }
    }
}

extension DriverApp {
    /// The signed-in driver's waiting work, each with the reason it waits.
    public func waitingWork() throws -> WaitingWork {
        let now = clock()
        let online = network.isOnline
        let owner = try database.account()?.userID.rawValue
        let outbox = try database.outbox().filter { $0.owner == owner }
        // Another driver's files on this phone are theirs: set aside, never counted or shown here.
        let files = try database.uploads().filter { $0.status != .completed && $0.owner == owner }
        let holds = Dictionary(try database.unsentSchedule(now: now).map { ($0.entry.id, $0.hold) }) { first, _ in first }
        var changes: [WaitingWork.Change] = []
        for entry in outbox where entry.isUnsynced {
            let why: String
            if entry.sendingSince != nil {
                why = "on its way"
            } else if entry.failure == .transient {
                why = "the server could not take it (\(entry.errorMessage ?? "server error")); tried \(entry.attempts) times, again \(Self.when(entry.nextAttemptAt, now: now))"
            } else if !online {
                why = "waiting for the network"
            } else {
                switch holds[entry.id] ?? nil {
                case .earlierChangeToSameRow?: why = "after an earlier change to the same \(entry.mutation.kind.subject)"
                case .earlierChangeToSameOrder?: why = "after an earlier change to the same order"
                case .filesUploading?: why = "waiting for its files to upload"
                case .backoff(let until)?: why = "retry \(Self.when(until, now: now)): \(entry.errorMessage ?? "")"
                case nil: why = "due now"
                }
            }
            changes.append(.init(entry: entry, why: why))
        }
        let unsentInspections = Set(outbox.filter { $0.mutation.kind == .saveInspection && $0.isUnsynced }.map(\.mutation.entityID))
        let evidence = try database.evidence()
        let held = Set(evidence.map(\.id.rawValue))
        let waitingFiles = files.filter { !held.contains($0.inspectionID?.rawValue ?? "") }.map { item -> WaitingWork.File in
            let why: String
            switch item.status {
            case .failed: why = item.lastError ?? "refused by the server"
            case _ where unsentInspections.contains(item.inspectionID?.rawValue ?? ""): why = "waiting for its inspection to reach the server"
            case _ where !online: why = "waiting for the network"
            case _ where item.nextRetryAt > now: why = "retry \(Self.when(item.nextRetryAt, now: now)): \(item.lastError ?? "")"
            default: why = "\(Int(item.progress * 100))% sent"
            }
            return .init(item: item, about: (try? database.words(for: item)) ?? item.about, why: why)
        }
        return WaitingWork(changes: changes, refused: outbox.filter { $0.failure == .rejected }, files: waitingFiles, evidence: evidence)
    }

    static func when(_ date: Date, now: Date) -> String {
        let seconds = Int(date.timeIntervalSince(now).rounded(.up))
        if seconds <= 0 { return "now" }
        if seconds < 120 { return "in \(seconds) s" }
        return "in \(seconds / 60) min"
    }
}

extension MutationKind {
    /// What the change is about, in words.
    public var subject: String {
        switch self {
        case .updateOrderStatus, .updateOrderETA, .reportStopProblem: return "order"
        case .createExpense, .deleteExpense: return "expense"
        case .markNotificationRead: return "message"
        case .saveInspection, .completeInspection: return "inspection"
        case .recordOdometer: return "odometer reading"
        case .recordLocations: return "positions"
        case .collectPayment: return "payment"
        case .startTrip: return "trip"
        case .sendMessage, .acknowledgeNotification: return "message"
        }
    }
}

extension AppDatabase {
    /// How many things signing out now would lose: changes and files on
    /// their way, refusals the driver has not dropped, kept evidence.
    public func atStakeCount() throws -> Int {
        let owner = try account()?.userID.rawValue
        let refused = try outbox().filter { $0.owner == owner && $0.failure == .rejected && $0.errorCode != ErrorCode.dependencyFailed.rawValue }
        return try unsyncedCount() + evidence().count + refused.count
    }

    /// What the signed-in driver would lose by signing out now, in words
    /// (empty when nothing waits).
    public func atStake() throws -> String {
        let owner = try account()?.userID.rawValue
        let changes = try outbox().filter { $0.owner == owner && $0.isUnsynced }
        let held = Set(try evidence().map(\.id))
        let files = try uploads().filter { $0.owner == owner && $0.status != .completed && !held.contains($0.inspectionID ?? ID()) }
        // Refusals not yet dropped and evidence kept on purpose are not waiting to go, but signing out would lose them too.
        let kept = try outbox().filter { $0.owner == owner && $0.failure == .rejected && $0.errorCode != ErrorCode.dependencyFailed.rawValue }
            .map { "\($0.description) (refused)" } + evidence().map { "\($0.about) kept on this phone" }
        return WaitingWork.atStake(changes: changes, files: files.map { ($0, (try? self.words(for: $0)) ?? $0.about) }, kept: kept)
    }
}
