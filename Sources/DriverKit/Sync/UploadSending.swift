import Foundation
import VroomXModels

/// How an upload's bytes travel once the tus upload exists: its PATCH
/// requests. `UploadQueue` decides what to send and when, and records what
/// the server acknowledged; a sender only carries bytes.
///
/// `ChunkedUploadSending` (Linux, the terminal client, tests) sends chunks
/// while the app runs. On iOS `BackgroundUploadSending` hands the rest of the
/// file to a background `URLSession`, which the system carries on with the
/// app suspended or closed. Either way completion is exactly once: the
/// server attaches the file when its last byte arrives, and the queue marks
/// it done only when the server's offset (answered, or read with HEAD on the
/// next attempt) reaches the file's size.
public protocol UploadSending: Sendable {
    /// Sends `file` (of `size` bytes) from `offset` to its end to the tus
    /// upload at `location`. `progress` is told each offset the server
    /// acknowledges; the last one returned is the file's size, or less when
    /// the sender stopped early (the queue then asks the server again).
    func send(file: URL, size: Int64, from offset: Int64, to location: String, via api: APIClient,
              progress: @escaping @Sendable (Int64) async -> Void) async throws -> Int64
}

/// Chunks of a fixed size, one PATCH each: each acknowledged chunk is
/// recorded, so at most one chunk is ever sent twice.
public struct ChunkedUploadSending: UploadSending {
    public let chunkSize: Int

    public init(chunkSize: Int = 1 << 20) { self.chunkSize = max(chunkSize, 1) }

    public func send(file: URL, size: Int64, from start: Int64, to location: String, via api: APIClient,
                     progress: @escaping @Sendable (Int64) async -> Void) async throws -> Int64 {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var offset = start
        while offset < size {
            try handle.seek(toOffset: UInt64(offset))
            let chunk = try handle.read(upToCount: chunkSize) ?? Data()
            guard !chunk.isEmpty else { throw LocalRejection(code: .validationFailed, message: "The queued file is shorter than recorded.") }
            let response = try await api.callRaw(.appendUpload, [], location: location, headers: Tus.patchHeaders(offset: offset), body: chunk)
            offset = try Tus.acknowledged(response, after: offset)
            await progress(offset)
        }
        return offset
    }
}

extension Tus {
    /// The headers of a PATCH that appends at `offset`.
    static func patchHeaders(offset: Int64) -> [(String, String)] {
        [("Tus-Resumable", version), ("Upload-Offset", String(offset)), ("Content-Type", patchContentType)]
    }

    /// The offset the server acknowledges in its answer to a PATCH sent at
    /// `offset`; the upload gone (expired) restarts it, a refusal is thrown.
    static func acknowledged(_ response: HTTPResponseData, after offset: Int64) throws -> Int64 {
        if response.status == 404 || response.status == 410 { throw UploadQueue.UploadFailure.restart }
        try APIClient.check(response)
        guard let next = response.headers["upload-offset"].flatMap(Int64.init), next > offset else {
            throw APIError.unreadable("no progress in Upload-Offset")
        }
        return next
    }
}

extension APIClient {
    /// A request sent outside this client (a background upload the system
    /// sends) with an access token good for `seconds` more (refreshed first
    /// if not): its absolute URL and its Authorization header.
    public func authorized(location: String, lasting seconds: TimeInterval) async throws -> (url: String, authorization: (String, String)) {
        let url = location.hasPrefix("http") ? location : baseURL + location
        return (url, ("Authorization", "Bearer \(try await credentials.accessToken(lasting: seconds))"))
    }
}
