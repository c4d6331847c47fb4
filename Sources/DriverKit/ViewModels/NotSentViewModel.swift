import Foundation
import Observation
import VroomXModels

/// "Not sent yet" (Profile): every change, file and kept inspection of the
/// driver's that has not reached dispatch, why it waits, and what the driver
/// may do about it — send a failing one again now, drop one (after being
/// told what is lost), or export a kept inspection to share it.
@MainActor @Observable
public final class NotSentViewModel {
    public struct Row: Identifiable, Sendable, Equatable {
        public enum Action: Sendable, Equatable {
            /// Send again now (it is also retried on its own).
            case retry
            /// Drop for good; `warning` says what is lost, for a confirmation.
            case discard(warning: String)
            /// Write the inspection and its files out for the share sheet.
            case export
        }

        /// What the row is: a change, a file, or an inspection kept on the phone.
        public enum Target: Sendable, Equatable {
            /// A change, with the later changes refused because of it (dropped with it).
            case change(ID<Mutation>, followers: [ID<Mutation>] = [])
            case file(String)
            case keptInspection(ID<Inspection>)
        }

        public let target: Target
        public var id: String {
            switch target {
            case .change(let id, _): return id.rawValue
            case .file(let id): return id
            case .keptInspection(let id): return id.rawValue
            }
        }
        /// What it is: "the delivery of O-5004", "the video of the O-5004 delivery inspection".
        public let title: String
        /// Why it has not reached dispatch.
        public let why: String
        /// Something failed (shown in red): refused, failing, or kept.
        public let failed: Bool
        public let actions: [Action]
    }

    public private(set) var lastError: String?
    let app: DriverApp

    public init(app: DriverApp) { self.app = app }

    public var rows: [Row] { Self.rows(of: app) }

    /// The rows as the app's outbox and upload queue stand now, read
    /// through its status so a screen follows them as they change.
    static func rows(of app: DriverApp) -> [Row] {
        _ = (app.status.unsyncedCount, app.status.failed, app.status.pendingUploads)
        guard let work = try? app.waitingWork() else { return [] }
        return rows(work)
    }

    public var emptyMessage: String { "Everything has reached dispatch." }

    /// The rule for what each thing offers, apart from the screen.
    nonisolated static func rows(_ work: WaitingWork) -> [Row] {
        var rows: [Row] = work.refusals.map { refusal in
            Row(target: .change(refusal.id, followers: refusal.followers.map(\.id)), title: refusal.entry.description, why: refusal.text, failed: true,
                actions: [.discard(warning: "Dismiss this? Dispatch refused it, so it was never applied.")])
        }
        rows += work.changes.map { change in
            let failing = change.entry.failure == .transient
            return Row(target: .change(change.id), title: change.entry.description, why: change.why, failed: failing,
                       actions: failing ? [.retry, .discard(warning: "Drop \(change.entry.description)? It will never reach dispatch.")] : [])
        }
        rows += work.files.map { file in
            let failed = file.item.status == .failed
            return Row(target: .file(file.id), title: file.about.prefix(1).uppercased() + file.about.dropFirst(), why: file.why,
                       failed: failed,
                       actions: failed ? [.retry, .discard(warning: "Drop \(file.about)? It will never reach dispatch.")] : [])
        }
        rows += work.evidence.map { kept in
            let files = NumberText.count(kept.files.count, "file")
            return Row(target: .keptInspection(kept.id),
                       title: kept.about.prefix(1).uppercased() + kept.about.dropFirst() + ", \(files)",
                       why: "Kept on this phone: \(kept.reason)", failed: true,
                       actions: [.export, .discard(warning: "Drop \(kept.about) and its \(files) for good? Export it first to keep a copy.")])
        }
        return rows
    }

    public func retry(_ row: Row) {
        attempt {
            switch row.target {
            case .change(let id, _): try app.retry(id)
            case .file(let id): try app.retryUpload(id)
            case .keptInspection: break
            }
        }
    }

    public func discard(_ row: Row) async {
        do {
            switch row.target {
            case .change(let id, let followers):
                for id in [id] + followers { try app.discard(id) }
            case .file(let id): try await app.discardUpload(id)
            case .keptInspection(let id): try app.discardEvidence(id)
            }
            lastError = nil
        } catch {
            lastError = "Couldn't drop it: \(error)"
        }
    }

    /// The kept inspection written out (`inspection.json` and each photo and
    /// video) for the share sheet: the files to hand over.
    public func export(_ row: Row) -> [URL] {
        guard case .keptInspection(let id) = row.target else { return [] }
        do {
            let exports = FileManager.default.temporaryDirectory.appendingPathComponent("Kept inspections", isDirectory: true)
            let folder = try app.exportEvidence(id, to: exports)
            lastError = nil
            return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        } catch {
            lastError = "Couldn't export it: \(error)"
            return []
        }
    }

    private func attempt(_ work: () throws -> Void) {
        do {
            try work()
            lastError = nil
        } catch {
            lastError = "\(error)"
        }
    }
}
