import Foundation
import NIOCore

/// Media in an S3-compatible bucket, for several stateless instances.
///
/// An upload is an S3 multipart upload of fixed-size parts (`partSize`,
/// above S3's 5 MiB minimum). Bytes short of a whole part wait in memory;
/// when a request ends they are saved as a small "tail" object
/// (`.partial/{upload}/tail-{k}`, the bytes after part k), so another
/// instance resumes with the parts already sent plus that tail. The last
/// byte completes the upload; an upload that ends unfinished is aborted,
/// and a sweep aborts multipart uploads and removes tails older than the
/// upload lifetime that a crash left behind.
///
/// Files are read back with ranged GETs, streamed through the server (the
/// bucket need not be reachable by clients, and access is checked in one
/// place).
struct S3MediaStorage: MediaStorage {
    let client: S3Client
    let partSize: Int

    init(client: S3Client, partSize: Int = 8 << 20) {
        self.client = client
        self.partSize = max(partSize, 5 << 20)
    }

    static func tailPrefix(_ upload: String) -> String { ".partial/\(upload)/" }
    /// The bytes after part `part` up to offset `end`. Named by its end, so
    /// the upload's recorded offset names the one tail that counts, and a
    /// request that lost its lease can never overwrite it with another.
    static func tailKey(_ upload: String, afterPart part: Int, end: Int64) -> String { tailPrefix(upload) + "tail-\(part)-\(end)" }

    func beginPartial(_ upload: String, key: String) async throws -> String? {
        try await client.createMultipartUpload(key)
    }

    func openPartial(_ upload: String, key: String, handle: String?, length: Int64, at offset: Int64) async throws -> any PartialMediaWriter {
        guard let handle else { throw MediaStorageError(description: "upload \(upload) has no multipart upload") }
        let writer = S3PartialWriter(storage: self, upload: upload, key: key, multipartID: handle, length: length)
        try await writer.load(at: offset)
        return writer
    }

    func commit(_ upload: String, key: String, handle: String?, length: Int64) async throws {
        guard let handle else { throw MediaStorageError(description: "upload \(upload) has no multipart upload") }
        let count = Self.partCount(length: length, partSize: partSize)
        var parts = Dictionary(try await sentParts(key, handle)?.map { ($0.number, $0) } ?? [], uniquingKeysWith: { $1 })
        if parts.isEmpty, try await client.headObject(key) == length { return }  // completed before
        // The last part may still be the tail object of the request that ended the upload.
        let lastSize = length - Int64(count - 1) * Int64(partSize)
        if parts[count]?.size != lastSize {
            guard let tail = try await client.getSmallObject(Self.tailKey(upload, afterPart: count - 1, end: length), limit: partSize),
                  Int64(tail.readableBytes) >= lastSize else {
                throw MediaStorageError(description: "upload \(upload) is missing its last \(lastSize) bytes",
                                        stillStored: Int64(count - 1) * Int64(partSize))
            }
            let etag = try await client.uploadPart(key, uploadID: handle, number: count, body: tail.getSlice(at: 0, length: Int(lastSize)) ?? tail)
            parts[count] = S3Client.Part(number: count, etag: etag, size: lastSize)
        }
        var chosen: [S3Client.Part] = []
        for number in 1...count {
            let expected = number == count ? lastSize : Int64(partSize)
            guard let part = parts[number], part.size == expected else {
                throw MediaStorageError(description: "upload \(upload) part \(number) is missing or has the wrong size",
                                        stillStored: Int64(number - 1) * Int64(partSize))
            }
            chosen.append(part)
        }
        do {
            try await client.completeMultipartUpload(key, uploadID: handle, parts: chosen)
        } catch let error as S3Error where error.isNotFound {
            guard try await client.headObject(key) == length else { throw error }
        }
        await removeTails(upload)
    }

    /// The parts sent so far, or nil when the multipart upload is gone (completed).
    private func sentParts(_ key: String, _ handle: String) async throws -> [S3Client.Part]? {
        do {
            return try await client.listParts(key, uploadID: handle)
        } catch let error as S3Error where error.isNotFound {
            return nil
        }
    }

    func discardPartial(_ upload: String, key: String, handle: String?) async {
        if let handle { try? await client.abortMultipartUpload(key, uploadID: handle) }
        await removeTails(upload)
    }

    private func removeTails(_ upload: String) async {
        guard let listed = try? await client.listObjects(prefix: Self.tailPrefix(upload)) else { return }
        for item in listed.keys { try? await client.deleteObject(item.key) }
    }

    func open(_ key: String) async throws -> (any StoredMediaReader)? {
        guard let size = try await client.headObject(key) else { return nil }
        return S3Reader(client: client, key: key, size: size)
    }

    func remove(_ key: String) async {
        try? await client.deleteObject(key)
    }

    func removeLeftovers(olderThan age: TimeInterval, described: UploadRowCheck) async throws -> Int {
        let cutoff = client.now().addingTimeInterval(-age)
        var removed = 0
        // A date alone does not make an upload abandoned (a store's clock may be off; moto dates every
        // multipart upload 2010): what an upload row still describes stays, by its handle or, while an
        // upload is opening and its handle is not yet on its row, by the upload its key names.
        let old = try await client.listMultipartUploads(prefix: "").filter { ($0.initiated ?? .distantFuture) < cutoff }
            .map { (upload: $0, owner: UploadRecord.upload(ofFileKey: $0.key)) }
        let live = try await described(old.flatMap { [$0.upload.uploadID, $0.owner] })
        for (upload, owner) in old where !live.contains(upload.uploadID) && !live.contains(owner) {
            try await client.abortMultipartUpload(upload.key, uploadID: upload.uploadID)
            removed += 1
        }
        var continuation: String?
        repeat {
            let page = try await client.listObjects(prefix: ".partial/", continuation: continuation)
            let tails = page.keys.filter { ($0.modified ?? .distantFuture) < cutoff }
            let live = try await described(tails.map { Self.upload(ofTail: $0.key) })
            for item in tails where !live.contains(Self.upload(ofTail: item.key)) {
                try await client.deleteObject(item.key)
                removed += 1
            }
            continuation = page.next
        } while continuation != nil
        return removed
    }

    /// The upload a tail object belongs to (`.partial/{upload}/tail-…`).
    static func upload(ofTail key: String) -> String {
        String(key.dropFirst(tailPrefix("").count).prefix { $0 != "/" })
    }

    static func partCount(length: Int64, partSize: Int) -> Int {
        max(1, Int((length + Int64(partSize) - 1) / Int64(partSize)))
    }
}

/// One request's bytes of an S3 upload: whole parts go to S3 as they fill;
/// the rest waits in `pending` until the request ends.
final class S3PartialWriter: PartialMediaWriter {
    private let storage: S3MediaStorage
    private let upload: String
    private let key: String
    private let multipartID: String
    private let length: Int64
    private var client: S3Client { storage.client }
    private var partSize: Int { storage.partSize }
    /// Whole parts durably sent (parts 1…sentParts).
    private var sentParts = 0
    /// Bytes after those parts, not yet in a part.
    private var pending = ByteBuffer()
    /// The upload's first bytes, kept while this writer has them (content sniffing).
    private var head: [UInt8] = []
    /// The offset this writer was opened at: durable already (whole parts and a tail object).
    private var opened: Int64 = 0
    static let headBytes = 4096

    init(storage: S3MediaStorage, upload: String, key: String, multipartID: String, length: Int64) {
        self.storage = storage
        self.upload = upload
        self.key = key
        self.multipartID = multipartID
        self.length = length
    }

    private var pendingStart: Int64 { Int64(sentParts) * Int64(partSize) }

    /// Continues after `offset` bytes: the whole parts below it, then the
    /// bytes of its tail object.
    func load(at offset: Int64) async throws {
        opened = offset
        sentParts = Int(offset / Int64(partSize))
        let rest = Int(offset % Int64(partSize))
        pending = ByteBuffer()
        guard rest > 0 else { return }
        guard let tail = try await client.getSmallObject(S3MediaStorage.tailKey(upload, afterPart: sentParts, end: offset), limit: partSize),
              tail.readableBytes >= rest, let kept = tail.getSlice(at: 0, length: rest) else {
            throw MediaStorageError(description: "upload \(upload) has lost the bytes before offset \(offset)", stillStored: pendingStart)
        }
        pending = kept
        if sentParts == 0 { head = Array(kept.readableBytesView.prefix(Self.headBytes)) }
    }

    func append(_ bytes: ByteBuffer) async throws {
        if sentParts == 0, head.count < Self.headBytes {
            head += bytes.readableBytesView.prefix(Self.headBytes - head.count)
        }
        var bytes = bytes
        pending.writeBuffer(&bytes)
        while pending.readableBytes >= partSize, let part = pending.readSlice(length: partSize) {
            try await sendPart(part)
            sentParts += 1
            pending.discardReadBytes()
        }
    }

    /// The parts sent are durable, and so is everything up to the opening
    /// offset (its tail object): a checkpoint never goes back past what the
    /// client was already told.
    func checkpoint() async throws -> Int64 { max(pendingStart, opened) }

    func finish(keeping kept: Int64) async throws {
        if kept < pendingStart {
            // Back to an offset before parts this request sent: the opening tail or a part boundary.
            try await load(at: kept)
            return
        }
        pending.moveWriterIndex(to: pending.readerIndex + Int(kept - pendingStart))
        guard pending.readableBytes > 0 else { return }
        if kept == length {
            // The upload's last bytes: its final part.
            try await sendPart(pending)
        } else {
            try await client.putObject(S3MediaStorage.tailKey(upload, afterPart: sentParts, end: kept), body: pending)
        }
    }

    /// Part `sentParts + 1`; a multipart upload the store no longer has
    /// (aborted, or the bucket lost it) means the upload must start again.
    private func sendPart(_ part: ByteBuffer) async throws {
        do {
            _ = try await client.uploadPart(key, uploadID: multipartID, number: sentParts + 1, body: part)
        } catch let error as S3Error {
            guard await multipartIsGone(after: error) else { throw error }
            throw MediaStorageError(description: "upload \(upload): the store no longer has its multipart upload", uploadLost: true)
        }
    }

    /// Stores answer a part of a multipart upload they no longer have in
    /// various ways (404 NoSuchUpload, or a bare 500), so the store is asked
    /// for its parts: only a plain "no such upload" ends the upload. Any
    /// other failure is passing trouble the client retries (503), never a
    /// reason to throw the client's bytes away.
    private func multipartIsGone(after error: S3Error) async -> Bool {
        if error.isNotFound { return true }
        do {
            _ = try await client.listParts(key, uploadID: multipartID)
            return false
        } catch let asked as S3Error where asked.isNotFound {
            return true
        } catch {
            return false
        }
    }

    func prefix(_ count: Int) async throws -> [UInt8]? {
        head.count >= min(count, Int(length)) ? Array(head.prefix(count)) : nil
    }

    func close() {}
}

/// A stored object, read with ranged GETs.
final class S3Reader: StoredMediaReader, Sendable {
    let client: S3Client
    let key: String
    let size: Int64

    init(client: S3Client, key: String, size: Int64) {
        self.client = client
        self.key = key
        self.size = size
    }

    /// In ranged GETs of 8 MiB, each within the client's deadline however
    /// long the whole download takes.
    func read(_ range: Range<Int64>, into consume: (ByteBuffer) async throws -> Void) async throws {
        var start = range.lowerBound
        while start < range.upperBound {
            let end = min(start + Self.chunk, range.upperBound)
            try await client.getObject(key, range: start..<end, consume: consume)
            start = end
        }
    }

    static let chunk: Int64 = 8 << 20

    func close() {}
}
