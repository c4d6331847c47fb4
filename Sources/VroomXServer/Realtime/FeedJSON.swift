import NIOCore
import VroomXModels

/// Feed entries as JSON, spliced from stored row documents (never decoded
/// and re-encoded), for `GET /v1/sync` and the realtime socket.
enum FeedJSON {
    static func write(_ change: Store.FeedEntry, into buffer: inout ByteBuffer) {
        buffer.writeString("{\"seq\":\(change.seq),\"entity\":\"\(change.entity.rawValue)\",\"id\":\"\(change.id)\",\"op\":\"\(change.operation.rawValue)\"")
        if let mutation = change.mutationID {
            buffer.writeString(",\"mutation\":\"\(mutation)\"")
        }
        if let document = change.document {
            buffer.writeStaticString(",\"row\":")
            buffer.writeString(document)
        }
        buffer.writeStaticString("}")
    }

    static func write(_ changes: [Store.FeedEntry], into buffer: inout ByteBuffer) {
        buffer.writeStaticString("[")
        for (index, change) in changes.enumerated() {
            if index > 0 { buffer.writeStaticString(",") }
            write(change, into: &buffer)
        }
        buffer.writeStaticString("]")
    }

    static func capacity(_ changes: [Store.FeedEntry]) -> Int {
        changes.reduce(96) { $0 + ($1.document?.utf8.count ?? 0) + 160 }
    }

    /// A realtime message: `{"type":…,"changes":[…],"cursor":N}`.
    static func message(_ type: RealtimeMessage.Kind, changes: [Store.FeedEntry]? = nil, cursor: Int64) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(changes.map(capacity) ?? 64)
        buffer.writeString("{\"type\":\"\(type.rawValue)\"")
        if let changes {
            buffer.writeStaticString(",\"changes\":")
            write(changes, into: &buffer)
        }
        buffer.writeString(",\"cursor\":\(cursor)}")
        return buffer
    }
}
