import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import VroomXModels
import VroomXSecurity

typealias Handler = @Sendable (Request, AppRequestContext) async throws -> Reply

/// Registers handlers by `Endpoint`, the shared route table. The wrapper
/// enforces the endpoint's declared access before the handler runs: the
/// token is verified, the identity is put in the context, and the role is
/// checked, so no handler can forget to.
struct Routes {
    let router: Router<AppRequestContext>
    let authenticator: Authenticator
    let store: Store

    func on(_ endpoint: Endpoint, _ handler: @escaping Handler) {
        register(endpoint, preparing: { request, _ in request }, outside: false, handler)
    }

    /// Registers a handler whose input is prepared first: `prepare` reads the
    /// body and does what needs the network (looking up addresses), `handler`
    /// writes. With an Idempotency-Key the write runs in the key's
    /// transaction, and `prepare` runs before it: a slow outside service
    /// never holds a transaction (on SQLite, the one writer of every carrier).
    func on<Input: Sendable>(_ endpoint: Endpoint, preparing prepare: @escaping @Sendable (Request, AppRequestContext) async throws -> Input,
                             _ handler: @escaping @Sendable (Input, AppRequestContext) async throws -> Reply) {
        register(endpoint, preparing: prepare, outside: true, handler)
    }

    /// `outside`: `prepare` calls an outside service, worth a look at the key
    /// first (a replay needs nothing prepared); otherwise it only reads the request.
    private func register<Input: Sendable>(_ endpoint: Endpoint, preparing prepare: @escaping @Sendable (Request, AppRequestContext) async throws -> Input,
                                           outside: Bool, _ handler: @escaping @Sendable (Input, AppRequestContext) async throws -> Reply) {
        let store = self.store
        onResponse(endpoint) { request, context in
            if endpoint.acceptsIdempotencyKey, let key = request.headers[.idempotencyKey] {
                return try await Self.idempotent(key: key, request, context, store: store, prepare, outside: outside, handler).response
            }
            return try await handler(try await prepare(request, context), context).response
        }
    }

    /// Registers a handler that builds its own response (streamed files,
    /// protocol headers), behind the same access checks. An answer whose
    /// request committed changes names the change number reached.
    func onResponse(_ endpoint: Endpoint, _ handler: @escaping @Sendable (Request, AppRequestContext) async throws -> Response) {
        let access = endpoint.access
        let authenticator = self.authenticator
        router.on(RouterPath(endpoint.routerPath), method: HTTPRequest.Method(rawValue: endpoint.method.rawValue)!) { request, context in
            try await CommitWitness.answering {
                guard access != .anyone else { return try await handler(request, context) }
                var context = context
                let identity = try await authenticator.authenticate(request, queryTokenAllowed: endpoint.acceptsQueryToken)
                switch access {
                case .driver:
                    guard identity.role == .driver else {
                        throw AppError(403, .forbidden, "This endpoint is for drivers.")
                    }
                    guard identity.driver != nil else {
                        throw AppError(403, .driverNotFound, "Driver account not found. Contact your dispatcher.")
                    }
                case .dispatcher:
                    guard identity.role == .dispatcher else {
                        throw AppError(403, .forbidden, "This endpoint is for dispatchers.")
                    }
                case .signedIn, .anyone:
                    break
                }
                context.identity = identity
                let caller = context
                return try await ActingUser.$current.withValue(identity.user) { try await handler(request, caller) }
            }
        }
    }

    /// Serves a mutation once per key: the same key again returns the stored
    /// answer (marked `Idempotent-Replayed: true`) without applying anything.
    static func idempotent<Input: Sendable>(key: String, _ request: Request, _ context: AppRequestContext, store: Store,
                                            _ prepare: @Sendable (Request, AppRequestContext) async throws -> Input, outside: Bool,
                                            _ handler: @escaping @Sendable (Input, AppRequestContext) async throws -> Reply) async throws -> Reply {
        guard let uuid = UUID(uuidString: key) else {
            throw AppError(400, .invalidParameter, "Idempotency-Key must be a UUID.", field: "Idempotency-Key")
        }
        let identity = try context.caller()
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: JSONBody.maxBytes)
        } catch is NIOTooManyBytesError {
            throw JSONBody.tooLarge
        }
        var hasher = SHA256()
        hasher.update(data: Array("\(request.method) \(request.uri.path)\n".utf8))
        hasher.update(data: Array(body.readableBytesView))
        let hash = hasher.finalize().hexString
        var frozen = request
        frozen.body = RequestBody(buffer: body)
        let replayable = frozen
        let key = uuid.uuidString.lowercased()
        // A key answered before needs nothing prepared (its answer is stored): looked up only when preparing calls out.
        let input: Input?
        if outside, try await store.seenKey(tenant: identity.tenant, user: identity.user, key: key) {
            input = nil
        } else {
            input = try await prepare(replayable, context)
        }
        let (stored, replayed) = try await store.idempotent(tenant: identity.tenant, user: identity.user, key: key, requestHash: hash) {
            // Claimed after all (the earlier claim rolled back): prepared now, still before any write of its own.
            let prepared: Input
            if let input { prepared = input } else { prepared = try await prepare(replayable, context) }
            let reply = try await handler(prepared, context)
            return Store.StoredReply(status: Int(reply.status.code), body: reply.body.map { String(buffer: $0) } ?? "")
        }
        var reply = Reply(status: .init(code: stored.status), body: stored.body.isEmpty ? nil : ByteBuffer(string: stored.body))
        if replayed { reply.headers[.idempotentReplayed] = "true" }
        return reply
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}

extension Endpoint {
    /// The path in the router's syntax: `{id}` becomes `:id`.
    var routerPath: String {
        "/" + path.split(separator: "/").map { segment in
            segment.hasPrefix("{") ? ":" + segment.dropFirst().dropLast() : String(segment)
        }.joined(separator: "/")
    }
}
