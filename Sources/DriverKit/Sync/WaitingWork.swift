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
        public let why: String
        public var id: String { item.id }
    }

    /// Changes still to be sent, including those the server failed on (they retry on their own).
    public let changes: [Change]
    /// Changes the server refused, until the driver has seen them.
    public let refused: [OutboxEntry]
    /// Files still to be sent, or failed.
    public let files: [File]
    /// Inspections the server will never take, kept with their files.
    public let evidence: [HeldEvidence]

    /// What the driver may drop: changes the server refused or keeps
    /// failing on (never one that simply waits), and failed files.
    public var discardableChanges: [OutboxEntry] { changes.filter { $0.entry.failure == .transient }.map(\.entry) + refused }
    public var failedFiles: [UploadItem] { files.filter { $0.item.status == .failed }.map(\.item) }

    public var isEmpty: Bool { changes.isEmpty && refused.isEmpty && files.isEmpty && evidence.isEmpty }
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
        let files = try database.uploads().filter { $0.status != .completed }
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
            return .init(item: item, why: why)
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
        case .updateOrderStatus, .updateOrderETA: return "order"
        case .createExpense, .deleteExpense: return "expense"
        case .markNotificationRead: return "message"
        case .saveInspection, .completeInspection: return "inspection"
        case .recordOdometer: return "odometer reading"
        case .recordLocations: return "positions"
        }
    }
}
