import DriverKit
import Foundation
import NIOConcurrencyHelpers
import VroomXModels
import VroomXServer
import VroomXTestSupport

/// A driver app (DriverKit) against a live server, in its own state directory.
@MainActor
struct DriverDevice {
    let app: DriverApp
    let stateDirectory: URL

    static func make(server: LiveServer, stateDirectory: URL? = nil, transport: (any HTTPTransport)? = nil,
                     biometrics: any Biometrics = UnavailableBiometrics(), realtime: Bool = false,
                     clock: (@Sendable () -> Date)? = nil, push: (any PushNotificationService)? = nil,
                     network: (any NetworkMonitor)? = nil, uploadChunkSize: Int? = nil, leftoverCopyAge: TimeInterval? = nil,
                     appVersion: AppVersion? = nil, positionFinder: (any PositionFinder)? = nil,
                     uploadSending: (any UploadSending)? = nil, uptime: (@Sendable () -> TimeInterval)? = nil) throws -> DriverDevice {
        let directory = stateDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("driverkit-\(UUID().uuidString.prefix(8))")
        var configuration = DriverApp.Configuration(serverURL: server.baseURL, stateDirectory: directory)
        if let transport { configuration.transport = transport }
        configuration.biometrics = biometrics
        configuration.realtime = realtime
        configuration.pinHashCost = 10
        if let clock { configuration.clock = clock }
        if let push { configuration.pushNotifications = push }
        if let network { configuration.network = network }
        if let uploadChunkSize { configuration.uploadChunkSize = uploadChunkSize }
        if let leftoverCopyAge { configuration.leftoverCopyAge = leftoverCopyAge }
        configuration.appVersion = appVersion
        configuration.positionFinder = positionFinder
        configuration.uploadSending = uploadSending
        if let uptime { configuration.uptime = uptime }
        configuration.logger.logLevel = .critical
        return DriverDevice(app: try DriverApp(configuration), stateDirectory: directory)
    }

    /// Signs in through the code flow, reading the code from the server's mailbox.
    func signIn(_ email: String, mailbox: DevelopmentMailbox, pin: String? = "2580") async throws {
        let earlier = mailbox.codeCount(to: email)
        try await app.auth.sendCode(to: email)
        let code = try await Self.code(for: email, mailbox: mailbox, after: earlier)
        try await app.auth.verify(code: code)
        if let pin { try await app.auth.setUpPIN(pin) }
    }

    static func code(for email: String, mailbox: DevelopmentMailbox, after earlier: Int = 0) async throws -> String {
        try await mailbox.code(for: email, after: earlier)
    }
}

/// A transport that can lose the network (requests fail without leaving the
/// device), lose answers (the request reaches the server, the answer never
/// comes back), or stand for a failing server (503 before the server sees
/// the request), around the real one — for every request, or only those
/// whose URL contains `only`. Requests to the mutation batch can also be
/// held at a gate until the test opens it.
final class FlakyTransport: HTTPTransport, Sendable {
    enum Mode: Sendable { case normal, offline, loseAnswers, answerLate, serverFailing, tooLarge }
    let real = AsyncHTTPTransport()
    private struct State {
        var mode: Mode = .normal
        var only: String?
        var sent = 0
        var pulls = 0
        var batches = 0
        var held: [CheckedContinuation<Void, Never>] = []
        /// Requests to URLs containing this wait until `release`.
        var holding: String?
    }
    private let state = NIOLockedValueBox(State())

    var mode: Mode {
        get { state.withLockedValue { $0.mode } }
        set { state.withLockedValue { $0.mode = newValue } }
    }

    /// Applies `mode` only to URLs containing this (nil: all).
    var only: String? {
        get { state.withLockedValue { $0.only } }
        set { state.withLockedValue { $0.only = newValue } }
    }

    /// Requests that reached the server.
    var sent: Int { state.withLockedValue { $0.sent } }
    /// Of them, pulls of the change feed (`GET /v1/sync`).
    var pulls: Int { state.withLockedValue { $0.pulls } }
    /// Of them, mutation batches (`POST /v1/mutations`).
    var batches: Int { state.withLockedValue { $0.batches } }

    /// Holds mutation batches (after they are written, before they are sent) until `release`.
    func holdMutations() { hold("/v1/mutations") }
    /// Holds requests to URLs containing `fragment` until `release` (a slow network).
    func hold(_ fragment: String) { state.withLockedValue { $0.holding = fragment } }
    var heldCount: Int { state.withLockedValue { $0.held.count } }
    func release() {
        let waiting = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            defer { state.held = []; state.holding = nil }
            return state.held
        }
        for continuation in waiting { continuation.resume() }
    }

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        if let fragment = state.withLockedValue({ $0.holding }), request.url.contains(fragment) {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLockedValue { state -> Bool in
                    guard let held = state.holding, request.url.contains(held) else { return true }
                    state.held.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
        let (mode, only) = state.withLockedValue { ($0.mode, $0.only) }
        let applies = only.map { request.url.contains($0) } ?? true
        switch applies ? mode : .normal {
        case .offline:
            throw TransportError(description: "offline (test)")
        case .serverFailing:
            let body = #"{"error":{"code":"unavailable","message":"The service is briefly unavailable.","retry_after":2}}"#
            return HTTPResponseData(status: 503, headers: ["retry-after": "2"], body: Data(body.utf8))
        case .tooLarge where (request.body?.count ?? 0) > 64 * 1024:
            let body = #"{"error":{"code":"payload_too_large","message":"The request body is larger than 64 KiB."}}"#
            return HTTPResponseData(status: 413, headers: [:], body: Data(body.utf8))
        case .normal, .loseAnswers, .answerLate, .tooLarge:
            let response = try await real.send(request)
            let isPull = request.url.contains(Endpoint.sync.path() + "?"), isBatch = request.url.contains(Endpoint.mutations.path())
            state.withLockedValue { $0.sent += 1; if isPull { $0.pulls += 1 }; if isBatch { $0.batches += 1 } }
            if applies && mode == .loseAnswers { throw TransportError(description: "answer lost (test)") }
            if applies && mode == .answerLate { throw TransportError(description: "deadline exceeded (test)", answeredLate: true) }
            return response
        }
    }
}

/// Face ID stand-in (the real thing cannot exist on Linux): answers as told.
struct ScriptedBiometrics: Biometrics {
    let answer: Bool
    var isAvailable: Bool { true }
    func authenticate(reason: String) async -> Bool { answer }
}

/// A clock a test moves by hand.
final class TestClock: Sendable {
    private let time = NIOLockedValueBox(Date())
    var now: Date { time.withLockedValue { $0 } }
    func advance(by seconds: TimeInterval) { time.withLockedValue { $0 += seconds } }
    var read: @Sendable () -> Date { { [time] in time.withLockedValue { $0 } } }
}

/// Waits until a condition holds (the app syncs in the background). The
/// bound is generous: alone a sync takes well under a second, but beside the
/// rest of the suite on two cores uploads and retries with backoff take tens
/// of seconds, and a condition met returns at once.
@MainActor
func eventually(_ what: String, timeout: Duration = .seconds(60), _ condition: @MainActor () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + TestWait.bound(timeout)
    while !(try condition()) {
        guard ContinuousClock.now < deadline else { throw TestSetupError("timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

extension DriverApp {
    /// A pickup or delivery as a driver makes it: the inspection, its
    /// required photos, "customer not available", completed — which moves
    /// the order. Works offline; the photos upload when the network allows.
    @discardableResult
    func inspectAndComplete(_ order: ID<Order>, _ kind: Inspection.Kind) async throws -> ID<Inspection> {
        let inspection = try startInspection(order: order, kind: kind)
        try updateInspection(inspection, customerUnavailable: true)
        for slot in MediaSlot.requiredPhotos {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("photo-\(UUID().uuidString.prefix(8)).jpg")
            try Data(MediaSamples.jpeg(size: 1024)).write(to: file)
            try await attach(file, to: inspection, slot: slot)
            try? FileManager.default.removeItem(at: file)
        }
        try completeInspection(inspection)
        return inspection
    }
}

/// The usual scene: a carrier on a fresh SQLite server, served over real
/// HTTP, and its first driver signed in on a device that has synced once.
@MainActor
struct DriverScene {
    let server: TestServer
    let carrier: CarrierFixture
    let live: LiveServer
    let device: DriverDevice
    var app: DriverApp { device.app }

    static func make(device makeDevice: (LiveServer) throws -> DriverDevice = { try DriverDevice.make(server: $0) }) async throws -> DriverScene {
        let server = try await TestServer.make(.sqlite)
        let carrier = try await CarrierFixture.make(server, name: "Alpha")
        let live = try await LiveServer(server)
        let device = try makeDevice(live)
        try await device.signIn(carrier.driver.user.email, mailbox: server.mailbox)
        await device.app.syncNow()
        return DriverScene(server: server, carrier: carrier, live: live, device: device)
    }
}
