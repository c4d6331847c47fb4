#if os(iOS)
import Foundation
import VroomXModels

/// Uploads that finish with the app closed (iOS; compiled on a Mac, not on
/// Linux): the rest of a file goes to a background `URLSession` as one tus
/// PATCH, which the system sends while the app is suspended or closed and
/// resumes over a new network. Cut off, the server keeps what arrived and
/// the queue's next attempt sends from its offset (read with HEAD), so tus
/// resume and exactly-once completion hold as with chunks.
public final class BackgroundUploadSending: UploadSending {
    /// The session's events; the system delivers them to the session made
    /// with the same identifier, in this launch or the next.
    private let events = Events()
    private let session: URLSession
    /// Where the rest of a partly sent file is written for the system to read.
    private let slices: URL

    /// Made once, at launch (the app delegate's init): a relaunch in the
    /// background must find the session to deliver its events to.
    public init(identifier: String = (Bundle.main.bundleIdentifier ?? "vroomx") + ".uploads") {
        let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
        configuration.sessionSendsLaunchEvents = true
        configuration.isDiscretionary = false  // a driver's photos are not for later, when charging
        session = URLSession(configuration: configuration, delegate: events, delegateQueue: nil)
        slices = (FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory)
            .appendingPathComponent("upload-slices", isDirectory: true)
        sweepOldSlices()
    }

    /// Slices left by a transfer the app did not see end (it was closed
    /// meanwhile): the system is done with any a day old.
    private func sweepOldSlices() {
        let old = Date().addingTimeInterval(-86_400)
        for slice in (try? FileManager.default.contentsOfDirectory(at: slices, includingPropertiesForKeys: [.contentModificationDateKey])) ?? [] {
            let changed = (try? slice.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate ?? .distantPast
            if changed < old { try? FileManager.default.removeItem(at: slice) }
        }
    }

    /// The system relaunched the app for this session's events
    /// (`application(_:handleEventsForBackgroundURLSession:completionHandler:)`):
    /// `done` is called once they are all delivered.
    public func deliverEvents(then done: @escaping () -> Void) {
        events.whenEventsDelivered(SystemHandler(call: done))
    }

    /// UIKit's completion handler, called once on the main thread.
    struct SystemHandler: @unchecked Sendable {
        let call: () -> Void
    }

    public func send(file: URL, size: Int64, from offset: Int64, to location: String, via api: APIClient,
                     progress: @escaping @Sendable (Int64) async -> Void) async throws -> Int64 {
        // A transfer the system still carries for this upload (the app was closed meanwhile): heard, not sent twice.
        if let running = await session.allTasks.first(where: { $0.taskDescription == location && $0.state == .running }) {
            let answer = try await events.answer(to: running)
            let reached = try Self.acknowledged(answer, after: offset)
            await progress(reached)
            return reached
        }
        // A token that lasts a while: the system may send the request well after it is made.
        let (url, authorization) = try await api.authorized(location: location, lasting: 900)
        guard let target = URL(string: url) else { throw APIError.unreadable("no upload URL in \(url)") }
        let body = offset == 0 ? file : try slice(file, from: offset)
        defer { if body != file { try? FileManager.default.removeItem(at: body) } }
        var request = URLRequest(url: target)
        request.httpMethod = "PATCH"
        for (name, value) in Tus.patchHeaders(offset: offset) + [authorization] { request.setValue(value, forHTTPHeaderField: name) }
        let task = session.uploadTask(with: request, fromFile: body)
        task.taskDescription = location
        let answer = try await events.answer(to: task, start: true)
        let reached = try Self.acknowledged(answer, after: offset)
        await progress(reached)
        return reached
    }

    /// As `Tus.acknowledged`, but a token that ran out while the system held
    /// the request is no refusal: the next attempt goes with a fresh one.
    private static func acknowledged(_ answer: HTTPResponseData, after offset: Int64) throws -> Int64 {
        if answer.status == 401 { throw APIError.slow("the upload's sign-in ran out while it waited; sending again with a new one") }
        return try Tus.acknowledged(answer, after: offset)
    }

    /// The file from `offset` to its end, copied in 1 MB pieces.
    private func slice(_ file: URL, from offset: Int64) throws -> URL {
        try FileManager.default.createDirectory(at: slices, withIntermediateDirectories: true)
        let target = slices.appendingPathComponent(UUID().uuidString)
        guard FileManager.default.createFile(atPath: target.path, contents: nil) else {
            throw LocalRejection(code: .validationFailed, message: "No room to send the rest of the file.")
        }
        let reader = try FileHandle(forReadingFrom: file)
        let writer = try FileHandle(forWritingTo: target)
        defer { try? reader.close(); try? writer.close() }
        try reader.seek(toOffset: UInt64(offset))
        while let piece = try reader.read(upToCount: 1 << 20), !piece.isEmpty { try writer.write(contentsOf: piece) }
        return target
    }

    /// The session's delegate: hands each finished transfer's answer to the
    /// request waiting for it.
    final class Events: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var waiting: [Int: CheckedContinuation<HTTPResponseData, any Error>] = [:]
        private var bodies: [Int: Data] = [:]
        private var eventsDelivered: SystemHandler?

        func answer(to task: URLSessionTask, start: Bool = false) async throws -> HTTPResponseData {
            let id = task.taskIdentifier
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    lock.withLock { waiting[id] = continuation }
                    if start { task.resume() }
                    // Nothing calls back for a task that finished before this waited (seen running a moment
                    // ago) or one cancelled before it began: answered here, unless the delegate already did.
                    let cancelled = Task.isCancelled
                    guard task.state == .completed || cancelled, let mine = lock.withLock({ waiting.removeValue(forKey: id) }) else { return }
                    if cancelled {
                        task.cancel()
                        mine.resume(throwing: CancellationError())
                    } else {
                        mine.resume(throwing: APIError.slow("the transfer ended before it was heard; asking the server where it is"))
                    }
                }
            } onCancel: {
                task.cancel()  // the queue stopped (signed out): the system stops sending too
            }
        }

        /// Whether the system delivered every event before the app handed over its handler.
        private var deliveredEarly = false

        func whenEventsDelivered(_ done: SystemHandler) {
            let now = lock.withLock { () -> Bool in
                if deliveredEarly { deliveredEarly = false; return true }
                eventsDelivered = done
                return false
            }
            if now { DispatchQueue.main.async { done.call() } }
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            lock.withLock { bodies[dataTask.taskIdentifier, default: Data()].append(data) }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let (continuation, body) = lock.withLock {
                (waiting.removeValue(forKey: task.taskIdentifier), bodies.removeValue(forKey: task.taskIdentifier) ?? Data())
            }
            // None waits for a transfer from before a relaunch: the queue reads the server's offset instead.
            guard let continuation else { return }
            if let error {
                continuation.resume(throwing: APIError.notConnected(error.localizedDescription))
                return
            }
            guard let http = task.response as? HTTPURLResponse else {
                continuation.resume(throwing: APIError.unreadable("no answer to the upload"))
                return
            }
            var headers: [String: String] = [:]
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
            }
            continuation.resume(returning: HTTPResponseData(status: http.statusCode, headers: headers, body: body))
        }

        func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
            let done = lock.withLock { () -> SystemHandler? in
                defer { eventsDelivered = nil }
                if eventsDelivered == nil { deliveredEarly = true }
                return eventsDelivered
            }
            // The system's handler is called on the main thread.
            if let done { DispatchQueue.main.async { done.call() } }
        }
    }
}
#endif
