import Foundation
import Logging
import VroomXModels
import VroomXSecurity

/// The driver app's core, the same on iOS and in the terminal: the local
/// database, sign-in, syncing, routing, and every action a driver takes.
/// Views (SwiftUI or terminal) stay thin over this.
@MainActor
public final class DriverApp {
    public struct Configuration: Sendable {
        /// The VroomX server, e.g. `https://api.example.com` or `http://127.0.0.1:8080`.
        public var serverURL: String
        /// Where the database and (on Linux) the secrets file live.
        public var stateDirectory: URL
        public var secureStore: (any SecureStore)?
        public var biometrics: any Biometrics = UnavailableBiometrics()
        public var transport: any HTTPTransport = AsyncHTTPTransport()
        public var network: (any NetworkMonitor)?
        /// Push notifications (UserNotificationCenterService on iOS).
        public var pushNotifications: any PushNotificationService = UnavailablePushNotifications()
        public var clock: @Sendable () -> Date = { Date() }
        /// Seconds since the device booted: a clock the driver cannot set.
        public var uptime: @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }
        /// scrypt cost exponent of the local PIN hash.
        public var pinHashCost = PINHasher.defaultCost
        /// Keep a realtime socket open while signed in.
        public var realtime = true
        /// Bytes per upload request; each acknowledged chunk is never sent again.
        public var uploadChunkSize = 1 << 20
        /// How upload bytes travel: nil sends chunks of `uploadChunkSize` while
        /// the app runs; the iOS app sets `BackgroundUploadSending`.
        public var uploadSending: (any UploadSending)?
        /// How old a file in the upload folder that the queue does not list
        /// must be before the queue deletes it (see `UploadQueue.start`).
        public var leftoverCopyAge: TimeInterval = 3600
        public var logger = Logger(label: "vroomx.driverkit")
        /// This app's version, stated with every request (the server may
        /// refuse versions older than it accepts); nil states none.
        public var appVersion: AppVersion?
        /// Where the phone is now, for a photo taken with no recent fix
        /// (CoreLocationProvider on iOS); nil stamps such a photo with its time only.
        public var positionFinder: (any PositionFinder)?

        public init(serverURL: String, stateDirectory: URL) {
            self.serverURL = serverURL
            self.stateDirectory = stateDirectory
        }
    }

    public let database: AppDatabase
    public let api: APIClient
    public let auth: AuthFlow
    public let router: AppRouter
    public let status: SyncStatus
    public let sync: SyncEngine
    public let network: any NetworkMonitor
    public let push: PushController
    /// Inspection photos and videos on their way to the server.
    public let uploads: UploadQueue
    /// Another driver's work left on this phone, sent in their name.
    public let handOver: HandOver
    /// Syncing and uploading being stopped (a session ended); a sign-in starts them after it.
    private var stopping: Task<Void, Never>?
    let credentials: CredentialStore
    let clock: @Sendable () -> Date
    let positionFinder: (any PositionFinder)?
    /// The device's clock corrected to the server's: what actions are stamped with.
    public let serverClock: ServerClock

    public init(_ configuration: Configuration) throws {
        let baseURL = configuration.serverURL.hasSuffix("/") ? String(configuration.serverURL.dropLast()) : configuration.serverURL
        database = try AppDatabase.open(directory: configuration.stateDirectory)
        positionFinder = configuration.positionFinder
        let secureStore = try configuration.secureStore ?? FileSecureStore(directory: configuration.stateDirectory)
        let status = SyncStatus()
        self.status = status
        let transport: any HTTPTransport = configuration.appVersion.map { version in
            AppVersionTransport(base: configuration.transport, version: version) { minimum in
                Task { @MainActor in status.requireUpdate(minimum) }
            }
        } ?? configuration.transport
        network = configuration.network ?? ProbingNetworkMonitor { await APIClient.probe(baseURL: baseURL, transport: transport) }
        clock = configuration.clock
        let database = self.database
        serverClock = ServerClock(device: configuration.clock, uptime: configuration.uptime, saved: try? database.savedClockSkew(),
                                  save: { try? database.saveClockSkew($0) })
        credentials = CredentialStore(secureStore: secureStore, transport: transport, baseURL: baseURL, clock: configuration.clock,
                                      lockFile: configuration.stateDirectory.appendingPathComponent("refresh.lock"))
        api = APIClient(baseURL: baseURL, transport: transport, credentials: credentials, network: network, serverClock: serverClock)
        let realtime = configuration.realtime
            ? RealtimeConnection(baseURL: baseURL, credentials: credentials, appVersion: configuration.appVersion, logger: configuration.logger) : nil
        sync = SyncEngine(database: database, api: api, network: network, status: status, realtime: realtime,
                          secureStore: secureStore, clock: configuration.clock, logger: configuration.logger)
        auth = AuthFlow(database: database, api: api, credentials: credentials, secureStore: secureStore,
                              biometrics: configuration.biometrics, pinHashCost: configuration.pinHashCost, clock: configuration.clock,
                              uptime: configuration.uptime)
        router = AppRouter(auth: auth, database: database, status: status)
        // A message opened from a push is read now by the server's clock (the phone's may run fast or slow).
        let serverClock = self.serverClock
        push = PushController(database: database, sync: sync, service: configuration.pushNotifications, clock: { serverClock.now })
        uploads = UploadQueue(database: database, api: api, network: network,
                              directory: configuration.stateDirectory.appendingPathComponent("uploads"), clock: configuration.clock,
                              sending: configuration.uploadSending ?? ChunkedUploadSending(chunkSize: configuration.uploadChunkSize),
                              leftoverAge: configuration.leftoverCopyAge, logger: configuration.logger)
        handOver = HandOver(database: database, secureStore: secureStore, transport: transport, baseURL: baseURL, network: network,
                            serverClock: serverClock, clock: configuration.clock, sync: sync, uploads: uploads, logger: configuration.logger)
        status.follow(database)
        push.follow()
        let sync = self.sync
        let push = self.push
        let uploads = self.uploads
        let handOver = self.handOver
        uploads.afterUpload.set { await sync.requestSync() }
        sync.afterPush.set { await uploads.wake() }
        sync.afterRun.set { await handOver.requestRun() }
        // Starting waits for a stop still under way (a session that ended moments before this sign-in):
        // otherwise the late stop would leave the new session with nothing syncing or uploading.
        auth.onSignedIn = { [weak self, weak auth] in
            let stopping = self?.stopping
            Task {
                await stopping?.value
                await sync.start()
                // Already running for the driver before (another signed in on this phone): a run for the new one now.
                await sync.requestSync()
                await uploads.start()
            }
            Task { await push.activate() }
            Task { await auth?.sendPendingLogouts() }
        }
        auth.onSignedOut = { [weak self] in
            let stopping = Task {
                await sync.stop()
                await uploads.stop()
            }
            self?.stopping = stopping
            await stopping.value
        }
        let auth = self.auth
        credentials.whenSessionEnds { _ in
            await auth.endSession(message: "Your session has ended. Sign in with your email.")
        }
    }

    /// Starts syncing if someone is signed in, and checks the session with
    /// the server in the background.
    public func launch() {
        guard (try? database.account()) != nil else { return }
        let sync = self.sync
        Task { await sync.start() }
        let uploads = self.uploads
        Task { await uploads.start() }
        Task { await verifySession() }
        let push = self.push
        Task { await push.activate() }
        let auth = self.auth
        Task { await auth.sendPendingLogouts() }
    }

    /// Refreshes the driver record; only a definitive rejection signs out
    /// (the credential store ends the session then), never a network error.
    func verifySession() async {
        guard let me: MeResponse = try? await api.send(.me), let driver = me.driver else { return }
        try? await database.writer.write { db in
            try AppDatabase.storeAnswered(.driver(driver), db)
        }
    }

    /// Whether tokens for a session are on the device.
    public var hasSession: Bool {
        get async { await credentials.hasSession }
    }

    public func shutdown() async {
        await uploads.stop()
        await sync.stop()
    }

    public func syncNow() async {
        await sync.syncNow()
    }

    // MARK: What a driver does (each returns at once, online or not)

    /// Marks an order picked up or delivered; `at` is when it happened (now
    /// by default). A driver does this by completing the inspection, which
    /// moves the order itself; without a completed inspection this is
    /// refused with `inspection_required`.
    @discardableResult
    public func updateOrderStatus(_ order: ID<Order>, to status: OrderStatus, at: Date? = nil) throws -> ID<Mutation>? {
        try enqueue(.updateOrderStatus(.init(orderID: order, status: status, occurredAt: at ?? serverClock.now)))
    }

    /// Starts a planned trip before its first pickup (picking up starts it
    /// too): the phone records the road from now on, if sharing is on.
    @discardableResult
    public func startTrip(_ trip: ID<Trip>) throws -> ID<Mutation>? {
        try enqueue(.startTrip(.init(tripID: trip)))
    }

    /// New ETAs for an order. Each carries what the driver saw, so a later
    /// edit of a field still queued follows the earlier one, while a change
    /// dispatch made meanwhile is caught as a conflict.
    @discardableResult
    public func submitETA(_ order: ID<Order>, pickup: Date? = nil, delivery: Date? = nil) throws -> ID<Mutation>? {
        guard pickup != nil || delivery != nil else {
            throw LocalRejection(code: .validationFailed, message: "Give a pickup or a delivery ETA.")
        }
        guard let current = try database.order(order) else {
            throw LocalRejection(code: .notFound, message: "This order is not on your device.")
        }
        let expected = ETAExpectation(pickupETA: pickup == nil ? nil : .some(current.pickupETA),
                                      deliveryETA: delivery == nil ? nil : .some(current.deliveryETA))
        return try enqueue(.updateOrderETA(.init(orderID: order, pickupETA: pickup, deliveryETA: delivery, expected: expected)))
    }

    /// Records an expense; its day defaults to today where the driver is.
    @discardableResult
    public func createExpense(trip: ID<Trip>, category: ExpenseCategory, amountCents: Int, date: LocalDate? = nil,
                              notes: String? = nil, fuel: FuelPurchase? = nil) throws -> ID<Expense> {
        let id = ID<Expense>()
        try enqueue(.createExpense(.init(id: id, tripID: trip, category: category, amountCents: amountCents,
                                         date: date ?? LocalDate(serverClock.now, in: .current), notes: notes, fuel: fuel)))
        return id
    }

    // MARK: Fleet

    /// The truck and trailer dispatch assigned to the driver.
    public func units() throws -> [Equipment] { try database.equipment() }

    /// Records what a unit's odometer reads now (or at `at`). Readings only
    /// go up: one lower than the last is refused here already.
    @discardableResult
    public func recordOdometer(_ unit: ID<Equipment>, miles: Int, at: Date? = nil) throws -> ID<Mutation>? {
        try enqueue(.recordOdometer(.init(id: ID(), equipmentID: unit, miles: miles, recordedAt: at ?? serverClock.now)))
    }

    @discardableResult
    public func deleteExpense(_ id: ID<Expense>) throws -> ID<Mutation>? {
        try enqueue(.deleteExpense(.init(expenseID: id)))
    }

    public func markNotificationRead(_ id: ID<DriverNotification>) throws {
        try enqueue(.markNotificationRead(.init(notificationID: id, readAt: serverClock.now)))
    }

    /// Writes to dispatch (in general, or about a trip or an order): shown at
    /// once, sent exactly once when there is a signal.
    @discardableResult
    public func sendMessage(_ body: String, trip: ID<Trip>? = nil, order: ID<Order>? = nil) throws -> ID<DriverMessage> {
        let id = ID<DriverMessage>()
        try enqueue(.sendMessage(.init(id: id, body: body, tripID: trip, orderID: order, sentAt: serverClock.now)))
        return id
    }

    /// Reports a problem at one of an order's stops (vehicle not ready, keys
    /// missing, a dry run, waiting…): on the order at once, sent exactly once
    /// when there is a signal; dispatch sees it on the order and the board.
    @discardableResult
    public func reportProblem(_ kind: StopProblemKind, at stop: StopKind, of order: ID<Order>, note: String = "",
                              photos: [URL] = []) async throws -> ID<StopProblem> {
        guard photos.count <= StopProblem.maxPhotos else {
            throw LocalRejection(code: .validationFailed, message: "At most \(StopProblem.maxPhotos) photos go with one problem.")
        }
        for photo in photos { try Self.checkPhoto(photo) }
        let id = ID<StopProblem>()
        try enqueue(.reportStopProblem(.init(id: id, orderID: order, stop: stop, kind: kind, note: note, reportedAt: serverClock.now)))
        for photo in photos { try await uploads.enqueue(file: photo, photoOfProblem: id) }
        return id
    }

    /// Writes to dispatch with photos: the message at once, each photo
    /// once the message has reached the server.
    @discardableResult
    public func sendMessage(_ body: String, trip: ID<Trip>? = nil, order: ID<Order>? = nil, photos: [URL]) async throws -> ID<DriverMessage> {
        guard photos.count <= DriverMessage.maxPhotos else {
            throw LocalRejection(code: .validationFailed, message: "At most \(DriverMessage.maxPhotos) photos go with one message.")
        }
        for photo in photos { try Self.checkPhoto(photo) }
        let id = try sendMessage(body, trip: trip, order: order)
        for photo in photos { try await uploads.enqueue(file: photo, photoWith: id) }
        return id
    }

    /// "Got it" on an urgent message: dispatch sees when.
    @discardableResult
    public func acknowledge(_ id: ID<DriverNotification>) throws -> ID<Mutation>? {
        try enqueue(.acknowledgeNotification(.init(notificationID: id, readAt: serverClock.now)))
    }

    // MARK: Inspections (seed 000's inspection flow)

    /// Starts the pickup or delivery inspection of one of an order's
    /// vehicles (by default the first), or returns the one already started.
    @discardableResult
    public func startInspection(order: ID<Order>, vehicle: ID<Vehicle>? = nil, kind: Inspection.Kind) throws -> ID<Inspection> {
        guard let found = try database.order(order) else { throw LocalRejection(code: .notFound, message: "This order is not on your device.") }
        guard let target = InspectionRules.vehicle(of: found, vehicle) else {
            throw LocalRejection(code: .validationFailed, message: "Order \(found.number) has no such vehicle.")
        }
        if let existing = try database.inspections(order: order).first(where: {
            $0.kind == kind && InspectionRules.vehicle(of: found, $0.vehicleID)?.id == target.id
        }) { return existing.id }
        let id = ID<Inspection>()
        try enqueue(.saveInspection(.init(inspectionID: id, inspection: SaveInspectionRequest(orderID: order, kind: kind, vehicleID: target.id))))
        return id
    }

    /// Records what the driver noted: odometer, notes, position, damages, or
    /// that the customer was not there to sign. Fields left nil keep their value.
    public func updateInspection(_ id: ID<Inspection>, odometer: Int? = nil, notes: String? = nil, position: GeoPosition? = nil,
                                 damages: [Damage]? = nil, customerUnavailable: Bool? = nil, signerName: String? = nil) throws {
        guard let inspection = try database.inspection(id) else {
            throw LocalRejection(code: .notFound, message: "This inspection is not on your device.")
        }
        // Where the phone was, stamped by its own clock: corrected to the server's like every time it records.
        var located = position
        if let fix = position { located?.recordedAt = serverClock.corrected(fix.recordedAt) }
        try enqueue(.saveInspection(.init(inspectionID: id, inspection: SaveInspectionRequest(
            orderID: inspection.orderID, kind: inspection.kind, odometer: odometer, notes: notes, position: located,
            damages: damages, customerUnavailable: customerUnavailable, signerName: signerName, vehicleID: inspection.vehicleID))))
    }

    /// Queues a photo, the walkthrough video or the signature for a slot.
    /// The file is copied first, so the original may go away.
    @discardableResult
    /// `captured` says when and where it was taken (`captureNow()` for one
    /// just taken; nil for a file chosen from the library).
    public func attach(_ file: URL, to id: ID<Inspection>, slot: MediaSlot, captured: MediaCapture? = nil) async throws -> UploadItem {
        guard let inspection = try database.inspection(id) else {
            throw LocalRejection(code: .notFound, message: "This inspection is not on your device.")
        }
        guard inspection.completedAt == nil else {
            throw LocalRejection(code: .inspectionCompleted, message: "This inspection is completed and can no longer change.")
        }
        return try await uploads.enqueue(file: file, inspection: id, slot: slot, captured: captured)
    }

    /// When and where a photo just taken was taken: now, by the clock
    /// corrected to the server's, and where the phone is — its last fix when
    /// recent, else one asked of the phone (3 seconds at most). No position
    /// while the driver has paused sharing.
    public func captureNow() async -> MediaCapture {
        let takenAt = serverClock.now
        guard (try? database.locationSharing()) ?? false else { return MediaCapture(takenAt: takenAt) }
        var fix = location.recentFix(at: takenAt)
        if fix == nil, let finder = positionFinder, var found = await finder.currentPosition(within: .seconds(3)) {
            // The phone may answer first with a position it cached long ago: only a fresh one says where.
            found.recordedAt = serverClock.corrected(found.recordedAt)
            if LocationRules.isUsable(found), abs(found.recordedAt.timeIntervalSince(takenAt)) <= LocationRecorder.photoFixAge { fix = found }
        }
        return MediaCapture(takenAt: takenAt, position: fix?.point, accuracyMeters: fix?.accuracyMeters)
    }

    /// Queues a photo of one of the driver's units (a dent, the tyres); it
    /// reaches the server when there is signal, as inspection photos do.
    @discardableResult
    public func addUnitPhoto(_ file: URL, to id: ID<Equipment>) async throws -> UploadItem {
        guard let unit = try database.equipment().first(where: { $0.id == id }) else {
            throw LocalRejection(code: .notFound, message: "This unit is not assigned to you.")
        }
        try Self.checkPhoto(file)
        let waiting = try database.uploads().filter { $0.equipmentID == id && $0.status != .completed }.count
        guard unit.photos.count + waiting < EquipmentPhoto.maxPerUnit else {
            throw LocalRejection(code: .validationFailed,
                                 message: "\(unit.unitNumber) keeps at most \(EquipmentPhoto.maxPerUnit) photos; ask dispatch to remove old ones.")
        }
        return try await uploads.enqueue(file: file, unit: id)
    }

    /// The bytes decide, as on the server: a PDF or a video is refused here,
    /// at once (a missing file says so).
    public static func checkPhoto(_ file: URL) throws {
        guard FileManager.default.fileExists(atPath: file.path) else {
            throw LocalRejection(code: .validationFailed, message: "\(file.lastPathComponent): no such file.")
        }
        let head = (try? FileHandle(forReadingFrom: file)).flatMap { handle in
            defer { try? handle.close() }
            return try? handle.read(upToCount: ContentSniffer.prefixLength)
        }
        guard let detected = head.flatMap({ ContentSniffer.detect(Array($0)) }), ContentSniffer.allowed(detected, for: .photo) else {
            throw LocalRejection(code: .unsupportedMediaType,
                                 message: "\(file.lastPathComponent) is not a photo: choose \(ContentSniffer.expected(for: .photo)).")
        }
    }

    // MARK: Paper behind money

    /// Queues a photo of an expense's receipt (the driver's, or dispatch's on
    /// their trip); it goes once the expense has reached the server.
    @discardableResult
    public func addReceipt(_ file: URL, to id: ID<Expense>) async throws -> UploadItem {
        let known: [Expense] = try database.expenses().filter { $0.id == id }
        guard let expense = known.first else { throw LocalRejection(code: .notFound, message: "This expense is not on your device.") }
        try Self.checkPhoto(file)
        guard try receiptCount(expense) < ReceiptPhoto.maxPerItem else {
            throw LocalRejection(code: .validationFailed, message: "At most \(ReceiptPhoto.maxPerItem) photos go with one expense.")
        }
        return try await uploads.enqueue(file: file, receiptOf: id)
    }

    /// An expense's receipt photos: those the server has and those still on their way from this phone.
    public func receiptCount(_ expense: Expense) throws -> Int {
        expense.receipts.count + (try database.uploads().filter { $0.expenseID == expense.id && $0.status != .completed }.count)
    }

    /// Records money collected for an order on delivery (COD) or at pickup
    /// (COP) — a check, cash — with photos of the check or receipt. Queued
    /// like any change (exactly once, offline or not); the photos follow it.
    /// Returns the payment's id.
    @discardableResult
    public func collectPayment(order: ID<Order>, amountCents: Int, method: PaymentMethod, reference: String? = nil,
                               photos: [URL] = [], collectedOn: LocalDate? = nil) async throws -> ID<InvoicePayment> {
        guard photos.count <= ReceiptPhoto.maxPerItem else {
            throw LocalRejection(code: .validationFailed, message: "At most \(ReceiptPhoto.maxPerItem) photos go with one payment.")
        }
        for photo in photos { try Self.checkPhoto(photo) }
        let id = ID<InvoicePayment>()
        try enqueue(.collectPayment(.init(id: id, orderID: order, amountCents: amountCents, method: method,
                                          reference: reference.flatMap { $0.isEmpty ? nil : $0 },
                                          collectedOn: collectedOn ?? LocalDate(serverClock.now, in: .current))))
        for photo in photos { try await uploads.enqueue(file: photo, photoOf: id) }
        return id
    }

    /// Sends a failed file again (the driver asked to).
    public func retryUpload(_ id: String) throws {
        try database.retryUpload(id)
        let uploads = self.uploads
        Task { await uploads.wake() }
    }

    /// Gives up a failed file the server refuses (the driver retakes the
    /// photo instead). Only failed files can be discarded.
    public func discardUpload(_ id: String) async throws {
        guard try await uploads.discard(id) else {
            throw LocalRejection(code: .conflict, message: "Only a failed file can be discarded; this one is still on its way.")
        }
    }

    /// Completes an inspection, which picks the vehicle up (or delivers it)
    /// at this moment: queued like any change, and sent once its files have
    /// reached the server.
    @discardableResult
    public func completeInspection(_ id: ID<Inspection>) throws -> ID<Mutation>? {
        try enqueue(.completeInspection(.init(inspectionID: id, occurredAt: serverClock.now)))
    }

    /// Sends a failed change again now (the driver asked to; failed changes
    /// are also retried on their own, on a long interval).
    public func retry(_ id: ID<Mutation>) throws {
        try database.retry(id)
        let sync = self.sync
        Task { await sync.requestSync() }
    }

    /// Drops a failed change: a refusal the driver has seen, or a change
    /// they give up on. The app asks before dropping work that could still land.
    public func discard(_ id: ID<Mutation>) throws { try database.discard(id) }

    // MARK: Evidence the server will never take

    /// Inspections the server refused (or that went to another driver)
    /// while their files were still on this phone.
    public func evidence() throws -> [HeldEvidence] { try database.evidence() }

    /// Writes held evidence to a folder the driver chose — `inspection.json`
    /// (what was recorded, and why it was not sent) and each file named by
    /// its slot — and returns the folder made for it.
    @discardableResult
    public func exportEvidence(_ id: ID<Inspection>, to directory: URL) throws -> URL {
        guard let held = try database.evidence().first(where: { $0.id == id }) else {
            throw LocalRejection(code: .notFound, message: "No kept inspection \(id) on this device.")
        }
        let folder = directory.appendingPathComponent("inspection-\(id.rawValue)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        struct Manifest: Encodable {
            let inspection: Inspection
            let reason: String
            let heldAt: Date
            let files: [String: String]
            enum CodingKeys: String, CodingKey { case inspection, reason, files; case heldAt = "held_at" }
        }
        var files: [String: String] = [:]
        for file in held.files {
            // The kept copy has no extension: name it by what its first bytes say it is.
            let head = (try? FileHandle(forReadingFrom: URL(fileURLWithPath: file.path)))
                .flatMap { handle in defer { try? handle.close() }; return try? handle.read(upToCount: ContentSniffer.prefixLength) }
            let name = file.slot.rawValue + "." + (head.flatMap { ContentSniffer.detect(Array($0)) }?.fileExtension ?? "bin")
            let destination = folder.appendingPathComponent(name)
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.copyItem(at: URL(fileURLWithPath: file.path), to: destination)
            files[file.slot.rawValue] = name
        }
        let manifest = Manifest(inspection: held.inspection, reason: held.reason, heldAt: held.heldAt, files: files)
        try CacheJSON.encoder.encode(manifest).write(to: folder.appendingPathComponent("inspection.json"))
        return folder
    }

    /// Drops held evidence and its files, as the driver decided.
    public func discardEvidence(_ id: ID<Inspection>) throws {
        for path in try database.discardEvidence(id) { try? FileManager.default.removeItem(atPath: path) }
    }

    // MARK: Location

    /// Records positions while the driver shares them and a trip is under way.
    public private(set) lazy var location = LocationRecorder(database: database, serverClock: serverClock) { [unowned self] batch in
        try self.enqueue(.recordLocations(batch))
    }

    public var locationSharing: Bool { (try? database.locationSharing()) ?? true }

    /// Pauses or resumes sharing; pausing queues what was recorded so far.
    public func setLocationSharing(_ on: Bool) throws {
        if !on { try location.flush() }
        try database.setLocationSharing(on)
    }

    /// Queues a change; returns its id, or nil when there was nothing to do.
    @discardableResult
    private func enqueue(_ payload: MutationPayload) throws -> ID<Mutation>? {
        let mutation = Mutation(payload)
        // Judged and stamped by the server's clock, as the server will judge it.
        guard try database.enqueue(mutation, now: serverClock.now, stamp: ClockStamp(serverClock)) else { return nil }
        let sync = self.sync
        if network.isOnline { Task { await sync.requestSync() } }
        return mutation.id
    }
}
