import Foundation
import GRDB
import VroomXModels

/// Turns the phone's positions into breadcrumbs for dispatch: only while
/// the driver shares their location and has a trip under way (never off
/// duty), only fixes accurate enough to mean something, thinned to one
/// every few seconds, and queued in batches in the outbox, so they are
/// kept offline and reach the server exactly once with everything else.
@MainActor
public final class LocationRecorder {
    public enum Outcome: Equatable, Sendable {
        case kept
        /// Too inaccurate, or too soon after the last one kept.
        case dropped
        /// Sharing is paused, or no trip is under way.
        case notRecording
    }

    public struct Counts: Equatable, Sendable {
        public var kept = 0
        public var dropped = 0
        public var notRecording = 0
        public var batches = 0
        /// The queued batches, to ask later what the server did with them.
        public var batchIDs: [ID<Mutation>] = []
    }

    /// One fix per this many seconds is plenty for a truck (and a battery).
    public var minimumSpacing: TimeInterval = 5
    /// A batch goes to the outbox at this many fixes…
    public var batchSize = 60
    /// …or once its first fix is this old.
    public var batchAge: TimeInterval = 60

    public private(set) var counts = Counts()
    /// The last usable fix the phone gave, recorded or not.
    public private(set) var lastFix: GeoPosition?
    /// How old a fix may be to say where a photo was taken.
    public static let photoFixAge: TimeInterval = 120
    private var buffer: [GeoPosition] = []
    private var lastKept: Date?
    private let database: AppDatabase
    /// The phone's clock corrected to the server's: a fix is stamped by the
    /// phone's clock, which may run fast or slow.
    private let serverClock: ServerClock
    private let enqueue: (RecordLocationsRequest) throws -> ID<Mutation>?

    init(database: AppDatabase, serverClock: ServerClock, enqueue: @escaping (RecordLocationsRequest) throws -> ID<Mutation>?) {
        self.database = database
        self.serverClock = serverClock
        self.enqueue = enqueue
    }

    /// Whether positions are recorded now: sharing on and a trip in progress.
    public var isRecording: Bool {
        (try? database.reader.read(Self.isRecording)) ?? false
    }

    /// The rule, read from the cache (signed out, there are no trips).
    nonisolated static func isRecording(_ db: Database) throws -> Bool {
        try AppDatabase.locationSharing(db) && AppDatabase.trips(db).contains { $0.status == .inProgress }
    }

    /// Takes one fix from the provider.
    @discardableResult
    public func record(_ reported: GeoPosition) throws -> Outcome {
        var fix = reported
        fix.recordedAt = serverClock.corrected(reported.recordedAt)
        if LocationRules.isUsable(fix) { lastFix = fix }
        guard isRecording else {
            counts.notRecording += 1
            return .notRecording
        }
        guard LocationRules.isUsable(fix), lastKept.map({ fix.recordedAt.timeIntervalSince($0) >= minimumSpacing }) ?? true else {
            counts.dropped += 1
            return .dropped
        }
        buffer.append(fix)
        lastKept = fix.recordedAt
        counts.kept += 1
        if let first = buffer.first, buffer.count >= batchSize || fix.recordedAt.timeIntervalSince(first.recordedAt) >= batchAge {
            try flush()
        }
        return .kept
    }

    /// The last fix, if taken within `photoFixAge` of `time` (and not after it by more than that).
    public func recentFix(at time: Date) -> GeoPosition? {
        guard let lastFix, abs(time.timeIntervalSince(lastFix.recordedAt)) <= Self.photoFixAge else { return nil }
        return lastFix
    }

    /// Queues what is buffered (at the end of a drive, when the app goes to
    /// the background, when sharing is paused).
    public func flush() throws {
        guard !buffer.isEmpty else { return }
        for start in stride(from: 0, to: buffer.count, by: LocationRules.maxFixesPerBatch) {
            let batch = RecordLocationsRequest(fixes: Array(buffer[start..<min(start + LocationRules.maxFixesPerBatch, buffer.count)]))
            if let id = try enqueue(batch) { counts.batchIDs.append(id) }
            counts.batches += 1
        }
        buffer.removeAll()
    }

    /// Asks the provider for positions only while they are recorded: from
    /// the moment a trip gets under way with sharing on (the first time, the
    /// system asks the driver's permission then, not at launch) until the
    /// trip ends, sharing is paused or the driver signs out, when the
    /// provider is let go and what was buffered is queued. Runs until the
    /// task is cancelled.
    public func follow(_ provider: any LocationProvider, observe: @escaping (GeoPosition, Outcome) async throws -> Void = { _, _ in }) async {
        let wanted = ValueObservation.tracking(Self.isRecording).removeDuplicates().values(in: database.reader)
        var gathering: Task<Void, Never>?
        func letGo() async {
            gathering?.cancel()
            await gathering?.value
            gathering = nil
            try? flush()
        }
        do {
            for try await on in wanted {
                if on, gathering == nil {
                    gathering = Task { [weak self] in
                        // Positions stop on their own (Core Location gave up): asked for again shortly, while the trip lasts.
                        while !Task.isCancelled {
                            try? await self?.run(provider, observe: observe)
                            try? await Task.sleep(for: self?.restartDelay ?? .seconds(30))
                        }
                    }
                } else if !on, gathering != nil {
                    await letGo()
                }
            }
        } catch {}
        await letGo()
    }

    /// How long `follow` waits before asking again for positions that stopped.
    public var restartDelay: Duration = .seconds(30)

    /// Whether `follow` holds the provider's positions now.
    public private(set) var isGathering = false

    /// Records every position the provider gives until it ends or the task
    /// is cancelled, then queues the rest. `observe` sees each fix with what
    /// became of it.
    public func run(_ provider: any LocationProvider, observe: (GeoPosition, Outcome) async throws -> Void = { _, _ in }) async throws {
        isGathering = true
        defer { isGathering = false }
        for await fix in provider.positions() {
            let outcome = try record(fix)
            try await observe(fix, outcome)
        }
        try flush()
    }
}
