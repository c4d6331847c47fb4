import Foundation
import Logging
import VroomXModels

/// Sends inspection photos and videos (seed 000's InspectionUploadQueue),
/// and photos of the driver's units,
/// with the tus resumable protocol. A queued file is first copied into
/// app-owned storage (the camera roll's copy may vanish) and recorded in the
/// database, so it survives the app being killed. Each upload resumes from
/// the offset the server reports; failures back off 5 s, 10 s, 20 s, …
/// capped at 15 minutes, with jitter. The queue runs while files wait and
/// the network is up.
public actor UploadQueue {
    let database: AppDatabase
    let api: APIClient
    let network: any NetworkMonitor
    let directory: URL
    let clock: @Sendable () -> Date
    let logger: Logger
    /// How the bytes travel (chunks while the app runs; on iOS a background session).
    let sending: any UploadSending
    /// Told when a file has reached the server (the sync engine then sends
    /// a completion that was waiting for it).
    nonisolated let afterUpload = Hook<Void>()
    private var runner: Task<Void, Never>?
    private var networkWatcher: Task<Void, Never>?
    private var sleeper: Task<Void, Never>?
    /// Set by `wake` until the runner next looks for a file.
    private var woken = false

    init(database: AppDatabase, api: APIClient, network: any NetworkMonitor, directory: URL, clock: @escaping @Sendable () -> Date,
         sending: any UploadSending = ChunkedUploadSending(), leftoverAge: TimeInterval = 3600, logger: Logger) {
        self.leftoverAge = leftoverAge
        self.database = database
        self.api = api
        self.network = network
        self.directory = directory
        self.clock = clock
        self.sending = sending
        self.logger = logger
    }


    /// Queues a file for a slot of an inspection (replacing a queued file of
    /// the same slot) and returns at once.
    @discardableResult
    public func enqueue(file: URL, inspection: ID<Inspection>, slot: MediaSlot, captured: MediaCapture? = nil) throws -> UploadItem {
        guard slot.isValid else { throw LocalRejection(code: .validationFailed, message: "\(slot) is not a slot name.") }
        let id = try keep(file, for: slot.rawValue) { id, copy, size in
            if let replaced = try database.insertUpload(id: id, inspection: inspection, slot: slot, path: copy.path, size: size, now: clock(),
                                                        captured: captured) {
                try? FileManager.default.removeItem(atPath: replaced)
            }
        }
        guard let item = try database.uploads(inspection: inspection).first(where: { $0.id == id }) else {
            throw LocalRejection(code: .notFound, message: "The \(slot) file was replaced while it was being queued.")
        }
        return item
    }

    /// Queues a photo of a unit and returns at once.
    @discardableResult
    public func enqueue(file: URL, unit: ID<Equipment>) throws -> UploadItem {
        let id = try keep(file, for: "unit photo") { id, copy, size in
            try database.insertUnitPhoto(id: id, unit: unit, path: copy.path, size: size, now: clock())
        }
        guard let item = try database.upload(id) else { throw LocalRejection(code: .notFound, message: "The photo was not queued.") }
        return item
    }

    /// Queues a photo of an expense's receipt and returns at once; it goes
    /// once the expense has reached the server.
    @discardableResult
    public func enqueue(file: URL, receiptOf expense: ID<Expense>) throws -> UploadItem {
        try enqueuePaper(file, paper: expense.rawValue, slot: UploadItem.receiptSlot, what: "receipt")
    }

    /// Queues the photo of a check or cash receipt the driver collected and
    /// returns at once; it goes once the collection has reached the server.
    @discardableResult
    public func enqueue(file: URL, photoOf payment: ID<InvoicePayment>) throws -> UploadItem {
        try enqueuePaper(file, paper: payment.rawValue, slot: UploadItem.collectionPhotoSlot, what: "payment photo")
    }

    /// Queues a photo of a problem the driver reported at a stop; it goes
    /// once the report has reached the server.
    @discardableResult
    public func enqueue(file: URL, photoOfProblem problem: ID<StopProblem>) throws -> UploadItem {
        try enqueuePaper(file, paper: problem.rawValue, slot: UploadItem.problemPhotoSlot, what: "problem photo")
    }

    /// Queues a photo sent with a message to dispatch; it goes once the message has.
    @discardableResult
    public func enqueue(file: URL, photoWith message: ID<DriverMessage>) throws -> UploadItem {
        try enqueuePaper(file, paper: message.rawValue, slot: UploadItem.messagePhotoSlot, what: "message photo")
    }

    private func enqueuePaper(_ file: URL, paper: String, slot: MediaSlot, what: String) throws -> UploadItem {
        let id = try keep(file, for: what) { id, copy, size in
            try database.insertPaperPhoto(id: id, paper: paper, slot: slot, path: copy.path, size: size, now: clock())
        }
        guard let item = try database.upload(id) else { throw LocalRejection(code: .notFound, message: "The \(what) was not queued.") }
        return item
    }

    /// Copies the file into app-owned storage, records it with `record`
    /// (the copy goes if that fails) and wakes the queue; returns its id.
    private func keep(_ file: URL, for what: String, record: (_ id: String, _ copy: URL, _ size: Int64) throws -> Void) throws -> String {
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
        guard size > 0 else { throw LocalRejection(code: .validationFailed, message: "\(file.path) is missing or empty.") }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let id = UUID().uuidString.lowercased()
        let copy = directory.appendingPathComponent(id)
        do {
            try FileManager.default.copyItem(at: file, to: copy)
        } catch {
            // A copy cut short (a full disk) must not stay behind unlisted, holding the space.
            try? FileManager.default.removeItem(at: copy)
            throw Self.copyFailure(error, file: file, what: what, size: size)
        }
        do {
            try record(id, copy, size)
        } catch {
            try? FileManager.default.removeItem(at: copy)
            throw error
        }
        wake()
        return id
    }

    /// What the driver is told when the file cannot be kept on the device.
    static func copyFailure(_ error: any Error, file: URL, what: String, size: Int64) -> LocalRejection {
        let nsError = error as NSError
        let outOfSpace = (nsError.domain == NSCocoaErrorDomain && nsError.code == NSFileWriteOutOfSpaceError)
            || (nsError.domain == NSPOSIXErrorDomain && nsError.code == Int(ENOSPC))
            || ((nsError.userInfo[NSUnderlyingErrorKey] as? NSError).map { $0.domain == NSPOSIXErrorDomain && $0.code == Int(ENOSPC) } ?? false)
        if outOfSpace {
            let needed = ByteCountFormatter.string(fromByteCount: size, countStyle: .file)
            return LocalRejection(code: .insufficientStorage,
                                  message: "Not enough space on this device to keep the \(what) file (\(needed)). Free some space and add it again.")
        }
        return LocalRejection(code: .validationFailed, message: "Could not keep a copy of \(file.lastPathComponent) for \(what): \(nsError.localizedDescription)")
    }

    /// Runs until `stop`: sends due files while the network is up.
    public func start() {
        guard runner == nil else { return }
        deleteUnlistedCopies()
        // A fresh start (launch, sign-in) tries at once, like the outbox.
        try? database.releaseUploadBackoff()
        let changes = network.changes()
        networkWatcher = Task { [weak self] in
            for await online in changes where online {
                try? await self?.database.releaseUploadBackoff()
                await self?.wake()
            }
        }
        runner = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                if await !self.processDue() { await self.nap() }
            }
        }
    }

    /// Copies whose queue entry is gone (the inspection went to another
    /// driver, or the app died between copying and recording) are deleted —
    /// once they are `leftoverAge` old (an hour): a copy is made before it is
    /// recorded, and another process on the device (the terminal client runs
    /// several) may be between the two. Ages are told by the file system's
    /// own clock (a marker file written now), not the device's, which a
    /// driver may set anywhere.
    private func deleteUnlistedCopies() {
        let marker = directory.appendingPathComponent(Self.markerName)
        guard let listed = try? Set(database.uploads().map { URL(fileURLWithPath: $0.path).lastPathComponent }),
              let copies = try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil),
              FileManager.default.createFile(atPath: marker.path, contents: Data()),
              let now = Self.statusChanged(marker) else { return }
        for copy in copies where copy.lastPathComponent != Self.markerName && !listed.contains(copy.lastPathComponent) {
            guard let made = Self.statusChanged(copy), now.timeIntervalSince(made) > leftoverAge else { continue }
            try? FileManager.default.removeItem(at: copy)
        }
    }

    private let leftoverAge: TimeInterval
    private static let markerName = ".now"

    /// When the file was created or last changed (its inode's change time,
    /// which copying attributes from the original cannot set back).
    static func statusChanged(_ file: URL) -> Date? {
        var info = stat()
        guard stat(file.path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let changed = info.st_ctimespec
        #else
        let changed = info.st_ctim
        #endif
        return Date(timeIntervalSince1970: TimeInterval(changed.tv_sec) + TimeInterval(changed.tv_nsec) / 1e9)
    }

    public func stop() async {
        runner?.cancel()
        networkWatcher?.cancel()
        sleeper?.cancel()
        await runner?.value
        runner = nil
        networkWatcher = nil
    }

    /// Sends now whatever waits (the driver asked, or the network returned).
    public func retryNow() {
        try? database.releaseUploadBackoff()
        wake()
    }

    /// Gives up a failed file, as the driver decided: never silently, and
    /// never one still on its way. Returns whether one was discarded.
    @discardableResult
    public func discard(_ id: String) throws -> Bool {
        guard let path = try database.deleteFailedUpload(id) else { return false }
        try? FileManager.default.removeItem(atPath: path)
        return true
    }

    /// Looks for due files now (a sync may have made some sendable).
    public func wake() {
        woken = true
        sleeper?.cancel()
    }

    /// Sleeps until the next file is due (at most a minute), until woken, or
    /// until stopped. A wake or a stop that came while the queue was looking
    /// for a file (this actor let others in meanwhile) is not lost: a file
    /// queued then goes at once, and a stop does not wait out the minute.
    private func nap() async {
        guard !woken, !Task.isCancelled else {
            woken = false
            return
        }
        let next = (try? database.nextUploadRetry()).flatMap { $0 }
        let seconds = next.map { min(max($0.timeIntervalSince(clock()), 0.05), 60) } ?? 60
        let task = Task { _ = try? await Task.sleep(for: .milliseconds(Int(seconds * 1000))) }
        sleeper = task
        await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        sleeper = nil
        woken = false
    }

    /// Sends the next due file, if there is one and the network is up.
    /// Returns whether it tried.
    @discardableResult
    public func processDue() async -> Bool {
        await processDue(owner: nil, via: api)
    }

    /// The same for another driver's files, sent with their session (a
    /// phone handing over the work of a driver who signed out on it).
    func processDue(owner: String?, via api: APIClient) async -> Bool {
        guard network.isOnline, await api.credentials.hasSession,
              let item = try? database.nextDueUpload(now: clock(), owner: owner) else { return false }
        do {
            try await send(item, via: api)
            try database.updateUpload(item.id, status: .completed, sentBytes: item.size, lastError: .some(nil))
            try? FileManager.default.removeItem(atPath: item.path)
            logger.debug("uploaded", metadata: ["slot": "\(item.slot)", "bytes": "\(item.size)"])
            await afterUpload()
        } catch {
            record(error, for: item)
        }
        return true
    }

    /// A transient failure waits its backoff; a refusal fails the item for
    /// the driver to see (and retake or retry).
    private func record(_ error: any Error, for item: UploadItem) {
        let attempts = item.attempts + 1
        switch error {
        case UploadFailure.restart:
            try? database.updateUpload(item.id, uploadURL: .some(nil), attempts: attempts, nextRetryAt: clock())
        case APIError.server(400, let body) where body.field == "Upload-Metadata" && item.captured != nil:
            // The server would not take when or where the photo was taken (a phone clock far off): the
            // photo matters more than its stamp, so it goes again at once without one.
            logger.notice("upload stamp refused; sending without it", metadata: ["reason": "\(body.message)"])
            try? database.dropCapture(of: item.id)
            try? database.updateUpload(item.id, uploadURL: .some(nil), attempts: attempts, nextRetryAt: clock())
        case let failure as APIError where failure.isTransient || failure.code == .uploadLocked || failure.code == .uploadOffsetMismatch:
            let delay = Backoff.outbox.delay(afterFailures: attempts)
            try? database.updateUpload(item.id, status: .pending, lastError: .some(failure.description), attempts: attempts,
                                       nextRetryAt: clock().addingTimeInterval(delay))
        case let failure as APIError:
            try? database.updateUpload(item.id, status: .failed, lastError: .some(failure.description), attempts: attempts)
        default:
            try? database.updateUpload(item.id, status: .failed, lastError: .some("\(error)"), attempts: attempts)
        }
    }

    enum UploadFailure: Error {
        /// The server no longer has the upload (expired): start a new one.
        case restart
    }

    private func send(_ item: UploadItem, via api: APIClient) async throws {
        let location: String
        if let existing = item.uploadURL {
            location = existing
        } else {
            location = try await create(item, via: api)
            try database.updateUpload(item.id, uploadURL: .some(location))
        }
        let offset = try await serverOffset(location, via: api)
        try database.updateUpload(item.id, status: .uploading, sentBytes: offset)
        guard offset < item.size else { return }  // every byte arrived (the answer was lost, or sent in the background)
        let (database, id) = (database, item.id)
        let reached = try await sending.send(file: URL(fileURLWithPath: item.path), size: item.size, from: offset, to: location, via: api) {
            try? database.updateUpload(id, sentBytes: $0)
        }
        // Stopped short (the system ended a background transfer): the next attempt asks the server where it is.
        guard reached >= item.size else { throw APIError.slow("the upload stopped at \(reached) of \(item.size) bytes") }
    }

    private func create(_ item: UploadItem, via api: APIClient) async throws -> String {
        let metadata = if let unit = item.equipmentID {
            Tus.encodeMetadata(["equipment_id": unit.rawValue])
        } else if let expense = item.expenseID {
            Tus.encodeMetadata(["expense_id": expense.rawValue])
        } else if let payment = item.paymentID {
            Tus.encodeMetadata(["payment_id": payment.rawValue])
        } else if let problem = item.problemID {
            // The server finds a problem on its order: the one the phone holds it on.
            Tus.encodeMetadata(["problem_id": problem.rawValue, "order_id": try database.order(holding: problem)?.id.rawValue ?? ""])
        } else if let message = item.messageID {
            Tus.encodeMetadata(["message_id": message.rawValue])
        } else {
            Tus.encodeMetadata(["inspection_id": item.inspectionID?.rawValue ?? "", "slot": item.slot.rawValue]
                .merging(item.captured?.metadata ?? [:]) { first, _ in first })
        }
        let response = try await api.callRaw(.createUpload, [], headers: [
            ("Tus-Resumable", Tus.version), ("Upload-Length", String(item.size)), ("Upload-Metadata", metadata),
        ], body: nil)
        try APIClient.check(response)
        guard let location = response.headers["location"] else { throw APIError.unreadable("no Location for the upload") }
        return location
    }

    /// Where the server's copy ends: what to send next.
    private func serverOffset(_ location: String, via api: APIClient) async throws -> Int64 {
        let response = try await api.callRaw(.uploadOffset, [], location: location, headers: [("Tus-Resumable", Tus.version)], body: nil)
        if response.status == 404 || response.status == 410 { throw UploadFailure.restart }
        guard response.status == 200, let offset = response.headers["upload-offset"].flatMap(Int64.init) else {
            if response.status >= 500 || response.status == 429 {
                throw APIError.server(status: response.status, body: APIErrorBody(code: .unavailable, message: "The server is busy."))
            }
            throw APIError.unreadable("HEAD answered \(response.status)")
        }
        return offset
    }
}
